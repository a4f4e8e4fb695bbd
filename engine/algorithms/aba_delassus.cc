#include "engine/algorithms/aba_delassus.h"

#include <bit>
#include <cstdint>

#include "engine/algorithms/floating_root.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

using detail::isFloatingRoot;

// Column c of minv_z[i] is Z, the articulated force on body i of the forces of active row c
// alone, on the inward sweep, then (its first n_i entries) the joint rates χ̇ it causes; column
// c of minv_a[i] holds ν = D⁻¹ ε on the inward sweep, then the acceleration α. A row's forces
// reach only the bodies between its two bodies and the root, and its accelerations only the
// bodies below those: minv_columns[i] marks the columns that are not zero at body i, and only
// those are computed, kept and read (on a delta robot each arm carries 2 of the 6 columns).
namespace {

// Which of k columns are not zero at a body: a bit mask for k ≤ 64; beyond, all of them.
struct ColumnSet {
  int k;
  bool masked() const { return k <= 64; }
  std::uint64_t all() const { return k >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << k) - 1; }
  std::uint64_t bit(int c) const { return masked() ? std::uint64_t{1} << c : all(); }
  // visits the columns of `mask`, lowest first
  template <typename Visit>
  void forEach(std::uint64_t mask, Visit&& visit) const {
    if (!masked()) {
      for (int c = 0; c < k; ++c) visit(c);
      return;
    }
    for (; mask != 0; mask &= mask - 1) visit(std::countr_zero(mask));
  }
};

}  // namespace

void abaDelassus(const Model& model, Data& data, const ConstraintRows& rows, Eigen::MatrixXd& W) {
  const int k = rows.active_count;
  assert(k <= data.minvColumns());
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  const ColumnSet set{k};
  std::vector<std::uint64_t>& columns = data.minv_columns;
  for (const int i : rows.support) {
    data.minv_z[i].leftCols(k).setZero();
    columns[i] = set.masked() ? 0 : set.all();
  }
  // a row's forces F enter as external forces: Z = −F (RBDA Table 7.1, p = … − f^x)
  for (int c = 0; c < k; ++c) {
    const int r = rows.active[c];
    const std::uint64_t bit = set.bit(c);
    if (const int b = rows.body_b[r]; b > 0) {
      data.minv_z[b].col(c) -= rows.force_b.col(r);
      columns[b] |= bit;
    }
    if (const int a = rows.body_a[r]; a > 0) {
      data.minv_z[a].col(c) -= rows.force_a.col(r);
      columns[a] |= bit;
    }
  }

  // inward (7.2) with τ = 0: ε = −ℋ Z, ν = D⁻¹ ε, Z(parent) += Z + G ε
  for (auto it = rows.support.rbegin(); it != rows.support.rend(); ++it) {
    const int i = *it;
    const int parent = model.parent[i];
    if (parent > 0) columns[parent] |= columns[i];
    if (isFloatingRoot(model, i)) continue;  // its parent is the world
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, NV, NV> D_inv = data.D_inv[i].topLeftCorner<NV, NV>();
      set.forEach(columns[i], [&](int c) {
        const Vector6 Z = data.minv_z[i].col(c);
        const VectorNV epsilon = -(S.transpose() * Z);
        data.minv_a[i].col(c).head<NV>().noalias() = D_inv * epsilon;
        if (parent > 0) {
          auto Z_parent = data.minv_z[parent].col(c);
          Z_parent += Z;
          Z_parent.noalias() += G * epsilon;
        }
      });
    });
  }

  // outward (7.3): χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇; at a floating root α = −P⁻¹ Z. A column
  // is not zero at body i where it reached i inward (ν) or is not zero at the parent (α⁺).
  for (const int i : rows.support) {
    const int parent = model.parent[i];
    if (isFloatingRoot(model, i)) {
      auto alpha = data.minv_a[i].leftCols(k);
      alpha = -data.minv_z[i].leftCols(k);
      detail::solveWithCholeskyFactor(data.D_inv[i], alpha);  // P = L Lᵀ, from aba()
      continue;
    }
    const std::uint64_t reached = columns[i];
    const std::uint64_t from_parent = parent > 0 ? columns[parent] : 0;
    columns[i] = reached | from_parent;
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      set.forEach(columns[i], [&](int c) {
        const std::uint64_t bit = set.bit(c);
        VectorNV chi_dot = VectorNV::Zero();
        if (reached & bit) chi_dot = data.minv_a[i].col(c).head<NV>();  // ν
        auto alpha = data.minv_a[i].col(c);
        if (from_parent & bit) {
          const Vector6 alpha_plus = data.minv_a[parent].col(c);
          chi_dot.noalias() -= G.transpose() * alpha_plus;
          alpha = alpha_plus;
          alpha.noalias() += S * chi_dot;
        } else {
          alpha.noalias() = S * chi_dot;
        }
        data.minv_z[i].col(c).head<NV>() = chi_dot;  // Z is spent: kept for the response
      });
    });
  }

  // W(r, c) = F_b,rᵀ α_b(c) + F_a,rᵀ α_a(c), lower triangle
  for (int r = 0; r < k; ++r) {
    const int row = rows.active[r];
    const int a = rows.body_a[row], b = rows.body_b[row];
    const Vector6 F_a = rows.force_a.col(row), F_b = rows.force_b.col(row);
    const std::uint64_t at_b = b > 0 ? columns[b] : 0, at_a = a > 0 ? columns[a] : 0;
    for (int c = 0; c <= r; ++c) {
      const std::uint64_t bit = set.bit(c);
      double w = 0.0;
      if (at_b & bit) w += F_b.dot(data.minv_a[b].col(c));
      if (at_a & bit) w += F_a.dot(data.minv_a[a].col(c));
      W(r, c) = w;
    }
  }
}

// Support bodies: α and χ̇ are the columns' combinations (the columns not zero there). The other
// bodies are reached by no force: ν = 0, so χ̇ = −G* α⁺ and α = α⁺ + ℋ* χ̇ from the parent's α
// (outward (7.3) again); minv_a[i].col(0) holds each body's α once its columns are combined.
void abaDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                         const Eigen::VectorXd& lambda, Eigen::VectorXd& x) {
  const ColumnSet set{rows.active_count};
  data.minv_a[0].col(0).setZero();
  std::size_t next_support = 0;
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    const bool on_support =
        next_support < rows.support.size() && rows.support[next_support] == i;
    if (on_support) {
      ++next_support;
      Vector6 alpha = Vector6::Zero();
      set.forEach(data.minv_columns[i],
                  [&](int c) { alpha += lambda(c) * data.minv_a[i].col(c); });
      if (isFloatingRoot(model, i)) {
        detail::floatingRootRates(data, i, alpha, x.segment<6>(iv));
      } else {
        detail::withJointSize(model.nv_joint[i], [&](auto n) {
          constexpr int NV = decltype(n)::value;
          Eigen::Matrix<double, NV, 1> chi_dot = Eigen::Matrix<double, NV, 1>::Zero();
          set.forEach(data.minv_columns[i], [&](int c) {
            chi_dot += lambda(c) * data.minv_z[i].col(c).head<NV>();
          });
          x.segment<NV>(iv) = chi_dot;
        });
      }
      data.minv_a[i].col(0) = alpha;
      continue;
    }
    if (isFloatingRoot(model, i)) {  // a free body no row reaches
      x.segment<6>(iv).setZero();
      data.minv_a[i].col(0).setZero();
      continue;
    }
    const Vector6 alpha_plus = data.minv_a[model.parent[i]].col(0);
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(model.idx_v[i]);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(model.idx_v[i]);
      const Eigen::Matrix<double, NV, 1> chi_dot = -(G.transpose() * alpha_plus);
      x.segment<NV>(iv) = chi_dot;
      auto alpha = data.minv_a[i].col(0);
      alpha = alpha_plus;
      alpha.noalias() += S * chi_dot;
    });
  }
}

}  // namespace hilsim
