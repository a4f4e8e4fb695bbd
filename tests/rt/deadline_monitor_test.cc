// DeadlineMonitor: scripted cycles with known misses, runs of misses, latencies, compute times and
// periods; coordinated-omission correction across a stall; reset; concurrent readers; and no heap
// allocation in recordCycle.

#include "rt/deadline_monitor.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/allocation_hooks.h"

namespace hilsim::rt {
namespace {


constexpr Nanoseconds kMicrosecond = 1'000;
constexpr Nanoseconds kPeriod = 1'000 * kMicrosecond;
constexpr Nanoseconds kStart = 5 * kNanosecondsPerSecond;  // an arbitrary CLOCK_MONOTONIC time

/// Cycle k of a loop started at kStart: due at kStart + k·kPeriod, woken `latency` later, busy
/// for `compute`, with the deadline `budget` after the due time.
CycleTiming cycle(Nanoseconds k, Nanoseconds latency, Nanoseconds compute,
                  Nanoseconds budget = 800 * kMicrosecond) {
  CycleTiming t;
  t.scheduled = kStart + k * kPeriod;
  t.woke = t.scheduled + latency;
  t.finished = t.woke + compute;
  t.deadline = t.scheduled + budget;
  t.period = kPeriod;
  return t;
}

// The monitor holds three histograms (~84 KB): keep it off the test's stack.
std::unique_ptr<DeadlineMonitor> makeMonitor() { return std::make_unique<DeadlineMonitor>(); }

// ------------------------------------------------------------------------------------------------

TEST(DeadlineMonitor, ScriptedCyclesGiveExactCountsAndDistributions) {
  // wake-up latency and compute time [µs] per cycle; deadline 800 µs after the due time
  struct Script {
    Nanoseconds latency_us, compute_us;
    bool miss;  // latency + compute > 800
  };
  const std::vector<Script> script = {
      {10, 500, false},  // 510
      {20, 600, false},  // 620
      {15, 790, true},   // 805  run of 3 …
      {30, 850, true},   // 880
      {25, 900, true},   // 925  … ends here
      {12, 700, false},  // 712
      {18, 950, true},   // 968  run of 1
      {40, 760, false},  // 800  finished exactly at the deadline: not a miss
      {22, 810, true},   // 832  run of 2
      {11, 820, true},   // 831
      {14, 300, false},  // 314
      {16, 830, true},   // 846  run of 1, still open at the end
  };
  const auto monitor = makeMonitor();
  const std::vector<std::uint64_t> expected_run = {0, 0, 1, 2, 3, 0, 1, 0, 1, 2, 0, 1};
  const std::vector<std::uint64_t> expected_max_run = {0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  std::uint64_t misses = 0;
  for (std::size_t k = 0; k < script.size(); ++k) {
    monitor->recordCycle(cycle(static_cast<Nanoseconds>(k), script[k].latency_us * kMicrosecond,
                               script[k].compute_us * kMicrosecond));
    if (script[k].miss) ++misses;
    const DeadlineStats s = monitor->stats();
    EXPECT_EQ(s.cycles, k + 1);
    EXPECT_EQ(s.deadline_misses, misses) << "after cycle " << k;
    EXPECT_EQ(s.consecutive_misses, expected_run[k]) << "after cycle " << k;
    EXPECT_EQ(s.max_consecutive_misses, expected_max_run[k]) << "after cycle " << k;
    EXPECT_EQ(monitor->consecutiveMisses(), expected_run[k]);
    EXPECT_EQ(monitor->maxConsecutiveMisses(), expected_max_run[k]);
  }

  const DeadlineStats s = monitor->stats();
  EXPECT_EQ(s.cycles, 12u);
  EXPECT_EQ(s.deadline_misses, 7u);
  EXPECT_EQ(s.consecutive_misses, 1u);
  EXPECT_EQ(s.max_consecutive_misses, 3u);
  EXPECT_EQ(s.skipped_cycles, 0u);
  EXPECT_EQ(monitor->cycles(), 12u);
  EXPECT_EQ(monitor->deadlineMisses(), 7u);

  // every latency was below one period: no correction, one sample per cycle
  EXPECT_EQ(s.wakeup_latency.count, 12u);
  EXPECT_EQ(s.wakeup_latency.min, 10 * kMicrosecond);
  EXPECT_EQ(s.wakeup_latency.max, 40 * kMicrosecond);
  EXPECT_DOUBLE_EQ(s.wakeup_latency.mean, 233.0 * kMicrosecond / 12.0);
  // sorted latencies 10 11 12 14 15 16 18 20 22 25 30 40: the 6th (p50) is 16 µs
  EXPECT_GE(s.wakeup_latency.p50, 16 * kMicrosecond);
  EXPECT_LT(s.wakeup_latency.p50, 16 * kMicrosecond * 101 / 100);

  EXPECT_EQ(s.compute_time.count, 12u);
  EXPECT_EQ(s.compute_time.min, 300 * kMicrosecond);
  EXPECT_EQ(s.compute_time.max, 950 * kMicrosecond);
  EXPECT_DOUBLE_EQ(s.compute_time.mean, 8810.0 * kMicrosecond / 12.0);

  // period k = P + latency k − latency k−1: from the second cycle on
  EXPECT_EQ(s.measured_period.count, 11u);
  EXPECT_EQ(s.measured_period.min, kPeriod - 18 * kMicrosecond);  // 40 → 22
  EXPECT_EQ(s.measured_period.max, kPeriod + 22 * kMicrosecond);  // 18 → 40
  EXPECT_EQ(monitor->measuredPeriod().snapshot().sum(),
            static_cast<std::uint64_t>(11 * kPeriod + (16 - 10) * kMicrosecond));

  // the accessors expose the same histograms
  EXPECT_EQ(monitor->computeTime().snapshot().sum(),
            static_cast<std::uint64_t>(8810 * kMicrosecond));
  EXPECT_EQ(monitor->wakeupLatency().count(), 12u);
}

TEST(DeadlineMonitor, StallIsCorrectedForCoordinatedOmissionAndSkipsAreCounted) {
  const auto monitor = makeMonitor();
  const Nanoseconds budget = kPeriod;
  monitor->recordCycle(cycle(0, 10 * kMicrosecond, 100 * kMicrosecond, budget));
  // cycle 1 wakes 4.5 periods late; the slots due at 2 … 5 passed meanwhile and are dropped
  monitor->recordCycle(cycle(1, 4 * kPeriod + kPeriod / 2, 100 * kMicrosecond, budget));
  monitor->recordSkipped(4);
  monitor->recordCycle(cycle(6, 10 * kMicrosecond, 100 * kMicrosecond, budget));

  const DeadlineStats s = monitor->stats();
  EXPECT_EQ(s.cycles, 3u);
  EXPECT_EQ(s.skipped_cycles, 4u);
  EXPECT_EQ(monitor->skippedCycles(), 4u);
  EXPECT_EQ(s.deadline_misses, 1u);
  EXPECT_EQ(s.consecutive_misses, 0u);
  EXPECT_EQ(s.max_consecutive_misses, 1u);

  // 4.5 P also stands for the dropped slots, late by 3.5 P, 2.5 P, 1.5 P, 0.5 P
  EXPECT_EQ(s.wakeup_latency.count, 3u + 4u);
  EXPECT_EQ(s.wakeup_latency.max, 4 * kPeriod + kPeriod / 2);
  EXPECT_EQ(s.wakeup_latency.min, 10 * kMicrosecond);
  const HistogramSnapshot latency = monitor->wakeupLatency().snapshot();
  EXPECT_EQ(latency.sum(), static_cast<std::uint64_t>(20 * kMicrosecond + 125 * kPeriod / 10));
  EXPECT_EQ(latency.bucketCount(HistogramLayout::bucketIndex(kPeriod / 2)), 1u);
  // compute time is not corrected
  EXPECT_EQ(s.compute_time.count, 3u);

  EXPECT_EQ(s.measured_period.count, 2u);
  EXPECT_EQ(s.measured_period.max, kPeriod + 4 * kPeriod + kPeriod / 2 - 10 * kMicrosecond);
  EXPECT_EQ(s.measured_period.min, kPeriod / 2 + 10 * kMicrosecond);
}

TEST(DeadlineMonitor, ResetClearsEverythingAndForgetsThePreviousWakeUp) {
  const auto monitor = makeMonitor();
  for (Nanoseconds k = 0; k < 5; ++k) monitor->recordCycle(cycle(k, 0, 900 * kMicrosecond));
  monitor->recordSkipped(2);
  ASSERT_EQ(monitor->stats().max_consecutive_misses, 5u);
  monitor->reset();

  DeadlineStats s = monitor->stats();
  EXPECT_EQ(s.cycles, 0u);
  EXPECT_EQ(s.deadline_misses, 0u);
  EXPECT_EQ(s.consecutive_misses, 0u);
  EXPECT_EQ(s.max_consecutive_misses, 0u);
  EXPECT_EQ(s.skipped_cycles, 0u);
  EXPECT_EQ(s.wakeup_latency.count, 0u);
  EXPECT_EQ(s.compute_time.count, 0u);
  EXPECT_EQ(s.measured_period.count, 0u);

  // the first cycle after a reset has no period (the gap to cycle 4 would be 96 periods)
  monitor->recordCycle(cycle(100, 0, 100 * kMicrosecond));
  s = monitor->stats();
  EXPECT_EQ(s.cycles, 1u);
  EXPECT_EQ(s.measured_period.count, 0u);
  monitor->recordCycle(cycle(101, 0, 100 * kMicrosecond));
  EXPECT_EQ(monitor->stats().measured_period.max, kPeriod);
}

TEST(DeadlineMonitor, StatsDuringWritesAreMonotone) {
  const auto monitor = makeMonitor();
  constexpr Nanoseconds kCycles = 100'000;
  constexpr Nanoseconds kCyclesPerChunk = 5'000;
  std::atomic<int> reads{0};
  std::atomic<bool> reader_done{false};
  std::thread loop([&] {
    Nanoseconds slot = 0;  // index of the due time; a late cycle drops the 2 slots it overran
    for (Nanoseconds k = 0; k < kCycles; ++k) {
      // every 7th cycle overruns; every 1000th wakes 2.5 periods late (its deadline, 3 periods
      // after the due time, is missed only if it overruns too)
      const bool late = k % 1000 == 999;
      const Nanoseconds latency = late ? 2 * kPeriod + kPeriod / 2 : 5 * kMicrosecond;
      const Nanoseconds compute = k % 7 == 0 ? 900 * kMicrosecond : 200 * kMicrosecond;
      monitor->recordCycle(cycle(slot, latency, compute, late ? 3 * kPeriod : 800 * kMicrosecond));
      if (late) monitor->recordSkipped(2);
      slot += late ? 3 : 1;
      if ((k + 1) % kCyclesPerChunk == 0) {
        // let the reader start a read after this chunk; the others overlap the writes
        const int target = reads.load(std::memory_order_acquire) + 2;
        while (reads.load(std::memory_order_acquire) < target &&
               !reader_done.load(std::memory_order_acquire)) {
          std::this_thread::yield();
        }
      }
    }
  });

  DeadlineStats previous;
  int partial_reads = 0;  // taken while the loop was running
  while (previous.measured_period.count < static_cast<std::uint64_t>(kCycles - 1) &&
         !HasFailure()) {
    const DeadlineStats s = monitor->stats();
    reads.fetch_add(1, std::memory_order_release);
    if (s.cycles > 0 && s.cycles < static_cast<std::uint64_t>(kCycles)) ++partial_reads;
    EXPECT_GE(s.cycles, previous.cycles);
    EXPECT_GE(s.deadline_misses, previous.deadline_misses);
    EXPECT_GE(s.max_consecutive_misses, previous.max_consecutive_misses);
    EXPECT_GE(s.skipped_cycles, previous.skipped_cycles);
    EXPECT_GE(s.wakeup_latency.count, previous.wakeup_latency.count);
    EXPECT_GE(s.compute_time.count, previous.compute_time.count);
    EXPECT_GE(s.measured_period.count, previous.measured_period.count);
    previous = s;
  }
  reader_done.store(true, std::memory_order_release);
  loop.join();
  EXPECT_GE(partial_reads, static_cast<int>(kCycles / kCyclesPerChunk) - 1);
  const DeadlineStats s = monitor->stats();
  EXPECT_EQ(s.cycles, static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(s.deadline_misses, static_cast<std::uint64_t>((kCycles + 6) / 7));
  EXPECT_EQ(s.max_consecutive_misses, 1u);
  EXPECT_EQ(s.skipped_cycles, static_cast<std::uint64_t>(2 * (kCycles / 1000)));
  EXPECT_EQ(s.wakeup_latency.count, static_cast<std::uint64_t>(kCycles + 2 * (kCycles / 1000)));
  EXPECT_EQ(s.compute_time.count, static_cast<std::uint64_t>(kCycles));
  EXPECT_EQ(s.measured_period.count, static_cast<std::uint64_t>(kCycles - 1));
  // into a late cycle: P + 2.5 P − 5 µs; out of it, to the slot after the 2 dropped: 3 P − 2.5 P
  EXPECT_EQ(s.measured_period.max, kPeriod + 2 * kPeriod + kPeriod / 2 - 5 * kMicrosecond);
  EXPECT_EQ(s.measured_period.min, kPeriod / 2 + 5 * kMicrosecond);
}

TEST(DeadlineMonitor, RecordingAllocatesNothing) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  const auto monitor = makeMonitor();
  // self-check: the counter does see an allocation in this binary
  {
    test::HeapCountingScope count;
    auto* volatile probe = new std::uint64_t(1);
    delete probe;
    EXPECT_EQ(count.stop().allocations, 1);
  }
  test::HeapCountingScope count;
  for (Nanoseconds k = 0; k < 100'000; ++k) {
    const Nanoseconds latency = k % 500 == 0 ? 3 * kPeriod : 7 * kMicrosecond;
    monitor->recordCycle(cycle(k, latency, (k % 900) * kMicrosecond));
    if (k % 500 == 0) monitor->recordSkipped(2);
  }
  const DeadlineStats s = monitor->stats();
  const long allocations = count.stop().allocations;
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(s.cycles, 100'000u);
}

}  // namespace
}  // namespace hilsim::rt

namespace hilsim::rt {
namespace {

TEST(DeadlineMonitor, CatchUpCyclesAreNotCorrectedTwice) {
  // a loop that runs the late cycles itself reports their latencies: one record per cycle
  const auto monitor = makeMonitor();
  CycleTiming late = cycle(0, 10 * kPeriod, kMicrosecond);
  late.late_cycles_run = true;
  monitor->recordCycle(late);
  EXPECT_EQ(monitor->stats().wakeup_latency.count, 1u);
  // the same stall without it stands for the 9 cycles that fell due meanwhile as well
  late.late_cycles_run = false;
  monitor->recordCycle(late);
  EXPECT_EQ(monitor->stats().wakeup_latency.count, 1u + 10u);
}

}  // namespace
}  // namespace hilsim::rt
