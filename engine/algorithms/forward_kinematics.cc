#include "engine/algorithms/forward_kinematics.h"

#include "engine/algorithms/flexible_kinematics.h"
#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  if (model.has_flexible_bodies) {
    for (int i = 1; i < model.nbodies; ++i) detail::flexibleJointPositionStep(model, data, i, q.data());
    return;
  }
  for (int i = 1; i < model.nbodies; ++i) detail::jointPositionStep(model, data, i, q.data());
}

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v) {
  assert(q.size() == model.nq && v.size() == model.nv);
  data.V_W[0].setZero();
  if (model.has_flexible_bodies) {
    for (int i = 1; i < model.nbodies; ++i) {
      detail::flexibleJointPositionStep(model, data, i, q.data());
      detail::flexibleJointVelocityStep(model, data, i, q.data(), v.data());
    }
    return;
  }
  MotionVector joint_velocity;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
  }
}

namespace {

// seed 004 (3.26): α(k) = α(λ) + Ψ_t η̈_λ + S v̇ − Ψ_d η̈_k + a_m(k)
void accelerationStep(const Model& model, Data& data, int i, const Eigen::VectorXd& a) {
  const int parent = model.parent[i];
  const int iv = model.idx_v[i];
  const int nv_i = model.nv_joint[i];
  data.A_W[i] = data.A_W[parent] + data.c_W[i];
  data.A_W[i].noalias() += data.S_W.middleCols(iv, nv_i) * a.segment(iv, nv_i);
  if (!model.has_flexible_bodies) return;
  if (model.parent_node[i] >= 0)
    data.A_W[i].noalias() +=
        data.flex.Psi_t_W[i] * a.segment(model.idxModesV(parent), model.nmodes[parent]);
  if (model.nmodes[i] > 0 && model.flexible[i].hinge_node >= 0)
    data.A_W[i].noalias() -= data.flex.Psi_d_W[i] * a.segment(model.idxModesV(i), model.nmodes[i]);
}

}  // namespace

void bodyAccelerations(const Model& model, Data& data, const Eigen::VectorXd& a) {
  assert(a.size() == model.nv);
  data.A_W[0].setZero();
  for (int i = 1; i < model.nbodies; ++i) accelerationStep(model, data, i, a);
}

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, const Eigen::VectorXd& a) {
  assert(q.size() == model.nq && v.size() == model.nv && a.size() == model.nv);
  data.V_W[0].setZero();
  data.A_W[0].setZero();
  MotionVector joint_velocity;
  for (int i = 1; i < model.nbodies; ++i) {
    if (model.has_flexible_bodies) {
      detail::flexibleJointPositionStep(model, data, i, q.data());
      detail::flexibleJointVelocityStep(model, data, i, q.data(), v.data());
    } else {
      detail::jointPositionStep(model, data, i, q.data());
      detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    }
    accelerationStep(model, data, i, a);
  }
}

MotionVector bodyVelocityInBodyFrame(const Data& data, int body) {
  return data.X_WB[body].invActMotion(data.V_W[body]);
}

Vector3 bodyOriginVelocity(const Data& data, int body) {
  const MotionVector& V = data.V_W[body];
  return V.tail<3>() + V.head<3>().cross(data.X_WB[body].translation);
}

Vector3 bodyOriginAcceleration(const Data& data, int body) {
  // a_p = a_O + α × p + ω × v_p (spatial to classical, RBDA eq. 2.47)
  const MotionVector& V = data.V_W[body];
  const MotionVector& A = data.A_W[body];
  const Vector3& p = data.X_WB[body].translation;
  return A.tail<3>() + A.head<3>().cross(p) + V.head<3>().cross(bodyOriginVelocity(data, body));
}

Transform nodePlacement(const Model& model, const Data& data, const Eigen::VectorXd& q, int body,
                        int node) {
  assert(model.nmodes[body] > 0 && node >= 0 &&
         node < static_cast<int>(model.flexible[body].nodes.size()));
  const FlexibleBody& flexible = model.flexible[body];
  Transform X_BN;
  detail::nodePose(flexible, flexible.nodes[node], q.data() + model.idxModesQ(body), X_BN);
  return data.X_WB[body] * X_BN;
}

MotionVector nodeVelocity(const Model& model, const Data& data, const Eigen::VectorXd& q,
                          const Eigen::VectorXd& v, int body, int node) {
  assert(model.nmodes[body] > 0 && node >= 0 &&
         node < static_cast<int>(model.flexible[body].nodes.size()));
  const FlexibleBody& flexible = model.flexible[body];
  const MotionVector relative_B =
      detail::nodeRelativeTwist(flexible, flexible.nodes[node], q.data() + model.idxModesQ(body),
                                v.data() + model.idxModesV(body));
  return data.V_W[body] + data.X_WB[body].actMotion(relative_B);
}

}  // namespace hilsim
