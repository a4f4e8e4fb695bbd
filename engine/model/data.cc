#include "engine/model/data.h"

#include <algorithm>
#include <utility>

namespace hilsim {

namespace {

// Columns of the M⁻¹ workspaces: the constraint rows (at least one, for M⁻¹ Q), rounded up to
// whole blocks of four (abaDelassus works on four columns at a time)
int minvCapacity(const Model& model) {
  return (std::max(1, model.constraintRowCapacity()) + 3) / 4 * 4;
}

}  // namespace

Data::Data(const Model& model, DataWorkspace reserved)
    : workspace(reserved),
      X_WB(model.nbodies),
      X_WJ(model.nbodies),
      S_W(Matrix6N::Zero(6, model.nv)),
      V_W(model.nbodies, MotionVector::Zero()),
      A_W(model.nbodies, MotionVector::Zero()),
      c_W(model.nbodies, MotionVector::Zero()),
      inertia_W(model.nbodies),
      V_R(model.nbodies, MotionVector::Zero()),
      f_W(model.nbodies, ForceVector::Zero()),
      P_W(model.nbodies, Matrix6::Zero()),
      z_W(model.nbodies, ForceVector::Zero()),
      G_W(Matrix6N::Zero(6, model.nv)),
      D_inv(model.nbodies, Matrix6::Zero()),
      nu(Eigen::VectorXd::Zero(model.nv)),
      pending(model.nbodies, 0),
      null_basis(model.nbodies, Matrix6::Zero()),
      epsilon(Eigen::VectorXd::Zero(model.nv)),
      tau(Eigen::VectorXd::Zero(model.nv)),
      qdd(Eigen::VectorXd::Zero(model.nv)),
      bias_forces(Eigen::VectorXd::Zero(model.nv)),
      M(holds(reserved, DataWorkspace::kJointSpaceInertia) ? Eigen::MatrixXd::Zero(model.nv, model.nv)
                                                           : Eigen::MatrixXd()),
      M_factor(holds(reserved, DataWorkspace::kJointSpaceInertia)
                   ? Eigen::MatrixXd::Zero(model.nv, model.nv)
                   : Eigen::MatrixXd()),
      minv_z(model.needsConstraintStage() ? model.nbodies : 0, Matrix6N::Zero(6, minvCapacity(model))),
      minv_a(model.needsConstraintStage() ? model.nbodies : 0, Matrix6N::Zero(6, minvCapacity(model))),
      minv_scratch(Matrix6N::Zero(6, model.needsConstraintStage() ? minvCapacity(model) : 0)),
      ldl_rows(holds(reserved, DataWorkspace::kJointSpaceInertia) && model.constraintRowCapacity() > 0
                   ? Eigen::MatrixXd::Zero(2 * minvCapacity(model), model.nv)
                   : Eigen::MatrixXd()),
      block_reach(holds(reserved, DataWorkspace::kJointSpaceInertia) && model.constraintRowCapacity() > 0
                      ? model.nbodies
                      : 0,
                  0),
      S_J(6, 6) {
  if (holds(reserved, DataWorkspace::kDivideAndConquer)) {
    const std::size_t nb = model.nbodies;
    for (auto* per_body : {&hdca.motion, &hdca.local, &hdca.impulse_basis, &hdca.inertia,
                           &hdca.mobility, &hdca.joint_gain, &hdca.joint_inertia_inverse,
                           &hdca.path_factor, &hdca.passed_inertia})
      per_body->assign(nb, Matrix6::Zero());
    for (auto* per_body : {&hdca.compliance, &hdca.momentum_bias, &hdca.velocity,
                           &hdca.weight, &hdca.velocity_W, &hdca.subtree_load,
                           &hdca.momentum})
      per_body->assign(nb, Vector6::Zero());
    hdca.impulse_count.assign(nb, 0);
    useAssemblyTree(defaultAssemblyTree(model));
    hdca.rhs = hdca.estimate = hdca.residual = Eigen::VectorXd::Zero(model.nv);
  }
  if (!model.has_flexible_bodies) return;
  const int nb = model.nbodies;
  flex.Psi_t_W.resize(nb);
  flex.Psi_d_W.resize(nb);
  flex.M_rf_W.resize(nb);
  flex.b_f.resize(nb);
  flex.f_f.resize(nb);
  flex.P_ff.resize(nb);
  flex.P_rf_W.resize(nb);
  flex.z_f.resize(nb);
  // LLT leaves its status unset until compute(): construct each in place, never copy or move one
  flex.D_f.reserve(nb);
  flex.D_f.emplace_back(0);
  flex.g_W.resize(nb);
  flex.mu_W.resize(nb);
  flex.nu_f.resize(nb);
  flex.minv_z_f.resize(nb);
  flex.scratch_nn.resize(nb);
  flex.scratch_6n.resize(nb);
  for (int i = 1; i < nb; ++i) {
    const int n = model.nmodes[i];
    const int n_parent = model.nmodes[model.parent[i]];
    flex.Psi_t_W[i] = Matrix6N::Zero(6, n_parent);
    flex.scratch_6n[i] = Matrix6N::Zero(6, std::max(n, n_parent));
    flex.Psi_d_W[i] = Matrix6N::Zero(6, n);
    flex.M_rf_W[i] = Matrix6N::Zero(6, n);
    flex.b_f[i] = Eigen::VectorXd::Zero(n);
    flex.f_f[i] = Eigen::VectorXd::Zero(n);
    flex.P_ff[i] = Eigen::MatrixXd::Zero(n, n);
    flex.P_rf_W[i] = Matrix6N::Zero(6, n);
    flex.z_f[i] = Eigen::VectorXd::Zero(n);
    flex.D_f.emplace_back(n);
    flex.g_W[i] = Matrix6N::Zero(6, n);
    flex.mu_W[i] = Matrix6N::Zero(6, n);
    flex.nu_f[i] = Eigen::VectorXd::Zero(n);
    flex.minv_z_f[i] = Eigen::VectorXd::Zero(n);
    flex.scratch_nn[i] = Eigen::MatrixXd::Zero(n, n);
  }
}

void Data::useAssemblyTree(AssemblyTree tree) {
  hdca.tree = std::move(tree);
  const std::size_t nn = hdca.tree.nodes.size();
  for (auto* per_node : {&hdca.xi11, &hdca.xi12, &hdca.xi22, &hdca.gain_factor})
    per_node->assign(nn, Matrix6::Zero());
  for (auto* per_node : {&hdca.xi10, &hdca.xi20, &hdca.beta, &hdca.T1, &hdca.T2, &hdca.load,
                         &hdca.beyond, &hdca.twist_sum, &hdca.momentum_sum})
    per_node->assign(nn, Vector6::Zero());
  hdca.finished.assign(std::max(nn, hdca.tree.leaf.size()), 0);  // node and body stamps
  hdca.pass = 0;
}

}  // namespace hilsim
