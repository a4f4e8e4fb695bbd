// Rank-revealing solve of a symmetric positive semi-definite system A x = b: Cholesky (as
// L D Lᵀ) with diagonal pivoting (Golub, Van Loan, "Matrix Computations", 4th ed. (2013)
// §4.2.8; Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed. (2002) §10.3). It
// stops at rank r when every remaining pivot is below `kRankTolerance` times the largest diagonal
// entry, and returns the minimum-norm solution A⁺ b. Redundant constraint rows (a planar linkage
// closed in 3D) and singular configurations thus give a finite, unique answer. Pivoting starts at
// the first pivot that is not comfortably above the tolerance: well independent rows (the usual
// case) are factorised without a search or a swap, and up to 8 of them by code unrolled for
// their number. Sized once; allocation-free.
#pragma once

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

  /// Factorises the leading n × n block of `A` (symmetric PSD; only the upper triangle is read:
  /// column c holds A(0..c, c), so that a Delassus operator writes each row's entries at once).
  /// Returns the numerical rank.
  int compute(const Eigen::MatrixXd& A, int n);

  int rank() const { return rank_; }

  /// x = A⁺ b (first n entries of b and x; they may be the same vector).
  void solve(const Eigen::VectorXd& b, Eigen::VectorXd& x);
  /// An expression for b would be evaluated into a temporary on the heap: refused.
  template <typename Expression>
  void solve(const Expression& b, Eigen::VectorXd& x) = delete;

 private:
  // swaps rows and columns k and p of the symmetric matrix held in the lower triangle of L_,
  // whose columns before k are already factors
  void swapSymmetric(int k, int p);
  // plain Cholesky of the SPD leading r × r block of gram_ (lower triangle)
  void gramCholesky(int r);

  Eigen::MatrixXd L_, scaled_, gram_;
  Eigen::VectorXd work_, y_, inverse_diagonal_;
  Eigen::VectorXi perm_;
  int n_ = 0, rank_ = 0, active_ = 0;
  bool unrolled_ = false;  // factorised by the unrolled path (pivoted_cholesky.cc)
};

}  // namespace hilsim
