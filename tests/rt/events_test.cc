// RT-safe events: what the RT thread records reaches spdlog through the EventLogger thread, with
// the numbers turned into words there; a full queue drops and counts.

#include "rt/events.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "engine/io/model_loader.h"
#include "rt/session.h"
#include "tests/support/captured_log.h"

namespace hilsim::rt {
namespace {

using test::CapturedLog;

TEST(EventQueue, FullQueueDropsAndCounts) {
  EventQueue queue(4);
  Event e;
  for (int k = 0; k < 10; ++k) {
    e.cycle = static_cast<std::uint64_t>(k);
    queue.push(e);
  }
  EXPECT_EQ(queue.dropped(), 6u);
  Event out;
  for (std::uint64_t k = 0; k < 4; ++k) {
    ASSERT_TRUE(queue.pop(out));
    EXPECT_EQ(out.cycle, k) << "the oldest are kept, in order";
  }
  EXPECT_FALSE(queue.pop(out));
}

TEST(Events, DescriptionsCarryTheNumbers) {
  Event miss{EventKind::kDeadlineMiss, 0, 42, 12'500, 4, 3.0};
  EXPECT_EQ(describeEvent(miss, "s1"),
            "s1 cycle 42: deadline missed by 12.5 µs (4 misses and 3 skipped cycles since the last "
            "report)");
  Event trip{EventKind::kWatchdogTripped, 0, 7, 20, static_cast<std::int64_t>(WatchdogPolicy::kZeroTorque), 0.0};
  EXPECT_EQ(describeEvent(trip, "s1"),
            "s1 cycle 7: watchdog tripped after 20 cycles without a command, policy zero");
  FaultInfo fault{FaultKind::kNonFiniteCommand, 9, 0.009, 3, std::nan(""), 17, {}};
  EXPECT_EQ(describeFault(fault), "command 17 has a non-finite torque nan at DoF 3 (cycle 9, t = 0.009000 s)");
  // a constraint failure names the closure where the closure names are known
  Event opened{EventKind::kFault, 0, 280, static_cast<std::int64_t>(FaultKind::kConstraintFailure),
               1, 2.5e-9, 0.28};
  EXPECT_EQ(describeEvent(opened, "s1", {"rod_1a", "rod_1b"}),
            "s1 cycle 280: fault: closure 'rod_1b' stayed open by 2.5e-09 after the step's "
            "projection: the fixed step cannot follow the motion at or near a singular "
            "configuration of the loops (cycle 280, t = 0.280000 s)");
  EXPECT_NE(describeEvent(opened, "s1").find("fault: closure 1 stayed open by 2.5e-09"),
            std::string::npos);
}

TEST(EventLogger, SessionEventsReachTheLogFromTheLoggerThread) {
  CapturedLog log;
  EventLogger logger(1'000'000);  // drains every 1 ms
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("pendulum"));
  c.mode = SessionMode::kRealtime;
  c.thread.lock_memory = false;
  c.watchdog = WatchdogConfig{WatchdogPolicy::kFault, 20, 1.0};
  c.name = "events";
  Session s(c, &logger);
  ASSERT_TRUE(s.start());
  Command command;
  command.sequence = 1;
  command.nv = 1;
  ASSERT_TRUE(s.pushCommand(command));
  // the watchdog faults the session 20 ms after the command
  const Nanoseconds until = monotonicNow() + 5 * kNanosecondsPerSecond;
  while (s.state() != SessionState::kFaulted && monotonicNow() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(s.state(), SessionState::kFaulted);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a few drains
  EXPECT_TRUE(log.contains("warning events cycle")) << "logged as warnings";
  EXPECT_TRUE(log.contains("watchdog tripped after 20 cycles without a command, policy fault"));
  EXPECT_TRUE(log.contains("fault: watchdog: no command for 20 consecutive cycles"));
  // the fault's time in the log is the one the session reports (one clock)
  const FaultInfo fault = s.stats().fault_info;
  EXPECT_GT(fault.time, 0.0);
  char at[64];
  std::snprintf(at, sizeof at, "t = %.6f s)", fault.time);
  EXPECT_TRUE(log.contains(at)) << at;
  EXPECT_EQ(s.stats().events_dropped, 0u);
}

// Every cycle overruns for 1.5 s: the first miss is logged as it comes; the loop's next report (it
// reports at most once a second) is held and summed into the interval's line (10 s here, 60 s by
// default), which the session's end brings out early, with the misses it covers.
TEST(EventLogger, DeadlineMissesAreSummarisedOncePerInterval) {
  CapturedLog log;
  EventLogger logger(1'000'000, 10 * kNanosecondsPerSecond);
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("iiwa14"));
  c.mode = SessionMode::kRealtime;
  c.control_rate = 10'000.0;
  c.substeps = 50;  // ≥ 250 µs of engine work per 100 µs period: every cycle overruns
  c.thread.lock_memory = false;
  c.name = "overrun";
  auto s = std::make_unique<Session>(c, &logger);
  ASSERT_TRUE(s->start());
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  s->stop();
  const SessionStats stats = s->stats();
  s.reset();  // detaches: the last interval's line
  int immediate = 0, summaries = 0;
  std::uint64_t summed = 0;
  for (const std::string& line : log.lines()) {
    if (line.find("overrun cycle") != std::string::npos &&
        line.find("deadline missed by") != std::string::npos) {
      ++immediate;
      EXPECT_NE(line.find("further misses: one line every 10 s"), std::string::npos) << line;
    }
    const std::size_t at = line.find("overrun: ");
    if (at != std::string::npos && line.find("deadline misses in the last") != std::string::npos) {
      ++summaries;
      summed += std::stoull(line.substr(at + 9));
      EXPECT_NE(line.find("every miss is counted"), std::string::npos) << line;
    }
  }
  // many misses (≥ 1,000 in a Release build, fewer under the sanitizers' slowdown), few lines
  EXPECT_GE(stats.timing.deadline_misses, 10u);
  EXPECT_EQ(immediate, 1) << "only the first miss as it comes";
  EXPECT_EQ(summaries, 1) << "the rest in one line";
  EXPECT_GT(summed, 0u);
  EXPECT_LE(summed, stats.timing.deadline_misses);
  EXPECT_EQ(stats.events_dropped, 0u);
}

}  // namespace
}  // namespace hilsim::rt
