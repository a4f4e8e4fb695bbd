#include "engine/constraints/pivoted_cholesky.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

// This file is compiled without auto-vectorisation (engine/CMakeLists.txt): its loops run over a
// mechanism's few rows, a handful of entries each, where the vector loop's set-up and remainder
// cost more than the arithmetic (bench/loops_bench.cc `pivoted_cholesky`, factorisation and
// solve of a full-rank system, general loops: 36 → 22 ns at 2 × 2, 143 → 97 at 6 × 6).

namespace hilsim {

namespace {

// Systems of up to kUnrolled rows whose pivots are all comfortably above the tolerance (the
// usual case: a mechanism's independent rows) are factorised and solved by code unrolled for
// their size: every entry in a register or at a fixed address, no loop control, which is most
// of the general loops' instructions at these sizes (`pivoted_cholesky`: 2 × 2 34 → 12 ns,
// 6 × 6 137 → 64). Up to 8 rows: the code and its compile time grow as the cube of the size
// (16 rows: 15 × 15 747 → 495 ns, but 110 kB of code, and 3.5 min to compile with clang under
// the fuzz stage's sanitizers against 27 s for 8).
constexpr int kUnrolled = 8;

// L D Lᵀ without pivoting of the N × N matrix in A's upper triangle into L's lower triangle (the
// unit factor below the diagonal, the pivots on it) and the pivots' reciprocals. False, with L
// undefined, at the first pivot not above `threshold` times the largest diagonal entry.
template <int N>
bool factorUnrolled(const double* A, Eigen::Index lda, double threshold, double* L,
                    Eigen::Index ld, double* inverse_diagonal) {
  double a[N][N];  // a[c][r]: column c, r ≥ c
  double largest = 0.0;
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
#pragma GCC unroll 8
    for (int r = c; r < N; ++r) a[c][r] = A[r * lda + c];
    largest = std::max(largest, a[c][c]);
  }
  const double comfortable = threshold * largest;
#pragma GCC unroll 8
  for (int k = 0; k < N; ++k) {
    if (!(a[k][k] > comfortable)) return false;  // also on NaN
    const double inverse = 1.0 / a[k][k];
    inverse_diagonal[k] = inverse;
#pragma GCC unroll 8
    for (int c = k + 1; c < N; ++c) {
      const double factor = a[k][c] * inverse;
#pragma GCC unroll 8
      for (int r = c; r < N; ++r) a[c][r] -= factor * a[k][r];
    }
#pragma GCC unroll 8
    for (int r = k + 1; r < N; ++r) a[k][r] *= inverse;
  }
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
#pragma GCC unroll 8
    for (int r = c; r < N; ++r) L[c * ld + r] = a[c][r];
  }
  return true;
}

// x = (L D Lᵀ)⁻¹ b for the factor of factorUnrolled (b and x may be the same)
template <int N>
void solveUnrolled(const double* L, Eigen::Index ld, const double* inverse_diagonal,
                   const double* b, double* x) {
  double w[N];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) w[i] = b[i];
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
#pragma GCC unroll 8
    for (int j = i + 1; j < N; ++j) w[j] -= w[i] * L[i * ld + j];
  }
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) w[i] *= inverse_diagonal[i];
#pragma GCC unroll 8
  for (int i = N - 1; i >= 0; --i) {
    double sum = w[i];
#pragma GCC unroll 8
    for (int j = N - 1; j > i; --j) sum -= L[i * ld + j] * w[j];
    w[i] = sum;
  }
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) x[i] = w[i];
}

using FactorFunction = bool (*)(const double*, Eigen::Index, double, double*, Eigen::Index,
                                double*);
using SolveFunction = void (*)(const double*, Eigen::Index, const double*, const double*, double*);

// entry n − 1: the code for n rows
template <int... N>
constexpr std::array<FactorFunction, sizeof...(N)> factorTable(std::integer_sequence<int, N...>) {
  return {&factorUnrolled<N + 1>...};
}
template <int... N>
constexpr std::array<SolveFunction, sizeof...(N)> solveTable(std::integer_sequence<int, N...>) {
  return {&solveUnrolled<N + 1>...};
}
constexpr auto kFactorUnrolled = factorTable(std::make_integer_sequence<int, kUnrolled>());
constexpr auto kSolveUnrolled = solveTable(std::make_integer_sequence<int, kUnrolled>());

}  // namespace

int PivotedCholesky::compute(const Eigen::MatrixXd& A, int n) {
  n_ = n;
  unrolled_ = n > 0 && n <= kUnrolled &&
              kFactorUnrolled[n - 1](A.data(), A.rows(), kPivotingThreshold, L_.data(), L_.rows(),
                                     inverse_diagonal_.data());
  if (unrolled_) {
    for (int k = 0; k < n; ++k) perm_(k) = k;
    rank_ = active_ = n;
    return rank_;
  }
  // plain loops on the columns' storage: the systems are small (a mechanism's rows), where
  // Eigen's dynamic-size blocks cost more in set-up than in arithmetic
  const Eigen::Index lda = A.rows(), ld = L_.rows();
  double* const L = L_.data();
  double largest = 0.0;
  active_ = 0;  // rows with a non-zero diagonal: a zero row of J has none
  for (int k = 0; k < n; ++k) {
    const double* a = A.data() + k;  // row k
    double* l = L + k * ld;
    for (int r = 0; r < k; ++r) l[r] = 0.0;  // L's upper triangle (read as n × r below)
    for (int r = k; r < n; ++r) l[r] = a[r * lda];  // A's upper triangle, row k
    perm_(k) = k;
    largest = std::max(largest, l[k]);
    if (l[k] != 0.0) ++active_;
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

void PivotedCholesky::solve(const Eigen::VectorXd& b, Eigen::VectorXd& x) {
  const int n = n_, r = rank_;
  if (unrolled_) {
    kSolveUnrolled[n - 1](L_.data(), L_.rows(), inverse_diagonal_.data(), b.data(), x.data());
    return;
  }
  // P A Pᵀ = L D Lᵀ with L (n × r) of full column rank
  for (int k = 0; k < n; ++k) work_(k) = b(perm_(k));
  if (r == active_) {
    // full rank on the rows that are there (pivoting puts zero rows last): L₁ D L₁ᵀ y = b₁ on
    // the first r, zero for the others. Forward by columns (axpy: no chain of dependent
    // sums), back by dot products of the same contiguous columns, the unknown found last
    // entering each sum last (the rest of the sum is ready before it).
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
      for (int j = r - 1; j > i; --j) sum -= l_i[j] * w[j];
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
    gramCholesky(r);
    const auto gram = gram_.topLeftCorner(r, r);
    for (int twice = 0; twice < 2; ++twice) {
      gram.triangularView<Eigen::Lower>().solveInPlace(y_.head(r));
      gram.transpose().triangularView<Eigen::Upper>().solveInPlace(y_.head(r));
    }
    work_.head(n).noalias() = L * y_.head(r);
  }
  for (int k = 0; k < n; ++k) x(perm_(k)) = work_(k);
}

void PivotedCholesky::swapSymmetric(int k, int p) {
  if (p == k) return;
  std::swap(perm_(k), perm_(p));
  for (int c = 0; c < k; ++c) std::swap(L_(k, c), L_(p, c));  // factor rows
  std::swap(L_(k, k), L_(p, p));
  for (int j = k + 1; j < p; ++j) std::swap(L_(j, k), L_(p, j));
  for (int j = p + 1; j < n_; ++j) std::swap(L_(j, k), L_(j, p));
}

void PivotedCholesky::gramCholesky(int r) {
  auto G = gram_.topLeftCorner(r, r);
  for (int k = 0; k < r; ++k) {
    for (int c = 0; c < k; ++c) G(k, k) -= G(k, c) * G(k, c);
    G(k, k) = std::sqrt(G(k, k));
    for (int j = k + 1; j < r; ++j) {
      for (int c = 0; c < k; ++c) G(j, k) -= G(j, c) * G(k, c);
      G(j, k) /= G(k, k);
    }
  }
}

}  // namespace hilsim
