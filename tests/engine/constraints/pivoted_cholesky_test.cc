// The rank-revealing solve of the constraint stage (engine/constraints/pivoted_cholesky.h):
// against Eigen's LLT on full-rank systems and against the SVD pseudo-inverse on rank-deficient
// ones, with zero rows (a planar linkage's out-of-plane rows) and a leading block of a larger
// buffer, as the stage uses it.
#include "engine/constraints/pivoted_cholesky.h"

#include <gtest/gtest.h>

#include <random>

#include <Eigen/Cholesky>
#include <Eigen/SVD>

#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::relativeDifference;

// A = B Bᵀ for a random n × rank B, with the rows in `zero_rows` zeroed (and their columns).
Eigen::MatrixXd randomPsd(std::mt19937& rng, int n, int rank, std::initializer_list<int> zero_rows) {
  std::normal_distribution<double> normal;
  Eigen::MatrixXd B(n, rank);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < rank; ++j) B(i, j) = normal(rng);
  for (const int r : zero_rows) B.row(r).setZero();
  return B * B.transpose();
}

Eigen::VectorXd randomVector(std::mt19937& rng, int n) {
  std::normal_distribution<double> normal;
  Eigen::VectorXd b(n);
  for (int i = 0; i < n; ++i) b(i) = normal(rng);
  return b;
}

TEST(PivotedCholesky, FullRankSolveMatchesLlt) {
  // SPD with condition numbers of a few hundred at most: LLT and the pivoted solve agree to
  // round-off times the condition, well inside 1e-10
  // (every size the unrolled path has, 1 to 8, and beyond it), each solver used first on a
  // rank-deficient system of the same size (the pivoting path) as the stage reuses its own
  std::mt19937 rng(1);
  for (int n = 1; n <= 20; ++n) {
    const Eigen::MatrixXd A = randomPsd(rng, n, n + 3, {});
    const Eigen::VectorXd b = randomVector(rng, n);
    // in the leading block of a larger buffer with garbage around it, lower triangle garbage too
    Eigen::MatrixXd buffer = Eigen::MatrixXd::Constant(n + 2, n + 2, 1e300);
    buffer.topLeftCorner(n, n).triangularView<Eigen::Upper>() = A;
    PivotedCholesky solver(n + 2);
    if (n > 1) {
      EXPECT_EQ(solver.compute(randomPsd(rng, n + 2, n - 1, {}), n + 2), n - 1);
    }
    EXPECT_EQ(solver.compute(buffer, n), n);
    Eigen::VectorXd x(n + 2);
    solver.solve(b, x);
    EXPECT_LT(relativeDifference(x.head(n), A.llt().solve(b)), test::kFormulationRelTol) << n;
  }
}

TEST(PivotedCholesky, RankDeficientSolveIsTheMinimumNormSolution) {
  std::mt19937 rng(2);
  for (int n = 2; n <= 12; ++n) {
    for (int rank = 1; rank < n; ++rank) {
      const Eigen::MatrixXd A = randomPsd(rng, n, rank, {});
      const Eigen::VectorXd b = randomVector(rng, n);
      // a solver reused after a larger system, as the stage reuses its own
      PivotedCholesky solver(n + 3);
      const Eigen::MatrixXd larger = randomPsd(rng, n + 3, n + 3, {});
      solver.compute(larger, n + 3);
      EXPECT_EQ(solver.compute(A, n), rank) << n << " " << rank;
      Eigen::VectorXd x(n);
      solver.solve(b, x);
      const Eigen::JacobiSVD<Eigen::MatrixXd> svd(A, Eigen::ComputeThinU | Eigen::ComputeThinV);
      Eigen::VectorXd expected = Eigen::VectorXd::Zero(n);
      for (int k = 0; k < rank; ++k)
        expected += svd.matrixV().col(k) * (svd.matrixU().col(k).dot(b) / svd.singularValues()(k));
      EXPECT_LT(relativeDifference(x, expected), 1e-8) << n << " " << rank;
    }
  }
}

TEST(PivotedCholesky, ZeroRowsGetZeroAndTheRestIsSolved) {
  std::mt19937 rng(3);
  const int n = 7;
  const Eigen::MatrixXd A = randomPsd(rng, n, n, {1, 4});
  const Eigen::VectorXd b = randomVector(rng, n);
  PivotedCholesky solver(n);
  EXPECT_EQ(solver.compute(A, n), n - 2);
  Eigen::VectorXd x(n);
  solver.solve(b, x);
  EXPECT_EQ(x(1), 0.0);
  EXPECT_EQ(x(4), 0.0);
  const std::vector<int> kept = {0, 2, 3, 5, 6};
  Eigen::MatrixXd A_kept(5, 5);
  Eigen::VectorXd b_kept(5), x_kept(5);
  for (int i = 0; i < 5; ++i) {
    b_kept(i) = b(kept[i]);
    x_kept(i) = x(kept[i]);
    for (int j = 0; j < 5; ++j) A_kept(i, j) = A(kept[i], kept[j]);
  }
  EXPECT_LT(relativeDifference(x_kept, A_kept.llt().solve(b_kept)), test::kFormulationRelTol);
}

TEST(PivotedCholesky, RankIsDecidedByTheIndependentPartOfEachRowInAnyOrder) {
  // J with a row that repeats another up to a part of relative size s: its pivot in J Jᵀ is
  // about s², so it counts as dependent below s = 1e-5 (kRankTolerance = 1e-10) and independent
  // above, wherever the near-copy stands (first rows: taken in order, no search yet)
  std::mt19937 rng(4);
  std::normal_distribution<double> normal;
  const int rows = 6, cols = 9;
  for (const double s : {1e-7, 1e-3}) {
    for (const int copy : {0, 1, 5}) {
      Eigen::MatrixXd J(rows, cols);
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) J(i, j) = normal(rng);
      const int original = copy == 0 ? 1 : 0;
      J.row(copy) = J.row(original);
      for (int j = 0; j < cols; ++j) J(copy, j) += s * J.row(original).norm() / 3.0 * normal(rng);
      PivotedCholesky solver(rows);
      EXPECT_EQ(solver.compute(J * J.transpose(), rows), s < 1e-5 ? rows - 1 : rows)
          << "s " << s << ", row " << copy;
    }
  }
}

TEST(PivotedCholesky, NaNStopsTheFactorisationWithoutNaNInTheAnswer) {
  Eigen::MatrixXd A = Eigen::MatrixXd::Identity(3, 3);
  A(1, 1) = std::numeric_limits<double>::quiet_NaN();
  PivotedCholesky solver(3);
  solver.compute(A, 3);
  const Eigen::VectorXd b = Eigen::VectorXd::Ones(3);
  Eigen::VectorXd x(3);
  solver.solve(b, x);
  EXPECT_TRUE(x.allFinite());
}

}  // namespace
}  // namespace hilsim
