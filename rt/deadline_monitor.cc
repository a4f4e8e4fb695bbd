#include "rt/deadline_monitor.h"

namespace hilsim::rt {
namespace {

// Single-writer counters: a plain load and store instead of a lock-prefixed fetch_add.
inline std::uint64_t add(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
  const std::uint64_t value = counter.load(std::memory_order_relaxed) + n;
  counter.store(value, std::memory_order_relaxed);
  return value;
}

inline void set(std::atomic<std::uint64_t>& counter, std::uint64_t value) noexcept {
  counter.store(value, std::memory_order_relaxed);
}

inline std::uint64_t get(const std::atomic<std::uint64_t>& counter) noexcept {
  return counter.load(std::memory_order_relaxed);
}

}  // namespace

void DeadlineMonitor::recordCycle(const CycleTiming& t) noexcept {
  if (t.late_cycles_run) wakeup_latency_.record(t.woke - t.scheduled);
  else wakeup_latency_.recordCorrected(t.woke - t.scheduled, t.period);
  compute_time_.record(t.finished - t.woke);
  if (has_previous_woke_) measured_period_.record(t.woke - previous_woke_);
  previous_woke_ = t.woke;
  has_previous_woke_ = true;

  if (t.finished > t.deadline) {
    add(deadline_misses_, 1);
    const std::uint64_t run = add(consecutive_misses_, 1);
    if (run > get(max_consecutive_misses_)) set(max_consecutive_misses_, run);
  } else {
    set(consecutive_misses_, 0);
  }
  add(cycles_, 1);
}

void DeadlineMonitor::recordSkipped(std::uint64_t n) noexcept { add(skipped_cycles_, n); }

DeadlineStats DeadlineMonitor::stats() const noexcept {
  DeadlineStats s;
  s.cycles = get(cycles_);
  s.deadline_misses = get(deadline_misses_);
  s.consecutive_misses = get(consecutive_misses_);
  s.max_consecutive_misses = get(max_consecutive_misses_);
  s.skipped_cycles = get(skipped_cycles_);
  s.wakeup_latency = wakeup_latency_.summary();
  s.compute_time = compute_time_.summary();
  s.measured_period = measured_period_.summary();
  return s;
}

void DeadlineMonitor::reset() noexcept {
  wakeup_latency_.reset();
  compute_time_.reset();
  measured_period_.reset();
  set(cycles_, 0);
  set(deadline_misses_, 0);
  set(consecutive_misses_, 0);
  set(max_consecutive_misses_, 0);
  set(skipped_cycles_, 0);
  previous_woke_ = 0;
  has_previous_woke_ = false;
}

}  // namespace hilsim::rt
