#include "engine/algorithms/hdca_loops.h"

#include "engine/algorithms/hdca.h"
#include "engine/constraints/closure_kinematics.h"

namespace hilsim {

HdcaLoops::HdcaLoops(const Model& model)
    : rows_(model),
      m_(model.nconstraints),
      solver_(model.nconstraints),
      u_(Eigen::VectorXd::Zero(model.nv)),
      sigma_(Eigen::VectorXd::Zero(model.nconstraints)),
      impulse_part_(Eigen::VectorXd::Zero(model.nv)),
      force_a_rate_(Matrix6N::Zero(6, model.nconstraints)),
      force_b_rate_(Matrix6N::Zero(6, model.nconstraints)),
      impulse_(model.nbodies, Vector6::Zero()),
      impulse_rate_(model.nbodies, Vector6::Zero()) {
  findStructuralClosureRows(model, rows_);
  k_ = rows_.active_count;
  J_ = Eigen::MatrixXd::Zero(k_, model.nv);
  Y_ = Eigen::MatrixXd::Zero(model.nv, k_);
  K_ = Eigen::MatrixXd::Zero(k_, k_);
  rhs_ = sigma_active_ = row_rates_ = Eigen::VectorXd::Zero(k_);
}

void HdcaLoops::momentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                              const Eigen::VectorXd& P, const Eigen::VectorXd& tau,
                              Eigen::VectorXd& v, Eigen::VectorXd& P_dot) {
  // u = M⁻¹ P by the tree (phase 1), the applied loads summed for phase 2
  hdcaAssemble(model, data, q);
  hdcaVelocitiesWithLoads(model, data, P, u_);
  v = u_;
  if (k_ > 0) {
    // (8) by its Schur complement: K σ = A u, v = u − M⁻¹ Aᵀ σ
    evaluateClosures(model, data, {.rows = &rows_, .active_only = true});
    for (int a = 0; a < k_; ++a) J_.row(a) = rows_.jacobian.row(rows_.active[a]);
    Y_ = J_.transpose();
    for (int a = 0; a < k_; ++a) hdcaVelocities(model, data, Y_.col(a), Y_.col(a));
    K_.noalias() = J_ * Y_;
    solver_.compute(K_, k_);
    rhs_.noalias() = J_ * u_;
    solver_.solve(rhs_, sigma_active_);
    v.noalias() -= Y_ * sigma_active_;
    // one correction on what is left of A v: the Schur complement loses digits in proportion to
    // K's condition (rows nearly dependent), which this step recovers (docs/HDCA.md)
    row_rates_.noalias() = J_ * v;
    solver_.solve(row_rates_, rhs_);
    sigma_active_ += rhs_;
    v.noalias() -= Y_ * rhs_;
  }
  // (77) for the tree at v, then the cut impulses' term Ȧᵀ σ
  hdcaMomentumRatesAt(model, data, q, v, tau, P_dot);
  for (int i = 1; i < model.nbodies; ++i) data.V_W[i] = data.hdca.velocity_W[i];
  impulse_part_.setZero();
  velocity_error_ = 0.0;
  if (k_ == 0) return;
  row_rates_.noalias() = J_ * v;
  velocity_error_ = row_rates_.lpNorm<Eigen::Infinity>();
  closureForceRates(model, data, force_a_rate_, force_b_rate_);
  for (int i = 0; i < model.nbodies; ++i) {
    impulse_[i].setZero();
    impulse_rate_[i].setZero();
  }
  sigma_.setZero();
  for (int a = 0; a < k_; ++a) {
    const int r = rows_.active[a];
    const double s = sigma_active_[a];
    sigma_[r] = s;
    // body 0, the world, takes what acts on it: nothing moves it
    impulse_[rows_.body_a[r]].noalias() += s * rows_.force_a.col(r);
    impulse_[rows_.body_b[r]].noalias() += s * rows_.force_b.col(r);
    impulse_rate_[rows_.body_a[r]].noalias() += s * force_a_rate_.col(r);
    impulse_rate_[rows_.body_b[r]].noalias() += s * force_b_rate_.col(r);
  }
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int parent = model.parent[i];
    if (parent <= 0) continue;
    impulse_[parent] += impulse_[i];
    impulse_rate_[parent] += impulse_rate_[i];
  }
  hdcaImpulseRates(model, data, impulse_, impulse_rate_, impulse_part_);
  P_dot += impulse_part_;
}

std::unique_ptr<MomentumLoops> makeHdcaLoops(const Model& model) {
  return std::make_unique<HdcaLoops>(model);
}

void HdcaLoops::resetImpulses(Eigen::VectorXd& P, Eigen::VectorXd& P_dot) {
  if (k_ == 0) return;
  P.noalias() -= J_.transpose() * sigma_active_;
  P_dot -= impulse_part_;
  sigma_active_.setZero();
  sigma_.setZero();
  impulse_part_.setZero();
}

}  // namespace hilsim
