#include "engine/algorithms/forward_kinematics.h"

#include "engine/algorithms/joint_kinematics.h"

namespace hilsim {

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(q.size() == model.nq);
  for (int i = 1; i < model.nbodies; ++i) detail::jointPositionStep(model, data, i, q.data());
}

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v) {
  assert(q.size() == model.nq && v.size() == model.nv);
  data.V_W[0].setZero();
  MotionVector joint_velocity;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
  }
}

void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, const Eigen::VectorXd& a) {
  assert(q.size() == model.nq && v.size() == model.nv && a.size() == model.nv);
  data.V_W[0].setZero();
  data.A_W[0].setZero();
  MotionVector joint_velocity;
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);
    // seed 004 (3.26): α(k) = α(λ) + S v̇ + a_m(k)
    const int iv = model.idx_v[i];
    const int nv_i = model.nv_joint[i];
    data.A_W[i] = data.A_W[model.parent[i]] + data.c_W[i];
    data.A_W[i].noalias() += data.S_W.middleCols(iv, nv_i) * a.segment(iv, nv_i);
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

}  // namespace hilsim
