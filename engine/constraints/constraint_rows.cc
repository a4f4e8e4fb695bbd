#include "engine/constraints/constraint_rows.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace hilsim {

int lastDof(const Model& model, int i) {
  while (i > 0 && model.nv_joint[i] + model.nmodes[i] == 0) i = model.parent[i];
  return i > 0 ? model.idx_v[i] + model.nv_joint[i] + model.nmodes[i] - 1 : -1;
}

ConstraintRows::ConstraintRows(const Model& model)
    : jacobian(Eigen::MatrixXd::Zero(model.constraintRowCapacity(), model.nv)),
      force_a(Matrix6N::Zero(6, model.constraintRowCapacity())),
      force_b(Matrix6N::Zero(6, model.constraintRowCapacity())),
      body_a(model.constraintRowCapacity(), 0),
      body_b(model.constraintRowCapacity(), 0),
      active(model.constraintRowCapacity(), 0) {
  std::vector<char> on_path(model.nbodies, 0);
  const auto mark = [&](int body) {
    for (int i = body; i > 0 && !on_path[i]; i = model.parent[i]) on_path[i] = 1;
  };
  for (const LoopClosure& loop : model.loops) {
    mark(loop.body_a);
    mark(loop.body_b);
  }
  // the rows beyond the loops (engine/constraints/unilateral_rows.h): a limited or rubbing
  // joint's body and its parent, a contact sphere's body
  for (int d = 0; d < model.nv; ++d) {
    if (!model.limitEnforced(d) && !(model.friction[d] > 0.0)) continue;
    mark(model.dof_body[d]);
    mark(model.parent[model.dof_body[d]]);
  }
  if (model.ground.enabled)
    for (const ContactSphere& sphere : model.contact_spheres) mark(sphere.body);
  has_child_off_support.assign(model.nbodies, 0);
  for (int i = 1; i < model.nbodies; ++i) {
    if (on_path[i]) {
      support.push_back(i);
    } else {
      off_support.push_back(i);
      if (on_path[model.parent[i]]) has_child_off_support[model.parent[i]] = 1;
    }
  }
  // dofs are numbered parents first: each closure's list sorted by dof
  std::vector<char> side(model.nv, 0);  // bit 1: moves a, bit 2: moves b
  path_begin.push_back(0);
  for (const LoopClosure& loop : model.loops) {
    const auto begin = static_cast<std::ptrdiff_t>(path_dofs.size());
    for (const auto& [body, bit] : {std::pair{loop.body_a, 1}, std::pair{loop.body_b, 2}}) {
      for (int d = lastDof(model, body); d >= 0; d = model.dof_parent[d]) {
        if (side[d] == 0) path_dofs.push_back({d, Side::kA});
        side[d] |= bit;
      }
    }
    std::sort(path_dofs.begin() + begin, path_dofs.end(),
              [](const PathDof& x, const PathDof& y) { return x.dof < y.dof; });
    for (auto it = path_dofs.begin() + begin; it != path_dofs.end(); ++it) {
      it->side = side[it->dof] == 1 ? Side::kA : side[it->dof] == 2 ? Side::kB : Side::kBoth;
      side[it->dof] = 0;
    }
    path_begin.push_back(static_cast<int>(path_dofs.size()));
  }
}

}  // namespace hilsim
