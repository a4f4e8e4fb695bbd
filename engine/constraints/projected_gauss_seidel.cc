#include "engine/constraints/projected_gauss_seidel.h"

#include <algorithm>
#include <cmath>

#include <Eigen/Eigenvalues>

namespace hilsim {

Eigen::Vector2d minimiseOnDisc(const Eigen::Matrix2d& H, const Eigen::Vector2d& g, double radius) {
  if (!(radius > 0.0)) return Eigen::Vector2d::Zero();
  // inside the disc: the unconstrained minimum −H⁻¹ g
  const double det = H(0, 0) * H(1, 1) - H(0, 1) * H(1, 0);
  if (!(det > 0.0)) return Eigen::Vector2d::Zero();  // not positive definite: no move
  const Eigen::Vector2d inside(-(H(1, 1) * g(0) - H(0, 1) * g(1)) / det,
                               -(H(0, 0) * g(1) - H(1, 0) * g(0)) / det);
  if (inside.squaredNorm() <= radius * radius) return inside;
  // on the circle: x(ν) = −(H + ν I)⁻¹ g with ‖x(ν)‖ = radius, ν > 0. In H's eigenbasis
  // ‖x(ν)‖² = Σ g̃_i² / (e_i + ν)²; Newton on 1/radius − 1/‖x(ν)‖, which is concave in ν, rises
  // from ν = 0 to the root without passing it (Moré, Sorensen, SIAM J. Sci. Stat. Comput. 4
  // (1983) 553–572, §3)
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix2d> eigen;
  eigen.computeDirect(H);
  const Eigen::Vector2d e = eigen.eigenvalues();
  const Eigen::Vector2d g_tilde = eigen.eigenvectors().transpose() * g;
  double nu = 0.0;
  Eigen::Vector2d x_tilde = Eigen::Vector2d::Zero();
  for (int iteration = 0; iteration < 40; ++iteration) {
    x_tilde(0) = -g_tilde(0) / (e(0) + nu);
    x_tilde(1) = -g_tilde(1) / (e(1) + nu);
    const double norm_squared = x_tilde.squaredNorm();
    const double norm = std::sqrt(norm_squared);
    if (std::abs(norm - radius) <= 1e-13 * radius) break;
    const double q = x_tilde(0) * x_tilde(0) / (e(0) + nu) + x_tilde(1) * x_tilde(1) / (e(1) + nu);
    nu += norm_squared / q * (norm - radius) / radius;
  }
  Eigen::Vector2d x = eigen.eigenvectors() * x_tilde;
  const double norm = x.norm();
  if (norm > radius) x *= radius / norm;  // on or inside the disc to the last bit
  return x;
}

GaussSeidelResult projectedGaussSeidel(const Eigen::MatrixXd& A, const Eigen::VectorXd& c,
                                       const RowBound* kind, const double* bound, int n,
                                       int max_iterations, double tolerance,
                                       Eigen::VectorXd& lambda) {
  GaussSeidelResult result;
  // row r's residual (A λ + c)_r: its acceleration less its reference
  const auto residual = [&](int r) { return A.col(r).head(n).dot(lambda.head(n)) + c(r); };
  for (int sweep = 0; sweep < max_iterations; ++sweep) {
    double largest = 0.0;  // max |Δλ_r| A_rr of this sweep
    for (int r = 0; r < n;) {
      const double a = A(r, r);
      const double old = lambda(r);
      double updated = 0.0;
      if (a > 0.0) {
        updated = old - residual(r) / a;
        if (kind[r] == RowBound::kBox)
          updated = std::clamp(updated, -bound[r], bound[r]);
        else
          updated = std::max(updated, 0.0);
      }
      lambda(r) = updated;
      largest = std::max(largest, std::abs(updated - old) * a);
      if (kind[r] != RowBound::kConeNormal) {
        ++r;
        continue;
      }
      // the tangents: their 2 × 2 block minimised over the disc of radius μ λ_n, the other
      // rows held (g: the gradient at λ_t = 0)
      const int t = r + 1;
      const Eigen::Vector2d old_t = lambda.segment<2>(t);
      const Eigen::Matrix2d H = A.block<2, 2>(t, t);
      const Eigen::Vector2d g(residual(t) - H.row(0).dot(old_t), residual(t + 1) - H.row(1).dot(old_t));
      const Eigen::Vector2d new_t = minimiseOnDisc(H, g, bound[r] * lambda(r));
      lambda.segment<2>(t) = new_t;
      largest = std::max({largest, std::abs(new_t(0) - old_t(0)) * H(0, 0),
                          std::abs(new_t(1) - old_t(1)) * H(1, 1)});
      r += 3;
    }
    result.iterations = sweep + 1;
    result.residual = largest;
    if (largest <= tolerance) {
      result.converged = true;
      break;
    }
  }
  return result;
}

}  // namespace hilsim
