// Adds what lies beyond the spanning tree to a built Model: loop closures, force elements, the
// stabilisation parameters and initial joint positions. Shared by ModelBuilder users and the
// loaders (a URDF gives the tree, its YAML wrapper the closures).
#pragma once

#include <span>
#include <string>

#include "engine/model/model.h"

namespace hilsim {

/// A loop closure by frame names. A name is a body, a welded link (a frame of Model::frames) or
/// "world"; `frame_a` is given in that frame.
struct LoopClosureSpec {
  std::string name;
  ClosureType type = ClosureType::kBall;
  std::string body_a, body_b;
  Transform frame_a, frame_b;
  Vector3 axis = Vector3::UnitZ();  ///< revolute, prismatic: in frame A; normalised
  double length = 0.0;              ///< distance: > 0 [m]
};

/// A spring–damper by frame names; points in those frames [m].
struct SpringDamperSpec {
  std::string name;
  std::string body_a, body_b;
  Vector3 point_a = Vector3::Zero(), point_b = Vector3::Zero();
  double stiffness = 0.0, damping = 0.0, rest_length = 0.0;
};

/// Appends a closure; throws ModelError naming it for a bad one: an invalid or duplicate name, an
/// unknown frame, both sides on the same body, a non-finite placement, a zero axis, a length that
/// is not > 0, a model with flexible bodies or massless joint motion (not supported with loops).
void addLoopClosure(Model& model, const LoopClosureSpec& spec);

/// Appends a spring–damper; throws ModelError naming it: invalid or duplicate name, unknown frame,
/// both points on one body, non-finite points, negative stiffness, damping or rest length.
void addSpringDamper(Model& model, const SpringDamperSpec& spec);

/// Sets the initial coordinates of joint `joint_name` in Model::initial_configuration: as many
/// values as the joint has coordinates (a free joint: x y z qw qx qy qz; quaternions are
/// normalised). Throws ModelError for an unknown joint, a wrong count, non-finite values or a
/// zero quaternion.
void setInitialPosition(Model& model, const std::string& joint_name, std::span<const double> values);

/// Checks and sets the stabilisation parameters (α, β ≥ 0 and finite, 0 ≤ iterations ≤ 100).
void setStabilisation(Model& model, const ConstraintStabilisation& stabilisation);

/// A contact sphere by frame name; `center` in that frame [m], `radius` ≥ 0 [m].
struct ContactSphereSpec {
  std::string name;
  std::string body;
  Vector3 center = Vector3::Zero();
  double radius = 0.0;
};

/// Appends a contact sphere; throws ModelError naming it: invalid or duplicate name, unknown
/// frame, the world, non-finite center, negative radius. The sphere touches only while the
/// ground is enabled (setGround).
void addContactSphere(Model& model, const ContactSphereSpec& spec);

/// Sets the ground plane (finite height, friction ≥ 0; enabled only on a rigid model of full
/// joint rank: a contact row on a model with flexible bodies is not written yet).
void setGround(Model& model, const GroundPlane& ground);

/// Joint limits as rows of the constraint stage and actuator limits applied (true), or both as
/// data only; true is refused on a model with massless joint motion.
void setLimitsEnforced(Model& model, bool enforced);

/// Checks and sets the softness of the rows (τ > 0, ζ > 0, 0 < d < 1) and the solver budget
/// (1 ≤ max_iterations ≤ 10000, tolerance ≥ 0).
void setContactSettings(Model& model, const ContactSettings& settings);

}  // namespace hilsim
