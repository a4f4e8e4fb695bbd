#include "engine/algorithms/riccati_transfer.h"

#include <cmath>

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// Blocks of a 6 × 6 Riccati matrix S (rows m, q; columns r̈, Ω̇) and of 6-vectors z_a = (m, q),
// z_b = (r̈, Ω̇): the first three entries and the last three.

// The Riccati matrix S (rows m, q; columns r̈, Ω̇) is kept as K = Πᵀ S, with Πᵀ [m; q] =
// [−q; m]: K is the articulated inertia at the point in the order (linear, angular), symmetric.
// The joint's power pairing is then a plain transpose (on the tip-side element at its output act
// the moment m and the force −q, whose power on a twist t = (v, ω) is m·ω − q·v = (Πᵀ z_a)ᵀ t),
// the body's shift a congruence Φᵀ K Φ, the hinge's update a symmetric one: the recursion keeps
// the symmetry that stops round-off from growing along a chain (docs/RICCATI.md, "Round-off").
inline Vector6 unpairing(const Vector6& x) {  // Π x, the inverse of Πᵀ
  Vector6 out;
  out.head<3>() = x.tail<3>();
  out.tail<3>() = -x.head<3>();
  return out;
}

// The body's own term of its output relation at its origin O (docs/RICCATI.md, "Body"):
// Newton–Euler about O with r = r_OC, J_O the rotational inertia about O, f_C = m g the gravity
// force at C:
//   m_O = J_O Ω̇ + m r̃ r̈_O + Ω̃ J_O Ω − r̃ f_C,   q_O = −m r̈_O + m r̃ Ω̇ + f_C − m Ω̃ Ω̃ r,
// i.e. S = [m r̃  J_O; −m I  m r̃] and K = Πᵀ S = [m I  −m r̃; m r̃  J_O]. From the body's inertia
// in its own frame and its pose (r = R_WB c_B, J_C = R_WB J_B R_WBᵀ): nothing of it is stored
// between the sweeps. Written into P_W[i] and z_W[i].
void bodyTerm(const Model& model, Data& data, int i) {
  const Inertia& I_B = model.inertias[i];
  const Matrix3& R = data.X_WB[i].rotation;
  const double m = I_B.mass;
  const Vector3 r = R * I_B.com;
  const Matrix3 r_skew = skew(r);
  Matrix3 J_O;
  J_O.noalias() = R * I_B.inertia_com * R.transpose();
  J_O.diagonal().array() += m * r.squaredNorm();
  J_O.noalias() -= m * r * r.transpose();
  Matrix6& K = data.P_W[i];
  K.topLeftCorner<3, 3>() = m * Matrix3::Identity();
  K.topRightCorner<3, 3>() = -m * r_skew;
  K.bottomLeftCorner<3, 3>() = m * r_skew;
  K.bottomRightCorner<3, 3>() = J_O;
  const Vector3 omega = data.V_W[i].head<3>();
  const Vector3 f_C = m * model.gravity;
  data.z_W[i].head<3>() = omega.cross(J_O * omega) - r.cross(f_C);
  data.z_W[i].tail<3>() = f_C - m * omega.cross(omega.cross(r));
}

// Classical acceleration (r̈ at p, Ω̇) of a body with spatial velocity V and spatial acceleration
// A (in W about its origin): r̈_p = a + Ω̇ × p + ω × v_p (RBDA eq. 2.47).
inline Vector6 pointAcceleration(const MotionVector& V, const MotionVector& A, const Vector3& p) {
  Vector6 b;
  const Vector3 v_p = V.tail<3>() + V.head<3>().cross(p);
  b.head<3>() = A.tail<3>() + A.head<3>().cross(p) + V.head<3>().cross(v_p);
  b.tail<3>() = A.head<3>();
  return b;
}

// The spatial acceleration A (in W about its origin) of a body with spatial velocity V from
// its (r̈, Ω̇) = (b_1, b_2) at the point p: a_O = r̈ − Ω̇ × p − ω × v_p (the inverse of
// pointAcceleration).
template <typename B1, typename B2>
inline void spatialAcceleration(const MotionVector& V, const Vector3& p, const B1& b_1,
                                const B2& b_2, MotionVector& A) {
  const Vector3 v_p = V.tail<3>() + V.head<3>().cross(p);
  A.head<3>() = b_2;
  A.tail<3>() = b_1 - b_2.cross(p) - V.head<3>().cross(v_p);
}

// Six-vectors and 6 × 6 blocks are read and written here by their 3-row halves: a 6-vector put
// together from two halves and read back whole spans two stores the processor cannot forward
// to the load (it waits for them to reach the cache), a stall on every step of the recursion.

// The joint's motion subspace at the connection point p in the order (r̈, Ω̇), by halves: a
// column [ω_s; v_s] of S_W (about W's origin) moves the point p by v_s + ω_s × p.
template <int NV>
struct SubspaceAtPoint {
  Eigen::Matrix<double, 3, NV> linear, angular;  // the r̈ and Ω̇ rows
  SubspaceAtPoint(const Data& data, int iv, const Vector3& p) {
    for (int j = 0; j < NV; ++j) {
      const auto s = data.S_W.col(iv + j);
      angular.col(j) = s.template head<3>();
      linear.col(j) = s.template tail<3>() + s.template head<3>().cross(p);
    }
  }
};

// The joint's bias κ at p: (r̈, Ω̇) of the child minus those of the parent's point at p at
// q̈ = 0, from the relative twist t = Ŝ q̇ = (v_rel, ω_rel) at p. Every joint's subspace is
// fixed in the parent's frame as seen from p (revolute, prismatic, planar), or turns with the
// child about p (spherical: ω_rel = R_WC w, whose rate ω_c × ω_rel is ω_λ × ω_rel), or hangs from
// the world at rest (free): κ = [2 ω_λ × v_rel; ω_λ × ω_rel], the Coriolis and transport terms.
// Local: no lever arm to W's origin enters. ω_λ: the parent's angular velocity (zero for W).
struct JointBias {
  Vector3 linear, angular;  // the r̈ and Ω̇ parts
};
template <int NV>
inline JointBias jointBias(const SubspaceAtPoint<NV>& S_hat,
                           const Eigen::Matrix<double, NV, 1>& rates, const Vector3& omega) {
  return {2.0 * omega.cross(S_hat.linear * rates), omega.cross(S_hat.angular * rates)};
}

// D = L Lᵀ for a joint's small SPD D (N ≤ 6), with L⁻¹ and L⁻ᵀ applied to fixed-size columns
// by substitution: Eigen's LLT solves dispatch fixed sizes to its blocked dynamic kernels, which
// cost more than the arithmetic here. 1/L(j, j) kept: multiplications in the chains.
template <int N>
struct SmallCholesky {
  Eigen::Matrix<double, N, N> L;
  Eigen::Matrix<double, N, 1> inverse_diagonal;

  explicit SmallCholesky(const Eigen::Matrix<double, N, N>& D) {
    for (int j = 0; j < N; ++j) {
      double d = D(j, j);
      for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
      L(j, j) = std::sqrt(d);
      inverse_diagonal(j) = 1.0 / L(j, j);
      for (int i = j + 1; i < N; ++i) {
        double sum = D(i, j);
        for (int k = 0; k < j; ++k) sum -= L(i, k) * L(j, k);
        L(i, j) = sum * inverse_diagonal(j);
      }
    }
  }
  template <int C>
  void solveLower(Eigen::Matrix<double, N, C>& X) const {  // X ← L⁻¹ X
    for (int i = 0; i < N; ++i) {
      for (int k = 0; k < i; ++k) X.row(i) -= L(i, k) * X.row(k);
      X.row(i) *= inverse_diagonal(i);
    }
  }
  template <int C>
  void solveUpper(Eigen::Matrix<double, N, C>& X) const {  // X ← L⁻ᵀ X
    for (int i = N - 1; i >= 0; --i) {
      for (int k = i + 1; k < N; ++k) X.row(i) -= L(k, i) * X.row(k);
      X.row(i) *= inverse_diagonal(i);
    }
  }
};

// Hinge step (docs/RICCATI.md, "Hinge"): from the child's output relation a = S_c b_c + e_c at
// p, the joint b_c = b_p + Ŝ q̈ + κ and its equation Ŝᵀ Πᵀ a = τ − d v − k (q − q₀) − A q̈, the
// parent-side relation a = S b_p + e at the same point. With K = Πᵀ S:
//   D = Ŝᵀ K_c Ŝ + A,  V = Ŝᵀ K_c,  G = D⁻¹ V,  ν = D⁻¹ (τ' − Ŝᵀ Πᵀ e'),  e' = e_c + Π K_c κ,
//   K = K_c − Vᵀ D⁻¹ V,  e = e' + Π Vᵀ ν,  and back: q̈ = ν − G b_p.
// K_c and e_c arrive in P_W[i], z_W[i] and leave replaced by K and e; G (transposed) goes to
// G_W, ν to nu (κ is formed again on the way back). Π x = [x₂; −x₁] and Πᵀ x = [−x₂; x₁] on the
// halves x₁, x₂.
template <int NV>
void hingeStep(const Model& model, Data& data, int i, const Vector3& p, const double* q,
               const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  using MatrixNV = Eigen::Matrix<double, NV, NV>;
  using VectorNV = Eigen::Matrix<double, NV, 1>;
  const int iv = model.idx_v[i];
  Matrix6& K = data.P_W[i];
  auto e_1 = data.z_W[i].head<3>();
  auto e_2 = data.z_W[i].tail<3>();
  const SubspaceAtPoint<NV> S_hat(data, iv, p);
  const VectorNV rates = v.template segment<NV>(iv);
  const JointBias kappa = jointBias<NV>(S_hat, rates, data.V_W[model.parent[i]].head<3>());
  // e' = e_c + Π K κ
  e_1.noalias() += K.bottomLeftCorner<3, 3>() * kappa.linear;
  e_1.noalias() += K.bottomRightCorner<3, 3>() * kappa.angular;
  e_2.noalias() -= K.topLeftCorner<3, 3>() * kappa.linear;
  e_2.noalias() -= K.topRightCorner<3, 3>() * kappa.angular;
  Eigen::Matrix<double, NV, 6> V;
  V.noalias() = S_hat.linear.transpose() * K.topRows<3>();
  V.noalias() += S_hat.angular.transpose() * K.bottomRows<3>();
  // the joint's parameters: a one-dof joint's from their packed copy (one stream, where a long
  // system waits on memory); a larger joint's by vector operations on the per-dof arrays
  MatrixNV D;
  VectorNV epsilon;
  if constexpr (NV == 1) {
    const Model::DofParameters& joint = model.dof_parameters[iv];
    D(0, 0) = joint.armature;
    epsilon(0) = tau[iv] - joint.damping * rates(0) -
                 joint.stiffness * (q[model.idx_q[i]] - joint.spring_reference);
  } else {
    D = model.armature.template segment<NV>(iv).asDiagonal();
    epsilon = tau.template segment<NV>(iv) -
              model.damping.template segment<NV>(iv).cwiseProduct(rates);
  }
  D.noalias() += V.template leftCols<3>() * S_hat.linear;
  D.noalias() += V.template rightCols<3>() * S_hat.angular;
  // − Ŝᵀ Πᵀ e'
  epsilon.noalias() += S_hat.linear.transpose() * e_2;
  epsilon.noalias() -= S_hat.angular.transpose() * e_1;
  // K −= Vᵀ D⁻¹ V as Wᵀ W with W = L⁻¹ V, D = L Lᵀ (D > 0: no massless bodies): symmetric bit
  // for bit (each entry the same sum in the same order), with no extra product
  Eigen::Matrix<double, NV, 6> G;
  VectorNV nu;
  if constexpr (NV == 1) {
    const double D_inv = 1.0 / D(0, 0);
    G = D_inv * V;
    nu = D_inv * epsilon;
    const Vector6 w = std::sqrt(D_inv) * V.transpose();
    K.noalias() -= w * w.transpose();
  } else {
    const SmallCholesky<NV> cholesky(D);  // D is SPD (the joint's articulated inertia)
    Eigen::Matrix<double, NV, 6> W = V;
    cholesky.solveLower(W);
    G = W;
    cholesky.solveUpper(G);
    nu = epsilon;
    cholesky.solveLower(nu);
    cholesky.solveUpper(nu);
    K.noalias() -= W.transpose() * W;
  }
  // e = e' + Π Vᵀ ν
  e_1.noalias() += V.template rightCols<3>().transpose() * nu;
  e_2.noalias() -= V.template leftCols<3>().transpose() * nu;
  data.G_W.template middleCols<NV>(iv) = G.transpose();
  data.nu.template segment<NV>(iv) = nu;
}

// The hinge step of a revolute joint: at its own point its subspace is Ŝ = [0; a] (a turn about
// an axis through p moves p not at all), so its bias is κ = [0; ω_λ × a q̇] and every product
// with Ŝ reads the angular rows alone: the step above with the zero blocks left out.
void hingeStepRevolute(const Model& model, Data& data, int i, const double* q,
                       const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  const int iv = model.idx_v[i];
  Matrix6& K = data.P_W[i];
  auto e_1 = data.z_W[i].head<3>();
  auto e_2 = data.z_W[i].tail<3>();
  const Vector3 a = data.S_W.col(iv).head<3>();
  const double rate = v[iv];
  const Vector3 kappa = data.V_W[model.parent[i]].head<3>().cross(a * rate);
  // e' = e_c + Π K κ
  e_1.noalias() += K.bottomRightCorner<3, 3>() * kappa;
  e_2.noalias() -= K.topRightCorner<3, 3>() * kappa;
  // V = Ŝᵀ K = aᵀ [K₂₁ K₂₂]
  Eigen::Matrix<double, 1, 6> V;
  V.noalias() = a.transpose() * K.bottomRows<3>();
  const Model::DofParameters& joint = model.dof_parameters[iv];
  const double D = joint.armature + V.rightCols<3>().dot(a);
  // ε = τ − d v − k (q − q₀) − Ŝᵀ Πᵀ e'
  const double epsilon = tau[iv] - joint.damping * rate -
                         joint.stiffness * (q[model.idx_q[i]] - joint.spring_reference) -
                         a.dot(e_1);
  const double D_inv = 1.0 / D;
  const Eigen::Matrix<double, 1, 6> G = D_inv * V;
  const double nu = D_inv * epsilon;
  const Vector6 w = std::sqrt(D_inv) * V.transpose();
  K.noalias() -= w * w.transpose();
  // e = e' + Π Vᵀ ν
  e_1.noalias() += V.rightCols<3>().transpose() * nu;
  e_2.noalias() -= V.leftCols<3>().transpose() * nu;
  data.G_W.col(iv) = G.transpose();
  data.nu(iv) = nu;
}

// Adds the parent-side relation of child i at p (K, e in P_W[i], z_W[i]) to its parent's output
// relation at O: with r = p − O, the geometric equation b_p = Φ b_O + β (Φ = [I −r̃; 0 I],
// β = [ω × (ω × r); 0]) and the moment of the input about O (Ψ = [I −r̃; 0 I] on (m, q)):
// S_O += Ψ S Φ, i.e. K_O += Φᵀ K Φ (Πᵀ Ψ Π = Φᵀ), and e_O += Ψ (S β + e).
void addToParent(Data& data, int i, int parent, const Vector3& p, const Vector3& O) {
  const Matrix6& K = data.P_W[i];
  const Vector3 r = p - O;
  const Matrix3 r_skew = skew(r);
  const Vector3 omega = data.V_W[parent].head<3>();
  // Φᵀ K Φ by blocks: K11 stays, K12 − K11 r̃, and K22 − K21 r̃ + r̃ (K12 − K11 r̃)
  const auto K11 = K.topLeftCorner<3, 3>();
  const auto K12 = K.topRightCorner<3, 3>();
  const auto K21 = K.bottomLeftCorner<3, 3>();
  Matrix3 X = K12;
  X.noalias() -= K11 * r_skew;
  Matrix3 Y = K.bottomRightCorner<3, 3>();
  Y.noalias() -= K21 * r_skew;
  Y.noalias() += r_skew * X;
  Matrix6& K_O = data.P_W[parent];
  K_O.topLeftCorner<3, 3>() += K11;
  K_O.topRightCorner<3, 3>() += X;
  K_O.bottomLeftCorner<3, 3>() += X.transpose();
  K_O.bottomRightCorner<3, 3>() += 0.5 * (Y + Y.transpose());
  // e_O += Ψ (S β + e) with S β = Π K [β₁; 0], β₁ = ω × (ω × r): a = e + [K₂₁ β₁; −K₁₁ β₁]
  const Vector3 beta = omega.cross(omega.cross(r));
  Vector3 a_1 = data.z_W[i].head<3>(), a_2 = data.z_W[i].tail<3>();
  a_1.noalias() += K21 * beta;
  a_2.noalias() -= K11 * beta;
  Vector6& e_O = data.z_W[parent];
  e_O.head<3>() += a_1 - r.cross(a_2);
  e_O.tail<3>() += a_2;
}

}  // namespace

const Eigen::VectorXd& riccatiTransferForwardDynamics(const Model& model, Data& data,
                                                      const Eigen::VectorXd& q,
                                                      const Eigen::VectorXd& v,
                                                      const Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  // (A1) the elements' kinematics: poses, motion subspaces and velocities (V = V_λ + S v)
  data.V_W[0].setZero();
  MotionVector joint_velocity = MotionVector::Zero();
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep</*kJointFrame=*/false>(model, data, i, q.data());
    detail::jointVelocityStep</*kVelocityProducts=*/false>(model, data, i, q.data(), v.data(),
                                                           joint_velocity);
  }
  // (A2)–(A3), (B2)–(B3): tips to root. A body's relation at its connection point (its origin,
  // where its joint holds it) is its own term (formed here, not in the first sweep: on a long
  // system the 6 × 6 relations then pass through memory once) plus its children's, each shifted
  // from the child's point to it; a free tip's is its body term alone (S = 0, e = 0 at its inputs,
  // eq. 34). The bodies are in depth-first order (ModelBuilder: every subtree contiguous), so
  // going down the indices, a body's children are the last ones left on the stack of finished
  // relations when it is reached: each is shifted at its parent's turn, while the child's
  // relation, finished a subtree ago, is still in the caches, and the parent's is at hand.
  int pending = 0;
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const Vector3& p = data.X_WB[i].translation;
    bodyTerm(model, data, i);
    while (pending > 0 && model.parent[data.pending[pending - 1]] == i) {
      const int child = data.pending[--pending];
      addToParent(data, child, i, data.X_WB[child].translation, p);
    }
    if (model.joint_type[i] == JointType::kRevolute) {
      hingeStepRevolute(model, data, i, q.data(), v, tau);
    } else {
      detail::withJointSize(model.nv_joint[i], [&](auto n) {
        hingeStep<decltype(n)::value>(model, data, i, p, q.data(), v, tau);
      });
    }
    data.pending[pending++] = i;
  }
#ifndef NDEBUG
  for (int k = 0; k < pending; ++k) assert(model.parent[data.pending[k]] == 0);  // none left over
#endif
  // (A4)–(A5), (B4): root to tips. The world is at rest (gravity acts as a force on each body),
  // so a root joint's q̈ is ν; every other joint reads its parent's (r̈, Ω̇) at its point by the
  // geometric equation from the parent's own point, b_λ = Φ b_O + β. Each body's (r̈, Ω̇) at its
  // origin is kept in f_W for its children, and its spatial acceleration written to A_W beside
  // it: point to point, the accelerations passed on never go through W's origin, whose lever
  // arms would cost digits on a long chain far from it.
  for (int i = 1; i < model.nbodies; ++i) {
    const int parent = model.parent[i];
    const int iv = model.idx_v[i];
    const Vector3& p = data.X_WB[i].translation;
    Vector3 b_parent_1 = Vector3::Zero(), b_parent_2 = Vector3::Zero();  // (r̈, Ω̇)
    if (parent > 0) {
      const Vector6& b_O = data.f_W[parent];
      const Vector3 r = p - data.X_WB[parent].translation;
      const Vector3 omega = data.V_W[parent].head<3>();
      b_parent_2 = b_O.tail<3>();
      b_parent_1 = b_O.head<3>() + b_parent_2.cross(r) + omega.cross(omega.cross(r));
    }
    if (model.joint_type[i] == JointType::kRevolute) {  // Ŝ = [0; a], κ = [0; ω_λ × a q̇]
      const auto G = data.G_W.col(iv);
      const double qdd = data.nu(iv) - G.head<3>().dot(b_parent_1) - G.tail<3>().dot(b_parent_2);
      data.qdd(iv) = qdd;
      const Vector3 a = data.S_W.col(iv).head<3>();
      const Vector3 kappa = data.V_W[parent].head<3>().cross(a * v[iv]);
      const Vector3 b_2 = kappa + b_parent_2 + a * qdd;  // r̈ is the parent's at p
      data.f_W[i].head<3>() = b_parent_1;
      data.f_W[i].tail<3>() = b_2;
      spatialAcceleration(data.V_W[i], p, b_parent_1, b_2, data.A_W[i]);
      continue;
    }
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const auto G_transposed = data.G_W.middleCols<NV>(iv);
      auto qdd = data.qdd.segment<NV>(iv);
      qdd = data.nu.segment<NV>(iv);
      qdd.noalias() -= G_transposed.template topRows<3>().transpose() * b_parent_1;
      qdd.noalias() -= G_transposed.template bottomRows<3>().transpose() * b_parent_2;
      const SubspaceAtPoint<NV> S_hat(data, iv, p);
      // (r̈, Ω̇) at the origin: κ (as in the hinge step; cheaper to form again than to keep)
      // + b_λ + Ŝ q̈
      const Eigen::Matrix<double, NV, 1> rates = v.template segment<NV>(iv);
      const JointBias kappa = jointBias<NV>(S_hat, rates, data.V_W[parent].head<3>());
      auto b_1 = data.f_W[i].head<3>();
      auto b_2 = data.f_W[i].tail<3>();
      b_1 = kappa.linear;
      b_2 = kappa.angular;
      b_1 += b_parent_1;
      b_1.noalias() += S_hat.linear * qdd;
      b_2 += b_parent_2;
      b_2.noalias() += S_hat.angular * qdd;
      spatialAcceleration(data.V_W[i], p, b_1, b_2, data.A_W[i]);
    });
  }
  data.A_W[0].setZero();
  return data.qdd;
}

Eigen::Matrix<double, 12, 1> riccatiTransferState(const Model& model, const Data& data, int i) {
  const Vector3& p = data.X_WB[i].translation;
  const int parent = model.parent[i];
  Eigen::Matrix<double, 12, 1> z;
  z.head<6>() = pointAcceleration(data.V_W[i], data.A_W[i], p);
  // the joint's parent-side relation, left in P_W and z_W, at the parent's acceleration there
  z.tail<6>() = data.z_W[i] + unpairing(data.P_W[i] * pointAcceleration(data.V_W[parent],
                                                                           data.A_W[parent], p));
  return z;
}

}  // namespace hilsim
