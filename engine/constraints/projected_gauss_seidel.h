// Projected Gauss–Seidel on the rows' bounded problem (docs/CONTACT.md, "Solver"):
//   find λ in K with  A λ + c ∈ −N_K(λ),
// A = W + R (the Delassus matrix of the rows, the loops' rows eliminated, plus the soft rows'
// regulariser: symmetric positive definite), c the rows' accelerations at λ = 0 less their
// reference accelerations, K the product of the rows' sets: λ ≥ 0 (unilateral), |λ| ≤ F (box), and
// for a contact λ_n ≥ 0 with its tangents in the disc ‖λ_t‖ ≤ μ λ_n (Coulomb's cone). A sweep
// takes the rows in order; each one (each contact's tangent pair) is minimised exactly with the
// others held: a clamp, or for the tangents the disc-constrained minimum of their 2 × 2 block
// (a trust-region subproblem, Moré and Sorensen (1983)). Without the cone this is Gauss–Seidel on
// a convex quadratic over a box, which converges from any start (Cottle, Pang, Stone, "The
// Linear Complementarity Problem" (1992) §5.2); with it, the fixed point is Coulomb's law with
// the normal force at its complementarity (an NCP, not a convex relaxation). Warm-started by the
// caller; at most `max_iterations` sweeps, so a call's cost is bounded. Allocation-free.
#pragma once

#include <Eigen/Core>

#include "engine/constraints/unilateral_rows.h"

namespace hilsim {

struct GaussSeidelResult {
  int iterations = 0;     ///< sweeps run
  /// max_r |Δλ_r| A_rr in the last sweep: how far a row's acceleration moved [m/s², rad/s²]
  double residual = 0.0;
  bool converged = false;  ///< residual ≤ tolerance before max_iterations
};

/// Solves in place: `lambda` (first n entries) holds the start (warm start) and receives λ.
/// `A`: its leading n × n block, both triangles; `kind` and `bound` per row (kBox: the bound F;
/// kConeNormal: μ; kConeTangent: unused; a kConeNormal row is followed by its two tangents).
/// A row whose A_rr is not positive (no force can move it) keeps λ = 0.
GaussSeidelResult projectedGaussSeidel(const Eigen::MatrixXd& A, const Eigen::VectorXd& c,
                                       const RowBound* kind, const double* bound, int n,
                                       int max_iterations, double tolerance,
                                       Eigen::VectorXd& lambda);

/// The minimiser of ½ xᵀ H x + gᵀ x over the disc ‖x‖ ≤ radius, H symmetric positive definite
/// 2 × 2: the trust-region subproblem in two dimensions (exact to round-off).
Eigen::Vector2d minimiseOnDisc(const Eigen::Matrix2d& H, const Eigen::Vector2d& g, double radius);

}  // namespace hilsim
