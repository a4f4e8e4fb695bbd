#include "engine/model/configuration.h"

#include <cassert>

namespace hilsim {

void integrateConfiguration(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                            double dt, Eigen::VectorXd& q_out) {
  assert(q.size() == model.nq && v.size() == model.nv && q_out.size() == model.nq);
  for (int i = 1; i < model.nbodies; ++i) {
    jointIntegrate(model.joints[i], q.data() + model.idx_q[i], v.data() + model.idx_v[i], dt,
                   q_out.data() + model.idx_q[i]);
    // modal coordinates live in a vector space: η ← η + dt η̇
    for (int k = 0; k < model.nmodes[i]; ++k)
      q_out[model.idxModesQ(i) + k] = q[model.idxModesQ(i) + k] + dt * v[model.idxModesV(i) + k];
  }
}

void normalizeConfiguration(const Model& model, Eigen::VectorXd& q) {
  for (int i = 1; i < model.nbodies; ++i) jointNormalize(model.joints[i], q.data() + model.idx_q[i]);
}

void tangentRate(const Model& model, const Eigen::VectorXd& theta, const Eigen::VectorXd& v,
                 Eigen::VectorXd& theta_dot) {
  theta_dot = v;
  for (int i = 1; i < model.nbodies; ++i) {
    const JointType type = model.joints[i].type;
    if (type != JointType::kSpherical && type != JointType::kFreeFlyer) continue;
    const int k = model.idx_v[i] + (type == JointType::kFreeFlyer ? 3 : 0);
    const Vector3 th = theta.segment<3>(k);
    const Vector3 w = v.segment<3>(k);
    const Vector3 th_x_w = th.cross(w);
    theta_dot.segment<3>(k) = w + 0.5 * th_x_w + th.cross(th_x_w) / 12.0;
  }
}

}  // namespace hilsim
