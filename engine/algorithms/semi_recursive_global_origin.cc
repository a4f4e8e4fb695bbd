#include <cassert>

#include "engine/algorithms/joint_kinematics.h"
#include "engine/algorithms/semi_recursive.h"
#include "engine/algorithms/tree_ldl.h"

namespace hilsim {

// SR-II in 3D. The intermediate body frame of §4 (origin at W's, axes the body's) makes Ż_i the
// body's spatial velocity about the origin, D_iᵀ M_i D_i its spatial inertia about the origin,
// and b_j the joint's motion subspace in W (eq. D.4): the quantities the engine's kinematics
// already hold. Accelerations are literal derivatives, the notes' convention L (§4.6): Z̈_i the
// spatial acceleration, d_j = ḃ_j ż_j = c_W (never mixed with the printed e_i of convention P).
const Eigen::VectorXd& semiRecursiveGlobalOrigin(const Model& model, Data& data,
                                                 const Eigen::VectorXd& q,
                                                 const Eigen::VectorXd& v,
                                                 const Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(holds(data.workspace, DataWorkspace::kJointSpaceInertia));
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  data.V_W[0].setZero();
  // κ_0 = −[0; g]: gravity as an acceleration of the base (RBDA §5.3), so that −M̂ κ carries
  // D_iᵀ Q_e of gravity
  data.A_W[0] = detail::baseAccelerationForGravity(model);

  // §7.1 step 1, parents first: positions (eqs. 29, 32), Ż_i = Ż_λ + b_j ż_j (eqs. 30, 33,
  // 36), κ_i = κ_λ + d_j = T_i d (eqs. 31, 34, 39). Step 2 per body: M̂_i = D_iᵀ M_i D_i and the
  // force the body needs at z̈ = 0, −f_i = M̂_i κ_i + Ż_i ×* M̂_i Ż_i (eq. 53's D_iᵀ(M_i e_i − Q_v)
  // in spatial form, about the origin)
  MotionVector joint_velocity;
  ForceVector momentum, gyroscopic;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    detail::bodyInertiaStep(model, data, i);
    MotionVector& kappa = data.A_W[i];
    kappa = data.A_W[model.parent[i]] + data.c_W[i];
    const Inertia& I = data.inertia_W[i];
    I.matrix(data.P_W[i]);
    I.apply(kappa, data.f_W[i]);
    I.apply(data.V_W[i], momentum);
    crossForce(data.V_W[i], momentum, gyroscopic);
    data.f_W[i] += gyroscopic;
  }

  // steps 3 and 4, children first: M^Σ_i = M̂_i + Σ M^Σ_c, F^Σ_i = f_i + Σ F^Σ_c; then
  // Q̿_j = b_jᵀ F^Σ_j and M̿_jk = b_jᵀ M^Σ_k b_k for every joint j on the path to joint k
  // (zero across branches: T's blocks)
  Eigen::MatrixXd& M = data.M;
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const auto b = data.S_W.middleCols<NV>(iv);
      auto F = data.G_W.middleCols<NV>(iv);
      F.noalias() = data.P_W[i] * b;  // M^Σ_k b_k
      M.block<NV, NV>(iv, iv).noalias() = b.transpose() * F;
      for (int j = model.dof_parent[iv]; j >= 0; j = model.dof_parent[j]) {
        M.block<1, NV>(j, iv).noalias() = data.S_W.col(j).transpose() * F;
        M.block<NV, 1>(iv, j) = M.block<1, NV>(j, iv).transpose();
      }
      data.bias_forces.segment<NV>(iv).noalias() = b.transpose() * data.f_W[i];  // −Q̿_j
    });
    const int parent = model.parent[i];
    if (parent > 0) {
      data.P_W[parent] += data.P_W[i];
      data.f_W[parent] += data.f_W[i];
    }
  }
  return detail::semiRecursiveSolve(model, data, q, v, tau);
}

namespace detail {

const Eigen::VectorXd& semiRecursiveSolve(const Model& model, Data& data,
                                          const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                          const Eigen::VectorXd& tau) {
  data.M.diagonal() += model.armature;
  addPassiveJointForces(model, q, v, data.bias_forces);
  // M̄ is zero between branches (T's pattern): its LᵀDL factor on the tree of dofs has no fill-in
  // (Featherstone 2005), O(n d²) where the dense Cholesky the paper names is O(n³)
  data.M_factor = data.M;
  treeLdlFactor(model, data.M_factor);
  data.qdd = tau - data.bias_forces;
  treeLdlSolve(model, data.M_factor, data.qdd);
  return data.qdd;
}

}  // namespace detail

Eigen::MatrixXd semiRecursivePathTransformation(const Model& model, const Data& data) {
  // W_i = T_i R_d: body i's block row holds b_j for every joint j on its path (eq. 39)
  Eigen::MatrixXd W = Eigen::MatrixXd::Zero(6 * (model.nbodies - 1), model.nv);
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    const int last = iv + model.nv_joint[i] - 1;
    for (int j = last; j >= 0; j = model.dof_parent[j])
      W.block<6, 1>(6 * (i - 1), j) = data.S_W.col(j);
  }
  return W;
}

}  // namespace hilsim
