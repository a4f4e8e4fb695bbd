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

/// The last degree of freedom that moves body i (−1 for the world); the others follow
/// model.dof_parent from it.
int lastDof(const Model& model, int i);

/// Row coefficients on a body's spatial velocity V = [ω; v_O] (in W about W's origin) of the
/// velocity of the body's point p along n: n · (v_O + ω × p) = [p × n; n] · V. Also the
/// spatial force of a unit force along n at p.
inline Vector6 pointRow(const Vector3& p, const Vector3& n) {
  Vector6 g;
  g.head<3>() = p.cross(n);
  g.tail<3>() = n;
  return g;
}
/// Row coefficients of n · ω: [n; 0] (a unit couple about n).
inline Vector6 angularRow(const Vector3& n) {
  Vector6 g;
  g.head<3>() = n;
  g.tail<3>().setZero();
  return g;
}

struct ConstraintRows {
  /// Which of a closure's two bodies a dof moves: body a only, body b only, or both (the path
  /// they share from their common ancestor to the world).
  enum class Side : char { kA, kB, kBoth };
  struct PathDof {
    int dof;
    Side side;
  };

  /// Sized for every row `model` may hold (m = Model::constraintRowCapacity(): its closures'
  /// rows first, then those of engine/constraints/unilateral_rows.h); `support` and the lists
  /// that follow it filled from them (path_dofs and path_begin: the closures only).
  explicit ConstraintRows(const Model& model);

  /// m × nv: J, row-major (the stage and the formulations read it by rows)
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> jacobian;
  Matrix6N force_a, force_b;        ///< 6 × m: F_a, F_b of each row [N, N·m per unit multiplier]
  std::vector<int> body_a, body_b;  ///< [m] the bodies of each row (0: the world)
  /// The bodies on the paths from the world to the rows' bodies, ascending: the only ones a
  /// row's force reaches on its way to the root (and whose motion a row reads). Fixed per model.
  std::vector<int> support;
  /// The other bodies, ascending (a parent before its children). Fixed per model.
  std::vector<int> off_support;
  /// [nbodies] 1 for a support body with a child off the support (whose motion under the rows'
  /// forces follows from the body's). Fixed per model.
  std::vector<char> has_child_off_support;
  /// Per closure (model.loops order), the dofs its rows read, ascending (a parent's before its
  /// children's): those that move its body a or b, in path_dofs[path_begin[l]] …
  /// path_dofs[path_begin[l + 1] − 1]; only these entries of its Jacobian rows are written (the
  /// others stay zero). Fixed per model.
  std::vector<PathDof> path_dofs;
  std::vector<int> path_begin;
  /// The rows solved for, ascending, in the first `active_count` entries: those whose Jacobian row
  /// is not identically zero (a planar linkage's out-of-plane rows are); set by whoever solves
  /// with the rows.
  std::vector<int> active;
  int active_count = 0;
};

}  // namespace hilsim
