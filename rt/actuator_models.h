// ActuatorModels: what stands between the torque a drive is asked for and the torque its joint
// gets (docs/REALISM.md, "Actuator models"). Per DoF, every physics step, in this order:
//
//   1. transport delay: the command of d = round(delay / dt) steps ago (a bus, a drive's
//      input stage);
//   2. quantisation: rounded to the nearest multiple of `resolution` (a current set-point's
//      DAC or fixed-point step);
//   3. first-order lag of time constant T (the current loop's bandwidth 1 / (2π T)), discretised
//      exactly for an input held over the step: y ← y + (1 − e^(−dt/T)) (u − y);
//   4. torque ripple: y·(1 + a sin(2π q / period)) (cogging and commutation ripple, periodic in
//      the joint's position).
//
// The joint's effort limit applies after all of them (Simulator::step). A DoF without a model
// passes its command through unchanged.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace hilsim::rt {

/// Longest transport delay a session takes [s], and in physics steps.
constexpr double kMaxActuatorDelay = 0.5;
constexpr int kMaxActuatorDelaySteps = 100'000;

/// One entry of SessionConfig::actuators: the model of a joint's actuators (every DoF of it).
struct ActuatorConfig {
  /// A joint's name (Model::joint_names), or "*" for every joint no other entry names.
  std::string joint;
  double time_constant = 0.0;  ///< first-order lag T [s], ≥ 0 (0: none)
  double delay = 0.0;          ///< transport delay [s], 0 … kMaxActuatorDelay, whole steps
  double resolution = 0.0;     ///< torque quantum [N·m or N], ≥ 0 (0: none)
  double ripple = 0.0;         ///< relative ripple amplitude a, 0 … 0.5 (0: none)
  double ripple_period = 0.0;  ///< its period in the joint's coordinate [rad or m], > 0 with a
                               ///< ripple; 1-DoF joints only
};

class ActuatorModels {
 public:
  /// Resolves `actuators` against the model's joints (a joint named twice, a second "*", an
  /// unknown joint or a value out of range: std::invalid_argument naming the entry). `dt`: the
  /// physics step [s].
  ActuatorModels(const Model& model, const std::vector<ActuatorConfig>& actuators, double dt);

  /// No DoF has a model: apply() would copy.
  bool ideal() const { return ideal_; }
  /// Delay of a DoF in physics steps.
  int delaySteps(int dof) const { return delay_steps_[static_cast<std::size_t>(dof)]; }

  /// One physics step: the torques `commanded` (nv) become `delivered` (nv) at the joints' state
  /// q. Allocation-free; advances the delay lines and the lags.
  void apply(const Eigen::VectorXd& q, const Eigen::VectorXd& commanded,
             Eigen::VectorXd& delivered);
  /// Empties the delay lines and the lags (zero torque in flight): a reset session.
  void reset();

 private:
  const Model& model_;
  bool ideal_ = true;
  std::vector<int> delay_steps_;  // per DoF
  std::vector<int> line_start_;   // per DoF: its delay line's first slot in line_
  std::vector<double> line_;      // the delay lines, back to back (delay_steps_ slots each)
  std::uint64_t steps_ = 0;       // steps applied since reset: a line's slot is steps_ % d
  Eigen::VectorXd resolution_, lag_gain_, ripple_, ripple_wavenumber_, lagged_;
  std::vector<int> q_index_;  // per DoF with a ripple: its coordinate
};

}  // namespace hilsim::rt
