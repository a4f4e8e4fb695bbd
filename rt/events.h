// RT-safe events: the RT thread pushes small fixed-size records into a lock-free queue; a non-RT
// thread (EventLogger) formats them and writes them to spdlog. Nothing is formatted, allocated
// or locked on the RT thread; a full queue drops the event and counts it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/constraints/constraint_stage.h"
#include "rt/clock.h"
#include "rt/spsc_queue.h"

namespace hilsim::rt {

enum class EventKind : std::uint8_t {
  kDeadlineMiss,     ///< value: lateness of the last miss [ns]; extra: misses since the last
                     ///< such event; x: cycles skipped meanwhile (at most one event a second)
  kWatchdogTripped,  ///< value: consecutive missed cycles, extra: policy
  kWatchdogCleared,  ///< a fresh command after a trip; value: cycles it lasted
  kFault,            ///< value: FaultKind, extra: index (joint or command), x: offending value
  kInjectedFaultStarted,  ///< value: FaultType (rt/fault_injection.h), extra: its id, x: its
                          ///< joint's body (0: every joint, −1: none)
  kInjectedFaultEnded,    ///< as kInjectedFaultStarted
};

/// Why a session faulted. Filled on the RT thread as plain numbers; described off it.
enum class FaultKind : std::uint8_t {
  kNone,
  kNonFiniteCommand,  ///< index: DoF, value: the torque
  kNonFiniteState,    ///< index: coordinate of q (index < nq) or nq + DoF of v
  kExplodingState,    ///< index: DoF whose speed exceeded the limit, value: the speed
  kDeadlineMiss,      ///< overrun policy fault; value: lateness [ns]
  kWatchdog,          ///< value: consecutive cycles without a command
  kConstraintFailure,  ///< a step left a loop open (ConstraintFailure); index: the closure
                       ///< (Model::loops), value: its error after the projection [m or rad]
};

struct FaultInfo {
  FaultKind kind = FaultKind::kNone;
  std::uint64_t cycle = 0;  ///< control cycle at which it happened
  double time = 0.0;        ///< simulation time [s]
  std::int64_t index = -1;
  double value = 0.0;
  std::uint64_t command_sequence = 0;  ///< the command being applied, if any
  ConstraintFailure constraint;  ///< kConstraintFailure: the constraint stage's figures
};

/// One line of text for a fault ("" for kNone); with the session's model, a constraint failure
/// names its closure and gives the stage's figures. Not for the RT thread.
std::string describeFault(const FaultInfo& fault, const Model* model = nullptr);

struct Event {
  EventKind kind = EventKind::kDeadlineMiss;
  Nanoseconds time = 0;  ///< CLOCK_MONOTONIC
  std::uint64_t cycle = 0;
  std::int64_t value = 0;
  std::int64_t extra = 0;
  double x = 0.0;
  double sim_time = 0.0;  ///< the session's simulation time at the event [s]
};

/// Single producer (the RT thread), single consumer (the EventLogger).
class EventQueue {
 public:
  explicit EventQueue(std::size_t capacity = 1024) : queue_(capacity) {}
  /// RT side: never blocks; false (and counted) when full.
  bool push(const Event& event) noexcept { return queue_.tryPush(event); }
  bool pop(Event& event) noexcept { return queue_.tryPop(event); }
  std::uint64_t dropped() const noexcept { return queue_.dropped(); }

 private:
  SpscQueue<Event> queue_;
};

/// One line of text for an event of the named source; `closure_names` (the source's model's loops,
/// in order) name the closure of a constraint failure, `joint_names` (its Model::joint_names) the
/// joint of an injected fault. Not for the RT thread.
std::string describeEvent(const Event& event, const std::string& source,
                          const std::vector<std::string>& closure_names = {},
                          const std::vector<std::string>& joint_names = {});

/// Drains registered event queues on its own thread every `poll_interval` and logs each event
/// through spdlog (faults and trips as warnings, the rest as info). Deadline misses are logged
/// as they come only once per `miss_summary_interval` and source; the reports in between are
/// summed into one line at the end of the interval (misses, skipped cycles, the worst lateness):
/// a machine that misses often gets a line a minute, not one a second. The session's counters
/// and histograms keep every miss.
class EventLogger {
 public:
  static constexpr Nanoseconds kMissSummaryInterval = 60 * kNanosecondsPerSecond;

  explicit EventLogger(Nanoseconds poll_interval = 5'000'000,
                       Nanoseconds miss_summary_interval = kMissSummaryInterval);
  ~EventLogger();  ///< drains what is left, then joins
  EventLogger(const EventLogger&) = delete;
  EventLogger& operator=(const EventLogger&) = delete;

  /// Starts draining `queue`, naming its events `source` (e.g. "session 3") and the closures of
  /// its constraint failures by `closure_names` (its model's loops, in order) and the joints of
  /// its injected faults by `joint_names` (its Model::joint_names).
  void attach(std::shared_ptr<EventQueue> queue, std::string source,
              std::vector<std::string> closure_names = {},
              std::vector<std::string> joint_names = {});
  /// Drains `queue` a last time and forgets it.
  void detach(const EventQueue* queue);
  /// Drains every queue now, on the calling thread. Returns the number of events logged.
  std::size_t drain();

  /// The process-wide logger sessions use when they are given none.
  static EventLogger& global();

 private:
  struct Source {
    std::shared_ptr<EventQueue> queue;
    std::string name;
    std::vector<std::string> closure_names;
    std::vector<std::string> joint_names;
    // deadline misses since the last line about them
    Nanoseconds last_miss_line = 0;  // when that line was logged (0: never)
    std::uint64_t reports = 0, misses = 0;
    double skipped = 0.0;
    std::int64_t worst_lateness = 0;  // [ns]
  };
  std::size_t drainLocked();
  void logDeadlineMiss(Source& source, const Event& event, Nanoseconds now);
  // the summary line of `source`'s held misses, if any, and the interval restarts
  void flushMisses(Source& source, Nanoseconds now);
  std::mutex mutex_;  // guards sources_; taken only by non-RT threads
  std::vector<Source> sources_;
  Nanoseconds poll_interval_, miss_summary_interval_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hilsim::rt
