#include "engine/algorithms/tree_ldl.h"

#include <cassert>
#include <cmath>

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

void treeLdlDelassus(const Model& model, Data& data, const ConstraintRows& rows,
                     Eigen::MatrixXd& W) {
  const int k = rows.active_count;
  const Eigen::MatrixXd& H = data.M_factor;
  Eigen::MatrixXd& Y = data.ldl_rows;
  assert(k < Y.cols());
  const std::vector<int>& lambda = model.dof_parent;
  auto scale = Y.col(Y.cols() - 1);
  for (int i = 0; i < model.nv; ++i) scale(i) = 1.0 / std::sqrt(H(i, i));
  for (int c = 0; c < k; ++c) {
    auto y = Y.col(c);
    y = rows.jacobian.row(rows.active[c]).transpose();
    // Lᵀ y = Jᵀ_r, leaves first, skipping the zeros (every dof off the row's paths)
    for (int i = model.nv - 1; i >= 0; --i) {
      if (y(i) == 0.0) continue;
      for (int j = lambda[i]; j >= 0; j = lambda[j]) y(j) -= H(i, j) * y(i);
    }
    y.array() *= scale.array();
  }
  for (int r = 0; r < k; ++r)
    for (int c = 0; c <= r; ++c) W(r, c) = Y.col(r).dot(Y.col(c));
}

void treeLdlDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                             const Eigen::VectorXd& lambda, Eigen::VectorXd& x) {
  const int k = rows.active_count;
  const Eigen::MatrixXd& H = data.M_factor;
  const Eigen::MatrixXd& Y = data.ldl_rows;
  const std::vector<int>& parent_dof = model.dof_parent;
  x.noalias() = Y.leftCols(k) * lambda.head(k);
  x.array() *= Y.col(Y.cols() - 1).array();  // D^-½
  // L x = z, roots first
  for (int i = 0; i < model.nv; ++i)
    for (int j = parent_dof[i]; j >= 0; j = parent_dof[j]) x(i) -= H(i, j) * x(j);
}

}  // namespace hilsim
