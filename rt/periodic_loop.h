// Periodic loop: sleeps to absolute deadlines on CLOCK_MONOTONIC (clock_nanosleep, TIMER_ABSTIME,
// so a late wake-up never shifts the schedule), runs one cycle per period, records its timing in
// a DeadlineMonitor and applies the overrun policy when a cycle runs past its deadline.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "rt/clock.h"
#include "rt/deadline_monitor.h"

namespace hilsim::rt {

/// What the loop does when a cycle ends after the start of the next one.
enum class OverrunPolicy {
  kSkip,     ///< drop the cycles whose start has passed, keep the phase of the schedule
  kCatchUp,  ///< run the late cycles at once, back to back, at most max_catch_up of them
  kFault,    ///< a deadline miss ends the loop with kOverrunFault (hard real time, as DCP)
};

std::optional<OverrunPolicy> parseOverrunPolicy(std::string_view name);  ///< skip|catch_up|fault
std::string_view overrunPolicyName(OverrunPolicy policy);

struct LoopConfig {
  Nanoseconds period = 1'000'000;  ///< control period [ns]; 100 µs (10 kHz) to 10 ms (100 Hz)
  OverrunPolicy overrun = OverrunPolicy::kSkip;
  int max_catch_up = 10;  ///< kCatchUp: late cycles run at once; any more are skipped
};

/// Passed to each cycle.
struct CycleContext {
  std::uint64_t index = 0;          ///< cycle number in this run of the loop (skipped ones count)
  Nanoseconds scheduled = 0;        ///< when the cycle should have started
  Nanoseconds woke = 0;             ///< when it started
  Nanoseconds deadline = 0;         ///< scheduled + period: when it must have finished
  Nanoseconds measured_period = 0;  ///< woke − the previous cycle's woke (the period on the first)
};

enum class CycleResult { kContinue, kStop };

enum class LoopExit {
  kStopRequested,  ///< the stop flag was set
  kCycleStopped,   ///< a cycle returned kStop
  kOverrunFault,   ///< kFault and a cycle missed its deadline
};

/// The schedule of a periodic loop, without the sleeping: the start times of its cycles, the
/// timing records and the overrun policy. PeriodicLoop runs one on its own thread; an rt::Worker
/// runs one per session, many on one thread (docs/REALTIME.md, "Workers"). Writer thread only.
class PeriodicSchedule {
 public:
  PeriodicSchedule(const LoopConfig& config, DeadlineMonitor& monitor)
      : config_(config), monitor_(monitor) {}

  /// Starts the schedule: the first cycle is due at `first` (usually one period from now).
  void begin(Nanoseconds first) noexcept {
    scheduled_ = first;
    previous_woke_ = -1;
    index_ = 0;
  }
  /// When the next cycle is due, and by when it must be done.
  Nanoseconds release() const noexcept { return scheduled_; }
  Nanoseconds deadline() const noexcept { return scheduled_ + config_.period; }

  /// The context of the cycle that starts now (`woke` ≥ release()).
  CycleContext open(Nanoseconds woke) noexcept {
    CycleContext context;
    context.index = index_;
    context.scheduled = scheduled_;
    context.woke = woke;
    context.deadline = scheduled_ + config_.period;
    context.measured_period = previous_woke_ < 0 ? config_.period : woke - previous_woke_;
    previous_woke_ = woke;
    return context;
  }

  /// Records the cycle of `context`, finished at `finished`, and moves to the next due one with
  /// the overrun policy: false when the policy is kFault and the cycle missed its deadline
  /// (overrun() says by how much).
  bool close(const CycleContext& context, Nanoseconds finished) noexcept {
    const Nanoseconds period = config_.period;
    monitor_.recordCycle(CycleTiming{context.scheduled, context.woke, finished, context.deadline,
                                     period, config_.overrun == OverrunPolicy::kCatchUp});
    if (finished > context.deadline) {
      overrun_ = finished - context.deadline;
      if (config_.overrun == OverrunPolicy::kFault) return false;
    }
    ++index_;
    scheduled_ += period;
    if (finished > scheduled_) {
      // cycles whose start time has passed: scheduled, scheduled + period, … < finished
      const std::uint64_t late =
          static_cast<std::uint64_t>((finished - scheduled_ + period - 1) / period);
      std::uint64_t skip = late;
      if (config_.overrun == OverrunPolicy::kCatchUp) {
        const auto budget = static_cast<std::uint64_t>(config_.max_catch_up);
        skip = late > budget ? late - budget : 0;
      }
      if (skip > 0) {
        monitor_.recordSkipped(skip);
        scheduled_ += static_cast<Nanoseconds>(skip) * period;
        index_ += skip;
      }
    }
    return true;
  }

  const LoopConfig& config() const noexcept { return config_; }
  /// How late the last cycle that missed its deadline finished [ns].
  Nanoseconds overrun() const noexcept { return overrun_; }

 private:
  LoopConfig config_;
  DeadlineMonitor& monitor_;
  Nanoseconds scheduled_ = 0;
  Nanoseconds previous_woke_ = -1;
  std::uint64_t index_ = 0;
  Nanoseconds overrun_ = 0;
};

class PeriodicLoop {
 public:
  PeriodicLoop(const LoopConfig& config, DeadlineMonitor& monitor) : schedule_(config, monitor) {}

  /// Runs `cycle(const CycleContext&) -> CycleResult` once per period, starting one period from
  /// now, until `stop` is set, a cycle returns kStop or an overrun faults. Allocation-free,
  /// lock-free and exception-free as long as `cycle` is.
  template <typename Cycle>
  LoopExit run(Cycle&& cycle, const std::atomic<bool>& stop) noexcept {
    schedule_.begin(monotonicNow() + schedule_.config().period);
    while (!stop.load(std::memory_order_acquire)) {
      sleepUntil(schedule_.release());
      const CycleContext context = schedule_.open(monotonicNow());
      const CycleResult result = cycle(static_cast<const CycleContext&>(context));
      const bool kept = schedule_.close(context, monotonicNow());
      if (result == CycleResult::kStop) return LoopExit::kCycleStopped;
      if (!kept) return LoopExit::kOverrunFault;
    }
    return LoopExit::kStopRequested;
  }

  const LoopConfig& config() const { return schedule_.config(); }
  /// How late the last cycle that missed its deadline finished [ns] (after kOverrunFault: the
  /// faulting one).
  Nanoseconds overrun() const { return schedule_.overrun(); }

 private:
  PeriodicSchedule schedule_;
};

}  // namespace hilsim::rt
