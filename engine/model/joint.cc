#include "engine/model/joint.h"

#include <cassert>
#include <cmath>

namespace hilsim {

namespace {

Eigen::Quaterniond quaternionAt(const double* q_wxyz) {
  return Eigen::Quaterniond(q_wxyz[0], q_wxyz[1], q_wxyz[2], q_wxyz[3]);
}

// q ⊗ exp(ω dt / 2): rotates by a body-frame angular velocity held for dt.
void integrateQuaternion(const double* q_wxyz, const double* w, double dt, double* out_wxyz) {
  const Vector3 rotation_vector = Vector3(w[0], w[1], w[2]) * dt;
  const double angle = rotation_vector.norm();
  Eigen::Quaterniond dq = Eigen::Quaterniond::Identity();
  if (angle > 0.0) dq = Eigen::Quaterniond(Eigen::AngleAxisd(angle, rotation_vector / angle));
  Eigen::Quaterniond result = quaternionAt(q_wxyz) * dq;
  result.normalize();
  out_wxyz[0] = result.w();
  out_wxyz[1] = result.x();
  out_wxyz[2] = result.y();
  out_wxyz[3] = result.z();
}

void normalizeQuaternion(double* q_wxyz) {
  const double n = std::sqrt(q_wxyz[0] * q_wxyz[0] + q_wxyz[1] * q_wxyz[1] +
                             q_wxyz[2] * q_wxyz[2] + q_wxyz[3] * q_wxyz[3]);
  for (int k = 0; k < 4; ++k) q_wxyz[k] /= n;
}

}  // namespace

std::string_view jointTypeName(JointType type) {
  switch (type) {
    case JointType::kRevolute: return "revolute";
    case JointType::kPrismatic: return "prismatic";
    case JointType::kSpherical: return "spherical";
    case JointType::kFreeFlyer: return "free";
    case JointType::kPlanar: return "planar";
  }
  return "unknown";
}

Joint Joint::revolute(const Vector3& axis) {
  Joint j;
  j.type = JointType::kRevolute;
  j.axis = axis.normalized();
  return j;
}

Joint Joint::prismatic(const Vector3& axis) {
  Joint j;
  j.type = JointType::kPrismatic;
  j.axis = axis.normalized();
  return j;
}

Joint Joint::spherical() {
  Joint j;
  j.type = JointType::kSpherical;
  return j;
}

Joint Joint::freeFlyer() {
  Joint j;
  j.type = JointType::kFreeFlyer;
  return j;
}

Joint Joint::planar(const Vector3& normal) {
  Joint j;
  j.type = JointType::kPlanar;
  j.axis = normal.normalized();
  // any orthonormal in-plane pair; prefer the frame's own x and y when the normal is z
  const Vector3 seed = std::abs(j.axis.x()) < 0.9 ? Vector3::UnitX() : Vector3::UnitY();
  j.plane_e1 = (seed - seed.dot(j.axis) * j.axis).normalized();
  j.plane_e2 = j.axis.cross(j.plane_e1);
  return j;
}

int Joint::nq() const {
  switch (type) {
    case JointType::kRevolute:
    case JointType::kPrismatic: return 1;
    case JointType::kSpherical: return 4;
    case JointType::kFreeFlyer: return 7;
    case JointType::kPlanar: return 3;
  }
  return 0;
}

int Joint::nv() const {
  switch (type) {
    case JointType::kRevolute:
    case JointType::kPrismatic: return 1;
    case JointType::kSpherical: return 3;
    case JointType::kFreeFlyer: return 6;
    case JointType::kPlanar: return 3;
  }
  return 0;
}

void jointTransform(const Joint& joint, const double* q, Transform& x_jc) {
  switch (joint.type) {
    case JointType::kRevolute:
      x_jc.rotation = axisAngleRotation(joint.axis, q[0]);
      x_jc.translation.setZero();
      return;
    case JointType::kPrismatic:
      x_jc.rotation.setIdentity();
      x_jc.translation = joint.axis * q[0];
      return;
    case JointType::kSpherical:
      x_jc.rotation = quaternionAt(q).toRotationMatrix();
      x_jc.translation.setZero();
      return;
    case JointType::kFreeFlyer:
      x_jc.rotation = quaternionAt(q + 3).toRotationMatrix();
      x_jc.translation = Vector3(q[0], q[1], q[2]);
      return;
    case JointType::kPlanar:
      x_jc.rotation = axisAngleRotation(joint.axis, q[2]);
      x_jc.translation = q[0] * joint.plane_e1 + q[1] * joint.plane_e2;
      return;
  }
}

void jointMotionSubspace(const Joint& joint, const double* q, Matrix6X& s_j) {
  s_j.resize(6, joint.nv());  // within the fixed capacity: never allocates
  s_j.setZero();
  switch (joint.type) {
    case JointType::kRevolute:
      s_j.col(0).head<3>() = joint.axis;
      return;
    case JointType::kPrismatic:
      s_j.col(0).tail<3>() = joint.axis;
      return;
    case JointType::kSpherical:
      s_j.topRows<3>() = quaternionAt(q).toRotationMatrix();
      return;
    case JointType::kFreeFlyer: {
      // V_J = [R ω_C; v + p × R ω_C]
      const Matrix3 r = quaternionAt(q + 3).toRotationMatrix();
      s_j.block<3, 3>(3, 0).setIdentity();
      s_j.block<3, 3>(0, 3) = r;
      s_j.block<3, 3>(3, 3).noalias() = skew(Vector3(q[0], q[1], q[2])) * r;
      return;
    }
    case JointType::kPlanar: {
      const Vector3 p = q[0] * joint.plane_e1 + q[1] * joint.plane_e2;
      s_j.col(0).tail<3>() = joint.plane_e1;
      s_j.col(1).tail<3>() = joint.plane_e2;
      s_j.col(2).head<3>() = joint.axis;
      s_j.col(2).tail<3>() = p.cross(joint.axis);
      return;
    }
  }
}

void jointMotionSubspaceRate(const Joint& joint, const double* q, const double* v,
                             MotionVector& sdot_v) {
  sdot_v.setZero();
  switch (joint.type) {
    case JointType::kRevolute:
    case JointType::kPrismatic:
    case JointType::kSpherical: return;
    case JointType::kFreeFlyer: {
      // d/dt (p × R ω_C) at constant ω_C = ṗ × R ω_C  (Ṙ ω_C = R (ω_C × ω_C) = 0)
      const Vector3 w_j = quaternionAt(q + 3).toRotationMatrix() * Vector3(v[3], v[4], v[5]);
      sdot_v.tail<3>() = Vector3(v[0], v[1], v[2]).cross(w_j);
      return;
    }
    case JointType::kPlanar: {
      // d/dt (p × n) θ̇ = (ṗ × n) θ̇
      const Vector3 p_dot = v[0] * joint.plane_e1 + v[1] * joint.plane_e2;
      sdot_v.tail<3>() = p_dot.cross(joint.axis) * v[2];
      return;
    }
  }
}

void jointNeutral(const Joint& joint, double* q) {
  for (int k = 0; k < joint.nq(); ++k) q[k] = 0.0;
  if (joint.type == JointType::kSpherical) q[0] = 1.0;
  if (joint.type == JointType::kFreeFlyer) q[3] = 1.0;
}

void jointIntegrate(const Joint& joint, const double* q, const double* v, double dt,
                    double* q_out) {
  switch (joint.type) {
    case JointType::kRevolute:
    case JointType::kPrismatic:
      q_out[0] = q[0] + v[0] * dt;
      return;
    case JointType::kPlanar:
      for (int k = 0; k < 3; ++k) q_out[k] = q[k] + v[k] * dt;
      return;
    case JointType::kSpherical:
      integrateQuaternion(q, v, dt, q_out);
      return;
    case JointType::kFreeFlyer:
      for (int k = 0; k < 3; ++k) q_out[k] = q[k] + v[k] * dt;
      integrateQuaternion(q + 3, v + 3, dt, q_out + 3);
      return;
  }
}

void jointNormalize(const Joint& joint, double* q) {
  if (joint.type == JointType::kSpherical) normalizeQuaternion(q);
  if (joint.type == JointType::kFreeFlyer) normalizeQuaternion(q + 3);
}

}  // namespace hilsim
