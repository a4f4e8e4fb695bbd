#include "engine/algorithms/crba.h"

#include <cassert>

#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

const Eigen::MatrixXd& crba(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  assert(holds(data.workspace, DataWorkspace::kJointSpaceInertia));
  if (model.has_flexible_bodies) return flexibleCrba(model, data, q);
  // outward sweep: poses, motion subspaces and body inertias in W
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::bodyInertiaStep(model, data, i);
  }
  return detail::crbaInwardSweep(model, data);
}

namespace detail {

const Eigen::MatrixXd& crbaInwardSweep(const Model& model, Data& data) {
  assert(holds(data.workspace, DataWorkspace::kJointSpaceInertia));
  if (model.has_flexible_bodies) return flexibleCrbaInwardSweep(model, data);
  // R(k) = M(k) to start the composite inertias
  for (int i = 1; i < model.nbodies; ++i) data.inertia_W[i].matrix(data.P_W[i]);

  // inward sweep (5.5): X(k) = R(k) ℋ*(k), ℳ(k,k) = ℋ(k) X(k), then ℳ(j,k) = ℋ(j) X(k) for every
  // ancestor j. In W every Φ(j, j−1) is the identity, so X(k) needs no transport.
  Eigen::MatrixXd& M = data.M;
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      auto F = data.G_W.middleCols<NV>(iv);
      F.noalias() = data.P_W[i] * data.S_W.middleCols<NV>(iv);
      M.block<NV, NV>(iv, iv).noalias() = data.S_W.middleCols<NV>(iv).transpose() * F;
      for (int j = model.dof_parent[iv]; j >= 0; j = model.dof_parent[j]) {
        M.block<1, NV>(j, iv).noalias() = data.S_W.col(j).transpose() * F;
        M.block<NV, 1>(iv, j) = M.block<1, NV>(j, iv).transpose();
      }
    });
    if (model.parent[i] > 0) data.P_W[model.parent[i]] += data.P_W[i];  // (5.2)
  }
  M.diagonal() += model.armature;
  return M;
}

}  // namespace detail

}  // namespace hilsim
