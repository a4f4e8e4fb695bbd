#include "engine/algorithms/aba_inverse_inertia.h"

#include <Eigen/Cholesky>

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// As in aba(): a free joint on the world without armature is solved through P directly.
inline bool isFloatingRoot(const Model& model, int i) {
  if (model.joints[i].type != JointType::kFreeFlyer) return false;
  return model.joint_rank[i] == 6 && model.armature.segment<6>(model.idx_v[i]).isZero(0.0);
}

}  // namespace

// Products are lazy (coefficient-wise): the blocks are 6 × k with k a mechanism's few rows, where
// the blocked matrix product's set-up would cost more than its arithmetic, and they write into
// preallocated blocks without temporaries.
void abaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  const Eigen::Index k = X.cols();
  assert(X.rows() == model.nv && k <= data.minvColumns());
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  for (int i = 0; i < model.nbodies; ++i) data.minv_z[i].leftCols(k).setZero();

  // inward (7.2) with b_m = 0, a_m = 0: ε = X − ℋ Z, ν = D⁻¹ ε, Z⁺ = Z + G ε into the parent
  for (int i = model.nbodies - 1; i >= 1; --i) {
    if (isFloatingRoot(model, i)) continue;  // solved outward, from P and Z
    const int iv = model.idx_v[i];
    const int parent = model.parent[i];
    const auto Z = data.minv_z[i].leftCols(k);
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const auto S = data.S_W.middleCols<NV>(iv);
      auto epsilon = data.minv_scratch.topRows<NV>().leftCols(k);
      epsilon = X.middleRows<NV>(iv);
      epsilon.noalias() -= S.transpose().lazyProduct(Z);
      X.middleRows<NV>(iv).noalias() = data.D_inv[i].topLeftCorner<NV, NV>().lazyProduct(epsilon);
      if (parent == 0) return;
      auto Z_parent = data.minv_z[parent].leftCols(k);
      Z_parent += Z;
      Z_parent.noalias() += data.G_W.middleCols<NV>(iv).lazyProduct(epsilon);
    });
  }

  // outward (7.3): α⁺ = α(λ), χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇
  data.minv_a[0].leftCols(k).setZero();
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    auto alpha = data.minv_a[i].leftCols(k);
    if (isFloatingRoot(model, i)) {
      // α = P⁻¹ (S⁻ᵀ X − Z), χ̇ = S⁻¹ α (the parent is the world, at rest): as
      // floatingRootAcceleration in aba.cc without velocity terms
      const Matrix3& R_WJ = data.X_WJ[i].rotation;
      const Matrix3& R_WB = data.X_WB[i].rotation;
      const Matrix3 p_cross = skew(data.X_WB[i].translation);
      auto force = data.minv_scratch.leftCols(k);
      force.bottomRows<3>().noalias() = R_WJ.lazyProduct(X.middleRows<3>(iv));
      force.topRows<3>().noalias() = R_WB.lazyProduct(X.middleRows<3>(iv + 3));
      force.topRows<3>().noalias() += p_cross.lazyProduct(force.bottomRows<3>());
      alpha = force - data.minv_z[i].leftCols(k);
      Eigen::LLT<Matrix6>(data.P_W[i]).solveInPlace(alpha);
      X.middleRows<3>(iv + 3).noalias() = R_WB.transpose().lazyProduct(alpha.topRows<3>());
      force.bottomRows<3>() = alpha.bottomRows<3>();
      force.bottomRows<3>().noalias() -= p_cross.lazyProduct(alpha.topRows<3>());
      X.middleRows<3>(iv).noalias() = R_WJ.transpose().lazyProduct(force.bottomRows<3>());
      continue;
    }
    const auto alpha_plus = data.minv_a[model.parent[i]].leftCols(k);
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      X.middleRows<NV>(iv).noalias() -= data.G_W.middleCols<NV>(iv).transpose().lazyProduct(alpha_plus);
      alpha = alpha_plus;
      alpha.noalias() += data.S_W.middleCols<NV>(iv).lazyProduct(X.middleRows<NV>(iv));
    });
  }
}

}  // namespace hilsim
