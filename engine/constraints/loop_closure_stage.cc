#include "engine/constraints/loop_closure_stage.h"

#include <cmath>

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

}  // namespace

LoopClosureStage::LoopClosureStage(const Model& model, InverseInertiaFunction inverse_inertia)
    : inverse_inertia_(inverse_inertia),
      rows_(model.nconstraints),
      C_(Eigen::VectorXd::Zero(rows_)),
      bias_(Eigen::VectorXd::Zero(rows_)),
      rhs_(Eigen::VectorXd::Zero(rows_)),
      lambda_(Eigen::VectorXd::Zero(rows_)),
      row_values_(Eigen::VectorXd::Zero(rows_)),
      J_(Eigen::MatrixXd::Zero(rows_, model.nv)),
      minv_jt_(Eigen::MatrixXd::Zero(model.nv, rows_)),
      delassus_(Eigen::MatrixXd::Zero(rows_, rows_)),
      compact_(Eigen::MatrixXd::Zero(model.nv, rows_)),
      active_rows_(rows_, 0),
      generalized_force_(Eigen::VectorXd::Zero(model.nv)),
      q_trial_(Eigen::VectorXd::Zero(model.nq)),
      step_(Eigen::VectorXd::Zero(model.nv)),
      solver_(rows_) {}

void LoopClosureStage::accelerations(const Model& model, Data& data, const Eigen::VectorXd&,
                                     const Eigen::VectorXd& v, const Eigen::VectorXd&,
                                     Eigen::VectorXd& qdd) {
  // force elements: q̈ += M⁻¹ Q
  if (!model.force_elements.empty()) {
    generalized_force_.setZero();
    addForceElementForces(model, data, generalized_force_);
    inverse_inertia_(model, data, generalized_force_);  // an nv × 1 column
    qdd += generalized_force_;
  }
  if (rows_ == 0) return;

  evaluateClosures(model, data, {&C_, &J_, &bias_});
  position_error_ = maxNorm(C_);
  // M⁻¹ Jᵀ, every column in one sweep of the formulation's factorisation. Rows that are zero here
  // (a planar linkage's out-of-plane rows) are left out: their column is zero, their pivot none.
  int active = 0;
  for (int r = 0; r < rows_; ++r) {
    if (J_.row(r).isZero(0.0)) continue;
    active_rows_[active] = r;
    compact_.col(active++) = J_.row(r).transpose();
  }
  inverse_inertia_(model, data, compact_.leftCols(active));
  minv_jt_.setZero();
  for (int c = 0; c < active; ++c) minv_jt_.col(active_rows_[c]) = compact_.col(c);
  // J M⁻¹ Jᵀ: coefficient-wise (lazy) for a few rows, where the blocked matrix product's set-up
  // costs more than its arithmetic; blocked from 8 rows on (measured, bench/loops_bench.cc)
  if (active < 8)
    delassus_.noalias() = J_.lazyProduct(minv_jt_);
  else
    delassus_.noalias() = J_ * minv_jt_;
  // C̈ + 2α Ċ + β² C = 0 (seed 002 eq. 60) with C̈ = J q̈ + J̇ v, Ċ = J v
  const double alpha = model.stabilisation.baumgarte_alpha;
  const double beta = model.stabilisation.baumgarte_beta;
  row_values_.noalias() = J_.lazyProduct(v);
  rhs_ = -bias_ - (2.0 * alpha) * row_values_ - (beta * beta) * C_;
  rhs_.noalias() -= J_.lazyProduct(qdd);
  solver_.compute(delassus_, rows_);
  solver_.solve(rhs_, lambda_);
  qdd.noalias() += minv_jt_.lazyProduct(lambda_);
}

double LoopClosureStage::positionRows(const Model& model, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {&C_, &J_, nullptr});
  position_error_ = maxNorm(C_);
  return position_error_;
}

void LoopClosureStage::projectVelocity(Eigen::VectorXd& v) {
  delassus_.noalias() = J_.lazyProduct(J_.transpose());
  solver_.compute(delassus_, rows_);
  projectVelocityFactored(v);
}

void LoopClosureStage::projectVelocityFactored(Eigen::VectorXd& v) {
  row_values_.noalias() = J_ * v;
  solver_.solve(row_values_, rhs_);
  v.noalias() -= J_.transpose() * rhs_;
}

void LoopClosureStage::project(const Model& model, Data& data, Eigen::VectorXd& q,
                               Eigen::VectorXd& v) {
  const int iterations = model.stabilisation.projection_iterations;
  if (rows_ == 0 || iterations == 0) return;
  // Gauss–Newton on C(q) = 0 with the minimum-norm step Δ = −Jᵀ (J Jᵀ)⁺ C; then v onto J v = 0
  // with the J Jᵀ of the last iteration (the step is of the order of the drift, 1e-12, so the
  // Jacobian at the corrected q differs from it by that much)
  for (int k = 0; k < iterations; ++k) {
    positionRows(model, data, q);
    delassus_.noalias() = J_.lazyProduct(J_.transpose());
    solver_.compute(delassus_, rows_);
    solver_.solve(C_, rhs_);
    step_.noalias() = J_.transpose() * rhs_;  // −Δ (a negated product would be a temporary)
    integrateConfiguration(model, q, step_, -1.0, q_trial_);
    q = q_trial_;
  }
  projectVelocityFactored(v);
}

double LoopClosureStage::assemble(const Model& model, Data& data, Eigen::VectorXd& q,
                                  Eigen::VectorXd& v) {
  if (rows_ == 0) return 0.0;
  // Levenberg–Marquardt: Δ = −Jᵀ (J Jᵀ + μ I)⁻¹ C, μ relative to the mean of diag(J Jᵀ); a step
  // that does not lower ‖C‖ is refused and μ raised
  double error = positionRows(model, data, q);
  double damping = 1e-3;
  for (int k = 0; k < kAssemblyIterations && error > kAssemblyTolerance; ++k) {
    delassus_.noalias() = J_.lazyProduct(J_.transpose());
    const double scale = delassus_.diagonal().mean();
    delassus_.diagonal().array() += damping * (scale > 0.0 ? scale : 1.0);
    solver_.compute(delassus_, rows_);
    solver_.solve(C_, rhs_);
    step_.noalias() = J_.transpose() * rhs_;  // −Δ (a negated product would be a temporary)
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
  return position_error_;
}

double LoopClosureStage::potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q) {
  if (model.force_elements.empty()) return 0.0;
  forwardKinematics(model, data, q);
  return forceElementEnergy(model, data);
}

}  // namespace hilsim
