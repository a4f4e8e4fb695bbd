#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

// flexibleAba's sweeps on a generalized force x alone (b_m, a_m, K η and gravity zero): what
// stays of (7.10)–(7.12) is linear in x, and the operators it applies (D⁻¹, G, D_f⁻¹, g) are
// those flexibleAba factored at this q. One column at a time: the modal blocks differ in size
// from body to body, and the rows (limits, joint friction) are a few.
void flexibleAbaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  assert(X.rows() == model.nv);
  assert(model.nalgebraic == 0);
  assert(static_cast<int>(data.minv_z.size()) == model.nbodies);  // a constraint stage's Data
  Data::Flexible& flex = data.flex;
  for (Eigen::Index c = 0; c < X.cols(); ++c) {
    auto x = X.col(c);
    for (int i = 1; i < model.nbodies; ++i) {
      data.minv_z[i].col(0).setZero();
      if (model.nmodes[i] > 0) flex.minv_z_f[i].setZero();
    }

    // inward (7.10), (7.11): ε_f = x_f − z_f + Ψ_d* Z, ν_f = D_f⁻¹ ε_f, Z += g ε_f; then the
    // joint: ε = x − ℋ Z, ν = D⁻¹ ε, Z⁺ = Z + G ε, carried to the parent by 𝒜 = [Ψ_t*; 1]
    for (int i = model.nbodies - 1; i >= 1; --i) {
      const int iv = model.idx_v[i];
      const int n = model.nmodes[i];
      const int parent = model.parent[i];
      auto Z = data.minv_z[i].col(0);
      if (n > 0) {
        Eigen::VectorXd& eps = flex.f_f[i];
        auto x_f = x.segment(model.idxModesV(i), n);
        eps = x_f - flex.minv_z_f[i];
        if (model.flexible[i].hinge_node >= 0) eps.noalias() += flex.Psi_d_W[i].transpose() * Z;
        x_f = eps;
        flex.D_f[i].solveInPlace(x_f);  // ν_f, read outward
        Z.noalias() += flex.g_W[i] * eps;
      }
      detail::withJointSize(model.nv_joint[i], [&](auto nj) {
        constexpr int NV = decltype(nj)::value;
        const auto S = data.S_W.middleCols<NV>(iv);
        const auto G = data.G_W.middleCols<NV>(iv);
        Eigen::Matrix<double, NV, 1> epsilon = x.segment<NV>(iv);
        epsilon.noalias() -= S.transpose() * Z;
        x.segment<NV>(iv).noalias() = data.D_inv[i].topLeftCorner<NV, NV>() * epsilon;  // ν
        Z.noalias() += G * epsilon;
      });
      if (parent > 0) {
        data.minv_z[parent].col(0) += Z;
        if (model.parent_node[i] >= 0)
          flex.minv_z_f[parent].noalias() += flex.Psi_t_W[i].transpose() * Z;
      }
    }

    // outward (7.12): α⁺ = 𝒜* α(λ), β̇ = ν − G* α⁺, α = α⁺ + ℋ* β̇, η̈ = ν_f − g* α,
    // α −= Ψ_d η̈
    for (int i = 1; i < model.nbodies; ++i) {
      const int iv = model.idx_v[i];
      const int n = model.nmodes[i];
      const int parent = model.parent[i];
      Vector6 alpha_plus = Vector6::Zero();
      if (parent > 0) alpha_plus = data.minv_a[parent].col(0);
      if (model.parent_node[i] >= 0)
        alpha_plus.noalias() +=
            flex.Psi_t_W[i] * x.segment(model.idxModesV(parent), model.nmodes[parent]);
      auto alpha = data.minv_a[i].col(0);
      detail::withJointSize(model.nv_joint[i], [&](auto nj) {
        constexpr int NV = decltype(nj)::value;
        auto rate = x.segment<NV>(iv);
        rate.noalias() -= data.G_W.middleCols<NV>(iv).transpose() * alpha_plus;
        alpha = alpha_plus;
        alpha.noalias() += data.S_W.middleCols<NV>(iv) * rate;
      });
      if (n > 0) {
        auto eta_dd = x.segment(model.idxModesV(i), n);
        eta_dd.noalias() -= flex.g_W[i].transpose() * alpha;
        if (model.flexible[i].hinge_node >= 0) alpha.noalias() -= flex.Psi_d_W[i] * eta_dd;
      }
    }
  }
}

}  // namespace hilsim
