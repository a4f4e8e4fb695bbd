// ModelBuilder: assembles a Model from bodies given in any order, checks it, welds fixed joints.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace hilsim {

/// Per-joint properties. Scalars apply to every degree of freedom of the joint.
struct JointProperties {
  double damping = 0.0;   ///< viscous damping coefficient (≥ 0)
  double armature = 0.0;  ///< reflected rotor inertia (≥ 0)
  double stiffness = 0.0;         ///< joint spring k ≥ 0, 1-DoF joints only [N·m/rad or N/m]
  double spring_reference = 0.0;  ///< q at which that spring is relaxed [rad or m]
  double lower = -std::numeric_limits<double>::infinity();  ///< 1-DoF joints only
  double upper = std::numeric_limits<double>::infinity();
  double velocity = std::numeric_limits<double>::infinity();
  double effort = std::numeric_limits<double>::infinity();
  double friction = 0.0;  ///< Coulomb friction ≥ 0, 1-DoF joints only [N·m or N]
};

/// One body and the joint that attaches it to its parent.
struct BodySpec {
  std::string name;
  std::string parent = "world";    ///< name of the parent body ("world" = the ground)
  std::string joint_name;          ///< defaults to the body name
  std::optional<Joint> joint;      ///< std::nullopt: fixed (welded to the parent)
  Transform placement;             ///< X_PJ: joint frame in the parent body frame
  Inertia inertia;                 ///< in the body frame (ignored for a flexible body)
  /// The inertia may break the triangle inequality of a rigid body's principal moments (a URDF
  /// loaded under InertiaPolicy::kAsGiven); it must still be positive semi-definite.
  bool inertia_as_given = false;
  JointProperties properties;
  /// Assumed-modes data when the body is flexible (seed 004); its rigid inertia is then
  /// `flexible->rigidInertia()`. Not allowed with a fixed joint.
  std::optional<FlexibleBody> flexible;
  /// When the parent is flexible: the name of its node the joint attaches at; `placement` is then
  /// relative to that node's undeformed frame. Empty: the parent's body frame.
  std::string parent_node;
};

/// Collects bodies, then `build()` produces a Model in which parents precede children.
///
/// `build()` throws ModelError (naming the offending body or joint) for: empty or duplicate names,
/// a parent that does not exist, cycles, an invalid inertia (negative or non-finite mass, inertia not
/// symmetric positive semi-definite or, unless BodySpec::inertia_as_given, violating the triangle
/// inequality), non-finite placements or
/// axes, zero axes, negative damping or armature, a free joint whose parent is not the world,
/// invalid modal data (FlexibleBody::validate), an unknown parent node, a body with mass welded to
/// a flexible body (give it a joint or put its mass into the modal data), a spring on a joint with
/// more than one degree of freedom, and the singular massless cases of docs/MASSLESS.md (a joint
/// motion that has neither inertia nor damping, a rank that changes with the configuration,
/// massless joint motion in a model with flexible bodies).
/// Bodies welded by a fixed joint are merged into their nearest moving ancestor: their inertia is
/// added to it and their frame kept in Model::frames.
class ModelBuilder {
 public:
  explicit ModelBuilder(std::string model_name = "model") : name_(std::move(model_name)) {}

  ModelBuilder& setGravity(const Vector3& gravity) {
    gravity_ = gravity;
    return *this;
  }
  ModelBuilder& addBody(BodySpec body) {
    bodies_.push_back(std::move(body));
    return *this;
  }
  /// Convenience form of addBody for a moving joint.
  ModelBuilder& addBody(const std::string& name, const std::string& parent, const Joint& joint,
                        const Transform& placement, const Inertia& inertia,
                        const JointProperties& properties = {});
  /// Convenience form of addBody for a welded body.
  ModelBuilder& addFixedBody(const std::string& name, const std::string& parent,
                             const Transform& placement, const Inertia& inertia);

  /// Armature [kg·m² or kg] added to each joint whose massless body leaves some of its motion
  /// without inertia (analyzeJointRanks), instead of refusing the model; 0 (the default) refuses.
  ModelBuilder& setMasslessArmature(double armature) {
    massless_armature_ = armature;
    return *this;
  }

  Model build() const;

 private:
  std::string name_;
  Vector3 gravity_ = Vector3(0.0, 0.0, -9.81);
  std::vector<BodySpec> bodies_;
  double massless_armature_ = 0.0;
};

}  // namespace hilsim
