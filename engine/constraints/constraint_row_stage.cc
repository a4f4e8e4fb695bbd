#include "engine/constraints/constraint_row_stage.h"

#include <cmath>
#include <random>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/model/configuration.h"

namespace hilsim {

namespace {

double maxNorm(Eigen::Ref<const Eigen::VectorXd> x) {
  return x.size() == 0 ? 0.0 : x.cwiseAbs().maxCoeff();
}

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

ConstraintRowStage::ConstraintRowStage(const Model& model, const FormulationInfo& formulation)
    : ConstraintRowStage(model, formulation.inverse_inertia,
                       // the Delassus operators push the rows' forces through rigid bodies only:
                       // on flexible bodies' models, J M⁻¹ Jᵀ from M⁻¹ on the columns of Jᵀ
                       model.has_flexible_bodies ? nullptr : formulation.delassus,
                       model.has_flexible_bodies ? nullptr : formulation.delassus_response,
                       formulation.leaves_body_accelerations, formulation.delassus_reads_jacobian) {}

ConstraintRowStage::ConstraintRowStage(const Model& model, InverseInertiaFunction inverse_inertia,
                                   DelassusFunction delassus, DelassusResponseFunction response,
                                   bool leaves_body_accelerations, bool delassus_reads_jacobian)
    : inverse_inertia_(inverse_inertia),
      delassus_(delassus),
      delassus_response_(delassus ? response : nullptr),
      leaves_body_accelerations_(leaves_body_accelerations),
      rows_jacobian_(delassus_reads_jacobian || !delassus || !response),
      rows_(model.nconstraints),
      layout_(model),
      constraint_rows_(model),
      C_(Eigen::VectorXd::Zero(rows_)),
      rate_(Eigen::VectorXd::Zero(rows_)),
      acceleration_(Eigen::VectorXd::Zero(rows_)),
      rhs_(Eigen::VectorXd::Zero(rows_)),
      lambda_(Eigen::VectorXd::Zero(layout_.total)),
      row_values_(Eigen::VectorXd::Zero(rows_)),
      W_(Eigen::MatrixXd::Zero(paddedRows(layout_.total), layout_.total)),
      compact_(Eigen::MatrixXd::Zero(delassus ? 0 : model.nv, layout_.total)),
      compact_rhs_(Eigen::VectorXd::Zero(layout_.total)),
      compact_lambda_(Eigen::VectorXd::Zero(layout_.total)),
      generalized_force_(Eigen::VectorXd::Zero(model.nv)),
      q_trial_(Eigen::VectorXd::Zero(model.nq)),
      step_(Eigen::VectorXd::Zero(model.nv)),
      solver_(rows_),
      row_state_(layout_.count()),
      kinds_(layout_.count(), RowBound::kUnilateral),
      bounds_(layout_.count(), 0.0),
      A_(Eigen::MatrixXd::Zero(layout_.count(), layout_.count())),
      Y_(Eigen::MatrixXd::Zero(rows_, layout_.count())),
      c_(Eigen::VectorXd::Zero(layout_.count())),
      bounded_lambda_(Eigen::VectorXd::Zero(layout_.count())),
      warm_(Eigen::VectorXd::Zero(layout_.count())),
      loop_rhs_(Eigen::VectorXd::Zero(rows_)),
      column_(Eigen::VectorXd::Zero(rows_)),
      solved_column_(Eigen::VectorXd::Zero(rows_)),
      anchor_(Eigen::VectorXd::Zero(layout_.count())),
      anchored_(layout_.count(), 0),
      sliding_(layout_.count(), 0) {
  findStructuralRows(model);
  loop_active_count_ = constraint_rows_.active_count;
}

void ConstraintRowStage::findStructuralRows(const Model& model) {
  findStructuralClosureRows(model, constraint_rows_);
}

void ConstraintRowStage::accelerations(const Model& model, Data& data, const Eigen::VectorXd& q,
                                       const Eigen::VectorXd& v, const Eigen::VectorXd&,
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
  if (layout_.count() > 0) {
    // the bodies' accelerations, for the closures' and the contacts' rows (a limit's or
    // friction row's acceleration is q̈_d itself)
    if (!body_accelerations && (rows_ > 0 || layout_.contacts > 0))
      bodyAccelerations(model, data, qdd);
    solveWithUnilateralRows(model, data, q, v, qdd);
    return;
  }
  if (rows_ == 0) return;

  // C, Ċ = J v and C̈ = J q̈ + J̇ v at this q̈, from the bodies' accelerations, on the rows
  // solved for (findStructuralRows; C of the others is constant: zero Jacobian rows)
  if (!body_accelerations) bodyAccelerations(model, data, qdd);
  evaluateActiveClosures(model, data);
  // on the rows that are not identically zero (findStructuralRows)
  const int k = constraint_rows_.active_count;
  // W = J M⁻¹ Jᵀ on them
  formDelassus(model, data);
  // C̈ + 2α Ċ + β² C = 0 (seed 002 eq. 60); C̈ is J Δq̈ more than at this q̈
  closureRightHandSide(model, k, compact_rhs_);
  solver_.compute(W_, k);
  solver_.solve(compact_rhs_, compact_lambda_);
  addConstraintResponse(model, data, k, qdd);
}

void ConstraintRowStage::evaluateActiveClosures(const Model& model, Data& data) {
  evaluateClosures(model, data,
                   {.position_error = &C_, .rows = &constraint_rows_, .rate = &rate_,
                    .acceleration = &acceleration_, .rows_jacobian = rows_jacobian_,
                    .active_only = true});
  position_error_ = maxNorm(C_);
}

void ConstraintRowStage::formDelassus(const Model& model, Data& data) {
  if (delassus_)
    delassus_(model, data, constraint_rows_, W_);
  else
    delassusByInverseInertia(model, data);
}

void ConstraintRowStage::closureRightHandSide(const Model& model, int k, Eigen::VectorXd& out) {
  const double alpha = model.stabilisation.baumgarte_alpha;
  const double beta = model.stabilisation.baumgarte_beta;
  for (int c = 0; c < k; ++c) {
    const int r = constraint_rows_.active[c];
    out(c) = -acceleration_(r) - (2.0 * alpha) * rate_(r) - (beta * beta) * C_(r);
  }
}

void ConstraintRowStage::addConstraintResponse(const Model& model, Data& data, int k,
                                               Eigen::VectorXd& qdd) {
  const std::vector<int>& active = constraint_rows_.active;
  // q̈ += M⁻¹ Jᵀ λ: from the columns W was made of where they are at hand, else one more column
  // through the formulation's M⁻¹
  if (delassus_response_) {
    delassus_response_(model, data, constraint_rows_, compact_lambda_, generalized_force_);
  } else if (!delassus_) {
    generalized_force_.noalias() = compact_.leftCols(k) * compact_lambda_.head(k);
  } else {
    for (int c = 0; c < k; ++c) lambda_(active[c]) = compact_lambda_(c);
    generalized_force_.noalias() = constraint_rows_.jacobian.transpose() * lambda_;
    inverse_inertia_(model, data, generalized_force_);
  }
  qdd += generalized_force_;
  // every row's multiplier, off q̈'s path (the rows left out keep their zero)
  for (int c = 0; c < k; ++c) lambda_(active[c]) = compact_lambda_(c);
}

void ConstraintRowStage::solveWithUnilateralRows(const Model& model, Data& data,
                                                 const Eigen::VectorXd& q,
                                                 const Eigen::VectorXd& v, Eigen::VectorXd& qdd) {
  const ContactSettings& settings = model.contact_settings;
  // the closures' rows (structural, findStructuralRows): C, Ċ, C̈ at this q̈
  constraint_rows_.active_count = loop_active_count_;
  const int k_e = loop_active_count_;
  std::vector<int>& active = constraint_rows_.active;
  if (rows_ > 0) evaluateActiveClosures(model, data);
  // the rows beyond them, and which are active (UnilateralRowState::active)
  evaluateUnilateralRows(model, data, layout_, q, v, qdd, time_step_, rows_jacobian_,
                         constraint_rows_, row_state_);
  int n = 0;  // active rows beyond the closures
  const int count = layout_.count();
  for (int u = 0; u < count; ++u) {
    const UnilateralRowState& s = row_state_[u];
    const bool friction = s.kind == RowBound::kBox || s.kind == RowBound::kConeTangent;
    if (!s.active) {
      warm_(u) = 0.0;
      anchored_[u] = 0;
      continue;
    }
    // a friction row sticks where it was at the start of the step in which it stopped sliding
    if (friction && refresh_anchors_ && (!anchored_[u] || sliding_[u])) {
      anchor_(u) = s.position;
      anchored_[u] = 1;
    }
    active[k_e + n] = layout_.loop_rows + u;
    kinds_[n] = s.kind;
    bounds_[n] = s.bound;
    bounded_lambda_(n) = warm_(u);
    ++n;
  }
  refresh_anchors_ = false;
  active_unilateral_ = n;
  lambda_.setZero();
  if (model.force_elements.empty()) dissipated_power_ = 0.0;  // else the force elements' (above)
  last_solve_ = GaussSeidelResult{};
  if (n == 0 && k_e == 0) return;
  const int k = k_e + n;
  constraint_rows_.active_count = k;

  // W = J M⁻¹ Jᵀ on every active row: the closures' block W_ee first, W_ei, W_ii (upper
  // triangle)
  formDelassus(model, data);

  // the closures' rows eliminated: λ_e = W_ee⁺ (b_e − W_ei λ_i), b_e their right-hand side
  // (Baumgarte's, as accelerations()); the bounded rows then see A = W_ii − W_eiᵀ Y and
  // c = a_i + Yᵀ b_e with Y = W_ee⁺ W_ei
  closureRightHandSide(model, k_e, loop_rhs_);
  if (k_e > 0) {
    solver_.compute(W_, k_e);
    for (int i = 0; i < n; ++i) {
      column_.head(k_e) = W_.col(k_e + i).head(k_e);
      solver_.solve(column_, solved_column_);
      Y_.col(i).head(k_e) = solved_column_.head(k_e);
    }
    solver_.solve(loop_rhs_, rhs_);  // W_ee⁺ b_e
  }
  // A = W_ii − W_eiᵀ Y, c = a_i + W_eiᵀ W_ee⁺ b_e − a_ref, and the regulariser on A's diagonal
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i <= j; ++i) {
      double a = W_(k_e + i, k_e + j);
      if (k_e > 0) a -= W_.col(k_e + i).head(k_e).dot(Y_.col(j).head(k_e));
      A_(i, j) = a;
      A_(j, i) = a;
    }
  }
  for (int i = 0; i < n; ++i) {
    const int u = active[k_e + i] - layout_.loop_rows;
    const UnilateralRowState& s = row_state_[u];
    // a limit or a normal holds r ≥ 0; a friction row its anchor, once it has one
    const bool friction = s.kind == RowBound::kBox || s.kind == RowBound::kConeTangent;
    const double violation = friction ? (anchored_[u] ? s.position - anchor_(u) : 0.0) : s.violation;
    const ConstraintSoftness& soft = s.kind == RowBound::kUnilateral   ? settings.limit
                                     : s.kind == RowBound::kConeNormal ? settings.contact
                                                                       : settings.friction;
    // MuJoCo's reference acceleration, a time constant of at least two steps
    const double d = soft.impedance;
    const double tau = std::max(soft.time_constant, 2.0 * time_step_);
    const double b = 2.0 / (d * tau);
    const double stiffness = 1.0 / (d * d * tau * tau * soft.damping_ratio * soft.damping_ratio);
    const double reference = -b * s.rate - stiffness * d * violation;
    double acceleration = s.acceleration;
    if (k_e > 0) acceleration += W_.col(k_e + i).head(k_e).dot(rhs_.head(k_e));
    c_(i) = acceleration - reference;
    // a row no force moves (A_rr ≤ 0 to round-off, a limit the loops already fix) is left out
    // by the solver; the others get R = (1 − d) / d A_rr
    if (A_(i, i) <= 1e-12 * std::max(W_(k_e + i, k_e + i), 0.0)) A_(i, i) = 0.0;
    A_(i, i) *= 1.0 / d;
  }
  if (n > 0)
    last_solve_ = projectedGaussSeidel(A_, c_, kinds_.data(), bounds_.data(), n,
                                       settings.max_iterations, settings.tolerance,
                                       bounded_lambda_);
  // the closures' multipliers, then every active row's into compact_lambda_ (in `active`
  // order)
  for (int e = 0; e < k_e; ++e) {
    double x = rhs_(e);
    for (int i = 0; i < n; ++i) x -= Y_(e, i) * bounded_lambda_(i);
    compact_lambda_(e) = x;
  }
  double power = 0.0;  // −λ ṙ of the bounded rows
  for (int i = 0; i < n; ++i) {
    const int u = active[k_e + i] - layout_.loop_rows;
    compact_lambda_(k_e + i) = bounded_lambda_(i);
    warm_(u) = bounded_lambda_(i);
    power -= bounded_lambda_(i) * row_state_[u].rate;
    // at its bound (to the solver's rounding) a friction row slides: its anchor follows it
    constexpr double kAtBound = 1.0 - 1e-9;
    if (kinds_[i] == RowBound::kBox) {
      sliding_[u] = std::abs(bounded_lambda_(i)) >= kAtBound * bounds_[i];
    } else if (kinds_[i] == RowBound::kConeNormal) {
      const double radius = bounds_[i] * bounded_lambda_(i);
      const bool at_edge =
          bounded_lambda_.segment<2>(i + 1).norm() >= kAtBound * radius;
      sliding_[u + 1] = at_edge;
      sliding_[u + 2] = at_edge;
    }
  }
  dissipated_power_ += power;
  addConstraintResponse(model, data, k, qdd);
  constraint_rows_.active_count = loop_active_count_;
}

void ConstraintRowStage::delassusByInverseInertia(const Model& model, Data& data) {
  const std::vector<int>& active = constraint_rows_.active;
  const int k = constraint_rows_.active_count;
  const auto& jacobian = constraint_rows_.jacobian;  // every row's: an active one may be beyond
                                                     // the closures'
  for (int c = 0; c < k; ++c) compact_.col(c) = jacobian.row(active[c]).transpose();
  inverse_inertia_(model, data, compact_.leftCols(k));  // M⁻¹ Jᵀ, every column in one sweep
  for (int c = 0; c < k; ++c)
    for (int r = 0; r <= c; ++r) W_(r, c) = jacobian.row(active[r]).dot(compact_.col(c));
}

double ConstraintRowStage::positionRows(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {&C_, nullptr, nullptr, &constraint_rows_});
  position_error_ = maxNorm(C_);
  return position_error_;
}

void ConstraintRowStage::projectVelocity(Eigen::VectorXd& v) {
  W_.topLeftCorner(rows_, rows_).noalias() = J().lazyProduct(J().transpose());
  solver_.compute(W_, rows_);
  projectVelocityFactored(v);
}

void ConstraintRowStage::projectVelocityFactored(Eigen::VectorXd& v) {
  row_values_.noalias() = J() * v;
  solver_.solve(row_values_, rhs_);
  v.noalias() -= J().transpose() * rhs_;
}

void ConstraintRowStage::project(const Model& model, Data& data, Eigen::VectorXd& q,
                               Eigen::VectorXd& v) {
  const int iterations = model.stabilisation.projection_iterations;
  if (rows_ == 0 || iterations == 0) return;
  // Gauss–Newton on C(q) = 0 with the minimum-norm step Δ = −Jᵀ (J Jᵀ)⁺ C; then v onto J v = 0
  // with the J Jᵀ of the last iteration (the step is of the order of the drift, 1e-12, so the
  // Jacobian at the corrected q differs from it by that much)
  for (int k = 0; k < iterations; ++k) {
    const double error = positionRows(model, data, q);
    W_.topLeftCorner(rows_, rows_).noalias() = J().lazyProduct(J().transpose());
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

double ConstraintRowStage::closureError(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {.position_error = &C_});
  position_error_ = maxNorm(C_);
  return position_error_;
}

void ConstraintRowStage::recordFailure(const Model& model) {
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
  failure_.force = maxNorm(lambda_.head(rows_));
}

double ConstraintRowStage::assemble(const Model& model, Data& data, Eigen::VectorXd& q,
                                  Eigen::VectorXd& v) {
  warm_.setZero();  // a new state: no warm start, no anchors from the old one
  std::fill(anchored_.begin(), anchored_.end(), 0);
  refresh_anchors_ = true;
  if (rows_ == 0) return 0.0;
  // Levenberg–Marquardt: Δ = −Jᵀ (J Jᵀ + μ I)⁻¹ C, μ relative to the mean of diag(J Jᵀ); a step
  // that does not lower ‖C‖ is refused and μ raised
  double error = positionRows(model, data, q);
  double damping = 1e-3;
  for (int k = 0; k < kAssemblyIterations && error > kAssemblyTolerance; ++k) {
    W_.topLeftCorner(rows_, rows_).noalias() = J().lazyProduct(J().transpose());
    auto closures = W_.topLeftCorner(rows_, rows_);  // W_ also holds the other rows' block
    const double scale = closures.diagonal().mean();
    closures.diagonal().array() += damping * (scale > 0.0 ? scale : 1.0);
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

double ConstraintRowStage::potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) {
  if (model.force_elements.empty()) return 0.0;
  forwardKinematics(model, data, q);
  return forceElementEnergy(model, data);
}

}  // namespace hilsim
