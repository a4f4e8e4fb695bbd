#include "rt/histogram.h"

#include <algorithm>
#include <cmath>

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kEmptyMin = std::numeric_limits<Nanoseconds>::max();
constexpr Nanoseconds kEmptyMax = std::numeric_limits<Nanoseconds>::min();

// Single-writer update: a plain load and store instead of a lock-prefixed fetch_add.
inline void add(std::atomic<std::uint64_t>& counter, std::uint64_t n,
                std::memory_order order = std::memory_order_relaxed) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + n, order);
}

}  // namespace

// --- HistogramSnapshot --------------------------------------------------------------------------

double HistogramSnapshot::mean() const noexcept {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_) / static_cast<double>(count_);
}

Nanoseconds HistogramSnapshot::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  if (!(p > 0.0)) return min();  // also NaN
  if (p >= 100.0) return max();
  // nearest rank; the relative nudge keeps round-off in p/100·count, which can land just above an
  // exact integer, from pushing the rank one too far
  const double fractional = p / 100.0 * static_cast<double>(count_);
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(fractional * (1.0 - 1e-12))));
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    if (cumulative >= rank) return std::min(HistogramLayout::bucketHighest(i), max_);
  }
  return max_;  // unreachable while count_ is the sum of counts_
}

HistogramSummary HistogramSnapshot::summary() const noexcept {
  HistogramSummary s;
  s.count = count_;
  s.min = min();
  s.max = max();
  s.mean = mean();
  s.p50 = percentile(50.0);
  s.p90 = percentile(90.0);
  s.p99 = percentile(99.0);
  s.p999 = percentile(99.9);
  return s;
}

HistogramSnapshot& HistogramSnapshot::operator+=(const HistogramSnapshot& other) noexcept {
  if (other.count_ == 0) return *this;
  for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
  return *this;
}

// --- LatencyHistogram ---------------------------------------------------------------------------

LatencyHistogram::LatencyHistogram() noexcept { reset(); }

void LatencyHistogram::record(Nanoseconds value) noexcept {
  const Nanoseconds v = std::max<Nanoseconds>(value, 0);
  // min, max and sum first: the release store on the bucket publishes them with it (class comment)
  if (v < min_.load(std::memory_order_relaxed)) min_.store(v, std::memory_order_relaxed);
  if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
  add(sum_, static_cast<std::uint64_t>(v));
  add(counts_[HistogramLayout::bucketIndex(v)], 1, std::memory_order_release);
  add(count_, 1);
}

void LatencyHistogram::recordCorrected(Nanoseconds value, Nanoseconds expected_interval) noexcept {
  record(value);
  if (expected_interval <= 0 || value <= expected_interval) return;
  // the cycles due during the stall, from the first one on: each was late by one interval less
  Nanoseconds missed = value - expected_interval;
  for (int k = 0; k < kMaxCorrectionRecords && missed > 0; ++k) {
    record(missed);
    missed -= expected_interval;
  }
}

HistogramSnapshot LatencyHistogram::snapshot() const noexcept {
  HistogramSnapshot s;
  snapshot(s);
  return s;
}

void LatencyHistogram::snapshot(HistogramSnapshot& s) const noexcept {
  s.count_ = 0;  // every field is written below; no temporary
  s.sum_ = 0;
  s.min_ = 0;
  s.max_ = 0;
  // buckets first (acquire), then the figures their records published (class comment); the count
  // is the buckets' own total so that percentiles always find their rank
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    s.counts_[i] = counts_[i].load(std::memory_order_acquire);
    total += s.counts_[i];
  }
  if (total == 0) return;
  s.count_ = total;
  s.sum_ = sum_.load(std::memory_order_relaxed);
  s.min_ = min_.load(std::memory_order_relaxed);
  s.max_ = max_.load(std::memory_order_relaxed);
}

HistogramSummary LatencyHistogram::summary() const noexcept { return snapshot().summary(); }

void LatencyHistogram::reset() noexcept {
  for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_.store(0, std::memory_order_relaxed);
  min_.store(kEmptyMin, std::memory_order_relaxed);
  max_.store(kEmptyMax, std::memory_order_relaxed);
}

}  // namespace hilsim::rt
