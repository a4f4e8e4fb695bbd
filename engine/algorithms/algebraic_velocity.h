// The algebraic velocities of massless joint motion (seed 003 §3.4–3.5): the n_i − r_i velocity
// components of a joint of rank r_i < n_i have no inertia, and are fixed by the first-order
// equations 0 = γ(q, v) = X₀ᵀ ε (seed 003 (28b)) instead of by an acceleration.
// References:
//   Arnold, "A recursive multibody formalism for systems with small mass and inertia
//   terms" (2013) [seed 003]
#pragma once

#include <vector>

#include <Eigen/LU>

#include "engine/model/data.h"

namespace hilsim {

/// Workspace for solving γ = 0 along the massless motions; sized once from the Model, then
/// allocation-free.
///
/// After an `aba` call at q, `capture` freezes the null bases X₀ of the rank-deficient joints and
/// builds the null motions L (nv × nalgebraic): column c moves joint i along its null direction
/// and every descendant j by −D_j⁺ U_jᵀ δα (the outward sweep of seed 003 (25b)), so that no body
/// with inertia moves: M(q) L = 0. Adding L x to v changes the massless motion only.
class AlgebraicVelocities {
 public:
  explicit AlgebraicVelocities(const Model& model);

  /// Freezes X₀ and computes L from data after aba(model, data, q, …).
  void capture(const Model& model, const Data& data);

  /// γ = X₀ᵀ ε (nalgebraic) with the frozen bases, from data after an aba call [N or N·m].
  void residual(const Model& model, const Data& data, Eigen::VectorXd& gamma) const;

  /// One linearly implicit (Newton) step on g(x) = γ(q ⊕ h (v + L x), v + L x) with a
  /// forward-difference Jacobian: v ← v + L x with x = −(∂g/∂x)⁻¹ g(0). h = 0 keeps q fixed
  /// (consistent velocities at q); h > 0 makes the massless positions implicit too (a stiff
  /// spring on a massless joint relaxes without a step-size limit). Calls aba 1 + nalgebraic
  /// times on `data` with tau. Returns ‖g(0)‖∞. `capture` must have been called at q.
  double newtonStep(const Model& model, Data& data, const Eigen::VectorXd& q, Eigen::VectorXd& v,
                    const Eigen::VectorXd& tau, double h);

  /// ∂g/∂x of the last newtonStep (nalgebraic²).
  const Eigen::MatrixXd& jacobian() const { return jacobian_; }
  const Eigen::MatrixXd& nullMotion() const { return null_motion_; }

 private:
  double evaluate(const Model& model, Data& data, const Eigen::VectorXd& q,
                  const Eigen::VectorXd& v, const Eigen::VectorXd& tau, double h,
                  Eigen::VectorXd& gamma);

  std::vector<Matrix6> basis_;          // [nbodies] frozen X of rank-deficient joints
  std::vector<int> subtree_end_;        // [nbodies] one past the last body of i's subtree
  std::vector<MotionVector> delta_alpha_;  // [nbodies] propagated spatial motion
  Eigen::MatrixXd null_motion_;         // L, nv × nalgebraic
  Eigen::MatrixXd jacobian_;            // ∂g/∂x
  Eigen::PartialPivLU<Eigen::MatrixXd> lu_;
  Eigen::VectorXd gamma0_, gamma_, x_, v_trial_, q_trial_;
};

}  // namespace hilsim
