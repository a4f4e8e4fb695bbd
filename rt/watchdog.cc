#include "rt/watchdog.h"

namespace hilsim::rt {

std::optional<WatchdogPolicy> parseWatchdogPolicy(std::string_view name) {
  if (name == "hold") return WatchdogPolicy::kHoldLast;
  if (name == "zero") return WatchdogPolicy::kZeroTorque;
  if (name == "damping") return WatchdogPolicy::kDamping;
  if (name == "fault") return WatchdogPolicy::kFault;
  return std::nullopt;
}

std::string_view watchdogPolicyName(WatchdogPolicy policy) {
  switch (policy) {
    case WatchdogPolicy::kHoldLast: return "hold";
    case WatchdogPolicy::kZeroTorque: return "zero";
    case WatchdogPolicy::kDamping: return "damping";
    case WatchdogPolicy::kFault: return "fault";
  }
  return "?";
}

WatchdogAction Watchdog::onCycle(bool fresh, Nanoseconds now) noexcept {
  if (!armed_ && !fresh) return WatchdogAction::kZeroTorque;
  armed_ = true;

  // rolling success window
  if (window_filled_ == kSuccessWindow) window_fresh_ -= window_[window_next_] ? 1 : 0;
  else ++window_filled_;
  window_[window_next_] = fresh;
  window_fresh_ += fresh ? 1 : 0;
  window_next_ = (window_next_ + 1) % kSuccessWindow;

  if (fresh) {
    ++fresh_cycles_;
    consecutive_missed_ = 0;
    tripped_ = false;
    last_fresh_time_ = now;
    return WatchdogAction::kApplyCommand;
  }
  ++missed_cycles_;
  ++consecutive_missed_;
  if (consecutive_missed_ < config_.missed_cycles_limit) return WatchdogAction::kHoldLast;
  if (!tripped_) {
    tripped_ = true;
    ++trips_;
  }
  switch (config_.policy) {
    case WatchdogPolicy::kHoldLast: return WatchdogAction::kHoldLast;
    case WatchdogPolicy::kZeroTorque: return WatchdogAction::kZeroTorque;
    case WatchdogPolicy::kDamping: return WatchdogAction::kDamping;
    case WatchdogPolicy::kFault: return WatchdogAction::kFault;
  }
  return WatchdogAction::kHoldLast;
}

void Watchdog::disarm() noexcept {
  armed_ = false;
  tripped_ = false;
  consecutive_missed_ = 0;
  window_.reset();
  window_next_ = window_filled_ = window_fresh_ = 0;
}

double Watchdog::successRate() const {
  if (window_filled_ == 0) return 1.0;
  return static_cast<double>(window_fresh_) / window_filled_;
}

}  // namespace hilsim::rt
