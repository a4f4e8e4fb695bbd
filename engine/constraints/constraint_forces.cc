#include "engine/constraints/constraint_forces.h"

#include <algorithm>
#include <cassert>

namespace hilsim {

ConstraintForces::ConstraintForces(const Model& model)
    : limit_force(Eigen::VectorXd::Zero(model.nv)),
      friction_force(Eigen::VectorXd::Zero(model.nv)),
      contact_force(model.contact_spheres.size(), Vector3::Zero()),
      contact_depth(model.contact_spheres.size(), 0.0) {}

void readConstraintForces(const Model& model, const ConstraintRowStage& stage,
                          ConstraintForces& out) {
  const UnilateralLayout& layout = stage.unilateralLayout();
  const std::vector<UnilateralRowState>& rows = stage.unilateralRows();
  const Eigen::VectorXd& lambda = stage.multipliers();
  assert(out.limit_force.size() == model.nv);
  assert(out.contact_force.size() == model.contact_spheres.size());
  (void)model;  // the sizes above, in a build with assertions
  const auto state = [&](int row) -> const UnilateralRowState& {
    return rows[static_cast<std::size_t>(row - layout.loop_rows)];
  };
  out.limit_force.setZero();
  out.friction_force.setZero();
  out.limits_active = 0;
  // a joint row's Jacobian is sign · e_d: its generalized force is sign · λ
  for (std::size_t k = 0; k < layout.limit_dofs.size(); ++k) {
    const int row = layout.limit_begin + static_cast<int>(k);
    if (!state(row).active) continue;
    out.limit_force[layout.limit_dofs[k]] = state(row).sign * lambda[row];
    ++out.limits_active;
  }
  for (std::size_t k = 0; k < layout.friction_dofs.size(); ++k) {
    const int row = layout.friction_begin + static_cast<int>(k);
    out.friction_force[layout.friction_dofs[k]] = lambda[row];
  }
  // a contact's rows are the ground's normal z and the tangents x, y (unilateral_rows.cc)
  out.contacts_active = 0;
  std::fill(out.contact_force.begin(), out.contact_force.end(), Vector3::Zero());
  std::fill(out.contact_depth.begin(), out.contact_depth.end(), 0.0);
  for (int k = 0; k < layout.contacts; ++k) {
    const int normal = layout.contact_begin + 3 * k;
    out.contact_depth[k] = std::max(0.0, -state(normal).violation);
    if (!state(normal).active) continue;
    ++out.contacts_active;
    out.contact_force[k] = Vector3(lambda[normal + 1], lambda[normal + 2], lambda[normal]);
  }
}

}  // namespace hilsim
