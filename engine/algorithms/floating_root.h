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

/// X ← (L Lᵀ)⁻¹ X for the columns of X (6 × k) with L the lower triangle of `factor`: forward
/// and back substitution on one column at a time held in registers (fixed-size loops, unrolled;
/// the columns' chains of dependent operations overlap in the processor), with the diagonal's
/// reciprocals (no division in the chains).
template <typename Columns>
void solveWithCholeskyFactor(const Matrix6& factor, Columns&& X) {
  Vector6 reciprocal;
  for (int i = 0; i < 6; ++i) reciprocal(i) = 1.0 / factor(i, i);
  const Eigen::Index k = X.cols();
  for (Eigen::Index c = 0; c < k; ++c) {
    double x[6];
    for (int i = 0; i < 6; ++i) x[i] = X(i, c);
    for (int i = 0; i < 6; ++i) {
      double sum = x[i];
      for (int j = 0; j < i; ++j) sum -= factor(i, j) * x[j];
      x[i] = sum * reciprocal(i);
    }
    for (int i = 5; i >= 0; --i) {
      double sum = x[i];
      for (int j = 5; j > i; --j) sum -= factor(j, i) * x[j];
      x[i] = sum * reciprocal(i);
    }
    for (int i = 0; i < 6; ++i) X(i, c) = x[i];
  }
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
