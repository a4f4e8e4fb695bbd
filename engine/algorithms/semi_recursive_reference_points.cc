#include <cassert>

#include "engine/algorithms/joint_kinematics.h"
#include "engine/algorithms/semi_recursive.h"

namespace hilsim {

namespace {

// A column of joint j's motion about its own origin p_j, in W axes: [ω_s; v_s], v_s the relative
// velocity of the child's point at p_j. Written into `columns` (6 × n_j) for the joint of body i,
// read where V_i^j is formed (eq. C.4). Right after jointPositionStep for body i, whose S_J
// (in data.S_J) it rotates for the joints of more than one dof.
void jointColumnsAboutJointOrigin(const Model& model, const Data& data, int i,
                                  Eigen::Ref<Matrix6N> columns) {
  const int iv = model.idx_v[i];
  switch (model.joint_type[i]) {
    case JointType::kRevolute:  // [a; 0]: the axis passes through p_j
      columns.col(0).head<3>() = data.S_W.col(iv).head<3>();
      columns.col(0).tail<3>().setZero();
      return;
    case JointType::kPrismatic:  // [0; h]: S_W's column about any point
      columns.col(0) = data.S_W.col(iv);
      return;
    default: {
      const Matrix3& R_WJ = data.X_WJ[i].rotation;
      for (int k = 0; k < model.nv_joint[i]; ++k) {
        columns.col(k).head<3>().noalias() = R_WJ * data.S_J.col(k).head<3>();
        columns.col(k).tail<3>().noalias() = R_WJ * data.S_J.col(k).tail<3>();
      }
    }
  }
}

// V_i^j of one column s of joint j (eq. C.4 in 3D): the motion of body i's reference point R_i
// per unit ż_j, [ω_s; v_s + ω_s × (R_i − p_j)]
template <typename Column>
Vector6 columnAtPoint(const Column& s, const Vector3& r_from_joint) {
  Vector6 out;
  out.head<3>() = s.template head<3>();
  out.tail<3>() = s.template tail<3>() + s.template head<3>().cross(r_from_joint);
  return out;
}

// M^Σ_λ += B_iᵀ M^Σ_i B_i with B_i = [1 0; −d̃ 1] (eq. 18 in 3D, d = R_i − R_λ): a composite
// inertia [J h̃; h̃ᵀ m1] about R_i taken about R_λ, h its first moment. Positions from R_λ are
// those from R_i plus d, so h' = h + m d and J' = J − h̃ d̃ − d̃ h̃ − m d̃ d̃ (parallel axes), without
// forming B and with no term in |R|: precise far from the origin (the notes' §7.3).
void addInertiaAboutParentPoint(const Matrix6& M, const Vector3& d, Matrix6& parent) {
  const double m = M(3, 3);
  const Matrix3 h_tilde = M.topRightCorner<3, 3>();
  const Matrix3 d_tilde = skew(d);
  Matrix3 J = M.topLeftCorner<3, 3>();
  J.noalias() -= h_tilde * d_tilde;
  J.noalias() -= d_tilde * h_tilde;
  J.noalias() -= m * d_tilde * d_tilde;
  const Matrix3 h_shifted = h_tilde + m * d_tilde;
  parent.topLeftCorner<3, 3>() += J;
  parent.topRightCorner<3, 3>() += h_shifted;
  parent.bottomLeftCorner<3, 3>() += h_shifted.transpose();
  parent.bottomRightCorner<3, 3>().diagonal().array() += m;
}

}  // namespace

// SR-I in 3D, velocities [ω; Ṙ] and forces [n; f] at each body's frame origin R_i, in W axes.
const Eigen::VectorXd& semiRecursiveReferencePoints(const Model& model, Data& data,
                                                    const Eigen::VectorXd& q,
                                                    const Eigen::VectorXd& v,
                                                    const Eigen::VectorXd& tau) {
  assert(q.size() == model.nq && v.size() == model.nv && tau.size() == model.nv);
  assert(holds(data.workspace, DataWorkspace::kJointSpaceInertia));
  assert(!model.has_flexible_bodies && model.nalgebraic == 0);
  data.V_W[0].setZero();
  data.V_R[0].setZero();
  data.A_W[0].setZero();  // the world's reference point, the origin, at rest
  const Vector3& g = model.gravity;

  // Parents first: the poses, the spatial kinematics the constraint stage reads (V_W, c_W), and
  // SR-I's own recursion (eqs. 16–17, 22–23 in 3D; docs/SEMI_RECURSIVE.md "SR-I in 3D"):
  //   ω_i = ω_λ + ν_ω,  Ṙ_i = Ṙ_λ + ω_λ × d + ν_v + ν_ω × e      (d = R_i − R_λ, e = R_i − p_j)
  //   γ_i = q̈_i at z̈ = 0: γ_ω = γ_λω + ν̇_ω,
  //   γ_v = γ_λv + γ_λω × d + ω_λ × (Ṙ_i − Ṙ_λ) + ν̇_v + ν̇_ω × e + ν_ω × (Ṙ_i − ṗ_j)
  // with ν = Σ s ż_j the joint's relative motion about p_j, ν̇ = ω_λ × ν + R_WJ Ṡ_J ż (at z̈ = 0)
  // and ṗ_j = Ṙ_λ + ω_λ × (p_j − R_λ). Then per body, at R_i (eqs. 41, 45–47):
  //   M_i = [J_R m ũ; m ũᵀ m1] (u = c − R_i), −f_i = M_i γ_i + [ω × J_R ω; m ω × (ω × u)]
  //   − [u × m g; m g], the force the body needs at z̈ = 0 (the notes' Q_v sign)
  MotionVector joint_velocity, sdot_v_J;
  for (int i = 1; i < model.nbodies; ++i) {
    const int parent = model.parent[i];
    const int iv = model.idx_v[i];
    const int n = model.nv_joint[i];
    detail::jointPositionStep(model, data, i, q.data());
    auto columns = data.G_W.middleCols(iv, n);
    jointColumnsAboutJointOrigin(model, data, i, columns);
    detail::jointVelocityStep(model, data, i, q.data(), v.data(), joint_velocity);

    const Vector3& R_i = data.X_WB[i].translation;
    const Vector3& R_parent = data.X_WB[parent].translation;
    const Vector3& p_j = data.X_WJ[i].translation;
    const Vector3 d = R_i - R_parent, e = R_i - p_j;
    const Vector3 omega_parent = data.V_R[parent].head<3>();
    const Vector3 R_dot_parent = data.V_R[parent].tail<3>();
    MotionVector nu = MotionVector::Zero();
    for (int k = 0; k < n; ++k) nu += columns.col(k) * v[iv + k];
    MotionVector nu_dot;  // ν̇ at z̈ = 0
    nu_dot.head<3>() = omega_parent.cross(nu.head<3>());
    nu_dot.tail<3>() = omega_parent.cross(nu.tail<3>());
    const JointType type = model.joint_type[i];
    if (type == JointType::kFreeFlyer || type == JointType::kPlanar) {
      jointMotionSubspaceRate(model.joints[i], q.data() + model.idx_q[i], v.data() + iv, sdot_v_J);
      const Matrix3& R_WJ = data.X_WJ[i].rotation;
      nu_dot.head<3>().noalias() += R_WJ * sdot_v_J.head<3>();
      nu_dot.tail<3>().noalias() += R_WJ * sdot_v_J.tail<3>();
    }
    MotionVector& V_R = data.V_R[i];
    V_R.head<3>() = omega_parent + nu.head<3>();
    V_R.tail<3>() = R_dot_parent + omega_parent.cross(d) + nu.tail<3>() + nu.head<3>().cross(e);
    const Vector3 p_j_dot = R_dot_parent + omega_parent.cross(p_j - R_parent);
    const MotionVector& gamma_parent = data.A_W[parent];
    MotionVector& gamma = data.A_W[i];
    gamma.head<3>() = gamma_parent.head<3>() + nu_dot.head<3>();
    gamma.tail<3>() = gamma_parent.tail<3>() + gamma_parent.head<3>().cross(d) +
                      omega_parent.cross(V_R.tail<3>() - R_dot_parent) + nu_dot.tail<3>() +
                      nu_dot.head<3>().cross(e) + nu.head<3>().cross(V_R.tail<3>() - p_j_dot);

    // the body's inertia about R_i, in W axes
    const Inertia& I_B = model.inertias[i];
    const Matrix3& R_WB = data.X_WB[i].rotation;
    Inertia I_R;
    I_R.mass = I_B.mass;
    I_R.com.noalias() = R_WB * I_B.com;  // u
    const Matrix3 rotated = R_WB * I_B.inertia_com;
    I_R.inertia_com.noalias() = rotated * R_WB.transpose();
    I_R.matrix(data.P_W[i]);
    const Vector3 omega = V_R.head<3>();
    const Vector3& u = I_R.com;
    ForceVector& f = data.f_W[i];
    f.noalias() = data.P_W[i] * gamma;
    f.head<3>() += omega.cross(data.P_W[i].topLeftCorner<3, 3>() * omega);
    f.tail<3>() += I_R.mass * omega.cross(omega.cross(u));
    f.head<3>() -= u.cross(I_R.mass * g);
    f.tail<3>() -= I_R.mass * g;
  }

  // Children first: M^Σ and F^Σ at the reference points, each carried to its parent's by B_iᵀ
  // (force [n; f] at R_i is [n + d × f; f] at R_λ); M̄_jk = (V_i^j)ᵀ M^Σ_i V_i^k for joint k of
  // body i and every joint j on its path (V_i^j of eq. C.4, formed element by element from R_i
  // and joint j's origin and columns), Q̄_k = (V_i^k)ᵀ F^Σ_i
  Eigen::MatrixXd& M = data.M;
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i];
    const Vector3& R_i = data.X_WB[i].translation;
    detail::withJointSize(model.nv_joint[i], [&](auto nj) {
      constexpr int NV = decltype(nj)::value;
      Eigen::Matrix<double, 6, NV> V_own;
      const Vector3 e = R_i - data.X_WJ[i].translation;
      for (int k = 0; k < NV; ++k) V_own.col(k) = columnAtPoint(data.G_W.col(iv + k), e);
      Eigen::Matrix<double, 6, NV> F;
      F.noalias() = data.P_W[i] * V_own;
      M.block<NV, NV>(iv, iv).noalias() = V_own.transpose() * F;
      data.bias_forces.segment<NV>(iv).noalias() = V_own.transpose() * data.f_W[i];  // −Q̄
      for (int j = model.dof_parent[iv]; j >= 0; j = model.dof_parent[j]) {
        const int body_j = model.dof_body[j];
        const Vector6 V_ij = columnAtPoint(data.G_W.col(j), R_i - data.X_WJ[body_j].translation);
        M.block<1, NV>(j, iv).noalias() = V_ij.transpose() * F;
        M.block<NV, 1>(iv, j) = M.block<1, NV>(j, iv).transpose();
      }
    });
    const int parent = model.parent[i];
    if (parent > 0) {
      const Vector3 d = R_i - data.X_WB[parent].translation;
      addInertiaAboutParentPoint(data.P_W[i], d, data.P_W[parent]);
      ForceVector& f_parent = data.f_W[parent];
      f_parent.head<3>() += data.f_W[i].head<3>() + d.cross(data.f_W[i].tail<3>());
      f_parent.tail<3>() += data.f_W[i].tail<3>();
    }
  }
  return detail::semiRecursiveSolve(model, data, q, v, tau);
}

Eigen::MatrixXd semiRecursiveVelocityTransformation(const Model& model, const Data& data) {
  // V_i^j = [ω_s; v_s + ω_s × (R_i − O)] from S_W's column about the origin O: eq. C.4 per
  // column, for every joint j on body i's path
  Eigen::MatrixXd V = Eigen::MatrixXd::Zero(6 * (model.nbodies - 1), model.nv);
  for (int i = 1; i < model.nbodies; ++i) {
    const int last = model.idx_v[i] + model.nv_joint[i] - 1;
    for (int j = last; j >= 0; j = model.dof_parent[j])
      V.block<6, 1>(6 * (i - 1), j) = columnAtPoint(data.S_W.col(j), data.X_WB[i].translation);
  }
  return V;
}

}  // namespace hilsim
