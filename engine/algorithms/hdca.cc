#include "engine/algorithms/hdca.h"

#include <cassert>
#include <cmath>

#include <Eigen/Cholesky>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/rnea.h"
#include "engine/parallel/executor.h"

namespace hilsim {

namespace {

// Two unit vectors completing unit `a` to a right-handed orthonormal basis
void completeBasis(const Vector3& a, Vector3& n1, Vector3& n2) {
  // the coordinate axis least aligned with a: some component of a unit vector is below 0.6
  const Vector3 e = std::abs(a.x()) < 0.6   ? Vector3::UnitX()
                    : std::abs(a.y()) < 0.6 ? Vector3::UnitY()
                                            : Vector3::UnitZ();
  n1 = a.cross(e).normalized();
  n2 = a.cross(n1);
}

// Motion and force columns given about point o (W axes) taken about W's origin
template <typename Columns>
void motionAboutOrigin(const Vector3& o, Columns&& columns) {
  for (int c = 0; c < columns.cols(); ++c)
    columns.col(c).template tail<3>() += o.cross(Vector3(columns.col(c).template head<3>()));
}

// The paper's shift S₁₂ (14) for l = r₂ − r₁: a force at r₂ taken about r₁, S₁₂ F = [n + l × f; f]
// (angular part first), and its transpose on a motion at r₁ taken about r₂, [ω; v + ω × l]
Vector6 shiftForce(const Vector3& l, const Vector6& F) {
  Vector6 out = F;
  out.head<3>() += l.cross(Vector3(F.tail<3>()));
  return out;
}
Vector6 shiftMotion(const Vector3& l, const Vector6& V) {
  Vector6 out = V;
  out.tail<3>() += Vector3(V.head<3>()).cross(l);
  return out;
}
// S₁₂ as a matrix, [[1, l̃], [0, 1]]
Matrix6 shiftMatrix(const Vector3& l) {
  Matrix6 S = Matrix6::Identity();
  S.topRightCorner<3, 3>() = skew(l);
  return S;
}

// Joint i's bases at the kinematics in Data: its motion subspace H, written about the child
// frame's origin o (the joint's point, the handles' of both sides) where it is orthonormal
// (Hᵀ H = 1), and the constraint directions D that complete it to an orthonormal basis there
// (seed 001 (10)–(11): "ones and zeros" in the joint's frame, here in W's axes); H about W's
// origin as well, for phase 2.
void jointBases(const Model& model, Data& data, int i) {
  Data::Hdca& h = data.hdca;
  const Matrix3& R = data.X_WB[i].rotation;
  const Vector3& o = data.X_WB[i].translation;
  const Joint& joint = model.joints[i];
  const int nv = model.nv_joint[i];
  Matrix6X H0 = Matrix6X::Zero(6, nv), D0 = Matrix6X::Zero(6, 6 - nv);
  Vector3 n1, n2;
  switch (joint.type) {
    case JointType::kRevolute: {
      const Vector3 a = R * joint.axis;
      completeBasis(a, n1, n2);
      H0.col(0).head<3>() = a;
      D0.col(0).head<3>() = n1;
      D0.col(1).head<3>() = n2;
      D0.block<3, 3>(3, 2).setIdentity();
      break;
    }
    case JointType::kPrismatic: {
      const Vector3 a = R * joint.axis;
      completeBasis(a, n1, n2);
      H0.col(0).tail<3>() = a;
      D0.block<3, 3>(0, 0).setIdentity();
      D0.col(3).tail<3>() = n1;
      D0.col(4).tail<3>() = n2;
      break;
    }
    case JointType::kSpherical:
      H0.block<3, 3>(0, 0) = R;
      D0.block<3, 3>(3, 0).setIdentity();
      break;
    case JointType::kFreeFlyer: {
      const Matrix3 R_WJ = data.X_WB[model.parent[i]].rotation * model.joint_placement[i].rotation;
      H0.block<3, 3>(3, 0) = R_WJ;
      H0.block<3, 3>(0, 3) = R;
      break;
    }
    case JointType::kPlanar: {
      const Matrix3 R_WJ = data.X_WB[model.parent[i]].rotation * model.joint_placement[i].rotation;
      const Vector3 n = R_WJ * joint.axis, e1 = R_WJ * joint.plane_e1, e2 = R_WJ * joint.plane_e2;
      H0.col(0).tail<3>() = e1;
      H0.col(1).tail<3>() = e2;
      H0.col(2).head<3>() = n;
      D0.col(0).head<3>() = e1;
      D0.col(1).head<3>() = e2;
      D0.col(2).tail<3>() = n;
      break;
    }
  }
  auto motion = h.motion[i].leftCols(nv);
  motion = H0;
  motionAboutOrigin(o, motion);
  h.local[i].leftCols(nv) = H0;
  // the impulses the joint carries: along D freely, along H of a dof with armature a the rotor's
  // −a v (docs/HDCA.md, "Armature")
  Matrix6& basis = h.impulse_basis[i];
  basis.setZero();  // impulseFactor reads all six columns
  basis.leftCols(6 - nv) = D0;
  int k = 6 - nv;
  h.compliance[i].setZero();
  for (int c = 0; c < nv; ++c) {
    const double armature = model.armature[model.idx_v[i] + c];
    if (armature <= 0.0) continue;
    basis.col(k) = H0.col(c);
    h.compliance[i][k] = 1.0 / armature;
    ++k;
  }
  h.impulse_count[i] = k;
}

// L with L Lᵀ = A, A symmetric positive definite (lower triangle read). Fixed 6 × 6 loops: the
// leaves and nodes factor one such matrix each, where Eigen's general solvers spend more on
// set-up than on the arithmetic.
void cholesky6(const Matrix6& A, Matrix6& L) {
  L.setZero();
  for (int j = 0; j < 6; ++j) {
    double d = A(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    assert(d > 0.0);  // else not positive definite: NaN follows
    const double l_jj = std::sqrt(d), inverse = 1.0 / l_jj;
    L(j, j) = l_jj;
    for (int i = j + 1; i < 6; ++i) {
      double s = A(i, j);
      for (int k = 0; k < j; ++k) s -= L(i, k) * L(j, k);
      L(i, j) = s * inverse;
    }
  }
}

// X ← X L⁻ᵀ, column by column (X Lᵀ = X_in)
void solveTransposedFactor(const Matrix6& L, Matrix6& X) {
  for (int j = 0; j < 6; ++j) {
    for (int k = 0; k < j; ++k) X.col(j) -= L(j, k) * X.col(k);
    X.col(j) *= 1.0 / L(j, j);
  }
}

// Z with W = −Z Zᵀ = −B (Bᵀ Ψ B + E)⁻¹ Bᵀ for joint j and the mobility Ψ across it (seed 001
// (27), with the armature's compliance E): the impulse the joint carries is W times the velocity
// jump it would have without it. Z = B L⁻ᵀ, L L ᵀ = Bᵀ Ψ B + E, padded to 6 × 6 (B's unused
// columns are zero, the factor's unused block the identity, so Z's unused columns are zero).
void impulseFactor(const Data::Hdca& h, int j, const Matrix6& psi, Matrix6& Z) {
  const int k = h.impulse_count[j];
  if (k == 0) {
    Z.setZero();
    return;
  }
  const Matrix6& B = h.impulse_basis[j];
  Matrix6 psi_B, G, L;
  psi_B.noalias() = psi * B;
  G.noalias() = B.transpose() * psi_B;
  for (int c = 0; c < 6; ++c) G(c, c) += c < k ? h.compliance[j][c] : 1.0;
  cholesky6(G, L);
  Z = B;
  solveTransposedFactor(L, Z);
}

// out (+)= Σ_c columns.col(c) x[c] over the first n columns, out −= with kSubtract: a joint's 1 to 6
// columns without a dynamic-size product's set-up
template <bool kSubtract = false>
void addColumns(const Matrix6& columns, const double* x, int n, Vector6& out) {
  for (int c = 0; c < n; ++c) {
    if constexpr (kSubtract)
      out -= columns.col(c) * x[c];
    else
      out += columns.col(c) * x[c];
  }
}

// x[c] = columns.col(c) · y over the first n columns
void dotColumns(const Matrix6& columns, const Vector6& y, int n, double* x) {
  for (int c = 0; c < n; ++c) x[c] = columns.col(c).dot(y);
}

// r₂ − r₁ of body i's leaf: from its origin (handle 1, its own joint's point) to its heavy child's
// (handle 2, the joint to the next body of its path); zero at a path's end
Vector3 handleOffset(const Data& data, int i) {
  const int heavy = data.hdca.tree.heavy_child[i];
  return heavy > 0 ? Vector3(data.X_WB[heavy].translation - data.X_WB[i].translation)
                   : Vector3::Zero();
}

// r_b − r_a of two bodies' origins
Vector3 offset(const Data& data, int a, int b) {
  return data.X_WB[b].translation - data.X_WB[a].translation;
}

bool isPathRoot(const AssemblyTree& tree, int node) {
  return tree.path_root[tree.path_top[node]] == node;
}

// Below this many items a level runs on the calling thread: handing it to the workers costs more
// (about a microsecond each way) than a few nodes' arithmetic
constexpr int kMinParallelItems = 8;

// parallelFor on data.executor for count ≥ kMinParallelItems, else on the calling thread
template <typename Body>
void forItems(Data& data, int count, Body& body) {
  if (count < kMinParallelItems) {
    if (count > 0) body(0, count);
    return;
  }
  parallelFor(data.executor, count, body);
}

// Runs body(node) for the nodes of each level in turn, each level across the executor's threads
template <typename Body>
void overLevels(Data& data, const std::vector<int>& order, const std::vector<int>& begin,
                Body& body) {
  const int levels = static_cast<int>(begin.size()) - 1;
  for (int level = 0; level < levels; ++level) {
    const int first = begin[level];
    auto range = [&](int b, int e) {
      for (int k = b; k < e; ++k) body(order[first + k]);
    };
    forItems(data, begin[level + 1] - first, range);
  }
}

// Per body, independent: the joint's bases, the body's inertia and weight in W
void bodyTerms(const Model& model, Data& data) {
  Data::Hdca& h = data.hdca;
  auto range = [&](int b, int e) {
    for (int i = b + 1; i < e + 1; ++i) {
      jointBases(model, data, i);
      const Inertia inertia_W = model.inertias[i].transformed(data.X_WB[i]);
      inertia_W.matrix(h.inertia[i]);
      const Vector3 force = inertia_W.mass * model.gravity;
      h.weight[i].head<3>() = inertia_W.com.cross(force);
      h.weight[i].tail<3>() = force;
    }
  };
  forItems(data, model.nbodies - 1, range);
}

// Phase 1's matrices up the tree: leaves (the body's mobility Φ with the paths hanging off it
// absorbed), compounds (seed 001 (34)–(36)), and at each path's root the factor of its top
// joint's gain
void assembleMatrices(const Model& model, Data& data) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  auto node_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left < 0) {
      const int i = node.body;
      // about the body's origin r₁ (seed 001 (9)): A = M₁ − Σ S₁ⱼ W S₁ⱼᵀ over the paths hanging
      // off it, whose impulse on it is −W (ξ₁₀ − V) at their top joint's point rⱼ
      const Matrix3& R = data.X_WB[i].rotation;
      const Inertia& body = model.inertias[i];
      Matrix6 A;
      Inertia(body.mass, R * body.com, R * body.inertia_com * R.transpose()).matrix(A);
      for (int k = tree.light_begin[i]; k < tree.light_begin[i + 1]; ++k) {
        const int c = tree.light[k];
        Matrix6 Z = h.path_factor[c];
        const Vector3 l = offset(data, i, c);
        for (int col = 0; col < 6; ++col) Z.col(col) = shiftForce(l, Z.col(col));
        A.noalias() += Z * Z.transpose();
      }
      // Φ = A⁻¹ = L⁻ᵀ L⁻¹; ξ₁₁ = Φ, ξ₁₂ = Φ S₁₂, ξ₂₂ = S₁₂ᵀ Φ S₁₂ (§3.1)
      Matrix6 L, L_inv_t = Matrix6::Identity();
      cholesky6(A, L);
      solveTransposedFactor(L, L_inv_t);
      h.mobility[i].noalias() = L_inv_t * L_inv_t.transpose();
      const Matrix6 S12 = shiftMatrix(handleOffset(data, i));
      h.xi11[n] = h.mobility[i];
      h.xi12[n].noalias() = h.mobility[i] * S12;
      h.xi22[n].noalias() = S12.transpose() * h.xi12[n];
    } else {
      const int L = node.left, R = node.right;
      const Matrix6 psi = h.xi11[R] + h.xi22[L];
      const Matrix6& Z = h.gain_factor[n];
      impulseFactor(h, node.joint, psi, h.gain_factor[n]);
      // (34)–(35) with W = −Z Zᵀ: U = ξ₁₂ᴬ Z, V = ξ₂₁ᴮ Z
      Matrix6 U, V;
      U.noalias() = h.xi12[L] * Z;
      V.noalias() = h.xi12[R].transpose() * Z;
      h.xi11[n] = h.xi11[L];
      h.xi11[n].noalias() -= U * U.transpose();
      h.xi12[n].noalias() = U * V.transpose();
      h.xi22[n] = h.xi22[R];
      h.xi22[n].noalias() -= V * V.transpose();
    }
    if (isPathRoot(tree, n)) {
      const int top = tree.path_top[n];
      impulseFactor(h, top, h.xi11[n], h.path_factor[top]);
    }
  };
  overLevels(data, tree.up, tree.up_begin, node_step);
}

// Phase 1's vectors for momenta p: ξ₁₀, ξ₂₀, β up the tree and the impulses down it, with the
// applied loads accumulated over the same tree when `loads` (seed 001 (70)–(76)); every body's
// velocity into h.velocity
template <bool kLoads>
void propagateMomenta(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  auto up_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left < 0) {
      const int i = node.body;
      // b: the momenta its own joint brings in, minus those its children's joints carry out and
      // the impulses the paths hanging off it take, −W ξ₁₀ (seed 001 §3.1, with P̄₂ = −P̄₁ of the
      // child: the note's minus sign)
      // (every term about the body's origin r₁: a child joint's through its shift S₁ⱼ)
      Vector6& b = h.momentum_bias[i];
      b.setZero();
      addColumns(h.local[i], p.data() + model.idx_v[i], model.nv_joint[i], b);
      const int heavy = tree.heavy_child[i];
      const Vector3 l12 = handleOffset(data, i);
      if (heavy > 0) {
        Vector6 out = Vector6::Zero();
        addColumns(h.local[heavy], p.data() + model.idx_v[heavy], model.nv_joint[heavy], out);
        b -= shiftForce(l12, out);
      }
      if constexpr (kLoads) h.load[n] = h.weight[i];
      for (int k = tree.light_begin[i]; k < tree.light_begin[i + 1]; ++k) {
        const int c = tree.light[k], root = tree.path_root[c];
        Vector6 out = Vector6::Zero();
        addColumns(h.local[c], p.data() + model.idx_v[c], model.nv_joint[c], out);
        const Matrix6& Z = h.path_factor[c];  // −W ξ₁₀ = Z Zᵀ ξ₁₀
        out.noalias() -= Z * (Z.transpose() * h.xi10[root]);
        b -= shiftForce(offset(data, i, c), out);
        if constexpr (kLoads) h.load[n] += h.load[root];
      }
      h.xi10[n].noalias() = h.mobility[i] * b;
      h.xi20[n] = shiftMotion(l12, h.xi10[n]);
    } else {
      const int L = node.left, R = node.right;
      const Matrix6& Z = h.gain_factor[n];
      h.beta[n].noalias() = -Z * (Z.transpose() * (h.xi10[R] - h.xi20[L]));  // (28)
      h.xi10[n] = h.xi10[L];
      h.xi10[n].noalias() -= h.xi12[L] * h.beta[n];  // (36)
      h.xi20[n] = h.xi20[R];
      h.xi20[n].noalias() += h.xi12[R].transpose() * h.beta[n];
      if constexpr (kLoads) h.load[n] = h.load[L] + h.load[R];  // (58)
    }
  };
  overLevels(data, tree.up, tree.up_begin, up_step);

  auto down_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (isPathRoot(tree, n)) {
      // the top joint on its parent body (or the world): (43) with the parent's velocity
      const int top = tree.path_top[n], parent = model.parent[top];
      Vector6 jump = h.xi10[n];
      if (parent > 0) jump -= shiftMotion(offset(data, parent, top), h.velocity[parent]);
      const Matrix6& Z = h.path_factor[top];
      h.T1[n].noalias() = -Z * (Z.transpose() * jump);
      h.T2[n].setZero();  // a path ends in a free tip
      if constexpr (kLoads) h.beyond[n].setZero();
    }
    if (node.left >= 0) {
      const int L = node.left, R = node.right;
      h.T1[L] = h.T1[n];
      h.T2[R] = h.T2[n];
      Vector6 jump;  // (29)
      jump.noalias() = h.xi12[R] * h.T2[n];
      jump.noalias() -= h.xi12[L].transpose() * h.T1[n];
      const Matrix6& Z = h.gain_factor[n];
      h.T1[R] = h.beta[n];
      h.T1[R].noalias() -= Z * (Z.transpose() * jump);
      h.T2[L] = -h.T1[R];
      if constexpr (kLoads) {  // (76)
        h.beyond[R] = h.beyond[n];
        h.beyond[L] = h.load[R] + h.beyond[n];
      }
    } else {
      const int i = node.body;
      // (15): V₁ = Φ (T₁ + S₁₂ T₂ + b), about the body's origin
      h.velocity[i].noalias() =
          h.mobility[i] * (h.T1[n] + shiftForce(handleOffset(data, i), h.T2[n]) +
                           h.momentum_bias[i]);
      if constexpr (kLoads) h.subtree_load[i] = h.load[n] + h.beyond[n];
    }
  };
  overLevels(data, tree.down, tree.down_begin, down_step);
}

// (23): v = Hᵀ (V₁ᴮ − V₂ᴬ) of the bodies' velocities phase 1 left, both sides at the joint's point
void jointRates(const Model& model, Data& data, Eigen::Ref<Eigen::VectorXd> v) {
  const Data::Hdca& h = data.hdca;
  auto range = [&](int b, int e) {
    for (int i = b + 1; i < e + 1; ++i) {
      const int parent = model.parent[i];
      Vector6 jump = h.velocity[i];
      if (parent > 0) jump -= shiftMotion(offset(data, parent, i), h.velocity[parent]);
      dotColumns(h.local[i], jump, model.nv_joint[i], v.data() + model.idx_v[i]);
    }
  };
  forItems(data, model.nbodies - 1, range);
}

// The bodies' velocities V of joint velocities v about W's origin (into h.velocity_W) and each
// subtree's momentum Σ I V (into h.momentum), at the kinematics of the last assembly
void subtreeMomenta(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& v) {
  Data::Hdca& h = data.hdca;
  for (int i = 1; i < model.nbodies; ++i) {
    const int nv = model.nv_joint[i], parent = model.parent[i];
    if (parent > 0)
      h.velocity_W[i] = h.velocity_W[parent];
    else
      h.velocity_W[i].setZero();
    addColumns(h.motion[i], v.data() + model.idx_v[i], nv, h.velocity_W[i]);
    h.momentum[i].noalias() = h.inertia[i] * h.velocity_W[i];
  }
  for (int i = model.nbodies - 1; i >= 1; --i)
    if (model.parent[i] > 0) h.momentum[model.parent[i]] += h.momentum[i];
}

// v = M⁻¹ p by the tree, refined: v ← v + M⁻¹ (p − M v) while the residual is above round-off, at
// most kRefinementSteps times. The mobility form subtracts where a light body carries a heavy one
// and loses digits in proportion (1e-5 relative on a random 18-body chain, docs/HDCA.md
// "Accuracy"); p − M v costs one O(n) sweep, a correction one vector pass of the tree. With
// kLoads, the applied loads' subtree sums as well. `p` and `v` may be the same vector.
constexpr int kRefinementSteps = 2;
constexpr double kResidualTolerance = 1e-14;  // of |p|∞: the sweep's own round-off is ~1e-15
template <bool kLoads>
void solveRefined(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                  Eigen::Ref<Eigen::VectorXd> v) {
  Data::Hdca& h = data.hdca;
  propagateMomenta<kLoads>(model, data, p);
  jointRates(model, data, h.estimate);
  const double tolerance = kResidualTolerance * p.lpNorm<Eigen::Infinity>();
  h.corrections = 0;
  for (int step = 0; step < kRefinementSteps; ++step) {
    subtreeMomenta(model, data, h.estimate);
    for (int i = 1; i < model.nbodies; ++i) {
      const int iv = model.idx_v[i], nv = model.nv_joint[i];
      double* r = h.residual.data() + iv;
      dotColumns(h.motion[i], h.momentum[i], nv, r);
      for (int c = 0; c < nv; ++c)
        r[c] = p[iv + c] - r[c] - model.armature[iv + c] * h.estimate[iv + c];
    }
    if (!(h.residual.lpNorm<Eigen::Infinity>() > tolerance)) break;
    propagateMomenta<false>(model, data, h.residual);
    jointRates(model, data, h.residual);
    h.estimate += h.residual;
    ++h.corrections;
  }
  v = h.estimate;  // p is no longer read: v may be p
}

}  // namespace

void hdcaAssembleAtKinematics(const Model& model, Data& data) {
  assert(holds(data.workspace, DataWorkspace::kDivideAndConquer));
  assert(!model.has_flexible_bodies);
  bodyTerms(model, data);
  assembleMatrices(model, data);
}

void hdcaAssemble(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  hdcaAssembleAtKinematics(model, data);
}

void hdcaVelocities(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                    Eigen::Ref<Eigen::VectorXd> v) {
  solveRefined<false>(model, data, p, v);
}

void hdcaVelocitiesWithLoads(const Model& model, Data& data,
                             const Eigen::Ref<const Eigen::VectorXd>& p,
                             Eigen::Ref<Eigen::VectorXd> v) {
  solveRefined<true>(model, data, p, v);
}

namespace {
// Ṡ of joint column s of body i, V ×ᵐ s with V the body the column is fixed in (the child; the
// parent for a translation column of a free or planar joint, whose direction the parent carries)
Vector6 columnRate(const Model& model, const Data::Hdca& h, int i, const Eigen::Ref<const Vector6>& s) {
  const int parent = model.parent[i];
  const bool translation = s.head<3>().isZero(0.0);
  Vector6 s_dot;
  if (translation && parent <= 0)
    s_dot.setZero();
  else
    crossMotion(translation ? h.velocity_W[parent] : h.velocity_W[i], s, s_dot);
  return s_dot;
}
}  // namespace

void hdcaMomentumRatesAt(const Model& model, Data& data, const Eigen::VectorXd& q,
                         const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                         Eigen::VectorXd& p_dot) {
  // the bodies' velocities and subtrees' momenta P̄ of v
  subtreeMomenta(model, data, v);
  const Data::Hdca& h = data.hdca;
  auto range = [&](int b, int e) {
    for (int i = b + 1; i < e + 1; ++i) {
      const int nv = model.nv_joint[i], iv = model.idx_v[i];
      // (77) about a fixed point: ṗ = τ + Hᵀ Q̄ + Ḣᵀ P̄, Ḣ = V ×ᵐ H (columnRate)
      for (int c = 0; c < nv; ++c) {
        const auto s = h.motion[i].col(c);
        const int d = iv + c;
        double rate = tau[d] - model.damping[d] * v[d] + s.dot(h.subtree_load[i]) +
                      columnRate(model, h, i, s).dot(h.momentum[i]);
        if (nv == 1 && model.stiffness[d] != 0.0)
          rate -= model.stiffness[d] * (q[model.idx_q[i]] - model.spring_reference[d]);
        p_dot[d] = rate;
      }
    }
  };
  forItems(data, model.nbodies - 1, range);
}

void hdcaImpulseRates(const Model& model, const Data& data,
                      const std::vector<Vector6>& subtree_impulse,
                      const std::vector<Vector6>& subtree_impulse_rate, Eigen::VectorXd& out) {
  const Data::Hdca& h = data.hdca;
  for (int i = 1; i < model.nbodies; ++i)
    for (int c = 0; c < model.nv_joint[i]; ++c) {
      const auto s = h.motion[i].col(c);
      out[model.idx_v[i] + c] =
          s.dot(subtree_impulse_rate[i]) + columnRate(model, h, i, s).dot(subtree_impulse[i]);
    }
}

void hdcaMomentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& p, const Eigen::VectorXd& tau, Eigen::VectorXd& v,
                       Eigen::VectorXd& p_dot) {
  hdcaAssemble(model, data, q);
  solveRefined<true>(model, data, p, v);
  hdcaMomentumRatesAt(model, data, q, v, tau, p_dot);
}

void hdcaMomenta(const Model& model, Data& data, const Eigen::VectorXd& q,
                 const Eigen::VectorXd& v, Eigen::VectorXd& p) {
  forwardKinematics(model, data, q, v);
  // h = Σ I V over each subtree, tips first; p = Hᵀ h + armature v
  for (int i = 1; i < model.nbodies; ++i)
    data.f_W[i] = model.inertias[i].transformed(data.X_WB[i]) * data.V_W[i];
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i], nv = model.nv_joint[i];
    p.segment(iv, nv).noalias() = data.S_W.middleCols(iv, nv).transpose() * data.f_W[i];
    p.segment(iv, nv) += model.armature.segment(iv, nv).cwiseProduct(v.segment(iv, nv));
    if (model.parent[i] > 0) data.f_W[model.parent[i]] += data.f_W[i];
  }
}

const Eigen::VectorXd& hdcaForwardDynamics(const Model& model, Data& data,
                                           const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                           const Eigen::VectorXd& tau) {
  // τ − C v − g − d v − k (q − q_ref) is M q̈: phase 1 turns it into q̈ as it turns p into v
  const Eigen::VectorXd& bias = nonLinearEffects(model, data, q, v);
  data.hdca.rhs = tau - bias;
  hdcaAssembleAtKinematics(model, data);
  hdcaVelocities(model, data, data.hdca.rhs, data.qdd);
  return data.qdd;
}

void hdcaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  for (int c = 0; c < X.cols(); ++c) hdcaVelocities(model, data, X.col(c), X.col(c));
}

}  // namespace hilsim
