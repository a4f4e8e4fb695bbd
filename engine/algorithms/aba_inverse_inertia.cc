#include "engine/algorithms/aba_inverse_inertia.h"

#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/floating_root.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

using detail::isFloatingRoot;

// Column by column inside each body's step, with fixed-size 6-vectors: k is a mechanism's few
// rows (often one), where dynamic 6 × k blocks cost more in set-up than in arithmetic.
void abaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  if (model.has_flexible_bodies) return flexibleAbaInverseInertia(model, data, X);
  const Eigen::Index k = X.cols();
  assert(X.rows() == model.nv && k <= data.minvColumns());
  assert(model.nalgebraic == 0);
  for (int i = 0; i < model.nbodies; ++i) data.minv_z[i].leftCols(k).setZero();

  // inward (7.2) with b_m = 0, a_m = 0: ε = X − ℋ Z, ν = D⁻¹ ε, Z⁺ = Z + G ε into the parent
  for (int i = model.nbodies - 1; i >= 1; --i) {
    if (isFloatingRoot(model, i)) continue;  // solved outward, from P and Z
    const int iv = model.idx_v[i];
    const int parent = model.parent[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, NV, NV> D_inv = data.D_inv[i].topLeftCorner<NV, NV>();
      for (Eigen::Index c = 0; c < k; ++c) {
        const Vector6 Z = data.minv_z[i].col(c);
        VectorNV epsilon = X.col(c).segment<NV>(iv);
        epsilon.noalias() -= S.transpose() * Z;
        X.col(c).segment<NV>(iv).noalias() = D_inv * epsilon;
        if (parent == 0) continue;
        auto Z_parent = data.minv_z[parent].col(c);
        Z_parent += Z;
        Z_parent.noalias() += G * epsilon;
      }
    });
  }

  // outward (7.3): α⁺ = α(λ), χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇
  data.minv_a[0].leftCols(k).setZero();
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    if (isFloatingRoot(model, i)) {
      // α = P⁻¹ (S⁻ᵀ X − Z), χ̇ = S⁻¹ α (the parent is the world, at rest): as
      // floatingRootAcceleration in aba.cc without velocity terms
      const Matrix3& R_WJ = data.X_WJ[i].rotation;
      const Matrix3& R_WB = data.X_WB[i].rotation;
      const Vector3& p_WB = data.X_WB[i].translation;
      const Matrix6& L = data.D_inv[i];  // P = L Lᵀ, from aba()
      for (Eigen::Index c = 0; c < k; ++c) {
        auto x = X.col(c).segment<6>(iv);
        Vector6 alpha;
        alpha.tail<3>().noalias() = R_WJ * x.head<3>();
        alpha.head<3>().noalias() = R_WB * x.tail<3>();
        alpha.head<3>() += p_WB.cross(alpha.tail<3>());
        alpha -= data.minv_z[i].col(c);
        detail::solveWithCholeskyFactor(L, alpha);
        data.minv_a[i].col(c) = alpha;
        detail::floatingRootRates(data, i, alpha, x);
      }
      continue;
    }
    const int parent = model.parent[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      for (Eigen::Index c = 0; c < k; ++c) {
        const Vector6 alpha_plus = data.minv_a[parent].col(c);
        auto chi_dot = X.col(c).segment<NV>(iv);
        chi_dot.noalias() -= G.transpose() * alpha_plus;
        auto alpha = data.minv_a[i].col(c);
        alpha = alpha_plus;
        alpha.noalias() += S * chi_dot;
      }
    });
  }
}

}  // namespace hilsim
