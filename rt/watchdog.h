// Command watchdog: what the RT loop does when a controller goes silent (ARCHITECTURE.md,
// "Failure behaviour"). Runs on the steady clock (CLOCK_MONOTONIC), never on simulation time.
#pragma once

#include <bitset>
#include <cstdint>
#include <optional>
#include <string_view>

#include "rt/clock.h"

namespace hilsim::rt {

/// What to apply once the controller has been silent for `missed_cycles_limit` cycles.
enum class WatchdogPolicy {
  kHoldLast,    ///< keep applying the last torques (ABB EGM keeps its last reference)
  kZeroTorque,  ///< τ = 0
  kDamping,     ///< τ = −D·v, D the damping gain [N·m·s/rad or N·s/m] per DoF
  kFault,       ///< fault the session (Franka FCI: 20 missed commands at 1 kHz)
};

std::optional<WatchdogPolicy> parseWatchdogPolicy(std::string_view name);  ///< hold|zero|damping|fault
std::string_view watchdogPolicyName(WatchdogPolicy policy);

struct WatchdogConfig {
  WatchdogPolicy policy = WatchdogPolicy::kHoldLast;
  /// Consecutive cycles without a fresh command before the policy applies. Shorter gaps are
  /// bridged by holding the last command, as every robot interface does for a lost packet.
  int missed_cycles_limit = 20;
  /// Gain of the damping policy, the same for every DoF.
  double damping_gain = 1.0;
};

/// What the loop must do with the torques this cycle.
enum class WatchdogAction {
  kApplyCommand,  ///< a fresh command arrived: apply it
  kHoldLast,      ///< silent, or tripped under kHoldLast: apply the last command
  kZeroTorque,
  kDamping,
  kFault,
};

/// Per-cycle bookkeeping of command freshness. Single-threaded (the RT thread); no allocation.
/// Not armed until the first command arrives: before that the loop applies zero torque and
/// nothing counts as missed (as PX4's lockstep "freewheels" until the first actuator message).
class Watchdog {
 public:
  /// Window of the rolling command success rate [cycles], as Franka's last-100-commands rate.
  static constexpr int kSuccessWindow = 100;

  explicit Watchdog(const WatchdogConfig& config) : config_(config) {}

  /// Called once per control cycle. `fresh` says whether a new command was taken this cycle.
  WatchdogAction onCycle(bool fresh, Nanoseconds now) noexcept;

  /// Forget everything (session reset): unarmed, counters kept.
  void disarm() noexcept;

  const WatchdogConfig& config() const { return config_; }
  bool armed() const { return armed_; }
  bool tripped() const { return tripped_; }
  int consecutiveMissed() const { return consecutive_missed_; }
  std::uint64_t trips() const { return trips_; }
  std::uint64_t missedCycles() const { return missed_cycles_; }
  std::uint64_t freshCycles() const { return fresh_cycles_; }
  /// Age of the newest command at `now` [ns]; −1 before the first command.
  Nanoseconds commandAge(Nanoseconds now) const {
    return armed_ ? now - last_fresh_time_ : -1;
  }
  /// Fraction of the last kSuccessWindow armed cycles (fewer at first) that had a fresh command;
  /// 1 before the watchdog is armed.
  double successRate() const;

 private:
  WatchdogConfig config_;
  bool armed_ = false;
  bool tripped_ = false;
  int consecutive_missed_ = 0;
  std::uint64_t trips_ = 0;
  std::uint64_t missed_cycles_ = 0;
  std::uint64_t fresh_cycles_ = 0;
  Nanoseconds last_fresh_time_ = 0;
  std::bitset<kSuccessWindow> window_;  // 1 = fresh, ring indexed by window_next_
  int window_next_ = 0;
  int window_filled_ = 0;
  int window_fresh_ = 0;
};

}  // namespace hilsim::rt
