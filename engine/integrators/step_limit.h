// The largest fixed step at which classical RK4 stays stable on a model's joint springs and
// dampers: a tiny link on a damped joint (a gripper's fingertip) can need a step far below the
// 1 ms a user asks for, and the run then diverges within a few steps. The estimate linearises
// the motion about a configuration q with the joint forces that are linear in (q, v):
//   ẋ = A x,  x = (δq, v),  A = [0  I; −M(q)⁻¹ K  −M(q)⁻¹ D],  K = diag(stiffness), D = diag(damping)
// (gravity and the velocity-product terms are left out: they are not what makes a model stiff),
// and takes, over the eigenvalues λ of A, the largest h with |R(h λ)| ≤ 1 for RK4's stability
// polynomial R(z) = 1 + z + z²/2 + z³/6 + z⁴/24 (Hairer, Wanner, "Solving Ordinary Differential
// Equations II" (1996) §IV.2). On the real axis that is h = 2.7853/|λ|, on the imaginary axis
// 2.8284/|λ|. M changes with q, so the bound holds near q, not everywhere.
#pragma once

#include <limits>

#include <Eigen/Core>

#include "engine/model/model.h"

namespace hilsim {

struct StepLimit {
  /// The largest stable RK4 step near q [s]; infinity when nothing bounds it (no springs or
  /// dampers), or when it was not computed (see rk4StepLimit).
  double max_dt = std::numeric_limits<double>::infinity();
  double rate = 0.0;  ///< |λ| of the eigenvalue that sets it [1/s]
  int joint = -1;     ///< the joint that moves most in that eigenvector (−1: none)
  bool computed = false;
};

/// The bound above at q (nq). Not computed (max_dt infinite, computed false) for models with
/// massless joint motion or flexible bodies, which imex_euler and the modal damping treat in
/// their own way, and above kMaxDofs degrees of freedom (O(nv³) work). Allocates; not for the RT
/// thread.
StepLimit rk4StepLimit(const Model& model, const Eigen::VectorXd& q);

/// Degrees of freedom above which rk4StepLimit does not compute the bound.
inline constexpr int kStepLimitMaxDofs = 512;

/// A round step at or below `fraction` of `max_dt`: 1, 2 or 5 × 10ᵏ s.
double roundStepBelow(double max_dt, double fraction = 0.9);

}  // namespace hilsim
