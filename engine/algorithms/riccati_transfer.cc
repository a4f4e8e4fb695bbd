#include "engine/algorithms/riccati_transfer.h"

#include <Eigen/Cholesky>

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// Blocks of a 6 × 6 Riccati matrix S (rows m, q; columns r̈, Ω̇) and of 6-vectors z_a = (m, q),
// z_b = (r̈, Ω̇): the first three entries and the last three.

// Πᵀ S: the rows (m, q) as (−q, m). With it the joint's power pairing is a plain transpose:
// on the tip-side element at its output act the moment m and the force −q, whose power on a
// twist t = (v, ω) is m·ω − q·v = (Πᵀ z_a)ᵀ t.
inline Matrix6 pairing(const Matrix6& S) {
  Matrix6 out;
  out.topRows<3>() = -S.bottomRows<3>();
  out.bottomRows<3>() = S.topRows<3>();
  return out;
}
inline Vector6 pairing(const Vector6& a) {
  Vector6 out;
  out.head<3>() = -a.tail<3>();
  out.tail<3>() = a.head<3>();
  return out;
}

// The body's own term of its output relation at O (docs/RICCATI.md, "Body"): Newton–Euler about
// O with r = r_OC, J_O the rotational inertia about O, f_C = m g the gravity force at C:
//   m_O = J_O Ω̇ + m r̃ r̈_O + Ω̃ J_O Ω − r̃ f_C,   q_O = −m r̈_O + m r̃ Ω̇ + f_C − m Ω̃ Ω̃ r
void bodyTerm(const Model& model, const Data& data, int i, const Vector3& O, Matrix6& S,
              Vector6& e) {
  const Inertia& I = data.inertia_W[i];
  const double m = I.mass;
  const Vector3 r = I.com - O;
  const Matrix3 r_skew = skew(r);
  Matrix3 J_O = I.inertia_com;
  J_O.diagonal().array() += m * r.squaredNorm();
  J_O.noalias() -= m * r * r.transpose();
  S.topLeftCorner<3, 3>() = m * r_skew;
  S.topRightCorner<3, 3>() = J_O;
  S.bottomLeftCorner<3, 3>() = -m * Matrix3::Identity();
  S.bottomRightCorner<3, 3>() = m * r_skew;
  const Vector3 omega = data.V_W[i].head<3>();
  const Vector3 f_C = m * model.gravity;
  e.head<3>() = omega.cross(J_O * omega) - r.cross(f_C);
  e.tail<3>() = f_C - m * omega.cross(omega.cross(r));
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

// The inverse: the spatial acceleration of a body from (r̈_p, Ω̇) at its point p.
inline MotionVector spatialAcceleration(const MotionVector& V, const Vector6& b, const Vector3& p) {
  MotionVector A;
  const Vector3 v_p = V.tail<3>() + V.head<3>().cross(p);
  A.head<3>() = b.tail<3>();
  A.tail<3>() = b.head<3>() - b.tail<3>().cross(p) - V.head<3>().cross(v_p);
  return A;
}

// The joint's motion subspace at the connection point p in the order (r̈, Ω̇): a column
// [ω_s; v_s] of S_W (about W's origin) moves the point p by v_s + ω_s × p.
template <int NV>
inline Eigen::Matrix<double, 6, NV> subspaceAtPoint(const Data& data, int iv, const Vector3& p) {
  Eigen::Matrix<double, 6, NV> S_p;
  for (int j = 0; j < NV; ++j) {
    const auto s = data.S_W.col(iv + j);
    S_p.col(j).template head<3>() = s.template tail<3>() + s.template head<3>().cross(p);
    S_p.col(j).template tail<3>() = s.template head<3>();
  }
  return S_p;
}

// The joint's bias κ at p: (r̈, Ω̇) of the child minus those of the parent at p at q̈ = 0.
// With the relative spatial bias c_W of the joint: κ = [c_lin + c_ang × p + ω_c × v_c,p −
// ω_p × v_p,p; c_ang].
inline Vector6 jointBias(const Data& data, int i, int parent, const Vector3& p) {
  const MotionVector& c = data.c_W[i];
  const MotionVector& V_c = data.V_W[i];
  const MotionVector& V_p = data.V_W[parent];
  const Vector3 v_c = V_c.tail<3>() + V_c.head<3>().cross(p);
  const Vector3 v_p = V_p.tail<3>() + V_p.head<3>().cross(p);
  Vector6 kappa;
  kappa.head<3>() = c.tail<3>() + c.head<3>().cross(p) + V_c.head<3>().cross(v_c) -
                    V_p.head<3>().cross(v_p);
  kappa.tail<3>() = c.head<3>();
  return kappa;
}

// Hinge step (docs/RICCATI.md, "Hinge"): from the child's output relation a = S_c b_c + e_c at
// p, the joint b_c = b_p + Ŝ q̈ + κ and its equation Ŝᵀ Πᵀ a = τ − d v − k (q − q₀) − A q̈, the
// parent-side relation a = S b_p + e at the same point:
//   D = Ŝᵀ Πᵀ S_c Ŝ + A,  G = D⁻¹ Ŝᵀ Πᵀ S_c,  ν = D⁻¹ (τ' − Ŝᵀ Πᵀ e'),  e' = e_c + S_c κ,
//   S = S_c − S_c Ŝ G,  e = e' + S_c Ŝ ν,  and back: q̈ = ν − G b_p.
// S_c and e_c arrive in P_W[i], z_W[i] and leave replaced by S and e; G (transposed) goes to
// G_W, ν to nu, κ to f_W[i].
template <int NV>
void hingeStep(const Model& model, Data& data, int i, const Vector3& p, const double* q,
               const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  using MatrixNV = Eigen::Matrix<double, NV, NV>;
  using VectorNV = Eigen::Matrix<double, NV, 1>;
  const int iv = model.idx_v[i];
  Matrix6& S = data.P_W[i];
  Vector6& e = data.z_W[i];
  const Eigen::Matrix<double, 6, NV> S_hat = subspaceAtPoint<NV>(data, iv, p);
  const Vector6 kappa = jointBias(data, i, model.parent[i], p);
  data.f_W[i] = kappa;
  e.noalias() += S * kappa;  // e'
  const Eigen::Matrix<double, NV, 6> V = S_hat.transpose() * pairing(S);
  MatrixNV D = V * S_hat;
  D.diagonal() += model.armature.template segment<NV>(iv);
  VectorNV epsilon = tau.template segment<NV>(iv) -
                     model.damping.template segment<NV>(iv).cwiseProduct(v.template segment<NV>(iv));
  if constexpr (NV == 1)
    epsilon(0) -= model.stiffness[iv] * (q[model.idx_q[i]] - model.spring_reference[iv]);
  epsilon.noalias() -= S_hat.transpose() * pairing(e);
  Eigen::Matrix<double, NV, 6> G;
  VectorNV nu;
  if constexpr (NV == 1) {
    const double D_inv = 1.0 / D(0, 0);
    G = D_inv * V;
    nu = D_inv * epsilon;
  } else {
    const Eigen::LLT<MatrixNV> llt(D);  // D is SPD (the joint's articulated inertia)
    G = llt.solve(V);
    nu = llt.solve(epsilon);
  }
  const Eigen::Matrix<double, 6, NV> U = S * S_hat;
  S.noalias() -= U * G;
  e.noalias() += U * nu;
  data.G_W.template middleCols<NV>(iv) = G.transpose();
  data.nu.template segment<NV>(iv) = nu;
}

// Adds the parent-side relation of child i at p (S, e in P_W[i], z_W[i]) to its parent's output
// relation at O: with r = p − O, the geometric equation b_p = Φ b_O + β (Φ = [I −r̃; 0 I],
// β = [ω × (ω × r); 0]) and the moment of the input about O (Ψ = [I −r̃; 0 I] on (m, q)):
// S_O += Ψ S Φ, e_O += Ψ (S β + e).
void addToParent(Data& data, int i, int parent, const Vector3& p, const Vector3& O) {
  const Matrix6& S = data.P_W[i];
  const Vector3 r = p - O;
  const Matrix3 r_skew = skew(r);
  const Vector3 omega = data.V_W[parent].head<3>();
  // S Φ: the right block column gets −S_left r̃
  Matrix6 S_phi = S;
  S_phi.rightCols<3>().noalias() -= S.leftCols<3>() * r_skew;
  // Ψ (S Φ): the top block row gets −r̃ times the bottom one
  Matrix6& S_O = data.P_W[parent];
  S_O += S_phi;
  S_O.topRows<3>().noalias() -= r_skew * S_phi.bottomRows<3>();
  Vector6 a = data.z_W[i];
  a.noalias() += S.leftCols<3>() * omega.cross(omega.cross(r));
  Vector6& e_O = data.z_W[parent];
  e_O += a;
  e_O.head<3>() -= r.cross(a.tail<3>());
}

}  // namespace

const Eigen::VectorXd& riccatiTransferForwardDynamics(const Model& model, Data& data,
                                                      const Eigen::VectorXd& q,
                                                      const Eigen::VectorXd& v,
                                                      const Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  // (A1) the elements: kinematics, and each body's own term of its output relation at its
  // connection point (its origin, where its joint holds it)
  data.V_W[0].setZero();
  MotionVector joint_velocity;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    detail::bodyInertiaStep(model, data, i);
    bodyTerm(model, data, i, data.X_WB[i].translation, data.P_W[i], data.z_W[i]);
  }
  // (A2)–(A3), (B2)–(B3): tips to root. A body's relation is complete once every child has
  // added its own (children have higher indices); a free tip starts from its body term alone
  // (S = 0, e = 0 at its inputs, eq. 34).
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const Vector3& p = data.X_WB[i].translation;
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      hingeStep<decltype(n)::value>(model, data, i, p, q.data(), v, tau);
    });
    const int parent = model.parent[i];
    if (parent > 0) addToParent(data, i, parent, p, data.X_WB[parent].translation);
  }
  // (A4)–(A5), (B4): root to tips. The world is at rest (gravity acts as a force on each body),
  // so a root joint's q̈ is ν; every other joint reads its parent's acceleration at its point.
  data.A_W[0].setZero();
  for (int i = 1; i < model.nbodies; ++i) {
    const int parent = model.parent[i];
    const int iv = model.idx_v[i];
    const Vector3& p = data.X_WB[i].translation;
    const Vector6 b_parent = pointAcceleration(data.V_W[parent], data.A_W[parent], p);
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      auto qdd = data.qdd.segment<NV>(iv);
      qdd = data.nu.segment<NV>(iv);
      qdd.noalias() -= data.G_W.middleCols<NV>(iv).transpose() * b_parent;
      Vector6 b = b_parent + data.f_W[i];
      b.noalias() += subspaceAtPoint<NV>(data, iv, p) * qdd;
      data.A_W[i] = spatialAcceleration(data.V_W[i], b, p);
    });
  }
  return data.qdd;
}

Eigen::Matrix<double, 12, 1> riccatiTransferState(const Model& model, const Data& data, int i) {
  const Vector3& p = data.X_WB[i].translation;
  const int parent = model.parent[i];
  Eigen::Matrix<double, 12, 1> z;
  z.head<6>() = pointAcceleration(data.V_W[i], data.A_W[i], p);
  // the joint's parent-side relation, left in P_W and z_W, at the parent's acceleration there
  z.tail<6>() = data.z_W[i];
  z.tail<6>().noalias() += data.P_W[i] * pointAcceleration(data.V_W[parent], data.A_W[parent], p);
  return z;
}

}  // namespace hilsim
