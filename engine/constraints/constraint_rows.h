// Constraint rows in the two forms the dynamics reads them (docs/LOOPS.md, "Constraint rows"):
// the m × nv Jacobian J, and the spatial form of each row, J_r v = F_b,rᵀ V_b + F_a,rᵀ V_a, with
// V the spatial velocities of the two bodies the row joins (in W, about W's origin) and F the
// spatial forces a unit multiplier of the row exerts on them. The Jacobian suits the
// formulations that hold M (crba); the spatial form the recursive ones (aba), which push the
// forces through the tree instead of forming Jᵀ.
#pragma once

#include <vector>

#include "engine/model/data.h"

namespace hilsim {

struct ConstraintRows {
  /// Sized for `model`'s closures (m = model.nconstraints); `support` filled from them.
  explicit ConstraintRows(const Model& model);

  /// m × nv: J, row-major (the stage and the formulations read it by rows)
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> jacobian;
  Matrix6N force_a, force_b;        ///< 6 × m: F_a, F_b of each row [N, N·m per unit multiplier]
  std::vector<int> body_a, body_b;  ///< [m] the bodies of each row (0: the world)
  /// The bodies on the paths from the world to the rows' bodies, ascending: the only ones a
  /// row's force reaches on its way to the root (and whose motion a row reads). Fixed per model.
  std::vector<int> support;
  /// The rows whose Jacobian row is not zero (a planar linkage's out-of-plane rows are), ascending,
  /// in the first `active_count` entries; set by whoever solves with the rows.
  std::vector<int> active;
  int active_count = 0;
};

}  // namespace hilsim
