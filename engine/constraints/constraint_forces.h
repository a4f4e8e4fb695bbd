// What the limit, friction and contact rows of a ConstraintRowStage exerted at its last
// accelerations(): the forces a controller would read from joint torque sensors at a stop, from
// foot force sensors, and how deep each contact sphere sat in the ground. For reporting (the
// service's State, the viewer); the dynamics never read it. Units SI, frames docs/NOTATION.md.
#pragma once

#include <vector>

#include "engine/constraints/constraint_row_stage.h"
#include "engine/model/model.h"

namespace hilsim {

struct ConstraintForces {
  /// Sized for `model`; every value zero.
  explicit ConstraintForces(const Model& model);

  /// Per dof, the generalized force of its position-limit row (nv) [N·m, N]: ≥ 0 at the lower
  /// limit, ≤ 0 at the upper, 0 when the joint is clear of both or its limits are not enforced.
  Eigen::VectorXd limit_force;
  /// Per dof, the generalized force of its Coulomb friction row (nv) [N·m, N], within ±friction.
  Eigen::VectorXd friction_force;
  /// Per contact sphere (Model::contact_spheres), the force the ground exerts on it at its lowest
  /// point, in W [N]: z the normal force (≥ 0), x and y friction; zero when not touching.
  std::vector<Vector3> contact_force;
  /// Per contact sphere, how deep its lowest point is below the ground (≥ 0; 0 when clear) [m].
  std::vector<double> contact_depth;
  int limits_active = 0;    ///< limit rows in the solve
  int contacts_active = 0;  ///< contact spheres in the solve
};

/// Reads the forces of `stage`'s last accelerations() into `out` (sized for `model`, the model
/// the stage was built for). Allocation-free.
void readConstraintForces(const Model& model, const ConstraintRowStage& stage,
                          ConstraintForces& out);

}  // namespace hilsim
