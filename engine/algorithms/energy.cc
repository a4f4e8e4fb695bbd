#include "engine/algorithms/energy.h"

#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

double kineticEnergy(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v) {
  assert(q.size() == model.nq && v.size() == model.nv);
  if (model.has_flexible_bodies) return flexibleKineticEnergy(model, data, q, v);
  data.V_W[0].setZero();
  MotionVector joint_velocity;
  double energy = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    detail::bodyInertiaStep(model, data, i);
    energy += data.inertia_W[i].kineticEnergy(data.V_W[i]);
  }
  energy += 0.5 * v.dot(model.armature.cwiseProduct(v));
  data.kinetic_energy = energy;
  return energy;
}

double potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  if (model.has_flexible_bodies) return flexiblePotentialEnergy(model, data, q);
  double energy = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    const Inertia& I = model.inertias[i];
    energy -= I.mass * model.gravity.dot(data.X_WB[i].actPoint(I.com));
  }
  energy += detail::jointSpringEnergy(model, q);
  data.potential_energy = energy;
  return energy;
}

}  // namespace hilsim
