// Rank-revealing solve of a symmetric positive semi-definite system A x = b: Cholesky with
// diagonal pivoting (Golub, Van Loan, "Matrix Computations", 4th ed. (2013) §4.2.8; Higham,
// "Accuracy and Stability of Numerical Algorithms", 2nd ed. (2002) §10.3). It stops at rank r
// when every remaining pivot is below `kRankTolerance` times the largest diagonal entry, and
// returns the minimum-norm solution A⁺ b. Redundant constraint rows (a planar linkage closed in
// 3D) and singular configurations thus give a finite, unique answer. Sized once; allocation-free.
#pragma once

#include <cmath>
#include <utility>

#include <Eigen/Core>

namespace hilsim {

class PivotedCholesky {
 public:
  /// Pivots below this fraction of the largest diagonal entry count as zero: rows whose part
  /// independent of the others is smaller than 1e-5 of their size (pivots are squares). Round-off
  /// leaves exactly dependent rows near 1e-13 and below.
  static constexpr double kRankTolerance = 1e-10;

  explicit PivotedCholesky(int capacity)
      : L_(capacity, capacity), gram_(capacity, capacity), work_(capacity), y_(capacity),
        perm_(capacity) {}

  /// Factorises the leading n × n block of `A` (symmetric PSD; only the lower triangle is read).
  /// Returns the numerical rank.
  int compute(const Eigen::MatrixXd& A, int n) {
    n_ = n;
    for (int k = 0; k < n; ++k) perm_(k) = k;
    L_.topLeftCorner(n, n) = A.topLeftCorner(n, n).triangularView<Eigen::Lower>();
    double largest = 0.0;
    active_ = 0;  // rows with a non-zero diagonal: a zero row of J has none
    for (int k = 0; k < n; ++k) {
      largest = std::max(largest, L_(k, k));
      if (L_(k, k) != 0.0) ++active_;
    }
    const double tolerance = kRankTolerance * largest;
    rank_ = 0;
    for (int k = 0; k < n; ++k) {
      int pivot = k;
      for (int j = k + 1; j < n; ++j)
        if (L_(j, j) > L_(pivot, pivot)) pivot = j;
      if (!(L_(pivot, pivot) > tolerance)) break;  // also stops on NaN
      swapSymmetric(k, pivot);
      const double d = std::sqrt(L_(k, k));
      L_(k, k) = d;
      for (int j = k + 1; j < n; ++j) L_(j, k) /= d;
      // update the trailing lower triangle: A₂₂ −= l lᵀ
      for (int c = k + 1; c < n; ++c)
        for (int j = c; j < n; ++j) L_(j, c) -= L_(j, k) * L_(c, k);
      ++rank_;
    }
    return rank_;
  }

  int rank() const { return rank_; }

  /// x = A⁺ b (first n entries of b and x; they may alias).
  template <typename In, typename Out>
  void solve(const Eigen::MatrixBase<In>& b, Eigen::MatrixBase<Out>& x) {
    const int n = n_, r = rank_;
    // P A Pᵀ = L Lᵀ with L (n × r) of full column rank
    for (int k = 0; k < n; ++k) work_(k) = b(perm_(k));
    const auto L = L_.topLeftCorner(n, r);
    if (r == active_) {
      // full rank on the rows that are there (pivoting puts zero rows last): L₁ L₁ᵀ y = b₁ on
      // the first r, zero for the others. Plain loops: r is a mechanism's few rows.
      for (int i = 0; i < r; ++i) {
        double x = work_(i);
        for (int j = 0; j < i; ++j) x -= L_(i, j) * work_(j);
        work_(i) = x / L_(i, i);
      }
      for (int i = r - 1; i >= 0; --i) {
        double x = work_(i);
        for (int j = i + 1; j < r; ++j) x -= L_(j, i) * work_(j);
        work_(i) = x / L_(i, i);
      }
      for (int i = r; i < n; ++i) work_(i) = 0.0;
    } else {
      // A⁺ = Pᵀ L (LᵀL)⁻² Lᵀ P
      y_.head(r).noalias() = L.transpose() * work_.head(n);
      gram_.topLeftCorner(r, r).noalias() = L.transpose() * L;
      auto gram = gram_.topLeftCorner(r, r);
      choleskyInPlace(gram, r);
      for (int twice = 0; twice < 2; ++twice) {
        gram.triangularView<Eigen::Lower>().solveInPlace(y_.head(r));
        gram.transpose().triangularView<Eigen::Upper>().solveInPlace(y_.head(r));
      }
      work_.head(n).noalias() = L * y_.head(r);
    }
    for (int k = 0; k < n; ++k) x(perm_(k)) = work_(k);
  }

 private:
  // swaps rows and columns k and p of the symmetric matrix held in the lower triangle of L_,
  // whose columns before k are already factors
  void swapSymmetric(int k, int p) {
    if (p == k) return;
    std::swap(perm_(k), perm_(p));
    for (int c = 0; c < k; ++c) std::swap(L_(k, c), L_(p, c));  // factor rows
    std::swap(L_(k, k), L_(p, p));
    for (int j = k + 1; j < p; ++j) std::swap(L_(j, k), L_(p, j));
    for (int j = p + 1; j < n_; ++j) std::swap(L_(j, k), L_(j, p));
  }

  // plain Cholesky of an SPD r × r block (lower triangle)
  template <typename Block>
  static void choleskyInPlace(Block& G, int r) {
    for (int k = 0; k < r; ++k) {
      for (int c = 0; c < k; ++c) G(k, k) -= G(k, c) * G(k, c);
      G(k, k) = std::sqrt(G(k, k));
      for (int j = k + 1; j < r; ++j) {
        for (int c = 0; c < k; ++c) G(j, k) -= G(j, c) * G(k, c);
        G(j, k) /= G(k, k);
      }
    }
  }

  Eigen::MatrixXd L_, gram_;
  Eigen::VectorXd work_, y_;
  Eigen::VectorXi perm_;
  int n_ = 0, rank_ = 0, active_ = 0;
};

}  // namespace hilsim
