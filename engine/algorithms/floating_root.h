// The floating root of the articulated-body recursion: a free joint on the world without
// armature, whose motion subspace is square and invertible, so that aba() solves it through the
// articulated inertia P directly (RBDA §9.4) and leaves P's Cholesky factor for the M⁻¹ products
// that follow it (abaInverseInertia, abaDelassus).
#pragma once

#include "engine/model/data.h"

namespace hilsim::detail {

inline bool isFloatingRoot(const Model& model, int i) {
  if (model.joint_type[i] != JointType::kFreeFlyer) return false;
  return model.joint_rank[i] == 6 && model.armature.segment<6>(model.idx_v[i]).isZero(0.0);
}

/// The reciprocals of a Cholesky factor's diagonal, for the solves below.
inline Vector6 diagonalReciprocals(const Matrix6& factor) {
  return factor.diagonal().cwiseInverse();
}

/// Xᵀ ← (L Lᵀ)⁻¹ Xᵀ for a block of B columns held transposed (x is B × 6: row i of the B columns
/// in one register), with the reciprocals of diagonalReciprocals(L): forward and back
/// substitution where each step is one B-wide multiply–add, the B columns' chains of dependent
/// steps side by side instead of one after another.
template <typename Transposed>
void solveTransposedWithCholeskyFactor(const Matrix6& L, const Vector6& reciprocal,
                                       Transposed& x) {
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < i; ++j) x.col(i) -= L(i, j) * x.col(j);
    x.col(i) *= reciprocal(i);
  }
  for (int i = 5; i >= 0; --i) {
    for (int j = 5; j > i; --j) x.col(i) -= L(j, i) * x.col(j);
    x.col(i) *= reciprocal(i);
  }
}

namespace solve_detail {
template <int B, typename Columns>
void solveColumns(const Matrix6& L, const Vector6& reciprocal, Columns& X, Eigen::Index first) {
  Eigen::Matrix<double, B, 6> x = X.template middleCols<B>(first).transpose();
  solveTransposedWithCholeskyFactor(L, reciprocal, x);
  X.template middleCols<B>(first) = x.transpose();
}
}  // namespace solve_detail

/// X ← (L Lᵀ)⁻¹ X for the columns of X (6 × k) with L the lower triangle of `factor`: forward
/// and back substitution four columns at a time (fixed-size loops, unrolled), with the
/// diagonal's reciprocals (no division in the chains).
template <typename Columns>
void solveWithCholeskyFactor(const Matrix6& factor, Columns&& X) {
  const Vector6 reciprocal = diagonalReciprocals(factor);
  const Eigen::Index k = X.cols();
  Eigen::Index c = 0;
  for (; c + 4 <= k; c += 4) solve_detail::solveColumns<4>(factor, reciprocal, X, c);
  if (c + 2 <= k) {
    solve_detail::solveColumns<2>(factor, reciprocal, X, c);
    c += 2;
  }
  if (c < k) solve_detail::solveColumns<1>(factor, reciprocal, X, c);
}

/// The free joint's rates x = S⁻¹ α (v in the joint frame J, ω in the body frame B; docs/NOTATION.md)
/// of a floating root i whose parent, the world, is at rest, from its spatial acceleration α
/// (in W, about W's origin) with no velocity terms: the M⁻¹ products' outward step.
template <typename Rates>
void floatingRootRates(const Data& data, int i, const Vector6& alpha, Rates&& x) {
  const Matrix3& R_WJ = data.X_WJ[i].rotation;
  const Matrix3& R_WB = data.X_WB[i].rotation;
  const Vector3& p_WB = data.X_WB[i].translation;
  x.template tail<3>().noalias() = R_WB.transpose() * alpha.head<3>();
  const Vector3 linear = alpha.tail<3>() - p_WB.cross(alpha.head<3>());
  x.template head<3>().noalias() = R_WJ.transpose() * linear;
}

}  // namespace hilsim::detail
