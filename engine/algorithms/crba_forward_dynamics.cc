#include "engine/algorithms/crba_forward_dynamics.h"

#include "engine/algorithms/crba.h"
#include "engine/algorithms/rnea.h"
#include "engine/algorithms/tree_ldl.h"

namespace hilsim {

const Eigen::VectorXd& crbaForwardDynamics(const Model& model, Data& data,
                                           const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                           const Eigen::VectorXd& tau,
                                           std::span<const ForceVector> f_ext_B,
                                           std::span<const NodalForce> nodal_forces) {
  assert(tau.size() == model.nv);
  nonLinearEffects(model, data, q, v, f_ext_B, nodal_forces);
  // the bias sweep has left the poses, S_W and the inertias in W at q: reuse them
  detail::crbaInwardSweep(model, data);
  data.M_factor = data.M;
  treeLdlFactor(model, data.M_factor);
  data.qdd = tau - data.bias_forces;
  treeLdlSolve(model, data.M_factor, data.qdd);
  return data.qdd;
}

}  // namespace hilsim
