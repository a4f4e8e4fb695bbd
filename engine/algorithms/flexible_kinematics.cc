#include "engine/algorithms/flexible_kinematics.h"

#include "engine/algorithms/joint_kinematics.h"
#include "engine/spatial/so3.h"

namespace hilsim::detail {

namespace {

using ConstVectorMap = Eigen::Map<const Eigen::VectorXd>;

// u_r = γ_r (+ Σ_s q_rs η_s with geometric stiffening): displacement of the node per unit η_r.
inline Vector3 modeDisplacement(const FlexibleBody& body, const ModalNode& node,
                                const ConstVectorMap& eta, int r) {
  Vector3 u = node.translation.col(r);
  if (body.geometric_stiffening && node.second_order.cols() != 0) {
    const int n = body.nmodes;
    for (int s = 0; s < n; ++s) u += node.second_order.col(r * n + s) * eta[s];
  }
  return u;
}

// l = position + γ η (+ ½ q(η, η)).
Vector3 nodePosition(const FlexibleBody& body, const ModalNode& node, const ConstVectorMap& eta) {
  Vector3 l = node.position;
  l.noalias() += node.translation * eta;
  if (body.geometric_stiffening && node.second_order.cols() != 0) {
    const int n = body.nmodes;
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s) l += node.second_order.col(r * n + s) * (0.5 * eta[r] * eta[s]);
  }
  return l;
}

}  // namespace

void nodePose(const FlexibleBody& body, const ModalNode& node, const double* eta,
              Transform& X_B_node) {
  const ConstVectorMap eta_v(eta, body.nmodes);
  Vector3 x;
  x.noalias() = node.slope * eta_v;
  X_B_node.rotation = so3Exp(x);
  X_B_node.translation = nodePosition(body, node, eta_v);
}

void nodeTwist(const FlexibleBody& body, const ModalNode& node, const double* eta,
               Matrix6N& psi_B) {
  const int n = body.nmodes;
  const ConstVectorMap eta_v(eta, n);
  Vector3 x;
  x.noalias() = node.slope * eta_v;
  const Matrix3 jacobian = so3LeftJacobian(x);
  const Vector3 l = nodePosition(body, node, eta_v);
  for (int r = 0; r < n; ++r) {
    const Vector3 omega_r = jacobian * node.slope.col(r);
    psi_B.col(r).head<3>() = omega_r;
    psi_B.col(r).tail<3>() = modeDisplacement(body, node, eta_v, r) - omega_r.cross(l);
  }
}

MotionVector nodeTwistRate(const FlexibleBody& body, const ModalNode& node, const double* eta,
                           const double* eta_dot) {
  // ψ̇ η̇ = [ω̇_c; q(η̇, η̇) − ω̇_c × l − ω × l̇], ω̇_c = J̇ λ η̇, ω = J λ η̇, l̇ = Σ u_r η̇_r
  const int n = body.nmodes;
  const ConstVectorMap eta_v(eta, n);
  const ConstVectorMap eta_dot_v(eta_dot, n);
  Vector3 x, x_dot;
  x.noalias() = node.slope * eta_v;
  x_dot.noalias() = node.slope * eta_dot_v;
  const Vector3 omega_dot = so3LeftJacobianRateTimesRate(x, x_dot);
  const Vector3 omega = so3LeftJacobian(x) * x_dot;
  const Vector3 l = nodePosition(body, node, eta_v);
  Vector3 l_dot = Vector3::Zero();
  for (int r = 0; r < n; ++r) l_dot += modeDisplacement(body, node, eta_v, r) * eta_dot[r];
  Vector3 u_dot = Vector3::Zero();
  if (body.geometric_stiffening && node.second_order.cols() != 0)
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s)
        u_dot += node.second_order.col(r * n + s) * (eta_dot[r] * eta_dot[s]);
  MotionVector rate;
  rate.head<3>() = omega_dot;
  rate.tail<3>() = u_dot - omega_dot.cross(l) - omega.cross(l_dot);
  return rate;
}

MotionVector nodeRelativeTwist(const FlexibleBody& body, const ModalNode& node, const double* eta,
                               const double* eta_dot) {
  const int n = body.nmodes;
  const ConstVectorMap eta_v(eta, n);
  const ConstVectorMap eta_dot_v(eta_dot, n);
  Vector3 x;
  x.noalias() = node.slope * eta_v;
  Vector3 x_dot;
  x_dot.noalias() = node.slope * eta_dot_v;
  const Vector3 omega = so3LeftJacobian(x) * x_dot;
  Vector3 l_dot = Vector3::Zero();
  for (int r = 0; r < n; ++r) l_dot += modeDisplacement(body, node, eta_v, r) * eta_dot[r];
  MotionVector twist;
  twist.head<3>() = omega;
  twist.tail<3>() = l_dot - omega.cross(nodePosition(body, node, eta_v));
  return twist;
}

void flexibleJointPositionStep(const Model& model, Data& data, int i, const double* q) {
  const int parent = model.parent[i];
  const Joint& joint = model.joints[i];
  const double* q_i = q + model.idx_q[i];
  Data::Flexible& flex = data.flex;
  const Transform& X_WP = data.X_WB[parent];
  Transform& X_WJ = data.X_WJ[i];

  // joint frame: on the parent's frame, or on a node of a flexible parent
  if (model.parent_node[i] >= 0) {
    const FlexibleBody& body = model.flexible[parent];
    const ModalNode& node = body.nodes[model.parent_node[i]];
    const double* eta = q + model.idxModesQ(parent);
    Transform X_PN, X_WN;
    nodePose(body, node, eta, X_PN);
    X_WP.compose(X_PN, X_WN);
    X_WN.compose(model.joint_placement[i], X_WJ);
    Matrix6N& psi_B = flex.scratch_6n[i];
    nodeTwist(body, node, eta, psi_B);
    for (int r = 0; r < body.nmodes; ++r) {
      auto col = flex.Psi_t_W[i].col(r);
      X_WP.actMotion(psi_B.col(r), col);
    }
  } else {
    X_WP.compose(model.joint_placement[i], X_WJ);
  }
  jointTransform(joint, q_i, data.X_JC);

  // body frame: the joint's child frame, or placed so that its hinge node is there
  const FlexibleBody& own = model.flexible[i];
  if (own.hinge_node >= 0) {
    const ModalNode& node = own.nodes[own.hinge_node];
    const double* eta = q + model.idxModesQ(i);
    Transform X_WC, X_BD;
    X_WJ.compose(data.X_JC, X_WC);
    nodePose(own, node, eta, X_BD);
    X_WC.compose(X_BD.inverse(), data.X_WB[i]);
    Matrix6N& psi_B = flex.scratch_6n[i];
    nodeTwist(own, node, eta, psi_B);
    for (int r = 0; r < own.nmodes; ++r) {
      auto col = flex.Psi_d_W[i].col(r);
      data.X_WB[i].actMotion(psi_B.col(r), col);
    }
  } else {
    X_WJ.compose(data.X_JC, data.X_WB[i]);
  }

  detail::motionSubspaceStep(model, data, i, q_i);
}

void flexibleJointVelocityStep(const Model& model, Data& data, int i, const double* q,
                               const double* v) {
  const int parent = model.parent[i];
  const int iv = model.idx_v[i];
  const int nv_i = model.nv_joint[i];
  Data::Flexible& flex = data.flex;
  const MotionVector& V_parent = data.V_W[parent];
  MotionVector& c = data.c_W[i];
  c.setZero();
  MotionVector cross;

  // the parent node's motion relative to the parent: Ψ_t η̇_λ and its rate
  MotionVector V_node = V_parent;
  if (model.parent_node[i] >= 0) {
    const FlexibleBody& body = model.flexible[parent];
    const int n = body.nmodes;
    const Eigen::Map<const Eigen::VectorXd> eta_dot(v + model.idxModesV(parent), n);
    MotionVector node_velocity;
    node_velocity.noalias() = flex.Psi_t_W[i] * eta_dot;
    crossMotion(V_parent, node_velocity, cross);
    c += cross;
    const MotionVector rate_B =
        nodeTwistRate(body, body.nodes[model.parent_node[i]], q + model.idxModesQ(parent),
                      v + model.idxModesV(parent));
    MotionVector rate_W;
    data.X_WB[parent].actMotion(rate_B, rate_W);
    c += rate_W;
    V_node += node_velocity;
  }

  // the joint: S θ̇, with Ṡ from the joint frame's motion (it moves with the node) and from S_J(q)
  MotionVector joint_velocity = MotionVector::Zero();
  for (int k = 0; k < nv_i; ++k) joint_velocity += data.S_W.col(iv + k) * v[iv + k];
  crossMotion(V_node, joint_velocity, cross);
  c += cross;
  const JointType type = model.joints[i].type;
  if (type == JointType::kFreeFlyer || type == JointType::kPlanar) {
    MotionVector sdot_v_J, sdot_v_W;
    jointMotionSubspaceRate(model.joints[i], q + model.idx_q[i], v + iv, sdot_v_J);
    data.X_WJ[i].actMotion(sdot_v_J, sdot_v_W);
    c += sdot_v_W;
  }
  MotionVector& V = data.V_W[i];
  V = V_node + joint_velocity;

  // the body frame relative to its hinge node: − Ψ_d η̇ and its rate
  const FlexibleBody& own = model.flexible[i];
  if (own.hinge_node >= 0) {
    const Eigen::Map<const Eigen::VectorXd> eta_dot(v + model.idxModesV(i), own.nmodes);
    MotionVector hinge_velocity;
    hinge_velocity.noalias() = flex.Psi_d_W[i] * eta_dot;
    V -= hinge_velocity;
    crossMotion(V, hinge_velocity, cross);
    c -= cross;
    const MotionVector rate_B = nodeTwistRate(own, own.nodes[own.hinge_node],
                                              q + model.idxModesQ(i), v + model.idxModesV(i));
    MotionVector rate_W;
    data.X_WB[i].actMotion(rate_B, rate_W);
    c -= rate_W;
  }
}

void modalInertiaStep(const Model& model, Data& data, int i, const double* q, const double* v,
                      ForceVector& b_r_W) {
  const Transform& X = data.X_WB[i];
  const int n = model.nmodes[i];
  if (n == 0) {
    // rigid body: M_rr = I, b = V ×* I V
    bodyInertiaStep(model, data, i);
    if (v == nullptr) return;
    ForceVector momentum;
    data.inertia_W[i].apply(data.V_W[i], momentum);
    crossForce(data.V_W[i], momentum, b_r_W);
    return;
  }
  const FlexibleBody& body = model.flexible[i];
  const bool stiffening = body.geometric_stiffening;
  const Eigen::Map<const Eigen::VectorXd> eta(q + model.idxModesQ(i), n);
  Data::Flexible& flex = data.flex;

  // M_m(η) in B: first moment h, its gradient dh = ∂h/∂η (3 × n), rotational inertia I, and
  // the angular coupling A (3 × n). flex.scratch_6n holds [A; dh].
  Matrix6N& m_rf_B = flex.scratch_6n[i];
  auto A = m_rf_B.topLeftCorner(3, n);
  auto dh = m_rf_B.bottomLeftCorner(3, n);
  A = body.angular_coupling;
  dh = body.first_moment_modes;
  Vector3 h = body.first_moment;
  h.noalias() += body.first_moment_modes * eta;
  Matrix3 I = body.rotational_inertia;
  for (int s = 0; s < n; ++s) {
    I += body.rotational_inertia_modes.middleCols<3>(3 * s) * eta[s];
    A += body.angular_coupling_modes.middleCols(s * n, n) * eta[s];
    if (stiffening) A += body.angular_coupling_geometric.middleCols(s * n, n) * eta[s];
    for (int r = 0; r < n; ++r) {
      const double e_rs = eta[r] * eta[s];
      I += body.rotational_inertia_second.middleCols<3>(3 * (r * n + s)) * e_rs;
      if (stiffening) {
        I += body.rotational_inertia_geometric.middleCols<3>(3 * (r * n + s)) * e_rs;
        h += 0.5 * e_rs * body.first_moment_second.col(r * n + s);
        dh.col(r) += body.first_moment_second.col(r * n + s) * eta[s];
      }
    }
  }

  // to W: M_rr as an Inertia (m, c = h/m, I_c = I + m c̃ c̃), M_rf column by column
  {
    const Vector3 com = h / body.mass;
    const Matrix3 c_skew = skew(com);
    Matrix3 inertia_com = I;
    inertia_com.noalias() += body.mass * c_skew * c_skew;
    data.inertia_W[i] = Inertia(body.mass, com, inertia_com).transformed(X);
    for (int r = 0; r < n; ++r) {
      auto col = flex.M_rf_W[i].col(r);
      X.actForce(m_rf_B.col(r), col);
    }
  }
  if (v == nullptr) return;

  // body velocity in B
  MotionVector V_B;
  X.invActMotion(data.V_W[i], V_B);
  const Vector3 w = V_B.head<3>();
  const Vector3 vel = V_B.tail<3>();

  const Eigen::Map<const Eigen::VectorXd> eta_dot(v + model.idxModesV(i), n);

  // rates: İ ω, ḣ, Ȧ η̇, h₂(η̇, η̇)
  Vector3 I_dot_w = Vector3::Zero();
  Vector3 A_dot_eta_dot = Vector3::Zero();
  Vector3 h2_dot = Vector3::Zero();
  const Vector3 h_dot = dh * eta_dot;
  Eigen::VectorXd& b_f = flex.b_f[i];
  // b_f,r = Σ_s η̇_s ω·(A₁ₛ(:,r) − A₁ᵣ(:,s)) − ½ ωᵀ ∂I/∂η_r ω − ω·(∂h/∂η_r × v)
  for (int r = 0; r < n; ++r) {
    Vector3 dI_r_w = body.rotational_inertia_modes.middleCols<3>(3 * r) * w;  // ∂I/∂η_r ω
    double gyro = 0.0;
    for (int s = 0; s < n; ++s) {
      Vector3 I2_rs_w = body.rotational_inertia_second.middleCols<3>(3 * (r * n + s)) * w;
      Vector3 a1_diff = body.angular_coupling_modes.col(s * n + r) -
                        body.angular_coupling_modes.col(r * n + s);
      if (stiffening) {
        I2_rs_w += body.rotational_inertia_geometric.middleCols<3>(3 * (r * n + s)) * w;
        a1_diff += body.angular_coupling_geometric.col(s * n + r) -
                   body.angular_coupling_geometric.col(r * n + s);
        h2_dot += body.first_moment_second.col(r * n + s) * (eta_dot[r] * eta_dot[s]);
      }
      dI_r_w += 2.0 * eta[s] * I2_rs_w;
      gyro += eta_dot[s] * w.dot(a1_diff);
    }
    I_dot_w += eta_dot[r] * dI_r_w;
    b_f[r] = gyro - 0.5 * w.dot(dI_r_w) - w.dot(Vector3(dh.col(r)).cross(vel));
  }
  for (int s = 0; s < n; ++s) {
    Vector3 a1_s_eta_dot = body.angular_coupling_modes.middleCols(s * n, n) * eta_dot;
    if (stiffening) a1_s_eta_dot += body.angular_coupling_geometric.middleCols(s * n, n) * eta_dot;
    A_dot_eta_dot += eta_dot[s] * a1_s_eta_dot;
  }
  b_f.noalias() += body.stiffness * eta;
  b_f.noalias() += body.damping * eta_dot;

  // rigid part: b_r = Ṁ_rf η̇ + Ṁ_rr V + V ×* (M_rf η̇ + M_rr V)
  ForceVector p;
  p.head<3>() = I * w + h.cross(vel);
  p.head<3>().noalias() += A * eta_dot;
  p.tail<3>() = body.mass * vel + w.cross(h) + h_dot;
  ForceVector b_r_B;
  crossForce(V_B, p, b_r_B);
  b_r_B.head<3>() += A_dot_eta_dot + I_dot_w + h_dot.cross(vel);
  b_r_B.tail<3>() += h2_dot + w.cross(h_dot);
  X.actForce(b_r_B, b_r_W);
}

void applyNodalForces(const Model& model, Data& data, const double* q,
                      std::span<const NodalForce> nodal_forces,
                      std::vector<ForceVector>& rigid_bias_W,
                      std::vector<Eigen::VectorXd>& modal_bias) {
  for (const NodalForce& load : nodal_forces) {
    const int i = load.body;
    assert(i > 0 && i < model.nbodies && model.nmodes[i] > 0);
    const FlexibleBody& body = model.flexible[i];
    assert(load.node >= 0 && load.node < static_cast<int>(body.nodes.size()));
    const ModalNode& node = body.nodes[load.node];
    const double* eta = q + model.idxModesQ(i);
    const Transform& X_WB = data.X_WB[i];
    Transform X_BN;
    nodePose(body, node, eta, X_BN);
    // the wrench about W's origin: n_O = n + p × f
    const Vector3 p_W = X_WB.actPoint(X_BN.translation);
    ForceVector f_O = load.wrench_W;
    f_O.head<3>() += p_W.cross(load.wrench_W.tail<3>());
    rigid_bias_W[i] -= f_O;
    // modal part: ψ_Bᵀ f_B, ψ the node's twist per unit η̇ about B's origin
    ForceVector f_B;
    X_WB.invActForce(f_O, f_B);
    Matrix6N& psi_B = data.flex.scratch_6n[i];
    nodeTwist(body, node, eta, psi_B);
    modal_bias[i].noalias() -= psi_B.leftCols(body.nmodes).transpose() * f_B;
  }
}

}  // namespace hilsim::detail
