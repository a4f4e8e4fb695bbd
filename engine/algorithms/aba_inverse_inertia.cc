#include "engine/algorithms/aba_inverse_inertia.h"

#include <Eigen/Cholesky>

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// As in aba(): a free joint on the world without armature is solved through P directly.
inline bool isFloatingRoot(const Model& model, int i) {
  if (model.joints[i].type != JointType::kFreeFlyer) return false;
  return model.joint_rank[i] == 6 &&
         model.armature.segment<6>(model.idx_v[i]).isZero(0.0);
}

}  // namespace

void abaInverseInertia(const Model& model, Data& data, Eigen::VectorXd& x) {
  assert(x.size() == model.nv && !model.has_flexible_bodies && model.nalgebraic == 0);
  for (int i = 0; i < model.nbodies; ++i) data.minv_z[i].setZero();

  // inward (7.2) with b_m = 0, a_m = 0: ε = x − ℋ z, ν = D⁻¹ ε, z⁺ = z + G ε into the parent
  for (int i = model.nbodies - 1; i >= 1; --i) {
    if (isFloatingRoot(model, i)) continue;  // solved outward, from P and z
    const int iv = model.idx_v[i];
    const int parent = model.parent[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const auto S = data.S_W.middleCols<NV>(iv);
      Eigen::Matrix<double, NV, 1> epsilon = x.segment<NV>(iv);
      epsilon.noalias() -= S.transpose() * data.minv_z[i];
      x.segment<NV>(iv).noalias() = data.D_inv[i].topLeftCorner<NV, NV>() * epsilon;  // ν
      if (parent == 0) return;
      data.minv_z[parent] += data.minv_z[i];
      data.minv_z[parent].noalias() += data.G_W.middleCols<NV>(iv) * epsilon;
    });
  }

  // outward (7.3): α⁺ = α(λ), χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇
  data.minv_a[0].setZero();
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    MotionVector& alpha = data.minv_a[i];
    if (isFloatingRoot(model, i)) {
      // α = P⁻¹ (S⁻ᵀ x − z), χ̇ = S⁻¹ α (the parent is the world, at rest): as
      // floatingRootAcceleration in aba.cc without velocity terms
      const Matrix3& R_WJ = data.X_WJ[i].rotation;
      const Matrix3& R_WB = data.X_WB[i].rotation;
      const Vector3& p_WB = data.X_WB[i].translation;
      ForceVector f_W;
      f_W.tail<3>().noalias() = R_WJ * x.segment<3>(iv);
      f_W.head<3>().noalias() = R_WB * x.segment<3>(iv + 3);
      f_W.head<3>() += p_WB.cross(f_W.tail<3>());
      alpha = Eigen::LLT<Matrix6>(data.P_W[i]).solve(f_W - data.minv_z[i]);
      x.segment<3>(iv + 3).noalias() = R_WB.transpose() * alpha.head<3>();
      x.segment<3>(iv).noalias() = R_WJ.transpose() * (alpha.tail<3>() - p_WB.cross(alpha.head<3>()));
      continue;
    }
    const MotionVector& alpha_plus = data.minv_a[model.parent[i]];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      auto qdd = x.segment<NV>(iv);
      qdd.noalias() -= data.G_W.middleCols<NV>(iv).transpose() * alpha_plus;
      alpha = alpha_plus;
      alpha.noalias() += data.S_W.middleCols<NV>(iv) * qdd;
    });
  }
}

}  // namespace hilsim
