#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/flexible_kinematics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

double flexibleKineticEnergy(const Model& model, Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& v) {
  assert(q.size() == model.nq && v.size() == model.nv);
  data.V_W[0].setZero();
  ForceVector unused;
  double energy = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::flexibleJointPositionStep(model, data, i, q.data());
    detail::flexibleJointVelocityStep(model, data, i, q.data(), v.data());
    detail::modalInertiaStep(model, data, i, q.data(), nullptr, unused);
    const MotionVector& V = data.V_W[i];
    energy += data.inertia_W[i].kineticEnergy(V);
    if (const int n = model.nmodes[i]; n > 0) {
      // ½ V_mᵀ M_m V_m = ½ Vᵀ M_rr V + η̇ᵀ M_rfᵀ V + ½ η̇ᵀ M_ff η̇
      const auto eta_dot = v.segment(model.idxModesV(i), n);
      Eigen::VectorXd& scratch = data.flex.f_f[i];  // n_m, preallocated
      scratch.noalias() = data.flex.M_rf_W[i].transpose() * V;
      scratch.noalias() += 0.5 * model.flexible[i].modal_mass * eta_dot;
      energy += eta_dot.dot(scratch);
    }
  }
  energy += 0.5 * v.dot(model.armature.cwiseProduct(v));
  data.kinetic_energy = energy;
  return energy;
}

double flexiblePotentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  ForceVector unused;
  double energy = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::flexibleJointPositionStep(model, data, i, q.data());
    detail::modalInertiaStep(model, data, i, q.data(), nullptr, unused);
    const Inertia& I_W = data.inertia_W[i];  // its centre of mass moves with η
    energy -= I_W.mass * model.gravity.dot(I_W.com);
    if (const int n = model.nmodes[i]; n > 0) {
      const auto eta = q.segment(model.idxModesQ(i), n);
      Eigen::VectorXd& scratch = data.flex.f_f[i];  // n_m, preallocated
      scratch.noalias() = model.flexible[i].stiffness * eta;
      energy += 0.5 * eta.dot(scratch);
    }
  }
  energy += detail::jointSpringEnergy(model, q);
  data.potential_energy = energy;
  return energy;
}

}  // namespace hilsim
