#include "engine/algorithms/algebraic_velocity.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/joint_kinematics.h"
#include "engine/model/configuration.h"

namespace hilsim {

AlgebraicVelocities::AlgebraicVelocities(const Model& model)
    : basis_(model.nbodies, Matrix6::Zero()),
      subtree_end_(model.nbodies, 0),
      delta_alpha_(model.nbodies, MotionVector::Zero()),
      null_motion_(Eigen::MatrixXd::Zero(model.nv, model.nalgebraic)),
      jacobian_(Eigen::MatrixXd::Zero(model.nalgebraic, model.nalgebraic)),
      lu_(model.nalgebraic),
      gamma0_(Eigen::VectorXd::Zero(model.nalgebraic)),
      gamma_(gamma0_),
      x_(gamma0_),
      v_trial_(Eigen::VectorXd::Zero(model.nv)),
      q_trial_(Eigen::VectorXd::Zero(model.nq)) {
  // bodies are numbered depth first, so a subtree is the contiguous range i … subtree_end − 1
  for (int i = model.nbodies - 1; i >= 1; --i) {
    subtree_end_[i] = std::max(subtree_end_[i], i + 1);
    const int parent = model.parent[i];
    if (parent > 0) subtree_end_[parent] = std::max(subtree_end_[parent], subtree_end_[i]);
  }
}

void AlgebraicVelocities::capture(const Model& model, const Data& data) {
  for (int i = 1; i < model.nbodies; ++i) {
    const int offset = model.idx_algebraic[i];
    if (offset < 0) continue;
    basis_[i] = data.null_basis[i];
    const int n_i = model.nv_joint[i];
    const int iv = model.idx_v[i];
    for (int c = 0; c < n_i - model.joint_rank[i]; ++c) {
      auto column = null_motion_.col(offset + c);
      column.setZero();
      column.segment(iv, n_i) = basis_[i].col(c).head(n_i);
      delta_alpha_[i].noalias() = data.S_W.middleCols(iv, n_i) * basis_[i].col(c).head(n_i);
      // descendants: δq̈_j = −G_jᵀ δα(λ), δα(j) = δα(λ) + S_j δq̈_j (seed 003 (25b), (24b))
      for (int j = i + 1; j < subtree_end_[i]; ++j) {
        const int jv = model.idx_v[j];
        const int n_j = model.nv_joint[j];
        const MotionVector& alpha_parent = delta_alpha_[model.parent[j]];
        auto dq = column.segment(jv, n_j);
        dq.noalias() = -data.G_W.middleCols(jv, n_j).transpose() * alpha_parent;
        delta_alpha_[j] = alpha_parent;
        delta_alpha_[j].noalias() += data.S_W.middleCols(jv, n_j) * dq;
      }
    }
  }
}

void AlgebraicVelocities::residual(const Model& model, const Data& data,
                                   Eigen::VectorXd& gamma) const {
  for (int i = 1; i < model.nbodies; ++i) {
    const int offset = model.idx_algebraic[i];
    if (offset < 0) continue;
    const int n_i = model.nv_joint[i];
    const int k = n_i - model.joint_rank[i];
    gamma.segment(offset, k).noalias() =
        basis_[i].topLeftCorner(n_i, k).transpose() * data.epsilon.segment(model.idx_v[i], n_i);
  }
}

double AlgebraicVelocities::evaluate(const Model& model, Data& data, const Eigen::VectorXd& q,
                                     const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                                     double h, Eigen::VectorXd& gamma) {
  if (h > 0.0) {
    integrateConfiguration(model, q, v, h, q_trial_);
    aba(model, data, q_trial_, v, tau);
  } else {
    aba(model, data, q, v, tau);
  }
  residual(model, data, gamma);
  return gamma.lpNorm<Eigen::Infinity>();
}

double AlgebraicVelocities::newtonStep(const Model& model, Data& data, const Eigen::VectorXd& q,
                                       Eigen::VectorXd& v, const Eigen::VectorXd& tau, double h) {
  const int n = model.nalgebraic;
  if (n == 0) return 0.0;
  const double size = evaluate(model, data, q, v, tau, h, gamma0_);
  // forward differences: γ is affine in x for linear dampers and springs at h = 0, and nearly
  // so otherwise; the step is relative to the velocity scale
  const double delta = 1e-7 * std::max(1.0, v.lpNorm<Eigen::Infinity>());
  for (int c = 0; c < n; ++c) {
    v_trial_ = v;
    v_trial_.noalias() += delta * null_motion_.col(c);
    evaluate(model, data, q, v_trial_, tau, h, gamma_);
    jacobian_.col(c) = (gamma_ - gamma0_) / delta;
  }
  lu_.compute(jacobian_);
  x_ = lu_.solve(gamma0_);
  v.noalias() -= null_motion_ * x_;
  return size;
}

}  // namespace hilsim
