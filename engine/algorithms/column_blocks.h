// The Delassus operators' storage (abaDelassus, treeLdlDelassus): the k columns of the rows go
// through the recursions four at a time, transposed. A block of four columns at body i is a 4 × 6
// matrix whose row j is column 4b + j (a row's spatial force, or what it causes), so that each
// step of a recursion is a few 4-wide multiply–adds over the block's rows, the columns side by
// side. A body's blocks live in a Matrix6N of Data (6 × minvColumns(): 24 doubles per block).
// A 64-bit mask per body tells which blocks hold a row acting on its subtree: the others are
// zero there and are not visited.
#pragma once

#include <bit>
#include <cassert>
#include <cstdint>

#include "engine/constraints/constraint_rows.h"

namespace hilsim::detail {

constexpr int kBlock = 4;
using ColumnBlock = Eigen::Matrix<double, kBlock, 6>;

inline int blockCount(int k) { return (k + kBlock - 1) / kBlock; }

/// Block b of a body's storage.
inline Eigen::Map<ColumnBlock> columnBlock(Matrix6N& storage, int b) {
  return Eigen::Map<ColumnBlock>(storage.data() + b * ColumnBlock::SizeAtCompileTime);
}

/// Whether block b is in `mask` (blocks beyond its 64 bits are taken as in every mask).
inline bool carries(std::uint64_t mask, int b) { return b >= 64 || ((mask >> b) & 1u); }

/// Calls f(b) for each of the first `blocks` blocks in `mask`, in ascending order.
template <typename F>
void forEachCarriedBlock(std::uint64_t mask, int blocks, F&& f) {
  if (blocks > 64) {
    for (int b = 0; b < blocks; ++b)
      if (carries(mask, b)) f(b);
    return;
  }
  for (; mask != 0; mask &= mask - 1) f(std::countr_zero(mask));
}

/// The multipliers λ (first k entries) padded with zeros to whole blocks of four, in `scratch`
/// (at least 4 blocks(k) entries), block b at 4 b: plain loops, the copy being a few entries.
inline const double* paddedMultipliers(const Eigen::VectorXd& lambda, int k, double* scratch) {
  const int padded = blockCount(k) * kBlock;
  for (int c = 0; c < k; ++c) scratch[c] = lambda[c];
  for (int c = k; c < padded; ++c) scratch[c] = 0.0;
  return scratch;
}

/// Zeroes the first `blocks` blocks of each support body's storage in `per_body` ([nbodies]) and
/// writes each active row's forces (negated with kNegate) into the blocks of its two bodies:
/// active row c is row c % 4 of block c / 4, which no other row shares (a row's two bodies
/// differ), so that each is a plain store. Unless null, reach[i] ([nbodies]) gets the blocks with a
/// row acting on body i itself (its subtree's are the caller's to gather, inward).
template <bool kNegate>
void scatterRowForces(const ConstraintRows& rows, int blocks, Matrix6N* per_body,
                      std::uint64_t* reach) {
  for (const int i : rows.support) {
    if (reach) reach[i] = 0;
    for (int b = 0; b < blocks; ++b) columnBlock(per_body[i], b).setZero();
  }
  const auto add = [&](int body, const Matrix6N& forces, int r, int c) {
    if (body <= 0) return;
    const int b = c / kBlock;
    auto lane = columnBlock(per_body[body], b).row(c % kBlock);
    if constexpr (kNegate)
      lane = -forces.col(r).transpose();
    else
      lane = forces.col(r).transpose();
    if (reach) reach[body] |= b < 64 ? std::uint64_t{1} << b : 0;
  };
  for (int c = 0; c < rows.active_count; ++c) {
    const int r = rows.active[c];
    assert(rows.body_a[r] != rows.body_b[r]);
    add(rows.body_b[r], rows.force_b, r, c);
    add(rows.body_a[r], rows.force_a, r, c);
  }
}

}  // namespace hilsim::detail
