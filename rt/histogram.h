// LatencyHistogram: a fixed-size, allocation-free, log-linear (HDR-style) histogram of durations
// [ns], written by one real-time thread and read by any other thread through snapshots.
//
// Bucket layout (HistogramLayout below):
//   - values 0 … 127 ns have one exact bucket each (indices 0 … 127);
//   - every power-of-two octave [2^e, 2^(e+1)) with e ≥ 7 is split into 128 linear sub-buckets of
//     width w = 2^(e−7): index = 128·(e − 7) + (v >> (e − 7)), so indices run on contiguously
//     (128 … 255 for the 128 ns octave, 256 … 383 for the next, …);
//   - tracking stops at kMaxTrackable = 10 s (octave e = 33); every value above it goes into one
//     overflow bucket, is still counted, and still updates min, max and sum exactly.
// That is 3478 tracked buckets + 1 overflow bucket, 27.8 KB of counts.
//
// Error bound: a value v in octave e lies in a bucket [lo, lo + w − 1] with lo ≥ 2^e = 128·w.
// A bucket stands for its highest value hi = lo + w − 1 (as HdrHistogram's valueAtPercentile), so
// 0 ≤ hi − v ≤ w − 1 < w ≤ v / 128: the relative error is below 1/128 ≈ 0.78 % (< 1 %) over
// 128 ns … 10 s, and zero below 128 ns. Percentiles are clamped to the exact max, so p100 and the
// overflow bucket report the true largest value; min, max, count, sum and mean are exact.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "rt/clock.h"

namespace hilsim::rt {

namespace histogram_detail {

constexpr int kSubBucketBits = 7;
constexpr Nanoseconds kMaxTrackable = 10 * kNanosecondsPerSecond;

// Bucket index of 0 ≤ value ≤ kMaxTrackable (a free function: the layout's constants need it
// while HistogramLayout is still incomplete).
constexpr std::size_t trackedIndex(Nanoseconds value) noexcept {
  const auto v = static_cast<std::uint64_t>(value);
  if (v < (std::uint64_t{1} << kSubBucketBits)) return static_cast<std::size_t>(v);
  const int shift = std::bit_width(v) - 1 - kSubBucketBits;  // e − 7
  return (static_cast<std::size_t>(shift) << kSubBucketBits) + static_cast<std::size_t>(v >> shift);
}

}  // namespace histogram_detail

/// The mapping between durations [ns] and bucket indices, shared by histograms and snapshots.
struct HistogramLayout {
  /// log2 of the number of linear sub-buckets per octave (and of the exact range).
  static constexpr int kSubBucketBits = histogram_detail::kSubBucketBits;
  /// Linear sub-buckets per octave; values below it have exact 1-ns buckets.
  static constexpr Nanoseconds kSubBucketCount = Nanoseconds{1} << kSubBucketBits;
  /// Largest value with a tracked bucket [ns]; larger values go into the overflow bucket.
  static constexpr Nanoseconds kMaxTrackable = histogram_detail::kMaxTrackable;

  /// Tracked buckets (indices 0 … kTrackedBucketCount − 1).
  static constexpr std::size_t kTrackedBucketCount =
      histogram_detail::trackedIndex(kMaxTrackable) + 1;
  /// Index of the overflow bucket (values > kMaxTrackable).
  static constexpr std::size_t kOverflowIndex = kTrackedBucketCount;
  /// All buckets, overflow included.
  static constexpr std::size_t kBucketCount = kTrackedBucketCount + 1;

  /// Bucket index of any value [ns]; negative values count as 0.
  static constexpr std::size_t bucketIndex(Nanoseconds value) noexcept {
    if (value < 0) return 0;
    return value > kMaxTrackable ? kOverflowIndex : histogram_detail::trackedIndex(value);
  }

  /// Smallest value [ns] that falls into bucket `index` (< kBucketCount).
  static constexpr Nanoseconds bucketLowest(std::size_t index) noexcept {
    if (index == kOverflowIndex) return kMaxTrackable + 1;
    const auto i = static_cast<Nanoseconds>(index);
    if (i < kSubBucketCount) return i;
    const Nanoseconds shift = i / kSubBucketCount - 1;
    return (i - shift * kSubBucketCount) << shift;
  }

  /// Largest value [ns] that falls into bucket `index` (< kBucketCount). The last tracked bucket
  /// is cut at kMaxTrackable; the overflow bucket has no upper bound (the largest Nanoseconds).
  static constexpr Nanoseconds bucketHighest(std::size_t index) noexcept {
    if (index == kOverflowIndex) return std::numeric_limits<Nanoseconds>::max();
    const auto i = static_cast<Nanoseconds>(index);
    if (i < kSubBucketCount) return i;
    const Nanoseconds shift = i / kSubBucketCount - 1;
    const Nanoseconds highest = bucketLowest(index) + (Nanoseconds{1} << shift) - 1;
    return highest < kMaxTrackable ? highest : kMaxTrackable;
  }
};

static_assert(HistogramLayout::kTrackedBucketCount == 3478);
static_assert(HistogramLayout::bucketLowest(HistogramLayout::kTrackedBucketCount - 1) <=
              HistogramLayout::kMaxTrackable);
static_assert(HistogramLayout::bucketHighest(HistogramLayout::kTrackedBucketCount - 2) <
              HistogramLayout::kMaxTrackable);

/// The usual figures of a latency distribution [ns].
struct HistogramSummary {
  std::uint64_t count = 0;
  Nanoseconds min = 0;   ///< exact
  Nanoseconds max = 0;   ///< exact
  double mean = 0.0;     ///< exact (sum / count)
  Nanoseconds p50 = 0;   ///< percentiles: highest value of the bucket, clamped to max (< 0.79 %
  Nanoseconds p90 = 0;   ///< above the true value; exact below 128 ns)
  Nanoseconds p99 = 0;
  Nanoseconds p999 = 0;  ///< 99.9th percentile
};

/// A plain copy of a histogram's counts: a value type that owns no heap memory (27.8 KB inline,
/// mind the stack of small threads). Empty when default-constructed; merge with +=.
class HistogramSnapshot {
 public:
  HistogramSnapshot() noexcept = default;

  /// Number of recorded values (overflow included).
  std::uint64_t count() const noexcept { return count_; }
  /// Sum of the recorded values [ns] (wraps only after 584 years of total duration).
  std::uint64_t sum() const noexcept { return sum_; }
  /// Exact smallest and largest recorded values [ns]; 0 when empty.
  Nanoseconds min() const noexcept { return count_ == 0 ? 0 : min_; }
  Nanoseconds max() const noexcept { return count_ == 0 ? 0 : max_; }
  /// Exact mean [ns]; 0 when empty.
  double mean() const noexcept;
  /// Values above HistogramLayout::kMaxTrackable.
  std::uint64_t overflowCount() const noexcept { return counts_[HistogramLayout::kOverflowIndex]; }
  /// Count in bucket `index` (< HistogramLayout::kBucketCount).
  std::uint64_t bucketCount(std::size_t index) const noexcept { return counts_[index]; }

  /// The value [ns] at or below which `p` percent of the recorded values lie (nearest rank:
  /// the ⌈p/100 · count⌉-th smallest value), reported as the highest value of its bucket clamped
  /// to max(), like HdrHistogram's getValueAtPercentile. p is clamped to [0, 100]; p = 0 gives
  /// min() and p = 100 gives max(), both exact. 0 when empty.
  Nanoseconds percentile(double p) const noexcept;

  /// count, min, max, mean and p50, p90, p99, p99.9.
  HistogramSummary summary() const noexcept;

  /// Adds another snapshot's values (e.g. to aggregate sessions).
  HistogramSnapshot& operator+=(const HistogramSnapshot& other) noexcept;

 private:
  friend class LatencyHistogram;

  std::array<std::uint64_t, HistogramLayout::kBucketCount> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t sum_ = 0;
  Nanoseconds min_ = 0;
  Nanoseconds max_ = 0;
};

/// The histogram itself: no heap memory (27.8 KB of atomics inline), non-copyable.
///
/// Threads: ONE writer (the RT thread) calls record() and recordCorrected(); they never lock,
/// allocate or throw, and use plain loads and stores (no lock-prefixed read-modify-write: with a
/// single writer, load + store is an exact increment). Any number of other threads may call
/// snapshot(), count() and summary() at the same time.
///
/// A snapshot taken during writes is consistent per record that it sees: each bucket increment is
/// a release store made after that record's min, max and sum updates, and snapshot() reads the
/// buckets (acquire) before min, max and sum. So a snapshot's min/max/sum cover every value in its
/// buckets, but may already include one record whose bucket it missed (the in-flight one): the
/// mean can then be off by that record, and max may exceed the largest bucketed value. Successive
/// snapshots from one thread never see a count go down. (The release store is a plain mov on
/// x86-64 and an stlr on AArch64; every other store is relaxed.)
class LatencyHistogram {
 public:
  /// Stop on the ladder of corrected records (see recordCorrected).
  static constexpr int kMaxCorrectionRecords = 10'000;

  LatencyHistogram() noexcept;
  LatencyHistogram(const LatencyHistogram&) = delete;
  LatencyHistogram& operator=(const LatencyHistogram&) = delete;

  /// Records one duration [ns]; negative values are recorded as 0. Writer thread only.
  void record(Nanoseconds value) noexcept;

  /// Records the wake-up latency `value` [ns] of a periodic task with nominal period
  /// `expected_interval` [ns], corrected for coordinated omission: when value exceeds the
  /// interval, the cycles that should have started at +1, +2, … intervals during the stall were
  /// late too, by value − interval, value − 2·interval, … as long as that is > 0, and are recorded
  /// as well. E.g. 10·P records 10P, 9P, …, 1P; 10.5·P records 10.5P, 9.5P, …, 0.5P.
  /// (HdrHistogram's recordValueWithExpectedInterval stops at ≥ interval and so drops the last,
  /// partial one.)
  /// At most kMaxCorrectionRecords extra records are made, so the call is bounded (≈ tens of µs)
  /// even for a huge value over a tiny interval. expected_interval ≤ 0 records value alone.
  /// Writer thread only.
  void recordCorrected(Nanoseconds value, Nanoseconds expected_interval) noexcept;

  /// Copies the counts (any thread; see the class comment for consistency during writes).
  HistogramSnapshot snapshot() const noexcept;
  /// The same, written into `out` (no 28 KB temporary on a small stack, e.g. an HTTP thread's).
  void snapshot(HistogramSnapshot& out) const noexcept;
  /// snapshot().summary().
  HistogramSummary summary() const noexcept;
  /// Number of recorded values, without copying the buckets (any thread).
  std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

  /// Empties the histogram. Only while the writer is quiescent (not inside record*, e.g. before
  /// the loop starts or after it stops); concurrent snapshots may see a partly reset histogram.
  void reset() noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, HistogramLayout::kBucketCount> counts_;
  std::atomic<std::uint64_t> count_;
  std::atomic<std::uint64_t> sum_;
  std::atomic<Nanoseconds> min_;  // largest Nanoseconds while empty
  std::atomic<Nanoseconds> max_;  // smallest Nanoseconds while empty
};

}  // namespace hilsim::rt
