#include "engine/algorithms/aba.h"

#include <Eigen/Cholesky>

#include "engine/algorithms/aba_steps.h"
#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/floating_root.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// A free joint on the world without armature (floating_root.h): its motion subspace S is square
// and invertible, so the last step of the recursion collapses to the floating-base form of RBDA
// §9.4. With G = P S D⁻¹ and D = Sᵀ P S, (7.2)–(7.3) give α(k) = P⁻¹ (S⁻ᵀ T − z) with z taken
// before adding P a_m (Newton–Euler for the articulated body), and χ̇ = S⁻¹ (α − a_m − α⁺): one
// 6×6 Cholesky solve instead of forming and inverting D.
using detail::isFloatingRoot;

void floatingRootAcceleration(const Model& model, Data& data, int i, const Eigen::VectorXd& v,
                              const Eigen::VectorXd& tau) {
  const int iv = model.idx_v[i];
  const Transform& X_WJ = data.X_WJ[i];
  const Matrix3& R_WB = data.X_WB[i].rotation;
  const Vector3& p_WB = data.X_WB[i].translation;
  // T = τ − d v; S⁻ᵀ T is the wrench of the generalized forces: a force along J's axes at B's
  // origin and a torque about B's axes
  Vector6 T = tau.segment<6>(iv) - model.damping.segment<6>(iv).cwiseProduct(v.segment<6>(iv));
  ForceVector f_W;
  f_W.tail<3>().noalias() = X_WJ.rotation * T.head<3>();
  f_W.head<3>().noalias() = R_WB * T.tail<3>();
  f_W.head<3>() += p_WB.cross(f_W.tail<3>());
  // α = P⁻¹ (S⁻ᵀ T − z)
  const Eigen::LLT<Matrix6> llt(data.P_W[i]);
  MotionVector& alpha = data.A_W[i];
  alpha = llt.solve(f_W - data.z_W[i]);
  data.D_inv[i] = llt.matrixLLT();  // P's factor L (lower triangle), for M⁻¹ products after aba()
  // χ̇ = S⁻¹ (α − a_m − α⁺): S m = [R_WB ω_B; R_WJ v_lin + p_WB × R_WB ω_B]
  const MotionVector m = alpha - data.c_W[i] - data.A_W[model.parent[i]];
  data.qdd.segment<3>(iv + 3).noalias() = R_WB.transpose() * m.head<3>();
  data.qdd.segment<3>(iv).noalias() =
      X_WJ.rotation.transpose() * (m.tail<3>() - p_WB.cross(m.head<3>()));
}

// The 4-wide steps (aba_steps.h) where the build targets AVX2 and the joint is one they cover.
inline void outwardStep(const Model& model, Data& data, int i, const double* q, const double* v) {
#ifdef HILSIM_HAVE_ABA_STEPS_AVX2
  const JointType type = model.joint_type[i];
  if (type == JointType::kRevolute || type == JointType::kPrismatic) {
    detail::abaOutwardStepAxialAvx2(model, data, i, q, v);
    return;
  }
#endif
  detail::abaOutwardStep(model, data, i, q, v);
}

inline void inwardStep(const Model& model, Data& data, int i, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
#ifdef HILSIM_HAVE_ABA_STEPS_AVX2
  if (model.nv_joint[i] == 1 && model.joint_rank[i] == 1) {
    detail::abaInwardStepOneDofAvx2(model, data, i, q.data(), v.data(), tau.data());
    return;
  }
#endif
  detail::abaInwardStep(model, data, i, q.data(), v, tau);
}

}  // namespace

const Eigen::VectorXd& aba(const Model& model, Data& data, const Eigen::VectorXd& q,
                           const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                           std::span<const ForceVector> f_ext_B,
                           std::span<const NodalForce> nodal_forces) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(f_ext_B.empty() || static_cast<int>(f_ext_B.size()) == model.nbodies);
  if (model.has_flexible_bodies) return flexibleAba(model, data, q, v, tau, f_ext_B, nodal_forces);
  assert(nodal_forces.empty());

  // outward sweep: kinematics, a_m(k) = c_W, and start P(k) = M(k), z(k) = b_m(k) − f_ext
  data.V_W[0].setZero();
  data.A_W[0] = detail::baseAccelerationForGravity(model);
  for (int i = 1; i < model.nbodies; ++i) {
    outwardStep(model, data, i, q.data(), v.data());
    if (!f_ext_B.empty()) {
      ForceVector f_ext_W;
      data.X_WB[i].actForce(f_ext_B[i], f_ext_W);
      data.z_W[i] -= f_ext_W;
    }
  }

  // inward sweep (6.1) and the filter of (7.2), tips → base. P(k) and z(k) already hold the
  // children's P⁺ and z⁺ (Φ = I in W).
  for (int i = model.nbodies - 1; i >= 1; --i) {
    if (isFloatingRoot(model, i))
      floatingRootAcceleration(model, data, i, v, tau);
    else
      inwardStep(model, data, i, q, v, tau);
  }

  // outward sweep (7.3), base → tips: α⁺(k) = α(λ), χ̇ = ν − G* α⁺, α(k) = α⁺ + ℋ* χ̇ + a_m(k)
  for (int i = 1; i < model.nbodies; ++i) {
    if (isFloatingRoot(model, i)) continue;  // A_W[i] and q̈ came out of the inward sweep
    const int iv = model.idx_v[i];
    const MotionVector& alpha_plus = data.A_W[model.parent[i]];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      auto qdd = data.qdd.segment<NV>(iv);
      qdd = data.nu.segment<NV>(iv);
      qdd.noalias() -= data.G_W.middleCols<NV>(iv).transpose() * alpha_plus;
      data.A_W[i] = alpha_plus + data.c_W[i];
      data.A_W[i].noalias() += data.S_W.middleCols<NV>(iv) * qdd;
    });
  }
  return data.qdd;
}

}  // namespace hilsim
