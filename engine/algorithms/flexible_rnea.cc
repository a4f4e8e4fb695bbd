#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/flexible_kinematics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// Shared body of flexibleRnea and flexibleNonLinearEffects; a == nullptr: zero accelerations.
void flexibleInverseDynamics(const Model& model, Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& v, const double* a,
                             std::span<const ForceVector> f_ext_B,
                             std::span<const NodalForce> nodal_forces, Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(f_ext_B.empty() || static_cast<int>(f_ext_B.size()) == model.nbodies);
  Data::Flexible& flex = data.flex;
  data.V_W[0].setZero();
  data.A_W[0] = detail::baseAccelerationForGravity(model);

  // outward sweep, base → tips (4.2): V_m(k), α_m(k), then f_m(k) = M_m α_m + b_m + K_m ϑ
  for (int i = 1; i < model.nbodies; ++i) {
    detail::flexibleJointPositionStep(model, data, i, q.data());
    detail::flexibleJointVelocityStep(model, data, i, q.data(), v.data());
    ForceVector& f = data.f_W[i];
    detail::modalInertiaStep(model, data, i, q.data(), v.data(), f);
    const int parent = model.parent[i];
    const int n = model.nmodes[i];
    MotionVector& A = data.A_W[i];
    A = data.A_W[parent] + data.c_W[i];
    if (a != nullptr) {
      // α(k) = α(λ) + Ψ_t η̈_λ + S θ̈ − Ψ_d η̈_k + a_m(k)
      if (model.parent_node[i] >= 0)
        A.noalias() += flex.Psi_t_W[i] *
                       Eigen::Map<const Eigen::VectorXd>(a + model.idxModesV(parent),
                                                         model.nmodes[parent]);
      for (int k = 0; k < model.nv_joint[i]; ++k) A += data.S_W.col(model.idx_v[i] + k) * a[model.idx_v[i] + k];
      if (n > 0 && model.flexible[i].hinge_node >= 0)
        A.noalias() -= flex.Psi_d_W[i] * Eigen::Map<const Eigen::VectorXd>(a + model.idxModesV(i), n);
    }
    ForceVector inertial;
    data.inertia_W[i].apply(A, inertial);
    f += inertial;
    if (n > 0) {
      // f_m^f = M_ff η̈ + M_fr α + b_f, and f_m^r gains M_rf η̈
      Eigen::VectorXd& f_f = flex.f_f[i];
      f_f = flex.b_f[i];
      f_f.noalias() += flex.M_rf_W[i].transpose() * A;
      if (a != nullptr) {
        const Eigen::Map<const Eigen::VectorXd> eta_dd(a + model.idxModesV(i), n);
        f_f.noalias() += model.flexible[i].modal_mass * eta_dd;
        f.noalias() += flex.M_rf_W[i] * eta_dd;
      }
    }
    if (!f_ext_B.empty()) {
      ForceVector f_ext_W;
      data.X_WB[i].actForce(f_ext_B[i], f_ext_W);
      f -= f_ext_W;
    }
  }

  detail::applyNodalForces(model, data, q.data(), nodal_forces, data.f_W, flex.f_f);

  // inward sweep, tips → base: T_r = Sᵀ f^r, T_f = f^f − Ψ_dᵀ f^r, and f_m(λ) += 𝒜 f^r
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    const int n = model.nmodes[i];
    const ForceVector& f = data.f_W[i];
    for (int k = 0; k < model.nv_joint[i]; ++k) tau[iv + k] = data.S_W.col(iv + k).dot(f);
    if (n > 0) {
      auto T_f = tau.segment(model.idxModesV(i), n);
      T_f = flex.f_f[i];
      if (model.flexible[i].hinge_node >= 0) T_f.noalias() -= flex.Psi_d_W[i].transpose() * f;
    }
    const int parent = model.parent[i];
    if (parent > 0) {
      data.f_W[parent] += f;
      if (model.parent_node[i] >= 0) flex.f_f[parent].noalias() += flex.Psi_t_W[i].transpose() * f;
    }
  }

  detail::addPassiveJointForces(model, q, v, tau);
  if (a != nullptr) tau += model.armature.cwiseProduct(Eigen::Map<const Eigen::VectorXd>(a, model.nv));
}

}  // namespace

const Eigen::VectorXd& flexibleRnea(const Model& model, Data& data, const Eigen::VectorXd& q,
                                    const Eigen::VectorXd& v, const Eigen::VectorXd& a,
                                    std::span<const ForceVector> f_ext_B,
                                    std::span<const NodalForce> nodal_forces) {
  assert(a.size() == model.nv);
  flexibleInverseDynamics(model, data, q, v, a.data(), f_ext_B, nodal_forces, data.tau);
  return data.tau;
}

const Eigen::VectorXd& flexibleNonLinearEffects(const Model& model, Data& data,
                                                const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                                std::span<const ForceVector> f_ext_B,
                                                std::span<const NodalForce> nodal_forces) {
  flexibleInverseDynamics(model, data, q, v, nullptr, f_ext_B, nodal_forces, data.bias_forces);
  return data.bias_forces;
}

}  // namespace hilsim
