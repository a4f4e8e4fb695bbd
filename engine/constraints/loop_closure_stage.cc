#include "engine/constraints/loop_closure_stage.h"

#include <cmath>
#include <random>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/model/configuration.h"

namespace hilsim {

namespace {

double maxNorm(const Eigen::VectorXd& x) { return x.size() == 0 ? 0.0 : x.cwiseAbs().maxCoeff(); }

// Assembly stops when ‖C‖∞ is below this [m, rad] (round-off level for metre-sized mechanisms),
// or after kAssemblyIterations Levenberg–Marquardt steps.
constexpr double kAssemblyTolerance = 1e-13;
constexpr int kAssemblyIterations = 100;

// The largest closure error [m, rad] a step may leave after its projection. The projection's
// Gauss–Newton step brings a step's drift back to round-off (1e-16 on the bundled mechanisms);
// a loop still open by more after it means that the rows' linearisation no longer holds over the
// step, and the step no longer follows the motion (docs/LOOPS.md, "When a step cannot follow"):
// the stage records a failure. Only a step whose drift exceeds kQuietDrift is checked (a second
// evaluation of the rows): from closer, one Gauss–Newton step leaves more than the tolerance
// only where the rows are at the factorisation's rank threshold, and what it leaves is then the
// next step's drift, checked there.
constexpr double kClosureTolerance = 1e-9;
constexpr double kQuietDrift = 1e-10;

// W's rows: the Delassus operators write its upper triangle four rows at a time (a column's
// last block whole, past the k-th row, where W has the rows)
int paddedRows(int rows) { return (rows + 3) / 4 * 4; }

}  // namespace

LoopClosureStage::LoopClosureStage(const Model& model, const FormulationInfo& formulation)
    : LoopClosureStage(model, formulation.inverse_inertia, formulation.delassus,
                       formulation.delassus_response, formulation.leaves_body_accelerations,
                       formulation.delassus_reads_jacobian) {}

LoopClosureStage::LoopClosureStage(const Model& model, InverseInertiaFunction inverse_inertia,
                                   DelassusFunction delassus, DelassusResponseFunction response,
                                   bool leaves_body_accelerations, bool delassus_reads_jacobian)
    : inverse_inertia_(inverse_inertia),
      delassus_(delassus),
      delassus_response_(delassus ? response : nullptr),
      leaves_body_accelerations_(leaves_body_accelerations),
      rows_jacobian_(delassus_reads_jacobian || !delassus || !response),
      rows_(model.nconstraints),
      constraint_rows_(model),
      C_(Eigen::VectorXd::Zero(rows_)),
      rate_(Eigen::VectorXd::Zero(rows_)),
      acceleration_(Eigen::VectorXd::Zero(rows_)),
      rhs_(Eigen::VectorXd::Zero(rows_)),
      lambda_(Eigen::VectorXd::Zero(rows_)),
      row_values_(Eigen::VectorXd::Zero(rows_)),
      W_(Eigen::MatrixXd::Zero(paddedRows(rows_), rows_)),
      compact_(Eigen::MatrixXd::Zero(delassus ? 0 : model.nv, rows_)),
      compact_rhs_(Eigen::VectorXd::Zero(rows_)),
      compact_lambda_(Eigen::VectorXd::Zero(rows_)),
      generalized_force_(Eigen::VectorXd::Zero(model.nv)),
      q_trial_(Eigen::VectorXd::Zero(model.nq)),
      step_(Eigen::VectorXd::Zero(model.nv)),
      solver_(rows_) {
  findStructuralRows(model);
}

void LoopClosureStage::findStructuralRows(const Model& model) {
  // A row is identically zero by the model's geometry: the exact zeros of its axes (a planar
  // linkage's out-of-plane rows), the same at every configuration. Such a row is zero at three
  // random configurations; another is not, but at a measure-zero set of them (and then not to
  // the last bit). It is left out for good: its multiplier is zero, its pivot none. A row that
  // is zero only at some states (a singular position) stays, and the pivoted factorisation's
  // rank test meets it there.
  std::vector<int>& active = constraint_rows_.active;
  constraint_rows_.active_count = 0;
  if (rows_ == 0) return;
  std::vector<char> nonzero(rows_, 0);
  Data data(model);
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> angle(-3.0, 3.0);
  Eigen::VectorXd v(model.nv);
  const Eigen::VectorXd neutral = model.neutralConfiguration();
  for (int trial = 0; trial < 3; ++trial) {
    for (int d = 0; d < model.nv; ++d) v(d) = angle(rng);
    integrateConfiguration(model, neutral, v, 1.0, q_trial_);
    forwardKinematics(model, data, q_trial_);
    evaluateClosures(model, data, {.rows = &constraint_rows_});
    for (int r = 0; r < rows_; ++r) nonzero[r] |= !J().row(r).isZero(0.0);
  }
  for (int r = 0; r < rows_; ++r)
    if (nonzero[r]) active[constraint_rows_.active_count++] = r;
}

void LoopClosureStage::accelerations(const Model& model, Data& data, const Eigen::VectorXd&,
                                     const Eigen::VectorXd&, const Eigen::VectorXd&,
                                     Eigen::VectorXd& qdd) {
  // force elements: q̈ += M⁻¹ Q
  bool body_accelerations = leaves_body_accelerations_;  // A_W of q̈ in Data
  if (!model.force_elements.empty()) {
    generalized_force_.setZero();
    dissipated_power_ = addForceElementForces(model, data, generalized_force_);
    inverse_inertia_(model, data, generalized_force_);  // an nv × 1 column
    qdd += generalized_force_;
    body_accelerations = false;
  }
  if (rows_ == 0) return;

  // C, Ċ = J v and C̈ = J q̈ + J̇ v at this q̈, from the bodies' accelerations, on the rows
  // solved for (findStructuralRows; C of the others is constant: zero Jacobian rows)
  if (!body_accelerations) bodyAccelerations(model, data, qdd);
  evaluateClosures(model, data,
                   {.position_error = &C_, .rows = &constraint_rows_, .rate = &rate_,
                    .acceleration = &acceleration_, .rows_jacobian = rows_jacobian_,
                    .active_only = true});
  position_error_ = maxNorm(C_);
  // on the rows that are not identically zero (findStructuralRows)
  const std::vector<int>& active = constraint_rows_.active;
  const int k = constraint_rows_.active_count;
  // W = J M⁻¹ Jᵀ on them
  if (delassus_)
    delassus_(model, data, constraint_rows_, W_);
  else
    delassusByInverseInertia(model, data);
  // C̈ + 2α Ċ + β² C = 0 (seed 002 eq. 60); C̈ is J Δq̈ more than at this q̈
  const double alpha = model.stabilisation.baumgarte_alpha;
  const double beta = model.stabilisation.baumgarte_beta;
  for (int c = 0; c < k; ++c) {
    const int r = active[c];
    compact_rhs_(c) = -acceleration_(r) - (2.0 * alpha) * rate_(r) - (beta * beta) * C_(r);
  }
  solver_.compute(W_, k);
  solver_.solve(compact_rhs_, compact_lambda_);
  // q̈ += M⁻¹ Jᵀ λ: from the columns W was made of where they are at hand, else one more column
  // through the formulation's M⁻¹
  if (delassus_response_) {
    delassus_response_(model, data, constraint_rows_, compact_lambda_, generalized_force_);
  } else if (!delassus_) {
    generalized_force_.noalias() = compact_.leftCols(k) * compact_lambda_.head(k);
  } else {
    for (int c = 0; c < k; ++c) lambda_(active[c]) = compact_lambda_(c);
    generalized_force_.noalias() = J().transpose() * lambda_;
    inverse_inertia_(model, data, generalized_force_);
  }
  qdd += generalized_force_;
  // every row's multiplier, off q̈'s path (the rows left out keep their zero)
  for (int c = 0; c < k; ++c) lambda_(active[c]) = compact_lambda_(c);
}

void LoopClosureStage::delassusByInverseInertia(const Model& model, Data& data) {
  const std::vector<int>& active = constraint_rows_.active;
  const int k = constraint_rows_.active_count;
  for (int c = 0; c < k; ++c) compact_.col(c) = J().row(active[c]).transpose();
  inverse_inertia_(model, data, compact_.leftCols(k));  // M⁻¹ Jᵀ, every column in one sweep
  for (int c = 0; c < k; ++c)
    for (int r = 0; r <= c; ++r) W_(r, c) = J().row(active[r]).dot(compact_.col(c));
}

double LoopClosureStage::positionRows(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {&C_, nullptr, nullptr, &constraint_rows_});
  position_error_ = maxNorm(C_);
  return position_error_;
}

void LoopClosureStage::projectVelocity(Eigen::VectorXd& v) {
  W_.topRows(rows_).noalias() = J().lazyProduct(J().transpose());
  solver_.compute(W_, rows_);
  projectVelocityFactored(v);
}

void LoopClosureStage::projectVelocityFactored(Eigen::VectorXd& v) {
  row_values_.noalias() = J() * v;
  solver_.solve(row_values_, rhs_);
  v.noalias() -= J().transpose() * rhs_;
}

void LoopClosureStage::project(const Model& model, Data& data, Eigen::VectorXd& q,
                               Eigen::VectorXd& v) {
  const int iterations = model.stabilisation.projection_iterations;
  if (rows_ == 0 || iterations == 0) return;
  // Gauss–Newton on C(q) = 0 with the minimum-norm step Δ = −Jᵀ (J Jᵀ)⁺ C; then v onto J v = 0
  // with the J Jᵀ of the last iteration (the step is of the order of the drift, 1e-12, so the
  // Jacobian at the corrected q differs from it by that much)
  for (int k = 0; k < iterations; ++k) {
    const double error = positionRows(model, data, q);
    W_.topRows(rows_).noalias() = J().lazyProduct(J().transpose());
    solver_.compute(W_, rows_);
    if (k == 0) step_drift_ = error;
    solver_.solve(C_, rhs_);
    step_.noalias() = J().transpose() * rhs_;  // −Δ (a negated product would be a temporary)
    integrateConfiguration(model, q, step_, -1.0, q_trial_);
    q = q_trial_;
  }
  projectVelocityFactored(v);
  // A drift above round-off: the loops must be closed again. Not retried with more Gauss–Newton
  // steps: those close the loops after a step of any size, garbage included (a delta robot's
  // step that opened them by 0.27 m, its speeds at 1e3 rad/s), and hide the failure.
  if (step_drift_ > kQuietDrift && closureError(model, data, q) > kClosureTolerance)
    recordFailure(model);
}

double LoopClosureStage::closureError(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {.position_error = &C_});
  position_error_ = maxNorm(C_);
  return position_error_;
}

void LoopClosureStage::recordFailure(const Model& model) {
  if (failure_.kind != ConstraintFailure::Kind::kNone) return;  // the first one tells
  int worst = 0;
  for (int r = 1; r < rows_; ++r)
    if (std::abs(C_(r)) > std::abs(C_(worst))) worst = r;
  int closure = 0, first_row = 0;
  while (worst >= first_row + closureRows(model.loops[closure].type))
    first_row += closureRows(model.loops[closure++].type);
  failure_.kind = ConstraintFailure::Kind::kLoopOpened;
  failure_.closure = closure;
  failure_.row = worst - first_row;
  failure_.error = std::abs(C_(worst));
  failure_.drift = step_drift_;
  failure_.limit = kClosureTolerance;
  failure_.rank = solver_.rank();
  failure_.nominal_rank = nominal_rank_;
  failure_.force = maxNorm(lambda_);
}

double LoopClosureStage::assemble(const Model& model, Data& data, Eigen::VectorXd& q,
                                  Eigen::VectorXd& v) {
  if (rows_ == 0) return 0.0;
  // Levenberg–Marquardt: Δ = −Jᵀ (J Jᵀ + μ I)⁻¹ C, μ relative to the mean of diag(J Jᵀ); a step
  // that does not lower ‖C‖ is refused and μ raised
  double error = positionRows(model, data, q);
  double damping = 1e-3;
  for (int k = 0; k < kAssemblyIterations && error > kAssemblyTolerance; ++k) {
    W_.topRows(rows_).noalias() = J().lazyProduct(J().transpose());
    const double scale = W_.diagonal().mean();
    W_.diagonal().array() += damping * (scale > 0.0 ? scale : 1.0);
    solver_.compute(W_, rows_);
    solver_.solve(C_, rhs_);
    step_.noalias() = J().transpose() * rhs_;  // −Δ (a negated product would be a temporary)
    integrateConfiguration(model, q, step_, -1.0, q_trial_);
    const double trial_error = positionRows(model, data, q_trial_);
    if (trial_error < error) {
      q = q_trial_;
      error = trial_error;
      damping = std::max(damping * 0.1, 1e-12);
    } else {
      damping *= 10.0;
      positionRows(model, data, q);  // back to the rows at q
    }
  }
  positionRows(model, data, q);
  projectVelocity(v);
  nominal_rank_ = solver_.rank();
  failure_ = ConstraintFailure{};
  step_drift_ = 0.0;
  return position_error_;
}

double LoopClosureStage::potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) {
  if (model.force_elements.empty()) return 0.0;
  forwardKinematics(model, data, q);
  return forceElementEnergy(model, data);
}

}  // namespace hilsim
