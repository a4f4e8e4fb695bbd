#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/flexible_kinematics.h"

namespace hilsim {

const Eigen::MatrixXd& flexibleCrba(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  ForceVector unused;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::flexibleJointPositionStep(model, data, i, q.data());
    detail::modalInertiaStep(model, data, i, q.data(), nullptr, unused);
  }
  return detail::flexibleCrbaInwardSweep(model, data);
}

namespace detail {

const Eigen::MatrixXd& flexibleCrbaInwardSweep(const Model& model, Data& data) {
  Data::Flexible& flex = data.flex;
  Eigen::MatrixXd& M = data.M;
  // R(k) = M_m(k) to start the composite inertias (5.2)
  for (int i = 1; i < model.nbodies; ++i) {
    data.inertia_W[i].matrix(data.P_W[i]);
    if (model.nmodes[i] > 0) {
      flex.P_ff[i] = model.flexible[i].modal_mass;
      flex.P_rf_W[i] = flex.M_rf_W[i];
    }
  }

  // inward sweep (5.5): X(k) = R(k) ℋ*(k), ℳ(k,k) = ℋ(k) X(k); then for each ancestor j,
  // ℳ(j,k) = ℋ(j) X(j) with X(j) = 𝒜 X^r: only the 6 rigid rows X^r travel, unchanged in W.
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    const int nj = model.nv_joint[i];
    const int n = model.nmodes[i];
    const int im = model.idxModesV(i);
    const int cols = nj + n;
    const Matrix6& R = data.P_W[i];
    // X^r (6 × cols) in G_W: [R S, R^rf − R Ψ_d]
    auto Xr = data.G_W.middleCols(iv, cols);
    Xr.leftCols(nj).noalias() = R * data.S_W.middleCols(iv, nj);
    const bool hinge = n > 0 && model.flexible[i].hinge_node >= 0;
    if (n > 0) {
      Xr.rightCols(n) = flex.P_rf_W[i];
      if (hinge) Xr.rightCols(n).noalias() -= R * flex.Psi_d_W[i];
    }
    // ℳ(k,k): joint rows Sᵀ X^r; modal rows X^f − Ψ_dᵀ X^r, X^f = [R^fr S, R^ff − R^fr Ψ_d]
    M.block(iv, iv, nj, cols).noalias() = data.S_W.middleCols(iv, nj).transpose() * Xr;
    if (n > 0) {
      auto modal_rows = M.block(im, iv, n, cols);
      modal_rows.leftCols(nj).noalias() =
          flex.P_rf_W[i].transpose() * data.S_W.middleCols(iv, nj);
      modal_rows.rightCols(n) = flex.P_ff[i];
      if (hinge) {
        modal_rows.rightCols(n).noalias() -= flex.P_rf_W[i].transpose() * flex.Psi_d_W[i];
        modal_rows.noalias() -= flex.Psi_d_W[i].transpose() * Xr;
      }
    }
    // ancestors: the path leaves body `child` into body j
    for (int child = i, j = model.parent[i]; j > 0; child = j, j = model.parent[j]) {
      const int jv = model.idx_v[j];
      const int jn = model.nmodes[j];
      auto block_joint = M.block(jv, iv, model.nv_joint[j], cols);
      block_joint.noalias() = data.S_W.middleCols(jv, model.nv_joint[j]).transpose() * Xr;
      if (jn > 0) {
        auto block_modal = M.block(model.idxModesV(j), iv, jn, cols);
        block_modal.setZero();
        if (model.parent_node[child] >= 0)
          block_modal.noalias() += flex.Psi_t_W[child].transpose() * Xr;
        if (model.flexible[j].hinge_node >= 0)
          block_modal.noalias() -= flex.Psi_d_W[j].transpose() * Xr;
      }
    }
    // R(λ) += 𝒜 R^r 𝒜* (5.5), with 𝒜 = [Ψ_t*; 1]
    const int parent = model.parent[i];
    if (parent > 0) {
      data.P_W[parent] += R;
      if (model.parent_node[i] >= 0) {
        const Matrix6N& psi_t = flex.Psi_t_W[i];
        auto r_psi = flex.scratch_6n[i].leftCols(psi_t.cols());
        r_psi.noalias() = R * psi_t;
        flex.P_rf_W[parent] += r_psi;
        flex.P_ff[parent].noalias() += psi_t.transpose() * r_psi;
      }
    }
  }
  // upper triangle from the lower: every block above was written at (ancestor row, column)
  for (int c = 0; c < model.nv; ++c)
    for (int r = model.dof_parent[c]; r >= 0; r = model.dof_parent[r]) M(c, r) = M(r, c);
  M.diagonal() += model.armature;
  return M;
}

}  // namespace detail

}  // namespace hilsim
