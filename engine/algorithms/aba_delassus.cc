#include "engine/algorithms/aba_delassus.h"

#include "engine/algorithms/floating_root.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

using detail::isFloatingRoot;

// Column c of minv_z[i] is Z, the articulated force on body i of the forces of active row c
// alone, on the inward sweep, then (its first n_i entries) the joint rates χ̇ it causes; column
// c of minv_a[i] holds ν = D⁻¹ ε on the inward sweep, then the acceleration α.
void abaDelassus(const Model& model, Data& data, const ConstraintRows& rows, Eigen::MatrixXd& W) {
  const int k = rows.active_count;
  assert(k <= data.minvColumns());
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  for (const int i : rows.support) data.minv_z[i].leftCols(k).setZero();
  // a row's forces F enter as external forces: Z = −F (RBDA Table 7.1, p = … − f^x)
  for (int c = 0; c < k; ++c) {
    const int r = rows.active[c];
    if (rows.body_b[r] > 0) data.minv_z[rows.body_b[r]].col(c) -= rows.force_b.col(r);
    if (rows.body_a[r] > 0) data.minv_z[rows.body_a[r]].col(c) -= rows.force_a.col(r);
  }

  // inward (7.2) with τ = 0: ε = −ℋ Z, ν = D⁻¹ ε, Z(parent) += Z + G ε
  for (auto it = rows.support.rbegin(); it != rows.support.rend(); ++it) {
    const int i = *it;
    const int parent = model.parent[i];
    if (isFloatingRoot(model, i)) continue;  // its parent is the world
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, NV, NV> D_inv = data.D_inv[i].topLeftCorner<NV, NV>();
      for (int c = 0; c < k; ++c) {
        const Vector6 Z = data.minv_z[i].col(c);
        const VectorNV epsilon = -(S.transpose() * Z);
        data.minv_a[i].col(c).head<NV>().noalias() = D_inv * epsilon;
        if (parent > 0) {
          auto Z_parent = data.minv_z[parent].col(c);
          Z_parent += Z;
          Z_parent.noalias() += G * epsilon;
        }
      }
    });
  }

  // outward (7.3): χ̇ = ν − G* α⁺, α = α⁺ + ℋ* χ̇; at a floating root α = −P⁻¹ Z
  for (const int i : rows.support) {
    const int parent = model.parent[i];
    auto alpha = data.minv_a[i].leftCols(k);
    if (isFloatingRoot(model, i)) {
      alpha = -data.minv_z[i].leftCols(k);
      detail::solveWithCholeskyFactor(data.D_inv[i], alpha);  // P = L Lᵀ, from aba()
      continue;
    }
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      using VectorNV = Eigen::Matrix<double, NV, 1>;
      const Eigen::Matrix<double, 6, NV> S = data.S_W.middleCols<NV>(iv);
      const Eigen::Matrix<double, 6, NV> G = data.G_W.middleCols<NV>(iv);
      for (int c = 0; c < k; ++c) {
        VectorNV chi_dot = data.minv_a[i].col(c).head<NV>();  // ν
        if (parent > 0) {
          const Vector6 alpha_plus = data.minv_a[parent].col(c);
          chi_dot.noalias() -= G.transpose() * alpha_plus;
          alpha.col(c) = alpha_plus;
          alpha.col(c).noalias() += S * chi_dot;
        } else {
          alpha.col(c).noalias() = S * chi_dot;
        }
        data.minv_z[i].col(c).head<NV>() = chi_dot;  // Z is spent: kept for the response
      }
    });
  }

  // W(r, c) = F_b,rᵀ α_b(c) + F_a,rᵀ α_a(c), lower triangle
  for (int r = 0; r < k; ++r) {
    const int row = rows.active[r];
    const int a = rows.body_a[row], b = rows.body_b[row];
    const Vector6 F_a = rows.force_a.col(row), F_b = rows.force_b.col(row);
    for (int c = 0; c <= r; ++c) {
      double w = 0.0;
      if (b > 0) w += F_b.dot(data.minv_a[b].col(c));
      if (a > 0) w += F_a.dot(data.minv_a[a].col(c));
      W(r, c) = w;
    }
  }
}

// Support bodies: α and χ̇ are the columns' combinations. The other bodies are reached by no
// force: ν = 0, so χ̇ = −G* α⁺ and α = α⁺ + ℋ* χ̇ from the parent's α (outward (7.3) again);
// minv_a[i].col(0) holds each body's α once its columns are combined.
void abaDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                         const Eigen::VectorXd& lambda, Eigen::VectorXd& x) {
  const int k = rows.active_count;
  data.minv_a[0].col(0).setZero();
  std::size_t next_support = 0;
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    const bool on_support =
        next_support < rows.support.size() && rows.support[next_support] == i;
    if (on_support) {
      ++next_support;
      Vector6 alpha = Vector6::Zero();
      for (int c = 0; c < k; ++c) alpha += lambda(c) * data.minv_a[i].col(c);
      if (isFloatingRoot(model, i)) {
        detail::floatingRootRates(data, i, alpha, x.segment<6>(iv));
      } else {
        detail::withJointSize(model.nv_joint[i], [&](auto n) {
          constexpr int NV = decltype(n)::value;
          Eigen::Matrix<double, NV, 1> chi_dot = Eigen::Matrix<double, NV, 1>::Zero();
          for (int c = 0; c < k; ++c) chi_dot += lambda(c) * data.minv_z[i].col(c).head<NV>();
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
