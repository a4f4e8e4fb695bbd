// JointDrives: the command interfaces of a session (docs/REALISM.md, "Command interfaces"). A
// real drive takes an effort, a position or a velocity set-point and closes its own loop at its
// own rate; here the loop runs once per physics step, inside the session, and its output is held
// over the step (a zero-order hold, as a digital drive's). The joint's effort limit then applies
// to the result as to any commanded torque (Simulator::step).
//
// Per DoF, in v order:
//   effort    τ = τ_ff
//   position  τ = τ_ff + kp (q_ref − q) + kd (v_ref − v)            (v_ref: 0 unless given)
//   velocity  τ = τ_ff + kd (v_ref − v) + ki ∫(v_ref − v) dt        (the integral clamped to the
//                                                                    effort limit: no wind-up)
// Position and velocity interfaces exist for the DoFs of revolute, prismatic and planar joints
// (their coordinates are their velocities' integrals); every other DoF takes efforts only.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace hilsim::rt {

/// What a DoF's commands set: ros2_control's command interfaces of a joint.
enum class CommandInterface : std::uint8_t {
  kEffort,    ///< the command's τ is the drive's torque [N·m or N]
  kPosition,  ///< the command's position [rad or m] is the PD loop's set-point
  kVelocity,  ///< the command's velocity [rad/s or m/s] is the PI loop's set-point
};

/// "effort", "position", "velocity".
const char* commandInterfaceName(CommandInterface interface);

/// Joints whose coordinates integrate their velocities one for one (nq = nv, q̇ = v): revolute,
/// prismatic, planar. Only they take position and velocity set-points (and brakes: rt/fault_injection.h).
bool takesSetPoints(JointType type);

/// Per DoF, the smallest inertia it can meet at q: 1 / (M⁻¹)_kk, its inertia with every other DoF
/// free [kg·m² or kg]; empty when M(q) is singular (a massless body's DoF has none of its own).
Eigen::VectorXd smallestInertias(const Model& model, const Eigen::VectorXd& q);

/// One entry of SessionConfig::drives: the interface and gains of a joint's DoFs.
struct DriveConfig {
  /// A joint's name (Model::joint_names), or "*" for every joint no other entry names.
  std::string joint;
  CommandInterface interface = CommandInterface::kEffort;
  double kp = 0.0;  ///< position: stiffness [N·m/rad or N/m]; > 0
  double kd = 0.0;  ///< position: damping; velocity: the loop's gain [N·m·s/rad or N·s/m]; > 0
  double ki = 0.0;  ///< velocity: integral gain [N·m/rad or N/m]; ≥ 0 (0: P only)
};

/// The references of one command, in v order (nv values each; only the entries of DoFs with the
/// matching interface are read).
struct DriveReference {
  const double* tau = nullptr;       ///< τ_ff: effort, or feed-forward on the other interfaces
  const double* position = nullptr;  ///< q_ref of position DoFs [rad or m]
  const double* velocity = nullptr;  ///< v_ref of velocity DoFs, velocity feed-forward of
                                     ///< position DoFs [rad/s or m/s]
};

class JointDrives {
 public:
  /// Resolves `drives` against the model's joints (the first entry that names a joint wins; "*"
  /// applies to the rest). Throws std::invalid_argument naming the entry when a joint is unknown
  /// or named twice, a gain is out of range, or an interface does not exist for the joint's type.
  JointDrives(const Model& model, const std::vector<DriveConfig>& drives, double dt);

  /// Every DoF takes efforts: the command's τ passes through unchanged.
  bool effortOnly() const { return effort_only_; }
  bool anyPosition() const { return any_position_; }
  bool anyVelocity() const { return any_velocity_; }
  CommandInterface interface(int dof) const { return interface_[static_cast<std::size_t>(dof)]; }

  /// The drives' torques for one physics step at the state (q, v) into `tau` (nv). Allocation-
  /// free. Advances the velocity loops' integrals by one step dt.
  void compute(const Eigen::VectorXd& q, const Eigen::VectorXd& v, const DriveReference& ref,
               Eigen::VectorXd& tau);
  /// The set-points that keep the drives where they stand: q_ref of each position DoF from q
  /// (nq) into `position` (nv, v order); the other entries are left alone.
  void holdAt(const Eigen::VectorXd& q, double* position) const;
  /// Forgets the velocity loops' integrals (reset, a watchdog taking over the drives).
  void resetIntegrals();

  /// Why the drives' loops are unstable under a zero-order hold of step dt on this model at q
  /// (each DoF against its smallest inertia 1 / (M⁻¹)_kk, the others free), or "" when they are
  /// not: a PD loop on inertia I is stable iff kp·dt/2 < kd and kd·dt/I < 2 (docs/REALISM.md).
  std::string stabilityProblem(const Eigen::VectorXd& q) const;

 private:
  const Model& model_;
  double dt_;
  std::vector<CommandInterface> interface_;  // per DoF
  Eigen::VectorXd kp_, kd_, ki_, integral_;  // per DoF; integral_: ki ∫ e dt [N·m or N]
  std::vector<int> q_index_;                 // per DoF: its coordinate in q (−1: none)
  bool effort_only_ = true, any_position_ = false, any_velocity_ = false;
};

}  // namespace hilsim::rt
