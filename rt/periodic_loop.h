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

class PeriodicLoop {
 public:
  PeriodicLoop(const LoopConfig& config, DeadlineMonitor& monitor)
      : config_(config), monitor_(monitor) {}

  /// Runs `cycle(const CycleContext&) -> CycleResult` once per period, starting one period from
  /// now, until `stop` is set, a cycle returns kStop or an overrun faults. Allocation-free,
  /// lock-free and exception-free as long as `cycle` is.
  template <typename Cycle>
  LoopExit run(Cycle&& cycle, const std::atomic<bool>& stop) noexcept {
    const Nanoseconds period = config_.period;
    Nanoseconds scheduled = monotonicNow() + period;
    Nanoseconds previous_woke = -1;
    std::uint64_t index = 0;
    while (!stop.load(std::memory_order_acquire)) {
      sleepUntil(scheduled);
      CycleContext context;
      context.index = index;
      context.scheduled = scheduled;
      context.woke = monotonicNow();
      context.deadline = scheduled + period;
      context.measured_period = previous_woke < 0 ? period : context.woke - previous_woke;
      previous_woke = context.woke;

      const CycleResult result = cycle(static_cast<const CycleContext&>(context));
      const Nanoseconds finished = monotonicNow();
      monitor_.recordCycle(CycleTiming{context.scheduled, context.woke, finished,
                                       context.deadline, period,
                                       config_.overrun == OverrunPolicy::kCatchUp});
      if (result == CycleResult::kStop) return LoopExit::kCycleStopped;
      if (finished > context.deadline) {
        overrun_ = finished - context.deadline;
        if (config_.overrun == OverrunPolicy::kFault) return LoopExit::kOverrunFault;
      }

      ++index;
      scheduled += period;
      if (finished > scheduled) {
        // cycles whose start time has passed: scheduled, scheduled + period, … < finished
        const std::uint64_t late =
            static_cast<std::uint64_t>((finished - scheduled + period - 1) / period);
        std::uint64_t skip = late;
        if (config_.overrun == OverrunPolicy::kCatchUp) {
          const auto budget = static_cast<std::uint64_t>(config_.max_catch_up);
          skip = late > budget ? late - budget : 0;
        }
        if (skip > 0) {
          monitor_.recordSkipped(skip);
          scheduled += static_cast<Nanoseconds>(skip) * period;
          index += skip;
        }
      }
    }
    return LoopExit::kStopRequested;
  }

  const LoopConfig& config() const { return config_; }
  /// How late the last cycle that missed its deadline finished [ns] (after kOverrunFault: the
  /// faulting one).
  Nanoseconds overrun() const { return overrun_; }

 private:
  LoopConfig config_;
  DeadlineMonitor& monitor_;
  Nanoseconds overrun_ = 0;
};

}  // namespace hilsim::rt
