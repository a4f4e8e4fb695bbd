// The periodic loop keeps its period, and each overrun policy does what it says, counted exactly.

#include "rt/periodic_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kMillisecond = 1'000'000;

TEST(PeriodicLoop, OneKilohertzForTwoSecondsKeepsTheMeanPeriodWithinOnePercent) {
  DeadlineMonitor monitor;
  // catch_up with a deep budget: every scheduled cycle runs, so the mean period is the loop's
  PeriodicLoop loop(LoopConfig{kMillisecond, OverrunPolicy::kCatchUp, 1000}, monitor);
  std::atomic<bool> stop{false};
  constexpr int kCycles = 2000;
  Nanoseconds first = 0, last = 0;
  int runs = 0;
  const LoopExit exit = loop.run(
      [&](const CycleContext& c) {
        if (runs == 0) first = c.woke;
        last = c.woke;
        return ++runs == kCycles ? CycleResult::kStop : CycleResult::kContinue;
      },
      stop);
  EXPECT_EQ(exit, LoopExit::kCycleStopped);
  ASSERT_EQ(runs, kCycles);
  const double mean_period = static_cast<double>(last - first) / (kCycles - 1);
  EXPECT_NEAR(mean_period, 1e6, 0.01 * 1e6);
  EXPECT_EQ(monitor.cycles(), static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(monitor.skippedCycles(), 0u);
}

TEST(PeriodicLoop, MeasuredPeriodIsTheTimeBetweenWakeUps) {
  DeadlineMonitor monitor;
  PeriodicLoop loop(LoopConfig{2 * kMillisecond, OverrunPolicy::kSkip, 0}, monitor);
  std::atomic<bool> stop{false};
  std::vector<CycleContext> seen;
  seen.reserve(20);
  loop.run(
      [&](const CycleContext& c) {
        seen.push_back(c);
        return seen.size() == 20 ? CycleResult::kStop : CycleResult::kContinue;
      },
      stop);
  ASSERT_EQ(seen.size(), 20u);
  EXPECT_EQ(seen[0].measured_period, 2 * kMillisecond);
  // On a loaded host a cycle may finish after the next start: kSkip then drops whole periods
  // (and counts them), so the schedule stays on the grid of the first start.
  std::uint64_t skipped = 0;
  for (std::size_t k = 1; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].measured_period, seen[k].woke - seen[k - 1].woke);
    const Nanoseconds step = seen[k].scheduled - seen[k - 1].scheduled;
    EXPECT_GE(step, 2 * kMillisecond);
    EXPECT_EQ(step % (2 * kMillisecond), 0) << "absolute schedule";
    EXPECT_EQ(seen[k].index - seen[k - 1].index, static_cast<std::uint64_t>(step / (2 * kMillisecond)));
    skipped += static_cast<std::uint64_t>(step / (2 * kMillisecond)) - 1;
    EXPECT_EQ(seen[k].deadline, seen[k].scheduled + 2 * kMillisecond);
    EXPECT_GE(seen[k].woke, seen[k].scheduled);
  }
  EXPECT_EQ(monitor.skippedCycles(), skipped);
}

TEST(PeriodicLoop, StopFlagEndsTheLoop) {
  DeadlineMonitor monitor;
  PeriodicLoop loop(LoopConfig{kMillisecond, OverrunPolicy::kSkip, 0}, monitor);
  std::atomic<bool> stop{false};
  int runs = 0;
  const LoopExit exit = loop.run(
      [&](const CycleContext&) {
        if (++runs == 5) stop.store(true);
        return CycleResult::kContinue;
      },
      stop);
  EXPECT_EQ(exit, LoopExit::kStopRequested);
  EXPECT_EQ(runs, 5);
}

// A 100 Hz loop whose cycle `overrun_at` sleeps until 2.5 periods after its scheduled start: the
// cycles scheduled at +1 and +2 periods are late. The 10 ms period leaves 5 ms of margin against
// wake-up jitter, so the counts below are exact on a loaded machine too.
struct OverrunRun {
  LoopExit exit;
  std::vector<CycleContext> cycles;
  DeadlineStats stats;
  Nanoseconds overrun;
};

OverrunRun runWithOverrun(OverrunPolicy policy, int max_catch_up) {
  constexpr Nanoseconds kPeriod = 10 * kMillisecond;
  constexpr std::size_t kOverrunAt = 3;
  constexpr std::size_t kRuns = 10;
  DeadlineMonitor monitor;
  PeriodicLoop loop(LoopConfig{kPeriod, policy, max_catch_up}, monitor);
  std::atomic<bool> stop{false};
  OverrunRun result;
  result.cycles.reserve(kRuns);
  result.exit = loop.run(
      [&](const CycleContext& c) {
        result.cycles.push_back(c);
        if (result.cycles.size() == kOverrunAt + 1) sleepUntil(c.scheduled + kPeriod * 5 / 2);
        return result.cycles.size() == kRuns ? CycleResult::kStop : CycleResult::kContinue;
      },
      stop);
  result.stats = monitor.stats();
  result.overrun = loop.overrun();
  return result;
}

TEST(PeriodicLoop, SkipDropsTheLateCyclesAndKeepsPhase) {
  const OverrunRun run = runWithOverrun(OverrunPolicy::kSkip, 0);
  EXPECT_EQ(run.exit, LoopExit::kCycleStopped);
  EXPECT_EQ(run.stats.deadline_misses, 1u);
  EXPECT_EQ(run.stats.skipped_cycles, 2u);
  // indices 0..3, then 6.. (4 and 5 dropped), all on the original 10 ms grid
  ASSERT_GE(run.cycles.size(), 5u);
  EXPECT_EQ(run.cycles[3].index, 3u);
  EXPECT_EQ(run.cycles[4].index, 6u);
  EXPECT_EQ(run.cycles[4].scheduled - run.cycles[3].scheduled, 3 * 10 * kMillisecond);
  EXPECT_EQ(run.cycles.back().index, 11u);
}

TEST(PeriodicLoop, CatchUpRunsTheLateCyclesAtOnce) {
  const OverrunRun run = runWithOverrun(OverrunPolicy::kCatchUp, 10);
  EXPECT_EQ(run.exit, LoopExit::kCycleStopped);
  // cycle 3, and cycle 4 which starts 5 ms after its own deadline; cycle 5 makes it
  EXPECT_EQ(run.stats.deadline_misses, 2u);
  EXPECT_EQ(run.stats.skipped_cycles, 0u);
  // cycles 4 and 5 start late, right after cycle 3 ends; 6 is on time again
  const Nanoseconds end_of_overrun = run.cycles[3].scheduled + 25 * kMillisecond;
  EXPECT_EQ(run.cycles[4].index, 4u);
  EXPECT_GE(run.cycles[4].woke, end_of_overrun);
  EXPECT_GE(run.cycles[5].woke - run.cycles[5].scheduled, 5 * kMillisecond) << "late by ≥ 5 ms";
  EXPECT_LT(run.cycles[6].woke - run.cycles[6].scheduled, 5 * kMillisecond) << "back on time";
  EXPECT_EQ(run.cycles.back().index, 9u);
  // the late cycles report their own latencies: one record per cycle run, none added
  EXPECT_EQ(run.stats.wakeup_latency.count, 10u);
}

TEST(PeriodicLoop, CatchUpIsBounded) {
  const OverrunRun run = runWithOverrun(OverrunPolicy::kCatchUp, 1);
  EXPECT_EQ(run.stats.deadline_misses, 1u);
  EXPECT_EQ(run.stats.skipped_cycles, 1u);  // two late cycles, one may run: it makes its deadline
  EXPECT_EQ(run.cycles[4].index, 5u);
}

TEST(PeriodicLoop, FaultEndsTheLoopAtTheFirstMiss) {
  const OverrunRun run = runWithOverrun(OverrunPolicy::kFault, 0);
  EXPECT_EQ(run.exit, LoopExit::kOverrunFault);
  EXPECT_EQ(run.cycles.size(), 4u);
  EXPECT_EQ(run.stats.deadline_misses, 1u);
  // finished ≈ scheduled + 25 ms, deadline = scheduled + 10 ms
  EXPECT_GE(run.overrun, 15 * kMillisecond);
  EXPECT_LT(run.overrun, 20 * kMillisecond);
}

TEST(OverrunPolicy, NamesRoundTrip) {
  for (OverrunPolicy p : {OverrunPolicy::kSkip, OverrunPolicy::kCatchUp, OverrunPolicy::kFault}) {
    EXPECT_EQ(parseOverrunPolicy(overrunPolicyName(p)), p);
  }
  EXPECT_FALSE(parseOverrunPolicy("drop").has_value());
}

}  // namespace
}  // namespace hilsim::rt
