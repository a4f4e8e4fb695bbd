#include "engine/algorithms/aba.h"

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

const Eigen::VectorXd& aba(const Model& model, Data& data, const Eigen::VectorXd& q,
                           const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                           std::span<const ForceVector> f_ext_B) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(f_ext_B.empty() || static_cast<int>(f_ext_B.size()) == model.nbodies);

  // outward sweep: kinematics, a_m(k) = c_W, and start P(k) = M(k), z(k) = b_m(k) − f_ext
  data.V_W[0].setZero();
  MotionVector joint_velocity;
  ForceVector momentum;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    detail::bodyInertiaStep(model, data, i);
    const Inertia& I = data.inertia_W[i];
    I.matrix(data.P_W[i]);
    I.apply(data.V_W[i], momentum);
    crossForce(data.V_W[i], momentum, data.z_W[i]);  // b_m(k) = V ×* M V
    if (!f_ext_B.empty()) {
      ForceVector f_ext_W;
      data.X_WB[i].actForce(f_ext_B[i], f_ext_W);
      data.z_W[i] -= f_ext_W;
    }
  }

  // inward sweep (6.1) and the filter of (7.2), tips → base. P(k) and z(k) already hold the
  // children's P⁺ and z⁺ (Φ = I in W).
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    const int parent = model.parent[i];
    Matrix6& P = data.P_W[i];
    ForceVector& z = data.z_W[i];
    z.noalias() += P * data.c_W[i];  // z(k) = Φ z⁺(k−1) + P(k) a_m(k) + b_m(k)
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using MatrixNV = Eigen::Matrix<double, NV, NV>;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const auto S = data.S_W.middleCols<NV>(iv);
      Eigen::Matrix<double, 6, NV> U;
      U.noalias() = P * S;                                          // P ℋ*
      MatrixNV D;
      D.noalias() = S.transpose() * U;                              // D(k) = ℋ P ℋ*
      D.diagonal() += model.armature.segment<NV>(iv);
      auto D_inv = data.D_inv[i].topLeftCorner<NV, NV>();
      if constexpr (NV == 1) {
        D_inv(0, 0) = 1.0 / D(0, 0);
      } else {
        D_inv = D.inverse();  // D is SPD and at most 6 × 6
      }
      auto G = data.G_W.middleCols<NV>(iv);
      G.noalias() = U * D_inv;                                      // G(k) = P ℋ* D⁻¹
      // ε(k) = T(k) − ℋ(k) z(k), with the damping force part of T
      VectorNV epsilon = tau.segment<NV>(iv) - model.damping.segment<NV>(iv).cwiseProduct(
                                                   v.segment<NV>(iv));
      epsilon.noalias() -= S.transpose() * z;
      data.nu.segment<NV>(iv).noalias() = D_inv * epsilon;          // ν(k) = D⁻¹ ε
      if (parent > 0) {
        // z⁺(k) = z + G ε and P⁺(k) = τ̄ P = P − G ℋ P, accumulated straight into the parent
        ForceVector& z_parent = data.z_W[parent];
        z_parent += z;
        z_parent.noalias() += G * epsilon;
        Matrix6& P_parent = data.P_W[parent];
        P_parent += P;
        P_parent.noalias() -= G * U.transpose();
      }
    });
  }

  // outward sweep (7.3), base → tips: α⁺(k) = α(λ), χ̇ = ν − G* α⁺, α(k) = α⁺ + ℋ* χ̇ + a_m(k)
  data.A_W[0] = detail::baseAccelerationForGravity(model);
  for (int i = 1; i < model.nbodies; ++i) {
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
