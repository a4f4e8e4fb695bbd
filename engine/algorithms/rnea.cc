#include "engine/algorithms/rnea.h"

#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

namespace {

// Shared body of rnea and nonLinearEffects; a == nullptr means zero joint accelerations.
void inverseDynamics(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v, const double* a,
                     std::span<const ForceVector> f_ext_B, Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv);
  assert(f_ext_B.empty() || static_cast<int>(f_ext_B.size()) == model.nbodies);
  data.V_W[0].setZero();
  data.A_W[0] = detail::baseAccelerationForGravity(model);

  // outward sweep, base → tips: V(k), α(k) and the body force M α + V ×* M V (seed 004 (4.1))
  MotionVector joint_velocity;
  ForceVector momentum;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    detail::bodyInertiaStep(model, data, i);
    const int iv = model.idx_v[i];
    MotionVector& A = data.A_W[i];
    A = data.A_W[model.parent[i]] + data.c_W[i];
    if (a != nullptr) {
      detail::withJointSize(model.nv_joint[i], [&](auto n) {
        constexpr int NV = decltype(n)::value;
        A.noalias() +=
            data.S_W.middleCols<NV>(iv) * Eigen::Map<const Eigen::Matrix<double, NV, 1>>(a + iv);
      });
    }
    const Inertia& I = data.inertia_W[i];
    I.apply(A, data.f_W[i]);
    I.apply(data.V_W[i], momentum);
    ForceVector gyroscopic;
    crossForce(data.V_W[i], momentum, gyroscopic);
    data.f_W[i] += gyroscopic;
    if (!f_ext_B.empty()) {
      ForceVector f_ext_W;
      data.X_WB[i].actForce(f_ext_B[i], f_ext_W);
      data.f_W[i] -= f_ext_W;
    }
  }

  // inward sweep, tips → base: T(k) = ℋ(k) f(k), f(λ) += f(k)
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    detail::withJointSize(model.nv_joint[i], [&](auto n) {
      constexpr int NV = decltype(n)::value;
      tau.segment<NV>(iv).noalias() = data.S_W.middleCols<NV>(iv).transpose() * data.f_W[i];
    });
    if (model.parent[i] > 0) data.f_W[model.parent[i]] += data.f_W[i];
  }

  // joint-space terms: damping and reflected rotor inertia
  detail::addPassiveJointForces(model, q, v, tau);
  if (a != nullptr) tau += model.armature.cwiseProduct(Eigen::Map<const Eigen::VectorXd>(a, model.nv));
}

}  // namespace

const Eigen::VectorXd& rnea(const Model& model, Data& data, const Eigen::VectorXd& q,
                            const Eigen::VectorXd& v, const Eigen::VectorXd& a,
                            std::span<const ForceVector> f_ext_B,
                            std::span<const NodalForce> nodal_forces) {
  assert(a.size() == model.nv);
  if (model.has_flexible_bodies) return flexibleRnea(model, data, q, v, a, f_ext_B, nodal_forces);
  assert(nodal_forces.empty());
  inverseDynamics(model, data, q, v, a.data(), f_ext_B, data.tau);
  return data.tau;
}

const Eigen::VectorXd& nonLinearEffects(const Model& model, Data& data, const Eigen::VectorXd& q,
                                        const Eigen::VectorXd& v,
                                        std::span<const ForceVector> f_ext_B,
                                        std::span<const NodalForce> nodal_forces) {
  if (model.has_flexible_bodies)
    return flexibleNonLinearEffects(model, data, q, v, f_ext_B, nodal_forces);
  assert(nodal_forces.empty());
  inverseDynamics(model, data, q, v, nullptr, f_ext_B, data.bias_forces);
  return data.bias_forces;
}

}  // namespace hilsim
