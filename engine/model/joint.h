// The closed set of joint types: configuration size, velocity size, joint transform, motion
// subspace and its rate (jcalc, RBDA §4.4). Fixed joints never reach a Model: ModelBuilder welds
// them into their parent.
#pragma once

#include <string_view>

#include "engine/spatial/transform.h"

namespace hilsim {

enum class JointType {
  kRevolute,   ///< 1 DoF rotation about `axis` [rad, rad/s]
  kPrismatic,  ///< 1 DoF translation along `axis` [m, m/s]
  kSpherical,  ///< q = unit quaternion (w, x, y, z); v = angular velocity in the child frame
  kFreeFlyer,  ///< q = (position, quaternion w x y z); v = (linear velocity of the child origin in
               ///< the parent joint frame, angular velocity in the child frame), as MuJoCo
  kPlanar,     ///< q = (x, y, θ): translation in the plane normal to `axis`, then rotation θ
               ///< about it; v = q̇
};

/// Name used in files and on the command line ("revolute", "free", ...).
std::string_view jointTypeName(JointType type);

/// One joint: the motion of the child frame C relative to the joint frame J fixed on the parent.
/// At q = neutral the two frames coincide.
struct Joint {
  JointType type = JointType::kRevolute;
  /// Unit axis in J (revolute, prismatic) or unit normal of the plane (planar).
  Vector3 axis = Vector3::UnitZ();
  /// Planar only: in-plane unit directions of q(0) and q(1); (e1, e2, axis) is right-handed.
  Vector3 plane_e1 = Vector3::UnitX();
  Vector3 plane_e2 = Vector3::UnitY();

  static Joint revolute(const Vector3& axis);
  static Joint prismatic(const Vector3& axis);
  static Joint spherical();
  static Joint freeFlyer();
  static Joint planar(const Vector3& normal);

  int nq() const;
  int nv() const;
};

/// X_JC(q): pose of the child frame in the joint frame. `q` points at the joint's nq values.
void jointTransform(const Joint& joint, const double* q, Transform& x_jc);

/// Motion subspace S_J(q) (6 × nv) in J coordinates, about J's origin: the relative spatial
/// velocity of C with respect to the parent is S_J v.
void jointMotionSubspace(const Joint& joint, const double* q, Matrix6X& s_j);

/// Ṡ_J v in J coordinates (the velocity-product part of the joint's relative acceleration that
/// does not come from the parent's motion). Zero for revolute, prismatic and spherical joints.
void jointMotionSubspaceRate(const Joint& joint, const double* q, const double* v,
                             MotionVector& sdot_v);

/// Writes the neutral configuration (zeros, identity quaternions) into `q` (nq values).
void jointNeutral(const Joint& joint, double* q);

/// q_out = q ⊕ v·dt: integrates a constant velocity over dt on the joint's configuration manifold
/// (quaternions by the exponential map, so they stay unit). q_out may alias q.
void jointIntegrate(const Joint& joint, const double* q, const double* v, double dt, double* q_out);

/// Renormalises quaternions in q (no-op for other joints).
void jointNormalize(const Joint& joint, double* q);

}  // namespace hilsim
