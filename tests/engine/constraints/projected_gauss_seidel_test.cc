// The bounded solve of docs/CONTACT.md: the disc-constrained 2 × 2 minimum against a dense search
// on the circle, and projected Gauss–Seidel against the optimality conditions of its problem.
#include "engine/constraints/projected_gauss_seidel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace hilsim {
namespace {

double objective(const Eigen::Matrix2d& H, const Eigen::Vector2d& g, const Eigen::Vector2d& x) {
  return 0.5 * x.dot(H * x) + g.dot(x);
}

TEST(MinimiseOnDisc, MatchesADenseSearchOfTheCircle) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    Eigen::Matrix2d B;
    B << u(rng), u(rng), u(rng), u(rng);
    // anisotropic SPD, condition up to ~1e4
    const Eigen::Matrix2d H = B * B.transpose() + 1e-4 * Eigen::Matrix2d::Identity();
    const Eigen::Vector2d g(3.0 * u(rng), 3.0 * u(rng));
    const double radius = 0.05 + std::abs(u(rng));
    const Eigen::Vector2d x = minimiseOnDisc(H, g, radius);
    ASSERT_LE(x.norm(), radius * (1.0 + 1e-15));
    const Eigen::Vector2d inside = -H.ldlt().solve(g);
    if (inside.norm() <= radius) {
      EXPECT_LT((x - inside).norm(), 1e-12 * (1.0 + inside.norm()));
      continue;
    }
    // on the circle: no point of it does better (fine search, then the KKT condition: the
    // gradient H x + g points inward along −x, i.e. is −ν x with ν ≥ 0)
    double best = INFINITY;
    for (int k = 0; k < 20000; ++k) {
      const double angle = 2.0 * M_PI * k / 20000;
      best = std::min(best, objective(H, g, radius * Eigen::Vector2d(std::cos(angle), std::sin(angle))));
    }
    EXPECT_LE(objective(H, g, x), best + 1e-12);
    const Eigen::Vector2d gradient = H * x + g;
    const double cross = gradient.x() * x.y() - gradient.y() * x.x();
    EXPECT_LT(std::abs(cross), 1e-9 * gradient.norm() * radius) << "trial " << trial;
    EXPECT_LE(gradient.dot(x), 1e-12);
  }
}

TEST(MinimiseOnDisc, ZeroRadiusGivesZero) {
  EXPECT_EQ(minimiseOnDisc(Eigen::Matrix2d::Identity(), Eigen::Vector2d(1, 2), 0.0),
            Eigen::Vector2d::Zero());
}

// Projected Gauss–Seidel's answer meets the conditions of its problem: per row, λ in its set and
// the residual w = A λ + c in the normal cone there (w = 0 inside, w ≥ 0 at λ = 0, w ≤ 0 at the
// upper bound, ...); for a cone, w_t = −ν λ_t on the disc's edge.
TEST(ProjectedGaussSeidel, MeetsTheOptimalityConditionsOfItsProblem) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const int n = 11;  // a limit, two friction rows, two contacts
  const std::vector<RowBound> kind = {RowBound::kUnilateral, RowBound::kBox, RowBound::kBox,
                                      RowBound::kConeNormal, RowBound::kConeTangent,
                                      RowBound::kConeTangent, RowBound::kConeNormal,
                                      RowBound::kConeTangent, RowBound::kConeTangent,
                                      RowBound::kUnilateral, RowBound::kUnilateral};
  const std::vector<double> bound = {0, 0.3, 0.2, 0.6, 0, 0, 0.9, 0, 0, 0, 0};
  for (int trial = 0; trial < 50; ++trial) {
    Eigen::MatrixXd B = Eigen::MatrixXd::Zero(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) B(i, j) = u(rng);
    Eigen::MatrixXd A = B * B.transpose() / n;
    A.diagonal() *= 1.0 / 0.95;  // the soft rows' regulariser
    Eigen::VectorXd c(n);
    for (int i = 0; i < n; ++i) c(i) = 2.0 * u(rng);
    Eigen::VectorXd lambda = Eigen::VectorXd::Zero(n);
    const GaussSeidelResult result =
        projectedGaussSeidel(A, c, kind.data(), bound.data(), n, 5000, 1e-13, lambda);
    ASSERT_TRUE(result.converged) << "trial " << trial << " residual " << result.residual;
    const Eigen::VectorXd w = A * lambda + c;
    constexpr double kTol = 1e-9;  // the stopping test's 1e-13 over A's conditioning
    for (int r = 0; r < n;) {
      switch (kind[r]) {
        case RowBound::kUnilateral:
          EXPECT_GE(lambda(r), 0.0);
          EXPECT_GE(w(r), -kTol);
          EXPECT_LT(std::abs(lambda(r) * w(r)), kTol);
          ++r;
          break;
        case RowBound::kBox:
          EXPECT_LE(std::abs(lambda(r)), bound[r] + 1e-15);
          if (std::abs(lambda(r)) < bound[r] - 1e-9)
            EXPECT_LT(std::abs(w(r)), kTol);
          else
            EXPECT_LE(w(r) * lambda(r), kTol);  // at +F: w ≤ 0; at −F: w ≥ 0
          ++r;
          break;
        case RowBound::kConeNormal: {
          EXPECT_GE(lambda(r), 0.0);
          EXPECT_GE(w(r), -kTol);
          EXPECT_LT(std::abs(lambda(r) * w(r)), kTol);
          const Eigen::Vector2d lt = lambda.segment<2>(r + 1), wt = w.segment<2>(r + 1);
          const double radius = bound[r] * lambda(r);
          EXPECT_LE(lt.norm(), radius * (1.0 + 1e-12) + 1e-15);
          if (lt.norm() < radius * (1.0 - 1e-9)) {
            EXPECT_LT(wt.norm(), kTol);
          } else if (radius > 0.0) {
            // sliding: the force opposes the rows' motion (maximum dissipation)
            EXPECT_LT(std::abs(wt.x() * lt.y() - wt.y() * lt.x()), kTol * (1.0 + lt.norm()));
            EXPECT_LE(wt.dot(lt), kTol);
          }
          r += 3;
          break;
        }
        case RowBound::kConeTangent:
          FAIL() << "a tangent without its normal";
      }
    }
  }
}

TEST(ProjectedGaussSeidel, StopsAtItsBudget) {
  Eigen::MatrixXd A(2, 2);
  A << 1.0, 0.999, 0.999, 1.0;  // strongly coupled: Gauss–Seidel converges slowly
  const Eigen::VectorXd c = Eigen::Vector2d(-1.0, -0.9995);  // λ = (0.75, 0.25), both active
  const RowBound kind[2] = {RowBound::kUnilateral, RowBound::kUnilateral};
  const double bound[2] = {0.0, 0.0};
  Eigen::VectorXd lambda = Eigen::VectorXd::Zero(2);
  const GaussSeidelResult result = projectedGaussSeidel(A, c, kind, bound, 2, 3, 0.0, lambda);
  EXPECT_EQ(result.iterations, 3);
  EXPECT_FALSE(result.converged);
  EXPECT_GT(result.residual, 0.0);
}

}  // namespace
}  // namespace hilsim
