#include "engine/algorithms/aba_delassus.h"

#include <algorithm>

#include "engine/algorithms/column_blocks.h"
#include "engine/algorithms/floating_root.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

using detail::isFloatingRoot;

// The k columns (one per active row) go through the sweeps four at a time, transposed
// (column_blocks.h). Block b of body i is held in the storage of minv_z[i] (Z, then in its
// first n_i columns the joint rates χ̇) and minv_a[i] (ν = D⁻¹ ε, then the acceleration α).
// Every support body holds every block: a column is zero at the bodies its row's forces do not
// reach (its Z, hence its ε and ν) and at those its accelerations do not reach, and the zeros
// cost less than the bookkeeping that would skip them (docs/PERFORMANCE.md "Loops").
using detail::blockCount;
using detail::ColumnBlock;
using detail::kBlock;

namespace {

Eigen::Map<ColumnBlock> block(Matrix6N& storage, int b) { return detail::columnBlock(storage, b); }

}  // namespace

void abaDelassus(const Model& model, Data& data, const ConstraintRows& rows, Eigen::MatrixXd& W) {
  const int k = rows.active_count;
  const int blocks = blockCount(k);
  assert(blocks * kBlock <= data.minvColumns());
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  // a row's forces F enter as external forces: Z = −F (RBDA Table 7.1, p = … − f^x)
  detail::scatterRowForces<true>(rows, blocks, data.minv_z.data(), nullptr);

  // inward (7.2) with τ = 0: ε = −ℋ Z, ν = D⁻¹ ε, Z(parent) += Z + G ε (each transposed)
  for (auto it = rows.support.rbegin(); it != rows.support.rend(); ++it) {
    const int i = *it;
    const int parent = model.parent[i];
    if (isFloatingRoot(model, i)) continue;  // its parent is the world
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, NV, NV> D_inv = data.D_inv[i].topLeftCorner<NV, NV>();
      for (int b = 0; b < blocks; ++b) {
        const ColumnBlock Z = block(data.minv_z[i], b);
        Eigen::Matrix<double, kBlock, NV> epsilon;
        epsilon.noalias() = -(Z * S);
        block(data.minv_a[i], b).leftCols<NV>().noalias() = epsilon * D_inv;  // D⁻¹ symmetric
        if (parent > 0) {
          auto Z_parent = block(data.minv_z[parent], b);
          Z_parent += Z;
          Z_parent.noalias() += epsilon * G.transpose();
        }
      }
    });
  }

  // outward (7.3): χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇; at a floating root α = −P⁻¹ Z
  for (const int i : rows.support) {
    const int parent = model.parent[i];
    if (isFloatingRoot(model, i)) {
      // α = −P⁻¹ Z with P = L Lᵀ (aba() leaves L in D_inv), the block's rows four columns
      const Matrix6& L = data.D_inv[i];
      const Vector6 reciprocal = detail::diagonalReciprocals(L);
      for (int b = 0; b < blocks; ++b) {
        ColumnBlock alpha = -block(data.minv_z[i], b);
        detail::solveTransposedWithCholeskyFactor(L, reciprocal, alpha);
        block(data.minv_a[i], b) = alpha;
      }
      continue;
    }
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      for (int b = 0; b < blocks; ++b) {
        auto alpha = block(data.minv_a[i], b);
        Eigen::Matrix<double, kBlock, NV> chi_dot = alpha.leftCols<NV>();  // ν
        if (parent > 0) {
          const ColumnBlock alpha_plus = block(data.minv_a[parent], b);
          chi_dot.noalias() -= alpha_plus * G;
          alpha = alpha_plus;
          alpha.noalias() += chi_dot * S.transpose();
        } else {
          alpha.noalias() = chi_dot * S.transpose();
        }
        block(data.minv_z[i], b).leftCols<NV>() = chi_dot;  // Z is spent: kept for the response
      }
    });
  }

  // W(c, r) = F_b,rᵀ α_b(c) + F_a,rᵀ α_a(c), upper triangle: column r four rows c at a time,
  // the last block's rows past r (W(r, c) by symmetry, or padding) written too
  assert(W.rows() >= blocks * kBlock);
  for (int r = 0; r < k; ++r) {
    const int row = rows.active[r];
    const int a = rows.body_a[row], b = rows.body_b[row];
    const Vector6 F_a = rows.force_a.col(row), F_b = rows.force_b.col(row);
    for (int first = 0; first <= r; first += kBlock) {
      Eigen::Matrix<double, kBlock, 1> w = Eigen::Matrix<double, kBlock, 1>::Zero();
      if (b > 0) w.noalias() += block(data.minv_a[b], first / kBlock) * F_b;
      if (a > 0) w.noalias() += block(data.minv_a[a], first / kBlock) * F_a;
      W.col(r).segment<kBlock>(first) = w;
    }
  }
}

// Support bodies: χ̇ (and α, where a body off the support reads it) are the columns'
// combinations. The bodies off the support are reached by no force: ν = 0, so χ̇ = −G* α⁺ and
// α = α⁺ + ℋ* χ̇ from the parent's α (outward (7.3) again); minv_a[i].col(0) holds such a
// parent's α once its columns are combined (its blocks are spent then).
void abaDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                         const Eigen::VectorXd& lambda, Eigen::VectorXd& x) {
  const int k = rows.active_count;
  const int blocks = blockCount(k);
  // λ in blocks of four (the last padded with zeros), in minv_scratch's storage
  const double* const lambda_padded =
      detail::paddedMultipliers(lambda, k, data.minv_scratch.data());
  const auto lambdaBlock = [&](int b) {
    return Eigen::Map<const Eigen::Vector4d>(lambda_padded + b * kBlock);
  };
  const auto combinedAcceleration = [&](int i) {
    Vector6 alpha = Vector6::Zero();
    for (int b = 0; b < blocks; ++b)
      alpha.noalias() += block(data.minv_a[i], b).transpose() * lambdaBlock(b);
    return alpha;
  };
  for (const int i : rows.support) {
    const int iv = model.idx_v[i];
    if (isFloatingRoot(model, i)) {
      const Vector6 alpha = combinedAcceleration(i);
      detail::floatingRootRates(data, i, alpha, x.segment<6>(iv));
      if (rows.has_child_off_support[i]) data.minv_a[i].col(0) = alpha;
      continue;
    }
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      Eigen::Matrix<double, NV, 1> chi_dot = Eigen::Matrix<double, NV, 1>::Zero();
      for (int b = 0; b < blocks; ++b)
        chi_dot.noalias() += block(data.minv_z[i], b).leftCols<NV>().transpose() * lambdaBlock(b);
      x.segment<NV>(iv) = chi_dot;
    });
    if (rows.has_child_off_support[i]) data.minv_a[i].col(0) = combinedAcceleration(i);
  }
  if (rows.off_support.empty()) return;
  data.minv_a[0].col(0).setZero();
  for (const int i : rows.off_support) {
    const int iv = model.idx_v[i];
    if (isFloatingRoot(model, i)) {  // a free body no row reaches
      x.segment<6>(iv).setZero();
      data.minv_a[i].col(0).setZero();
      continue;
    }
    const Vector6 alpha_plus = data.minv_a[model.parent[i]].col(0);
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, NV, 1> chi_dot = -(G.transpose() * alpha_plus);
      x.segment<NV>(iv) = chi_dot;
      auto alpha = data.minv_a[i].col(0);
      alpha = alpha_plus;
      alpha.noalias() += S * chi_dot;
    });
  }
}

}  // namespace hilsim
