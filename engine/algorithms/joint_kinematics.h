// The per-joint kinematic step shared by every recursive algorithm (RBDA §4.4 jcalc followed by
// the outward position/velocity recursion of seed 004 (3.13)), written once.
// References:
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
#pragma once

#include <cassert>
#include <cmath>
#include <type_traits>

#include <Eigen/Eigenvalues>

#include "engine/model/data.h"

namespace hilsim::detail {

/// Calls f(std::integral_constant<int, NV>{}) for the joint sizes the model uses (1, 3, 6), so that
/// per-joint blocks are fixed-size in the loops that matter.
template <typename F>
inline void withJointSize(int nv_i, F&& f) {
  switch (nv_i) {
    case 1: f(std::integral_constant<int, 1>{}); return;
    case 3: f(std::integral_constant<int, 3>{}); return;
    case 6: f(std::integral_constant<int, 6>{}); return;
    default: assert(false && "joint size outside the closed set");
  }
}

}  // namespace hilsim::detail

namespace hilsim::detail {

/// The columns of S_W for joint i, from its joint frame pose X_WJ[i] and its q_i.
inline void motionSubspaceStep(const Model& model, Data& data, int i, const double* q_i) {
  const Joint& joint = model.joints[i];
  const Transform& X_WJ = data.X_WJ[i];
  const int iv = model.idx_v[i];
  switch (joint.type) {
    case JointType::kRevolute: {
      // S = [a; p × a], a the axis in W, p a point on it (the joint frame origin)
      auto s = data.S_W.col(iv);
      s.head<3>().noalias() = X_WJ.rotation * joint.axis;
      s.tail<3>() = X_WJ.translation.cross(s.head<3>());
      break;
    }
    case JointType::kPrismatic: {
      auto s = data.S_W.col(iv);
      s.head<3>().setZero();
      s.tail<3>().noalias() = X_WJ.rotation * joint.axis;
      break;
    }
    default: {
      jointMotionSubspace(joint, q_i, data.S_J);
      for (int k = 0; k < model.nv_joint[i]; ++k) {
        auto s = data.S_W.col(iv + k);
        X_WJ.actMotion(data.S_J.col(k), s);
      }
    }
  }
}

/// D⁺ of a joint of rank r_i < n_i into data.D_inv[i], its null basis into data.null_basis[i]
/// and ε into data.epsilon (see articulatedJointStep). Out of line: the rigid path stays small.
template <int NV>
[[gnu::noinline]] void rankDeficientJointInverse(const Model& model, Data& data, int i,
                                                 const Eigen::Matrix<double, NV, NV>& D,
                                                 const Eigen::Matrix<double, NV, 1>& epsilon) {
  using MatrixNV = Eigen::Matrix<double, NV, NV>;
  const int iv = model.idx_v[i];
  const int r = model.joint_rank[i];
  auto D_inv = data.D_inv[i].template topLeftCorner<NV, NV>();
  data.epsilon.template segment<NV>(iv) = epsilon;
  if constexpr (NV == 1) {
    D_inv(0, 0) = 0.0;
    data.null_basis[i](0, 0) = 1.0;
  } else {
    // eigenvalues ascending: the first n_i − r_i eigenvectors span null(D); the rank is the
    // model's, so a nearly singular D is never silently truncated
    const Eigen::SelfAdjointEigenSolver<MatrixNV> eig(D);
    const MatrixNV& X = eig.eigenvectors();
    D_inv.setZero();
    for (int c = NV - r; c < NV; ++c)
      D_inv.noalias() += X.col(c) * (X.col(c).transpose() / eig.eigenvalues()(c));
    data.null_basis[i].template topLeftCorner<NV, NV>() = X;
  }
}

/// The joint step of the articulated-body inward sweep (seed 004 (6.1), (7.2)) on the
/// articulated inertia P and bias z of body i: U = P ℋ*, D = ℋ P ℋ* + armature, G = U D⁻¹ (into
/// G_W), ε = T − ℋ z with T = τ − damping v − stiffness (q − q_ref), ν = D⁻¹ ε (into nu).
/// Returns U and ε for the caller's update P⁺ = P − G Uᵀ, z⁺ = z + G ε.
///
/// A joint of rank r_i < n_i (Model::joint_rank, seed 003) uses the Moore–Penrose inverse D⁺ from
/// the eigen-decomposition D = X diag(0, Λ̄) Xᵀ (seed 003 (17), (27)): its q̈ has no component in
/// null(D); the null basis X₀ goes to data.null_basis[i] and ε to data.epsilon, from which the
/// n_i − r_i first-order equations 0 = X₀ᵀ ε (seed 003 (28b)) are read.
template <int NV>
inline void articulatedJointStep(const Model& model, Data& data, int i, const Matrix6& P,
                                 const ForceVector& z, const double* q, const Eigen::VectorXd& v,
                                 const Eigen::VectorXd& tau, Eigen::Matrix<double, 6, NV>& U,
                                 Eigen::Matrix<double, NV, 1>& epsilon) {
  using MatrixNV = Eigen::Matrix<double, NV, NV>;
  const int iv = model.idx_v[i];
  const auto S = data.S_W.template middleCols<NV>(iv);
  U.noalias() = P * S;                                          // P ℋ*
  MatrixNV D;
  D.noalias() = S.transpose() * U;                              // D(k) = ℋ P ℋ*
  D.diagonal() += model.armature.template segment<NV>(iv);
  // ε(k) = T(k) − ℋ(k) z(k), with the damping and spring forces part of T
  epsilon = tau.template segment<NV>(iv) -
            model.damping.template segment<NV>(iv).cwiseProduct(v.template segment<NV>(iv));
  if constexpr (NV == 1)
    epsilon(0) -= model.stiffness[iv] * (q[model.idx_q[i]] - model.spring_reference[iv]);
  epsilon.noalias() -= S.transpose() * z;
  auto D_inv = data.D_inv[i].template topLeftCorner<NV, NV>();
  if (model.joint_rank[i] < NV) [[unlikely]] {
    rankDeficientJointInverse<NV>(model, data, i, D, epsilon);
  } else if constexpr (NV == 1) {
    D_inv(0, 0) = 1.0 / D(0, 0);
  } else {
    D_inv = D.inverse();  // D is SPD and at most 6 × 6
  }
  auto G = data.G_W.template middleCols<NV>(iv);
  G.noalias() = U * D_inv;                                      // G(k) = P ℋ* D⁻¹
  data.nu.template segment<NV>(iv).noalias() = D_inv * epsilon;  // ν(k) = D⁻¹ ε
}

/// Spring and damper force of every 1-DoF joint added to tau: τ += d v + k (q − q_ref) (the
/// joint-space passive force an inverse-dynamics result must overcome).
inline void addPassiveJointForces(const Model& model, const Eigen::VectorXd& q,
                                  const Eigen::VectorXd& v, Eigen::VectorXd& tau) {
  tau += model.damping.cwiseProduct(v);
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    if (model.nv_joint[i] == 1 && model.stiffness[iv] != 0.0)
      tau[iv] += model.stiffness[iv] * (q[model.idx_q[i]] - model.spring_reference[iv]);
  }
}

/// Potential energy of the joint springs, Σ ½ k (q − q_ref)² [J].
inline double jointSpringEnergy(const Model& model, const Eigen::VectorXd& q) {
  double energy = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    const int iv = model.idx_v[i];
    if (model.nv_joint[i] != 1 || model.stiffness[iv] == 0.0) continue;
    const double dq = q[model.idx_q[i]] - model.spring_reference[iv];
    energy += 0.5 * model.stiffness[iv] * dq * dq;
  }
  return energy;
}

/// X_WB[i], X_WJ[i] and the columns of S_W for joint i, from the parent's pose and q.
/// Requires X_WB[parent[i]] to be current. kJointFrame false: a revolute joint leaves X_WJ[i]
/// alone (for a sweep that never reads it: one stream of memory fewer on long systems).
template <bool kJointFrame = true>
inline void jointPositionStep(const Model& model, Data& data, int i, const double* q) {
  if (model.joint_type[i] == JointType::kRevolute) {
    // fast path: one sincos, R_WB = R_Wλ (k0 + cos θ k_cos + sin θ k_sin); J and B share
    // their origin, and S = [a_W; p × a_W] with a_W = R_Wλ a_λ
    const Model::AxialJointTerms& t = model.axial_joint_terms[i];
    const Transform& X_WP = data.X_WB[model.parent[i]];
    const double theta = q[model.idx_q[i]];
    const double c = std::cos(theta), s = std::sin(theta);
    Matrix3 r_pb = t.k0;
    r_pb += c * t.k_cos;
    r_pb += s * t.k_sin;
    Transform& X_WB = data.X_WB[i];
    X_WB.rotation.noalias() = X_WP.rotation * r_pb;
    X_WB.translation.noalias() = X_WP.rotation * t.origin_parent;
    X_WB.translation += X_WP.translation;
    if constexpr (kJointFrame)  // X_WJ's rotation is not needed for revolute
      data.X_WJ[i].translation = X_WB.translation;
    auto s_col = data.S_W.col(model.idx_v[i]);
    s_col.head<3>().noalias() = X_WP.rotation * t.axis_parent;
    s_col.tail<3>() = X_WB.translation.cross(s_col.head<3>());
    return;
  }
  const double* q_i = q + model.idx_q[i];
  Transform& X_WJ = data.X_WJ[i];
  data.X_WB[model.parent[i]].compose(model.joint_placement[i], X_WJ);
  jointTransform(model.joints[i], q_i, data.X_JC);
  X_WJ.compose(data.X_JC, data.X_WB[i]);

  motionSubspaceStep(model, data, i, q_i);
}

/// V_W[i] = V_W[λ] + S v_i, and c_W[i] = V_W[λ] ×ᵐ S v_i + X_WJ Ṡ_J v_i (seed 004 (3.27)).
/// Returns S v_i in `joint_velocity_W`. kVelocityProducts false: V_W[i] only (for a sweep that
/// forms its own bias terms and never reads c_W).
template <bool kVelocityProducts = true>
inline void jointVelocityStep(const Model& model, Data& data, int i, const double* q,
                              const double* v, MotionVector& joint_velocity_W) {
  const int iv = model.idx_v[i];
  const int nv_i = model.nv_joint[i];
  const MotionVector& V_parent = data.V_W[model.parent[i]];
  if (nv_i == 1) {  // revolute and prismatic: Ṡ_J = 0
    joint_velocity_W.noalias() = data.S_W.col(iv) * v[iv];
    data.V_W[i] = V_parent + joint_velocity_W;
    if constexpr (kVelocityProducts) crossMotion(V_parent, joint_velocity_W, data.c_W[i]);
    return;
  }
  withJointSize(nv_i, [&](auto n) {
    constexpr int NV = decltype(n)::value;
    joint_velocity_W.noalias() =
        data.S_W.middleCols<NV>(iv) * Eigen::Map<const Eigen::Matrix<double, NV, 1>>(v + iv);
  });
  data.V_W[i] = V_parent + joint_velocity_W;
  if constexpr (!kVelocityProducts) return;
  crossMotion(V_parent, joint_velocity_W, data.c_W[i]);
  const JointType type = model.joints[i].type;
  if (type == JointType::kFreeFlyer || type == JointType::kPlanar) {
    MotionVector sdot_v_J, sdot_v_W;
    jointMotionSubspaceRate(model.joints[i], q + model.idx_q[i], v + iv, sdot_v_J);
    data.X_WJ[i].actMotion(sdot_v_J, sdot_v_W);
    data.c_W[i] += sdot_v_W;
  }
}

/// Body inertia of body i in W, from its pose.
inline void bodyInertiaStep(const Model& model, Data& data, int i) {
  const Inertia& I_B = model.inertias[i];
  const Transform& X = data.X_WB[i];
  Inertia& I_W = data.inertia_W[i];
  I_W.mass = I_B.mass;
  I_W.com.noalias() = X.rotation * I_B.com;
  I_W.com += X.translation;
  Matrix3 tmp;
  tmp.noalias() = X.rotation * I_B.inertia_com;
  I_W.inertia_com.noalias() = tmp * X.rotation.transpose();
}

/// Spatial gravity offset of the base: A_0 = −[0; g] (RBDA §5.3).
inline MotionVector baseAccelerationForGravity(const Model& model) {
  MotionVector a;
  a.head<3>().setZero();
  a.tail<3>() = -model.gravity;
  return a;
}

}  // namespace hilsim::detail

