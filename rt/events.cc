#include "rt/events.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "rt/fault_injection.h"
#include "rt/watchdog.h"

namespace hilsim::rt {

namespace {
std::string format(const char* fmt, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, fmt, args...);
  return buffer;
}
// A constraint failure without the stage's figures (the event log's): the closure, its error
std::string openLoop(const std::string& closure, double error) {
  return format("%s stayed open by %g after the step's projection: the fixed step cannot follow "
                "the motion at or near a singular configuration of the loops",
                closure.c_str(), error);
}
}  // namespace

std::string describeFault(const FaultInfo& f, const Model* model) {
  const auto at = [&f] { return format(" (cycle %llu, t = %.6f s)",
                                       static_cast<unsigned long long>(f.cycle), f.time); };
  switch (f.kind) {
    case FaultKind::kNone: return {};
    case FaultKind::kNonFiniteCommand:
      return format("command %llu has a non-finite torque %g at DoF %lld",
                    static_cast<unsigned long long>(f.command_sequence), f.value,
                    static_cast<long long>(f.index)) + at();
    case FaultKind::kNonFiniteState:
      return format("the state became non-finite at coordinate %lld", static_cast<long long>(f.index)) +
             at();
    case FaultKind::kExplodingState:
      return format("the state diverged: speed %g at DoF %lld exceeds the limit",
                    f.value, static_cast<long long>(f.index)) + at();
    case FaultKind::kDeadlineMiss:
      return format("deadline missed by %.1f µs under the overrun policy 'fault'",
                    f.value * 1e-3) + at();
    case FaultKind::kWatchdog:
      return format("watchdog: no command for %.0f consecutive cycles", f.value) + at();
    case FaultKind::kConstraintFailure:
      if (model) return describeConstraintFailure(*model, f.constraint) + at();
      return openLoop("closure " + std::to_string(f.index), f.value) + at();
  }
  return "unknown fault";
}

std::string describeEvent(const Event& e, const std::string& source,
                          const std::vector<std::string>& closure_names,
                          const std::vector<std::string>& joint_names) {
  const std::string head =
      format("%s cycle %llu: ", source.c_str(), static_cast<unsigned long long>(e.cycle));
  switch (e.kind) {
    case EventKind::kDeadlineMiss:
      return head + format("deadline missed by %.1f µs (%lld misses and %.0f skipped cycles since "
                           "the last report)",
                           static_cast<double>(e.value) * 1e-3, static_cast<long long>(e.extra),
                           e.x);
    case EventKind::kWatchdogTripped:
      return head + format("watchdog tripped after %lld cycles without a command, policy %s",
                           static_cast<long long>(e.value),
                           std::string(watchdogPolicyName(static_cast<WatchdogPolicy>(e.extra)))
                               .c_str());
    case EventKind::kWatchdogCleared:
      return head + format("watchdog cleared: commands are back after %lld silent cycles",
                           static_cast<long long>(e.value));
    case EventKind::kFault: {
      FaultInfo f;
      f.kind = static_cast<FaultKind>(e.value);
      f.index = e.extra;
      f.value = e.x;
      f.cycle = e.cycle;
      f.time = e.sim_time;  // the clock GetStats and Fault report
      if (f.kind == FaultKind::kConstraintFailure && f.index >= 0 &&
          f.index < static_cast<std::int64_t>(closure_names.size())) {
        return head + "fault: " + openLoop("closure '" + closure_names[f.index] + "'", f.value) +
               format(" (cycle %llu, t = %.6f s)", static_cast<unsigned long long>(f.cycle),
                      f.time);
      }
      return head + "fault: " + describeFault(f);
    }
    case EventKind::kInjectedFaultStarted:
    case EventKind::kInjectedFaultEnded: {
      const auto body = static_cast<long long>(e.x);
      std::string joint;
      if (body == 0) {
        joint = " on every joint";
      } else if (body > 0 && body < static_cast<long long>(joint_names.size())) {
        joint = " on joint '" + joint_names[static_cast<std::size_t>(body)] + "'";
      } else if (body > 0) {
        joint = format(" on the joint of body %lld", body);
      }
      return head + format("injected fault %lld (%s%s) %s at t = %.6f s",
                           static_cast<long long>(e.extra),
                           faultTypeName(static_cast<FaultType>(e.value)), joint.c_str(),
                           e.kind == EventKind::kInjectedFaultStarted ? "begins" : "ends",
                           e.sim_time);
    }
  }
  return head + "unknown event";
}

EventLogger::EventLogger(Nanoseconds poll_interval, Nanoseconds miss_summary_interval)
    : poll_interval_(poll_interval), miss_summary_interval_(miss_summary_interval) {
  thread_ = std::thread([this] {
    while (!stop_.load(std::memory_order_acquire)) {
      sleepUntil(monotonicNow() + poll_interval_);
      drain();
    }
  });
}

EventLogger::~EventLogger() {
  stop_.store(true, std::memory_order_release);
  thread_.join();
  drain();
}

void EventLogger::attach(std::shared_ptr<EventQueue> queue, std::string source,
                         std::vector<std::string> closure_names,
                         std::vector<std::string> joint_names) {
  std::lock_guard lock(mutex_);
  sources_.push_back(Source{std::move(queue), std::move(source), std::move(closure_names),
                            std::move(joint_names)});
}

void EventLogger::detach(const EventQueue* queue) {
  std::lock_guard lock(mutex_);
  drainLocked();
  for (Source& source : sources_) {
    if (source.queue.get() == queue) flushMisses(source, monotonicNow());
  }
  sources_.erase(std::remove_if(sources_.begin(), sources_.end(),
                                [queue](const Source& s) { return s.queue.get() == queue; }),
                 sources_.end());
}

std::size_t EventLogger::drain() {
  std::lock_guard lock(mutex_);
  return drainLocked();
}

std::size_t EventLogger::drainLocked() {
  std::size_t logged = 0;
  Event event;
  const Nanoseconds now = monotonicNow();
  for (Source& source : sources_) {
    while (source.queue->pop(event)) {
      ++logged;
      if (event.kind == EventKind::kDeadlineMiss) {
        logDeadlineMiss(source, event, now);
        continue;
      }
      const std::string line = describeEvent(event, source.name, source.closure_names, source.joint_names);
      const bool serious =
          event.kind == EventKind::kFault || event.kind == EventKind::kWatchdogTripped ||
          event.kind == EventKind::kInjectedFaultStarted;
      if (serious) spdlog::warn("{}", line);
      else spdlog::info("{}", line);
    }
    if (source.reports > 0 && now - source.last_miss_line >= miss_summary_interval_) {
      flushMisses(source, now);
    }
  }
  return logged;
}

void EventLogger::logDeadlineMiss(Source& source, const Event& event, Nanoseconds now) {
  // the first miss after a quiet interval is logged as it comes; while misses go on, they are
  // summed into the interval's line
  if (source.reports == 0 &&
      (source.last_miss_line == 0 || now - source.last_miss_line >= miss_summary_interval_)) {
    spdlog::warn("{} (further misses: one line every {:g} s)", describeEvent(event, source.name),
                 static_cast<double>(miss_summary_interval_) * 1e-9);
    source.last_miss_line = now;
    return;
  }
  ++source.reports;
  source.misses += static_cast<std::uint64_t>(std::max<std::int64_t>(event.extra, 1));
  source.skipped += event.x;
  source.worst_lateness = std::max(source.worst_lateness, event.value);
}

void EventLogger::flushMisses(Source& source, Nanoseconds now) {
  if (source.reports == 0) return;
  spdlog::warn("{}: {} deadline misses in the last {:.0f} s, worst {:.1f} µs late, {:.0f} "
               "skipped cycles (every miss is counted in the session's statistics)",
               source.name, source.misses,
               static_cast<double>(now - source.last_miss_line) * 1e-9,
               static_cast<double>(source.worst_lateness) * 1e-3, source.skipped);
  source.reports = source.misses = 0;
  source.skipped = 0.0;
  source.worst_lateness = 0;
  source.last_miss_line = now;
}

EventLogger& EventLogger::global() {
  static EventLogger logger;
  return logger;
}

}  // namespace hilsim::rt
