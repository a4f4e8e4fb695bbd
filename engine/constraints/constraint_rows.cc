#include "engine/constraints/constraint_rows.h"

namespace hilsim {

ConstraintRows::ConstraintRows(const Model& model)
    : jacobian(Eigen::MatrixXd::Zero(model.nconstraints, model.nv)),
      force_a(Matrix6N::Zero(6, model.nconstraints)),
      force_b(Matrix6N::Zero(6, model.nconstraints)),
      body_a(model.nconstraints, 0),
      body_b(model.nconstraints, 0),
      active(model.nconstraints, 0) {
  std::vector<char> on_path(model.nbodies, 0);
  const auto mark = [&](int body) {
    for (int i = body; i > 0 && !on_path[i]; i = model.parent[i]) on_path[i] = 1;
  };
  for (const LoopClosure& loop : model.loops) {
    mark(loop.body_a);
    mark(loop.body_b);
  }
  for (int i = 1; i < model.nbodies; ++i)
    if (on_path[i]) support.push_back(i);
}

}  // namespace hilsim
