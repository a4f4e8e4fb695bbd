// The constraint stage of loop closures and force elements (docs/LOOPS.md). After a formulation's
// tree q̈ it adds the force elements' accelerations, M⁻¹ Q, then solves the closures' rows
//   J M⁻¹ Jᵀ λ = −J̇ v − 2α J v − β² C − J q̈,   q̈ ← q̈ + M⁻¹ Jᵀ λ
// (the Schur complement of the augmented system of seed 002 eq. (61) on the tree's own
// factorisation, with Baumgarte's stabilisation, seed 002 eq. (60)), with the formulation's M⁻¹
// operator. After a step it projects q and v onto the constraint manifold; on a new state it
// assembles (Levenberg–Marquardt on C(q) = 0, then J v = 0).
#pragma once

#include <vector>

#include "engine/constraints/constraint_stage.h"
#include "engine/constraints/pivoted_cholesky.h"
#include "engine/formulations/formulations.h"

namespace hilsim {

class LoopClosureStage final : public ConstraintStage {
 public:
  /// Sized for `model` (its loops and force elements), with the formulation's M⁻¹ operator and,
  /// where it has one, its Delassus operator (FormulationInfo), valid after its forward dynamics.
  LoopClosureStage(const Model& model, const FormulationInfo& formulation);
  /// The same with the operators given; without `delassus`, J M⁻¹ Jᵀ comes from
  /// `inverse_inertia` on the columns of Jᵀ (the general route every formulation has), and
  /// M⁻¹ Jᵀ λ from those columns; with `delassus` but no `response`, from `inverse_inertia`.
  /// `leaves_body_accelerations`: the forward dynamics leaves the bodies' accelerations of its q̈
  /// in Data's A_W (else the stage computes them, one outward sweep); `delassus_reads_jacobian`:
  /// `delassus` and `response` read the rows' Jacobian, not only their spatial form
  /// (FormulationInfo).
  LoopClosureStage(const Model& model, InverseInertiaFunction inverse_inertia,
                   DelassusFunction delassus = nullptr, DelassusResponseFunction response = nullptr,
                   bool leaves_body_accelerations = false, bool delassus_reads_jacobian = true);

  int capacity() const override { return rows_; }
  void accelerations(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                     Eigen::VectorXd& qdd) override;
  void project(const Model& model, Data& data, Eigen::VectorXd& q, Eigen::VectorXd& v) override;
  double assemble(const Model& model, Data& data, Eigen::VectorXd& q, Eigen::VectorXd& v) override;
  double potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) override;
  double dissipatedPower() const override { return dissipated_power_; }
  const ConstraintFailure& failure() const override { return failure_; }

  /// Closure forces λ of the last accelerations() (m = model.nconstraints), in the directions of
  /// the rows (docs/LOOPS.md): a force [N] or torque [N·m] on body b, its opposite on body a.
  const Eigen::VectorXd& multipliers() const { return lambda_; }
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

  auto& J() { return constraint_rows_.jacobian; }
  // W ← J M⁻¹ Jᵀ on the active rows through inverse_inertia_ (no delassus_ operator)
  void delassusByInverseInertia(const Model& model, Data& data);

  InverseInertiaFunction inverse_inertia_;
  DelassusFunction delassus_;
  DelassusResponseFunction delassus_response_;
  bool leaves_body_accelerations_;
  bool rows_jacobian_;  // accelerations() writes the rows' Jacobian: an operator reads it
  int rows_;
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
};

}  // namespace hilsim
