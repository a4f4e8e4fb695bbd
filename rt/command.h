// Command: what a controller sends a session for one or more control periods.
#pragma once

#include <array>
#include <cstdint>

#include "rt/capacity.h"
#include "rt/clock.h"

namespace hilsim::rt {

/// Set-points for one or more control periods, from a controller: the torques of effort DoFs and
/// the feed-forward of the others, the positions and velocities of position and velocity DoFs
/// (SessionConfig::drives; the entries of DoFs with another interface are not read).
struct Command {
  std::uint64_t sequence = 0;        ///< the controller's sequence number, echoed in the state
  Nanoseconds client_send_time = 0;  ///< the controller's clock [ns], echoed in the state
  Nanoseconds receive_time = 0;      ///< CLOCK_MONOTONIC at receipt; set by push if 0
  std::uint32_t steps = 1;           ///< lockstep: control periods to advance with this τ
  std::int32_t nv = 0;               ///< number of torques; must equal the model's nv
  std::array<double, kMaxCoordinates> tau{};  ///< generalized forces [N·m or N], v order
  std::array<double, kMaxCoordinates> position{};  ///< q_ref per DoF [rad or m], v order
  std::array<double, kMaxCoordinates> velocity{};  ///< v_ref per DoF [rad/s or m/s], v order
  /// A push on the floating base while the command applies (Simulator::setBaseWrench): force in
  /// W [N] at the base's origin, then torque in W [N·m]. All zero: none; only a model with a
  /// floating base takes a non-zero one.
  std::array<double, 6> base_wrench{};
};

}  // namespace hilsim::rt
