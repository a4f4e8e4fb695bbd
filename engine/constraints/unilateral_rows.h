// The rows beyond the loops (docs/CONTACT.md, "Rows"): joint position limits (unilateral, one
// row per limited dof, facing the nearer limit), joint Coulomb friction (one row per dof with
// friction, bounded by ±F) and sphere–ground contacts (three rows per sphere: the normal,
// unilateral, and two tangents bounded by the friction cone ‖λ_t‖ ≤ μ λ_n). Each row is written
// in the spatial form the Delassus operators read (ConstraintRows), with its violation r, rate ṙ
// and its acceleration at the formulation's q̈; the stage decides which are active and solves.
#pragma once

#include <vector>

#include "engine/constraints/constraint_rows.h"

namespace hilsim {

/// How the solver bounds a row's multiplier λ.
enum class RowBound : unsigned char {
  kUnilateral,  ///< λ ≥ 0 (a limit, a contact normal)
  kBox,         ///< |λ| ≤ bound (joint friction)
  kConeNormal,  ///< λ ≥ 0, and the two rows after it are its tangents
  kConeTangent, ///< (λ_t1, λ_t2) in the disc of radius μ λ_n of the normal before them
};

/// Where the rows beyond the loops sit among the stage's rows (after model.nconstraints), fixed
/// per model: one per enforced limit (Model::limitEnforced), one per dof with friction, three
/// per contact sphere while the ground is enabled; total = Model::constraintRowCapacity().
struct UnilateralLayout {
  explicit UnilateralLayout(const Model& model);
  int loop_rows = 0;
  int limit_begin = 0, friction_begin = 0, contact_begin = 0, total = 0;
  std::vector<int> limit_dofs;     ///< the dof of each limit row
  std::vector<int> friction_dofs;  ///< the dof of each friction row
  int contacts = 0;                ///< contact spheres with rows
  int count() const { return total - loop_rows; }
};

/// One row's state at (q, v) and the formulation's q̈, for the stage.
struct UnilateralRowState {
  double violation = 0.0;     ///< r: ≥ 0 clear of the limit or the ground, < 0 past it [m, rad]
  /// A friction row's coordinate along its direction (q_d; the contact point's x or y) [m, rad],
  /// which the stage holds at an anchor while the row sticks
  double position = 0.0;
  double rate = 0.0;          ///< ṙ = J v [m/s, rad/s]
  double acceleration = 0.0;  ///< J q̈ + J̇ v at the formulation's q̈ [m/s², rad/s²]
  double bound = 0.0;         ///< kBox: the friction force; kConeNormal: μ [N·m, N, or 1]
  RowBound kind = RowBound::kUnilateral;
  /// A limit row's direction in v: +1 facing the lower limit (its force pushes q̇_d up), −1 the
  /// upper; +1 for the other rows
  double sign = 1.0;
  /// In the problem: a limit or a contact from the step in which it would close
  /// (r + h min(ṙ, 0) < 0), a friction row always, a contact's tangents with their normal.
  /// Only an active row's spatial form (and Jacobian) is written.
  bool active = false;
};

/// Evaluates every row of `layout` at Data's kinematics: poses, S_W, V_W and, for the contacts,
/// the bodies' accelerations in A_W (A_W[0] the base's) of the q̈ in `qdd`. Writes each row's
/// state into `state` (indexed from 0 = the first row after the loops), whether it is active for
/// a step of `time_step` [s], and the spatial form of the active ones into `rows` (their Jacobian
/// too when `with_jacobian`). Allocation-free.
void evaluateUnilateralRows(const Model& model, const Data& data, const UnilateralLayout& layout,
                            const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                            const Eigen::VectorXd& qdd, double time_step, bool with_jacobian,
                            ConstraintRows& rows, std::vector<UnilateralRowState>& state);

/// The world-frame contact point of each contact sphere (its lowest point, on the ground side)
/// and its signed distance to the ground [m], at Data's poses; for reporting.
void contactPoint(const Model& model, const Data& data, int sphere, Vector3& point,
                  double& distance);

}  // namespace hilsim
