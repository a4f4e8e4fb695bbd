#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/flexible_kinematics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

const Eigen::VectorXd& flexibleAba(const Model& model, Data& data, const Eigen::VectorXd& q,
                                   const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                                   std::span<const ForceVector> f_ext_B,
                                   std::span<const NodalForce> nodal_forces) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(f_ext_B.empty() || static_cast<int>(f_ext_B.size()) == model.nbodies);
  Data::Flexible& flex = data.flex;

  // outward sweep: kinematics, a_m(k) = c_W, and P(k) = M_m(k), z(k) = b_m(k) + K_m ϑ − f_ext
  data.V_W[0].setZero();
  data.A_W[0] = detail::baseAccelerationForGravity(model);
  for (int i = 1; i < model.nbodies; ++i) {
    detail::flexibleJointPositionStep(model, data, i, q.data());
    detail::flexibleJointVelocityStep(model, data, i, q.data(), v.data());
    detail::modalInertiaStep(model, data, i, q.data(), v.data(), data.z_W[i]);
    data.inertia_W[i].matrix(data.P_W[i]);
    if (model.nmodes[i] > 0) {
      flex.P_ff[i] = model.flexible[i].modal_mass;
      flex.P_rf_W[i] = flex.M_rf_W[i];
      flex.z_f[i] = flex.b_f[i];
    }
    if (!f_ext_B.empty()) {
      ForceVector f_ext_W;
      data.X_WB[i].actForce(f_ext_B[i], f_ext_W);
      data.z_W[i] -= f_ext_W;
    }
  }

  detail::applyNodalForces(model, data, q.data(), nodal_forces, data.z_W, flex.z_f);

  // inward sweep, tips → base: (7.10) and (7.11). P and z already hold the children's
  // 𝒜 P_R⁺ 𝒜* and 𝒜 z_R⁺.
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    const int n = model.nmodes[i];
    const int parent = model.parent[i];
    Matrix6& P = data.P_W[i];  // becomes P_R, then P_R⁺
    ForceVector& z = data.z_W[i];
    if (n > 0) {
      // modal step: D_f = ℋ_f P ℋ_f*, μ = [P^rf P^rr] ℋ_f*, ε_f = T_f − ℋ_f z, with
      // ℋ_f = [1, −Ψ_d*] (Ψ_d = 0 when the joint is at B's origin)
      const bool hinge = model.flexible[i].hinge_node >= 0;
      const Matrix6N& psi_d = flex.Psi_d_W[i];
      Matrix6N& mu = flex.mu_W[i];
      Eigen::MatrixXd& D_f = flex.scratch_nn[i];
      Eigen::VectorXd& eps = flex.f_f[i];
      mu = flex.P_rf_W[i];
      D_f = flex.P_ff[i];
      eps = tau.segment(model.idxModesV(i), n) - flex.z_f[i];
      if (hinge) {
        mu.noalias() -= P * psi_d;
        // D_f = P_ff − Ψ_dᵀ P_rf − P_rfᵀ Ψ_d + Ψ_dᵀ P Ψ_d = P_ff − Ψ_dᵀ P_rf − μᵀ Ψ_d
        D_f.noalias() -= psi_d.transpose() * flex.P_rf_W[i];
        D_f.noalias() -= mu.transpose() * psi_d;
        eps.noalias() += psi_d.transpose() * z;
      }
      Eigen::LLT<Eigen::MatrixXd>& llt = flex.D_f[i];
      llt.compute(D_f);
      // g = μ D_f⁻¹ (6 × n): gᵀ = D_f⁻¹ μᵀ
      Matrix6N& g = flex.g_W[i];
      g = mu;
      llt.solveInPlace(g.transpose());
      flex.nu_f[i] = eps;
      llt.solveInPlace(flex.nu_f[i]);                 // ν_f = D_f⁻¹ ε_f
      P.noalias() -= g * mu.transpose();               // P_R = P^rr − g μᵀ
      z.noalias() += g * eps;                          // z_R = z_r + g ε_f
    }
    z.noalias() += P * data.c_W[i];                    // Fix B: + P_R a_m (the notes' §7.5)
    // joint step: as the rigid algorithm, on P_R and z_R
    detail::withJointSize(model.nv_joint[i], [&](auto nj) {
      constexpr int NV = decltype(nj)::value;
      Eigen::Matrix<double, 6, NV> U;
      Eigen::Matrix<double, NV, 1> epsilon;
      detail::articulatedJointStep<NV>(model, data, i, P, z, q.data(), v, tau, U, epsilon);
      const auto G = data.G_W.middleCols<NV>(iv);
      z.noalias() += G * epsilon;                      // z_R⁺ = z_R + G ε
      P.noalias() -= G * U.transpose();                // P_R⁺ = τ̄ P_R
    });
    if (parent > 0) {
      // P(λ) += 𝒜 P_R⁺ 𝒜*, z(λ) += 𝒜 z_R⁺ with 𝒜 = [Ψ_t*; 1]
      data.P_W[parent] += P;
      data.z_W[parent] += z;
      if (model.parent_node[i] >= 0) {
        const Matrix6N& psi_t = flex.Psi_t_W[i];
        Matrix6N& p_psi = flex.scratch_6n[i];
        auto p_psi_n = p_psi.leftCols(psi_t.cols());
        p_psi_n.noalias() = P * psi_t;
        flex.P_rf_W[parent] += p_psi_n;
        flex.P_ff[parent].noalias() += psi_t.transpose() * p_psi_n;
        flex.z_f[parent].noalias() += psi_t.transpose() * z;
      }
    }
  }

  // outward sweep (7.12), base → tips: α_R⁺ = 𝒜* α_m(λ), β̇ = ν_R − G_R* α_R⁺,
  // α_R = α_R⁺ + H* β̇ + a_m, η̈ = ν_f − g* α_R, α = α_R − Ψ_d η̈
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    const int n = model.nmodes[i];
    const int parent = model.parent[i];
    MotionVector alpha_plus = data.A_W[parent];
    if (model.parent_node[i] >= 0)
      alpha_plus.noalias() += flex.Psi_t_W[i] * data.qdd.segment(model.idxModesV(parent),
                                                                  model.nmodes[parent]);
    MotionVector& A = data.A_W[i];
    detail::withJointSize(model.nv_joint[i], [&](auto nj) {
      constexpr int NV = decltype(nj)::value;
      auto qdd = data.qdd.segment<NV>(iv);
      qdd = data.nu.segment<NV>(iv);
      qdd.noalias() -= data.G_W.middleCols<NV>(iv).transpose() * alpha_plus;
      A = alpha_plus + data.c_W[i];
      A.noalias() += data.S_W.middleCols<NV>(iv) * qdd;
    });
    if (n > 0) {
      auto eta_dd = data.qdd.segment(model.idxModesV(i), n);
      eta_dd = flex.nu_f[i];
      eta_dd.noalias() -= flex.g_W[i].transpose() * A;
      if (model.flexible[i].hinge_node >= 0) A.noalias() -= flex.Psi_d_W[i] * eta_dd;
    }
  }
  return data.qdd;
}

}  // namespace hilsim
