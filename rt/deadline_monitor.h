// DeadlineMonitor: per-cycle timing of a periodic real-time loop — wake-up latency, compute time,
// measured period, deadline misses and skipped cycles — recorded by the loop thread without
// locking or allocating, read by any other thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "rt/clock.h"
#include "rt/histogram.h"

namespace hilsim::rt {

/// The timing of one cycle: absolute times on CLOCK_MONOTONIC [ns], and the nominal period [ns].
struct CycleTiming {
  Nanoseconds scheduled = 0;  ///< when the cycle was due to wake (the absolute sleep target)
  Nanoseconds woke = 0;       ///< when the loop actually woke
  Nanoseconds finished = 0;   ///< when the cycle's work was done
  Nanoseconds deadline = 0;   ///< by when the work had to be done (a miss if finished > deadline)
  Nanoseconds period = 0;     ///< nominal period of the loop
  /// Whether the cycles that were due while this one was late will report their own latency
  /// (a catch-up loop runs them): then the coordinated-omission correction is left out.
  bool late_cycles_run = false;
};

/// Counters and distributions of a DeadlineMonitor, as plain values.
struct DeadlineStats {
  std::uint64_t cycles = 0;                  ///< cycles recorded with recordCycle
  std::uint64_t deadline_misses = 0;         ///< cycles with finished > deadline
  std::uint64_t consecutive_misses = 0;      ///< current run of misses (0 after a hit)
  std::uint64_t max_consecutive_misses = 0;  ///< longest run of misses so far
  std::uint64_t skipped_cycles = 0;          ///< cycles the loop dropped (recordSkipped)
  HistogramSummary wakeup_latency;   ///< woke − scheduled [ns], corrected for coordinated omission
  HistogramSummary compute_time;     ///< finished − woke [ns]
  HistogramSummary measured_period;  ///< woke − previous woke [ns] (from the second cycle on)
};

/// Times a periodic loop. ~84 KB inline (three LatencyHistograms), no heap memory: make it a
/// member of the loop's owner, not a local on a small stack.
///
/// Threads: ONE writer (the loop thread) calls recordCycle and recordSkipped: noexcept, no lock,
/// no allocation, no read-modify-write instruction. Any thread may call stats(), the counter
/// getters and snapshot the histograms concurrently; the counters are read one by one (relaxed),
/// so stats() taken during writes may mix two consecutive cycles.
///
/// Coordinated omission: the wake-up latency of a cycle later than one period is recorded with
/// LatencyHistogram::recordCorrected against the nominal period, which also records the lateness
/// of the cycles that were due during the stall. That fits a loop that, once late, drops the
/// missed slots and resynchronises (reporting them with recordSkipped). A loop that instead runs
/// the missed cycles back to back reports their real latencies itself and sets
/// CycleTiming::late_cycles_run, which turns the correction off for that cycle.
class DeadlineMonitor {
 public:
  DeadlineMonitor() noexcept = default;
  DeadlineMonitor(const DeadlineMonitor&) = delete;
  DeadlineMonitor& operator=(const DeadlineMonitor&) = delete;

  /// Records one finished cycle. Writer thread only.
  void recordCycle(const CycleTiming& t) noexcept;
  /// Adds n cycles that the loop dropped (e.g. to catch up after an overrun). Writer thread only.
  void recordSkipped(std::uint64_t n) noexcept;

  /// Counters and summaries of the three histograms (any thread; copies each histogram in turn,
  /// ~28 KB of stack).
  DeadlineStats stats() const noexcept;

  /// The counters of stats(), one at a time (any thread, relaxed).
  std::uint64_t cycles() const noexcept { return cycles_.load(std::memory_order_relaxed); }
  std::uint64_t deadlineMisses() const noexcept {
    return deadline_misses_.load(std::memory_order_relaxed);
  }
  /// Length of the current run of deadline misses (0 after a cycle that made its deadline).
  std::uint64_t consecutiveMisses() const noexcept {
    return consecutive_misses_.load(std::memory_order_relaxed);
  }
  std::uint64_t maxConsecutiveMisses() const noexcept {
    return max_consecutive_misses_.load(std::memory_order_relaxed);
  }
  std::uint64_t skippedCycles() const noexcept {
    return skipped_cycles_.load(std::memory_order_relaxed);
  }

  /// woke − scheduled [ns], with coordinated-omission correction (class comment).
  const LatencyHistogram& wakeupLatency() const noexcept { return wakeup_latency_; }
  /// finished − woke [ns].
  const LatencyHistogram& computeTime() const noexcept { return compute_time_; }
  /// woke − previous cycle's woke [ns]; not recorded for the first cycle (or after reset()).
  const LatencyHistogram& measuredPeriod() const noexcept { return measured_period_; }

  /// Clears everything and forgets the previous wake-up. Only while the writer is quiescent.
  void reset() noexcept;

 private:
  LatencyHistogram wakeup_latency_;
  LatencyHistogram compute_time_;
  LatencyHistogram measured_period_;
  std::atomic<std::uint64_t> cycles_{0};
  std::atomic<std::uint64_t> deadline_misses_{0};
  std::atomic<std::uint64_t> consecutive_misses_{0};
  std::atomic<std::uint64_t> max_consecutive_misses_{0};
  std::atomic<std::uint64_t> skipped_cycles_{0};
  // writer-only state
  Nanoseconds previous_woke_ = 0;
  bool has_previous_woke_ = false;
};

}  // namespace hilsim::rt
