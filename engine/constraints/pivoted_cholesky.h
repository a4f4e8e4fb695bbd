// Rank-revealing solve of a symmetric positive semi-definite system A x = b: Cholesky (as
// L D Lᵀ) with diagonal pivoting (Golub, Van Loan, "Matrix Computations", 4th ed. (2013)
// §4.2.8; Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed. (2002) §10.3). It
// stops at rank r when every remaining pivot is below `kRankTolerance` times the largest diagonal
// entry, and returns the minimum-norm solution A⁺ b. Redundant constraint rows (a planar linkage
// closed in 3D) and singular configurations thus give a finite, unique answer. Pivoting starts at
// the first pivot that is not comfortably above the tolerance: well independent rows (the usual
// case) are factorised without a search or a swap. Sized once; allocation-free.
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
  /// Pivots above this fraction of the largest diagonal entry are taken in order: the leading
  /// rows are then independent with a wide margin, and the search for the largest pivot (which
  /// decides the rank) starts at the first pivot below it.
  static constexpr double kPivotingThreshold = 1e-6;

  explicit PivotedCholesky(int capacity)
      : L_(capacity, capacity),
        scaled_(capacity, capacity),
        gram_(capacity, capacity),
        work_(capacity),
        y_(capacity),
        inverse_diagonal_(capacity),
        perm_(capacity) {}

  /// Factorises the leading n × n block of `A` (symmetric PSD; only the lower triangle is read).
  /// Returns the numerical rank.
  int compute(const Eigen::MatrixXd& A, int n) {
    n_ = n;
    // plain loops on the columns' storage: the systems are small (a mechanism's rows), where
    // Eigen's dynamic-size blocks cost more in set-up than in arithmetic
    const Eigen::Index lda = A.rows(), ld = L_.rows();
    double* const L = L_.data();
    double largest = 0.0;
    active_ = 0;  // rows with a non-zero diagonal: a zero row of J has none
    for (int k = 0; k < n; ++k) {
      const double* a = A.data() + k * lda;
      double* l = L + k * ld;
      for (int r = 0; r < k; ++r) l[r] = 0.0;  // L's upper triangle (read as n × r below)
      for (int r = k; r < n; ++r) l[r] = a[r];  // A's lower triangle
      perm_(k) = k;
      largest = std::max(largest, a[k]);
      if (a[k] != 0.0) ++active_;
    }
    const double tolerance = kRankTolerance * largest;
    const double comfortable = kPivotingThreshold * largest;
    // right-looking L D Lᵀ (A₂₂ −= a d⁻¹ aᵀ by columns: contiguous, independent updates; no
    // square root, one reciprocal on the chain from one pivot to the next); pivoting from the
    // first pivot that is not comfortably above the tolerance on. Column k of L_ keeps the pivot
    // d_k on the diagonal and the unit factor below it.
    rank_ = 0;
    bool pivoting = false;
    for (int k = 0; k < n; ++k) {
      if (!(L_(k, k) > comfortable)) pivoting = true;  // also on NaN
      if (pivoting) {
        int pivot = k;
        for (int j = k + 1; j < n; ++j)
          if (L_(j, j) > L_(pivot, pivot)) pivot = j;
        if (!(L_(pivot, pivot) > tolerance)) break;  // also stops on NaN
        swapSymmetric(k, pivot);
      }
      double* const l_k = L + k * ld;
      const double inverse = 1.0 / l_k[k];  // multiplications from here on, not divisions
      inverse_diagonal_(k) = inverse;
      for (int c = k + 1; c < n; ++c) {
        double* const l_c = L + c * ld;
        const double factor = l_k[c] * inverse;
        for (int r = c; r < n; ++r) l_c[r] -= factor * l_k[r];
      }
      for (int r = k + 1; r < n; ++r) l_k[r] *= inverse;
      ++rank_;
    }
    return rank_;
  }

  int rank() const { return rank_; }

  /// x = A⁺ b (first n entries of b and x; they may alias).
  template <typename In, typename Out>
  void solve(const Eigen::MatrixBase<In>& b, Eigen::MatrixBase<Out>& x) {
    const int n = n_, r = rank_;
    // P A Pᵀ = L D Lᵀ with L (n × r) of full column rank
    for (int k = 0; k < n; ++k) work_(k) = b(perm_(k));
    if (r == active_) {
      // full rank on the rows that are there (pivoting puts zero rows last): L₁ D L₁ᵀ y = b₁ on
      // the first r, zero for the others. Forward by columns (axpy: no chain of dependent
      // sums), back by dot products of the same contiguous columns.
      const Eigen::Index ld = L_.rows();
      double* const w = work_.data();
      for (int i = 0; i < r; ++i) {
        const double* l_i = L_.data() + i * ld;
        const double w_i = w[i];
        for (int j = i + 1; j < r; ++j) w[j] -= w_i * l_i[j];
      }
      for (int i = 0; i < r; ++i) w[i] *= inverse_diagonal_(i);
      for (int i = r - 1; i >= 0; --i) {
        const double* l_i = L_.data() + i * ld;
        double sum = w[i];
        for (int j = i + 1; j < r; ++j) sum -= l_i[j] * w[j];
        w[i] = sum;
      }
      for (int i = r; i < n; ++i) w[i] = 0.0;
    } else {
      // A⁺ = Pᵀ L (LᵀL)⁻² Lᵀ P with L = L_unit D^½
      for (int c = 0; c < r; ++c) {
        const double root = std::sqrt(L_(c, c));
        scaled_.col(c).head(n) = root * L_.col(c).head(n);
        scaled_(c, c) = root;
      }
      const auto L = scaled_.topLeftCorner(n, r);
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

  Eigen::MatrixXd L_, scaled_, gram_;
  Eigen::VectorXd work_, y_, inverse_diagonal_;
  Eigen::VectorXi perm_;
  int n_ = 0, rank_ = 0, active_ = 0;
};

}  // namespace hilsim
