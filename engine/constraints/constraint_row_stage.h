// The constraint stage of loop closures, force elements, joint limits, joint friction and ground
// contact (docs/LOOPS.md, docs/CONTACT.md). After a formulation's tree q̈ it adds the force
// elements' accelerations, M⁻¹ Q, then solves the closures' rows
//   J M⁻¹ Jᵀ λ = −J̇ v − 2α J v − β² C − J q̈,   q̈ ← q̈ + M⁻¹ Jᵀ λ
// (the Schur complement of the augmented system of seed 002 eq. (61) on the tree's own
// factorisation, with Baumgarte's stabilisation, seed 002 eq. (60)), with the formulation's M⁻¹
// operator. After a step it projects q and v onto the constraint manifold; on a new state it
// assembles (Levenberg–Marquardt on C(q) = 0, then J v = 0). The rows beyond the loops
// (engine/constraints/unilateral_rows.h) join the same problem when active: the closures' rows
// are eliminated exactly (their Schur complement), and the soft, bounded rows that remain are
// solved by projected Gauss–Seidel (docs/CONTACT.md, "Solver").
#pragma once

#include <vector>

#include "engine/constraints/constraint_stage.h"
#include "engine/constraints/pivoted_cholesky.h"
#include "engine/constraints/projected_gauss_seidel.h"
#include "engine/constraints/unilateral_rows.h"
#include "engine/formulations/formulations.h"

namespace hilsim {

class ConstraintRowStage final : public ConstraintStage {
 public:
  /// Sized for `model` (its loops and force elements), with the formulation's M⁻¹ operator and,
  /// where it has one, its Delassus operator (FormulationInfo), valid after its forward dynamics.
  ConstraintRowStage(const Model& model, const FormulationInfo& formulation);
  /// The same with the operators given; without `delassus`, J M⁻¹ Jᵀ comes from
  /// `inverse_inertia` on the columns of Jᵀ (the general route every formulation has), and
  /// M⁻¹ Jᵀ λ from those columns; with `delassus` but no `response`, from `inverse_inertia`.
  /// `leaves_body_accelerations`: the forward dynamics leaves the bodies' accelerations of its q̈
  /// in Data's A_W (else the stage computes them, one outward sweep); `delassus_reads_jacobian`:
  /// `delassus` and `response` read the rows' Jacobian, not only their spatial form
  /// (FormulationInfo).
  ConstraintRowStage(const Model& model, InverseInertiaFunction inverse_inertia,
                   DelassusFunction delassus = nullptr, DelassusResponseFunction response = nullptr,
                   bool leaves_body_accelerations = false, bool delassus_reads_jacobian = true);

  int capacity() const override { return layout_.total; }
  void setTimeStep(double h) override { time_step_ = h; }
  void beginStep() override { refresh_anchors_ = true; }
  void accelerations(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                     Eigen::VectorXd& qdd) override;
  void project(const Model& model, Data& data, Eigen::VectorXd& q, Eigen::VectorXd& v) override;
  double assemble(const Model& model, Data& data, Eigen::VectorXd& q, Eigen::VectorXd& v) override;
  double potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) override;
  double dissipatedPower() const override { return dissipated_power_; }
  const ConstraintFailure& failure() const override { return failure_; }

  /// Multipliers λ of the last accelerations(), every row (capacity(); zero for a row that was
  /// not active), in the directions of the rows: the closures' (docs/LOOPS.md) a force [N] or
  /// torque [N·m] on body b, its opposite on body a; then those of unilateralLayout().
  const Eigen::VectorXd& multipliers() const { return lambda_; }
  /// Where the limit, friction and contact rows sit among the rows.
  const UnilateralLayout& unilateralLayout() const { return layout_; }
  /// The state of those rows at the last accelerations() (violation, rate, whether active; index
  /// from 0 = unilateralLayout().loop_rows).
  const std::vector<UnilateralRowState>& unilateralRows() const { return row_state_; }
  /// How many of them were active at the last accelerations().
  int activeUnilateralRows() const { return active_unilateral_; }
  /// The projected Gauss–Seidel solve of the last accelerations() (no sweeps when no bounded
  /// row was active).
  const GaussSeidelResult& lastSolve() const { return last_solve_; }
  /// Rows the dynamics solves for: those whose Jacobian row is not zero at every configuration
  /// (a planar linkage closed in 3D has out-of-plane rows that are); fixed per model.
  int structuralRows() const { return constraint_rows_.active_count; }
  /// Numerical rank of J M⁻¹ Jᵀ at the last accelerations(): m when no row is redundant.
  int rank() const { return solver_.rank(); }
  /// ‖C(q)‖∞ at the last accelerations(), project() or assemble() [m, rad].
  double positionError() const { return position_error_; }
  /// ‖C(q)‖∞ the last step left before project() moved q back [m, rad]: the step's drift.
  /// A step whose projection leaves a loop open by more than 1e-9 [m, rad] is a failure():
  /// docs/LOOPS.md, "When a step cannot follow".
  double stepDrift() const { return step_drift_; }
  /// Numerical rank of the rows (of J Jᵀ) at the last assembly: where the motion started.
  int nominalRank() const { return nominal_rank_; }

 private:
  // The rows whose Jacobian row is not identically zero into constraint_rows_.active
  void findStructuralRows(const Model& model);
  // C and J at q (forward kinematics first); returns ‖C‖∞
  double positionRows(const Model& model, Data& data, const Eigen::VectorXd& q);
  // C alone at q (forward kinematics first); returns ‖C‖∞
  double closureError(const Model& model, Data& data, const Eigen::VectorXd& q);
  // v ← v − Jᵀ (J Jᵀ)⁺ J v with the J of the last positionRows()
  void projectVelocity(Eigen::VectorXd& v);
  // the same with J Jᵀ already factorised in solver_
  void projectVelocityFactored(Eigen::VectorXd& v);
  // failure_ (unless one is recorded) from the worst row of C_ after a projection and the rank of
  // its factorisation
  void recordFailure(const Model& model);

  // the closures' rows of J (the rows beyond them follow)
  auto J() { return constraint_rows_.jacobian.topRows(rows_); }
  // C, Ċ, C̈ and the rows' spatial form of the closures' structural rows (active_count of them)
  void evaluateActiveClosures(const Model& model, Data& data);
  // W = J M⁻¹ Jᵀ on the active rows (the formulation's Delassus operator, or M⁻¹ on Jᵀ's columns)
  void formDelassus(const Model& model, Data& data);
  // the closures' right-hand side −C̈ − 2α Ċ − β² C (seed 002 eq. 60) of the first k active rows
  void closureRightHandSide(const Model& model, int k, Eigen::VectorXd& out);
  // q̈ += M⁻¹ Jᵀ λ for the multipliers of the k active rows in compact_lambda_; they go to lambda_
  void addConstraintResponse(const Model& model, Data& data, int k, Eigen::VectorXd& qdd);
  // accelerations() with rows beyond the loops: the active ones, the closures eliminated, by
  // projected Gauss–Seidel
  void solveWithUnilateralRows(const Model& model, Data& data, const Eigen::VectorXd& q,
                               const Eigen::VectorXd& v, Eigen::VectorXd& qdd);
  // W ← J M⁻¹ Jᵀ on the active rows through inverse_inertia_ (no delassus_ operator)
  void delassusByInverseInertia(const Model& model, Data& data);

  InverseInertiaFunction inverse_inertia_;
  DelassusFunction delassus_;
  DelassusResponseFunction delassus_response_;
  bool leaves_body_accelerations_;
  bool rows_jacobian_;  // accelerations() writes the rows' Jacobian: an operator reads it
  int rows_;  // the closures' rows
  UnilateralLayout layout_;
  ConstraintRows constraint_rows_;  // J and the rows' spatial form
  Eigen::VectorXd C_, rate_, acceleration_, rhs_, lambda_, row_values_;
  Eigen::MatrixXd W_;        // the Delassus matrix J M⁻¹ Jᵀ of the active rows (or J Jᵀ)
  Eigen::MatrixXd compact_;  // nv × m: the active columns of Jᵀ, packed (general route)
  Eigen::VectorXd compact_rhs_, compact_lambda_;
  Eigen::VectorXd generalized_force_, q_trial_, step_;
  PivotedCholesky solver_;
  double position_error_ = 0.0, step_drift_ = 0.0, dissipated_power_ = 0.0;
  int nominal_rank_ = 0;
  ConstraintFailure failure_;
  // rows beyond the loops: their state, which are active, the reduced problem A λ + c (A the
  // Delassus matrix with the closures eliminated, plus the regulariser), its bounds, the
  // closures' response to it Y = W_ee⁺ W_ei, and the last multipliers (the warm start)
  std::vector<UnilateralRowState> row_state_;
  int active_unilateral_ = 0;
  std::vector<RowBound> kinds_;
  std::vector<double> bounds_;
  Eigen::MatrixXd A_, Y_;
  Eigen::VectorXd c_, bounded_lambda_, warm_, loop_rhs_, column_, solved_column_;
  // friction rows: where each sticks (its coordinate when it last started to stick, moved along
  // while it slides; docs/CONTACT.md, "Softness"), whether it has one, whether it slid at the
  // last solve; the anchors move only at a step's start (beginStep)
  Eigen::VectorXd anchor_;
  std::vector<char> anchored_, sliding_;
  bool refresh_anchors_ = true;
  int loop_active_count_ = 0;  // the closures' rows solved for (structural)
  double time_step_ = 0.0;
  GaussSeidelResult last_solve_;
};

}  // namespace hilsim
