// Configuration-space operations: q ⊕ v on the joints' manifolds.
#pragma once

#include "engine/model/model.h"

namespace hilsim {

/// q_out = q ⊕ v·dt (nq, nv, nq): each joint integrates the constant velocity v over dt; quaternions
/// by the exponential map, so they stay unit norm. q_out may alias q. Allocation-free.
void integrateConfiguration(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                            double dt, Eigen::VectorXd& q_out);

/// Renormalises every quaternion of q in place.
void normalizeConfiguration(const Model& model, Eigen::VectorXd& q);

/// Right-trivialised tangent rate: for q(t) = q₀ ⊕ θ(t), the rate θ̇ that produces velocity v.
/// Identity for all but the rotational dofs of spherical and free joints, where
/// θ̇ = ω + ½ θ × ω + (1/12) θ × (θ × ω) (dexp⁻¹, exact to the order RK4 needs).
void tangentRate(const Model& model, const Eigen::VectorXd& theta, const Eigen::VectorXd& v,
                 Eigen::VectorXd& theta_dot);

}  // namespace hilsim
