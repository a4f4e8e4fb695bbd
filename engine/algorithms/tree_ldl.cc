#include "engine/algorithms/tree_ldl.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>

#include "engine/algorithms/column_blocks.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

void treeLdlFactor(const Model& model, Eigen::MatrixXd& H) {
  const std::vector<int>& lambda = model.dof_parent;
  for (int k = model.nv - 1; k >= 0; --k) {
    for (int i = lambda[k]; i >= 0; i = lambda[i]) {
      const double a = H(k, i) / H(k, k);
      for (int j = i; j >= 0; j = lambda[j]) H(i, j) -= a * H(k, j);
      H(k, i) = a;
    }
  }
}

void treeLdlSolve(const Model& model, const Eigen::MatrixXd& H, Eigen::VectorXd& b) {
  assert(b.size() == model.nv);
  const std::vector<int>& lambda = model.dof_parent;
  // Lᵀ y = b, leaves first
  for (int i = model.nv - 1; i >= 0; --i)
    for (int j = lambda[i]; j >= 0; j = lambda[j]) b(j) -= H(i, j) * b(i);
  // D z = y
  for (int i = 0; i < model.nv; ++i) b(i) /= H(i, i);
  // L x = z, roots first
  for (int i = 0; i < model.nv; ++i)
    for (int j = lambda[i]; j >= 0; j = lambda[j]) b(i) -= H(i, j) * b(j);
}

void treeLdlSolve(const Model& model, const Eigen::MatrixXd& H, Eigen::Ref<Eigen::MatrixXd> B) {
  assert(B.rows() == model.nv);
  const std::vector<int>& lambda = model.dof_parent;
  for (int i = model.nv - 1; i >= 0; --i)
    for (int j = lambda[i]; j >= 0; j = lambda[j]) B.row(j) -= H(i, j) * B.row(i);
  for (int i = 0; i < model.nv; ++i) B.row(i) /= H(i, i);
  for (int i = 0; i < model.nv; ++i)
    for (int j = lambda[i]; j >= 0; j = lambda[j]) B.row(i) -= H(i, j) * B.row(j);
}

// The k columns of Jᵀ are held transposed, dof by dof: Y's row for dof d is a k-vector (padded
// to whole blocks of four), so that each step of the half-solve and each term of K is a few
// 4-wide multiply–adds over the columns side by side (as in abaDelassus). J's entries come from
// the rows' spatial forces, not from the Jacobian: dof d of body i reads J(r, d) = s_dᵀ Σ F_r
// over the forces of the rows that act on i's subtree, the sum that the inward sweep carries
// from child to parent (in W, the frame every body shares, a sum without transformation).
namespace {

using detail::carries;
using detail::ColumnBlock;
using detail::forEachCarriedBlock;
using detail::kBlock;
using Lanes = Eigen::Matrix<double, kBlock, 1>;

Eigen::Map<ColumnBlock> forceBlock(Matrix6N& storage, int b) {
  return detail::columnBlock(storage, b);
}

// Y and D⁻¹ Y in data.ldl_rows: dof d's block b of each at a fixed offset in column d
struct HalfSolves {
  double* data;
  Eigen::Index ld;   // column stride
  Eigen::Index half; // offset of D⁻¹ Y in a column
  Eigen::Map<Lanes> y(int d, int b) const { return Eigen::Map<Lanes>(data + d * ld + b * kBlock); }
  Eigen::Map<Lanes> z(int d, int b) const {
    return Eigen::Map<Lanes>(data + d * ld + half + b * kBlock);
  }
};

}  // namespace

void treeLdlDelassus(const Model& model, Data& data, const ConstraintRows& rows,
                     Eigen::MatrixXd& W) {
  const int k = rows.active_count;
  const int blocks = (k + kBlock - 1) / kBlock;
  const HalfSolves Y{data.ldl_rows.data(), data.ldl_rows.rows(), data.ldl_rows.rows() / 2};
  assert(blocks * kBlock <= Y.half && blocks * kBlock <= data.minvColumns());
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  // Plain pointers, held in registers: a 4-wide store may alias any memory for the compiler,
  // which would otherwise reload every vector's and matrix's address after each one.
  const double* const H = data.M_factor.data();
  const Eigen::Index nv = data.M_factor.rows();
  const int* const parent_dof = model.dof_parent.data();
  const int* const parent = model.parent.data();
  const int* const first_dof = model.idx_v.data();
  const int* const dofs = model.nv_joint.data();
  const double* const S_W = data.S_W.data();
  Matrix6N* const force = data.minv_z.data();  // the blocks of the rows' forces, per body
  // the blocks of columns a body's subtree carries a force of: the others are zero at its dofs
  // in Jᵀ and, L⁻ᵀ summing a dof's descendants into it, in Y
  std::uint64_t* const reach = data.block_reach.data();
  const int* const support = rows.support.data();
  const int support_count = static_cast<int>(rows.support.size());

  // Jᵀ's entries: the rows' forces summed inward, each body's dofs reading its subtree's sum
  detail::scatterRowForces<false>(rows, blocks, force, reach);
  for (int s = support_count - 1; s >= 0; --s) {
    const int i = support[s];
    const int iv = first_dof[i];
    const std::uint64_t mask = reach[i];
    if (parent[i] > 0) reach[parent[i]] |= mask;
    detail::withJointSize(dofs[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      const Eigen::Map<const Eigen::Matrix<double, 6, NV>> S(S_W + 6 * iv);
      for (int b = 0; b < blocks; ++b) {
        if (!carries(mask, b)) {  // zero in D⁻¹ Y, which the response reads whole
          for (int j = 0; j < NV; ++j) Y.z(iv + j, b).setZero();
          continue;
        }
        const Eigen::Map<const ColumnBlock> F(force[i].data() + b * ColumnBlock::SizeAtCompileTime);
        Eigen::Map<Eigen::Matrix<double, kBlock, NV>, 0, Eigen::OuterStride<>> J_columns(
            &Y.y(iv, b).coeffRef(0), Eigen::OuterStride<>(Y.ld));
        J_columns.noalias() = F * S;
        if (parent[i] > 0) forceBlock(force[parent[i]], b) += F;
      }
    });
  }

  // Lᵀ Y = Jᵀ, leaves first (RBDA Table 6.4), and D⁻¹ Y as each row is final; every dof off
  // the support has a zero row, and the support is closed under ancestors
  for (int s = support_count - 1; s >= 0; --s) {
    const int i = support[s];
    const std::uint64_t mask = reach[i];
    for (int d = first_dof[i] + dofs[i] - 1; d >= first_dof[i]; --d) {
      const double pivot_reciprocal = 1.0 / H[d * nv + d];
      forEachCarriedBlock(mask, blocks, [&](int b) {
        const Lanes y_d = Y.y(d, b);
        Y.z(d, b) = pivot_reciprocal * y_d;
        for (int j = parent_dof[d]; j >= 0; j = parent_dof[j])
          Y.y(j, b).noalias() -= H[j * nv + d] * y_d;  // L(d, j)
      });
    }
  }

  // K = Yᵀ D⁻¹ Y = Σ_d (D⁻¹ y_d) y_dᵀ over the support's dofs, a 4 × 4 block at a time
  // (upper triangle: rows of block b1 ≤ columns of block b2; a diagonal block's lower entries
  // and padding rows are written too)
  assert(W.rows() >= blocks * kBlock);
  for (int b2 = 0; b2 < blocks; ++b2) {
    const int columns_here = std::min(kBlock, k - b2 * kBlock);
    for (int b1 = 0; b1 <= b2; ++b1) {
      Eigen::Matrix4d K = Eigen::Matrix4d::Zero();
      for (int s = 0; s < support_count; ++s) {
        const int i = support[s];
        if (!carries(reach[i], b1) || !carries(reach[i], b2)) continue;
        for (int d = first_dof[i]; d < first_dof[i] + dofs[i]; ++d)
          K.noalias() += Y.z(d, b1) * Y.y(d, b2).transpose();
      }
      for (int c = 0; c < columns_here; ++c)
        W.col(b2 * kBlock + c).segment<kBlock>(b1 * kBlock) = K.col(c);
    }
  }
}

void treeLdlDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                             const Eigen::VectorXd& lambda, Eigen::VectorXd& x) {
  const int k = rows.active_count;
  const int blocks = (k + kBlock - 1) / kBlock;
  const Eigen::Index ld = data.ldl_rows.rows(), half = ld / 2;
  // λ in blocks of four, the last padded with zeros (Y's padding rows are zero)
  const double* const lambda_padded =
      detail::paddedMultipliers(lambda, k, data.minv_scratch.data());
  // z = D⁻¹ Y λ over every dof: D⁻¹ Y is zero off the support (never written there) and in the
  // blocks a body does not carry (treeLdlDelassus writes the zeros). Four dofs at a time, each
  // dof's blocks multiplied lane by lane into one register and the four summed across at the
  // end (a general matrix–vector product costs more in set-up at these sizes).
  const HalfSolves Y{data.ldl_rows.data(), ld, half};
  const auto lambdaBlock = [&](int b) {
    return Eigen::Map<const Lanes>(lambda_padded + b * kBlock);
  };
  int d = 0;
  for (; d + kBlock <= model.nv; d += kBlock) {
    Eigen::Matrix4d products = Eigen::Matrix4d::Zero();  // column j: dof d + j
    for (int b = 0; b < blocks; ++b)
      for (int j = 0; j < kBlock; ++j)
        products.col(j) += Y.z(d + j, b).cwiseProduct(lambdaBlock(b));
    x.segment<kBlock>(d) = products.colwise().sum().transpose();
  }
  for (; d < model.nv; ++d) {
    Lanes products = Lanes::Zero();
    for (int b = 0; b < blocks; ++b) products += Y.z(d, b).cwiseProduct(lambdaBlock(b));
    x(d) = products.sum();
  }
  // then L x = z, roots first
  const double* const H = data.M_factor.data();
  const int nv = model.nv;
  const int* const parent_dof = model.dof_parent.data();
  double* const out = x.data();
  for (int d = 0; d < nv; ++d)
    for (int j = parent_dof[d]; j >= 0; j = parent_dof[j]) out[d] -= H[j * nv + d] * out[j];
}

}  // namespace hilsim
