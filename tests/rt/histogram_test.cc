// LatencyHistogram and HistogramSnapshot: the bucket layout and its error bound, percentiles of
// known distributions, exact min/max/mean, overflow, coordinated-omission correction, merging,
// snapshots under a concurrent writer, and no heap allocation on the writer's side.

#include "rt/histogram.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/allocation_hooks.h"

namespace hilsim::rt {
namespace {


using Layout = HistogramLayout;

constexpr Nanoseconds kMicrosecond = 1'000;
constexpr Nanoseconds kMillisecond = 1'000'000;
constexpr double kBucketRelativeError = 0.01;  // the specified bound (the layout gives 1/128)

// Heap-allocated so that the 27.8 KB of counts stay off the test's stack.
std::unique_ptr<LatencyHistogram> makeHistogram() { return std::make_unique<LatencyHistogram>(); }

// ------------------------------------------------------------------------------------------------

TEST(HistogramLayout, BucketsAreContiguousAndExactBelow128) {
  for (std::size_t i = 0; i < Layout::kTrackedBucketCount; ++i) {
    const Nanoseconds lo = Layout::bucketLowest(i);
    const Nanoseconds hi = Layout::bucketHighest(i);
    ASSERT_LE(lo, hi) << i;
    ASSERT_EQ(Layout::bucketIndex(lo), i);
    ASSERT_EQ(Layout::bucketIndex(hi), i);
    if (i + 1 < Layout::kTrackedBucketCount) {
      ASSERT_EQ(Layout::bucketLowest(i + 1), hi + 1) << i;
    }
    if (i < 128) {
      ASSERT_EQ(lo, hi) << "values below 128 ns have exact buckets";
    }
  }
  EXPECT_EQ(Layout::bucketLowest(0), 0);
  EXPECT_EQ(Layout::bucketIndex(Layout::kMaxTrackable), Layout::kTrackedBucketCount - 1);
  EXPECT_EQ(Layout::bucketHighest(Layout::kTrackedBucketCount - 1), Layout::kMaxTrackable);
  EXPECT_EQ(Layout::bucketLowest(Layout::kOverflowIndex), Layout::kMaxTrackable + 1);
  EXPECT_EQ(Layout::bucketIndex(Layout::kMaxTrackable + 1), Layout::kOverflowIndex);
  EXPECT_EQ(Layout::bucketIndex(std::numeric_limits<Nanoseconds>::max()), Layout::kOverflowIndex);
  EXPECT_EQ(Layout::bucketIndex(-5), 0u);
  // the storage stays about 28 KB
  EXPECT_LT(sizeof(LatencyHistogram), 30'000u);
}

TEST(HistogramLayout, RelativeBucketErrorBelowOnePercentFrom100NsTo10S) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> log_value(std::log(100.0), std::log(1e10));
  double worst = 0.0;
  for (int k = 0; k < 200'000; ++k) {
    const auto v = static_cast<Nanoseconds>(std::exp(log_value(rng)));
    const std::size_t index = Layout::bucketIndex(v);
    ASSERT_LT(index, Layout::kTrackedBucketCount) << v;
    const Nanoseconds lo = Layout::bucketLowest(index);
    const Nanoseconds hi = Layout::bucketHighest(index);
    ASSERT_LE(lo, v);
    ASSERT_GE(hi, v);
    // the representative value (the bucket's highest) and the whole bucket are within 1 %
    const double error = static_cast<double>(hi - v) / static_cast<double>(v);
    const double width = static_cast<double>(hi - lo) / static_cast<double>(lo);
    ASSERT_LE(error, kBucketRelativeError) << v;
    ASSERT_LE(width, kBucketRelativeError) << v;
    worst = std::max(worst, error);
  }
  EXPECT_LT(worst, 1.0 / 128.0);
  EXPECT_GT(worst, 0.5 / 128.0);  // the sampling did reach wide buckets
}

// ------------------------------------------------------------------------------------------------

TEST(LatencyHistogram, EmptySnapshotIsAllZero) {
  const auto h = makeHistogram();
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.min(), 0);
  EXPECT_EQ(s.max(), 0);
  EXPECT_EQ(s.mean(), 0.0);
  EXPECT_EQ(s.percentile(50.0), 0);
  EXPECT_EQ(s.percentile(100.0), 0);
}

TEST(LatencyHistogram, UniformPercentilesWithinOnePercentAndExactMoments) {
  const auto h = makeHistogram();
  constexpr Nanoseconds kN = 100'000;
  // shuffled, so that no property depends on recording order
  std::vector<Nanoseconds> values(kN);
  for (Nanoseconds v = 1; v <= kN; ++v) values[static_cast<std::size_t>(v - 1)] = v;
  std::shuffle(values.begin(), values.end(), std::mt19937_64(7));
  for (const Nanoseconds v : values) h->record(v);

  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), static_cast<std::uint64_t>(kN));
  EXPECT_EQ(h->count(), static_cast<std::uint64_t>(kN));
  EXPECT_EQ(s.min(), 1);
  EXPECT_EQ(s.max(), kN);
  EXPECT_EQ(s.sum(), static_cast<std::uint64_t>(kN * (kN + 1) / 2));
  EXPECT_EQ(s.mean(), 50'000.5);
  for (const double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    // nearest rank of p % over 1 … N is the value ⌈p/100 · N⌉ itself
    const double exact = std::ceil(p / 100.0 * kN - 1e-9);
    const Nanoseconds got = s.percentile(p);
    EXPECT_GE(static_cast<double>(got), exact) << "p" << p;  // highest value of the bucket
    EXPECT_LE(std::abs(static_cast<double>(got) - exact) / exact, kBucketRelativeError)
        << "p" << p << ": " << got;
  }
  EXPECT_EQ(s.percentile(100.0), kN);
  EXPECT_EQ(s.percentile(0.0), 1);
  EXPECT_EQ(s.percentile(150.0), kN);
  EXPECT_EQ(s.percentile(-3.0), 1);

  const HistogramSummary summary = s.summary();
  EXPECT_EQ(summary.count, static_cast<std::uint64_t>(kN));
  EXPECT_EQ(summary.min, 1);
  EXPECT_EQ(summary.max, kN);
  EXPECT_EQ(summary.mean, 50'000.5);
  EXPECT_EQ(summary.p50, s.percentile(50.0));
  EXPECT_EQ(summary.p90, s.percentile(90.0));
  EXPECT_EQ(summary.p99, s.percentile(99.0));
  EXPECT_EQ(summary.p999, s.percentile(99.9));
  EXPECT_LT(summary.p50, summary.p90);
  EXPECT_LT(summary.p90, summary.p99);
  EXPECT_LT(summary.p99, summary.p999);
  EXPECT_LE(summary.p999, summary.max);
}

TEST(LatencyHistogram, ValuesBelow128NsAreExact) {
  const auto h = makeHistogram();
  for (Nanoseconds v = 0; v < 100; ++v) h->record(v);  // 0 … 99
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.percentile(50.0), 49);
  EXPECT_EQ(s.percentile(90.0), 89);
  EXPECT_EQ(s.percentile(99.0), 98);
  EXPECT_EQ(s.percentile(1.0), 0);
  EXPECT_EQ(s.percentile(100.0), 99);
}

TEST(LatencyHistogram, MinAndMaxAreExactInsideWideBuckets) {
  const auto h = makeHistogram();
  h->record(123'457);
  h->record(9'876'543);
  h->record(5'555'555);
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.min(), 123'457);
  EXPECT_EQ(s.max(), 9'876'543);
  EXPECT_EQ(s.percentile(100.0), 9'876'543);
  // the max's bucket reaches above it: the percentile is clamped to the exact max
  EXPECT_GT(Layout::bucketHighest(Layout::bucketIndex(9'876'543)), 9'876'543);
  EXPECT_EQ(s.percentile(99.0), 9'876'543);
}

TEST(LatencyHistogram, NegativeDurationsCountAsZero) {
  const auto h = makeHistogram();
  h->record(-25);
  h->record(40);
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), 2u);
  EXPECT_EQ(s.min(), 0);
  EXPECT_EQ(s.max(), 40);
  EXPECT_EQ(s.sum(), 40u);
}

TEST(LatencyHistogram, ValuesAboveTenSecondsAreCountedInTheOverflowBucket) {
  const auto h = makeHistogram();
  constexpr Nanoseconds kSecond = kNanosecondsPerSecond;
  h->record(5);
  h->record(Layout::kMaxTrackable);      // still tracked
  h->record(Layout::kMaxTrackable + 1);  // overflow
  h->record(20 * kSecond);               // overflow
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), 4u);
  EXPECT_EQ(s.overflowCount(), 2u);
  EXPECT_EQ(s.bucketCount(Layout::bucketIndex(Layout::kMaxTrackable)), 1u);
  EXPECT_EQ(s.max(), 20 * kSecond);
  EXPECT_EQ(s.sum(), static_cast<std::uint64_t>(5 + 2 * Layout::kMaxTrackable + 1 + 20 * kSecond));
  EXPECT_EQ(s.percentile(100.0), 20 * kSecond);
  // the overflow bucket has no resolution: its percentiles report the exact max
  EXPECT_EQ(s.percentile(75.0), 20 * kSecond);
  const Nanoseconds p50 = s.percentile(50.0);
  EXPECT_EQ(p50, Layout::kMaxTrackable);  // the last tracked bucket ends at kMaxTrackable
}

TEST(LatencyHistogram, ResetEmptiesEverything) {
  const auto h = makeHistogram();
  for (Nanoseconds v = 1; v < 1000; ++v) h->record(v * kMicrosecond);
  h->reset();
  EXPECT_EQ(h->count(), 0u);
  HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), 0u);
  EXPECT_EQ(s.sum(), 0u);
  EXPECT_EQ(s.max(), 0);
  h->record(7);
  s = h->snapshot();
  EXPECT_EQ(s.count(), 1u);
  EXPECT_EQ(s.min(), 7);  // min did not stick at an old value
  EXPECT_EQ(s.max(), 7);  // nor max
}

// ------------------------------------------------------------------------------------------------
// Coordinated omission

TEST(LatencyHistogramCorrected, TenPeriodsRecordTheWholeLadder) {
  const auto h = makeHistogram();
  constexpr Nanoseconds kPeriod = kMillisecond;
  h->recordCorrected(10 * kPeriod, kPeriod);
  const HistogramSnapshot s = h->snapshot();
  ASSERT_EQ(s.count(), 10u);
  for (Nanoseconds k = 1; k <= 10; ++k) {
    EXPECT_EQ(s.bucketCount(Layout::bucketIndex(k * kPeriod)), 1u) << k << "P";
  }
  EXPECT_EQ(s.min(), kPeriod);
  EXPECT_EQ(s.max(), 10 * kPeriod);
  EXPECT_EQ(s.sum(), static_cast<std::uint64_t>(55 * kPeriod));
  // nearest rank 5 of 10 is 5P
  const Nanoseconds p50 = s.percentile(50.0);
  EXPECT_GE(p50, 5 * kPeriod);
  EXPECT_LE(p50, 5 * kPeriod + 5 * kPeriod / 100);
  EXPECT_LT(p50, 6 * kPeriod);
  // without correction the stall would be one sample and p50 the stall itself
  const auto plain = makeHistogram();
  plain->record(10 * kPeriod);
  EXPECT_EQ(plain->snapshot().percentile(50.0), 10 * kPeriod);
}

TEST(LatencyHistogramCorrected, PartialPeriodsAndShortLatencies) {
  constexpr Nanoseconds kPeriod = 1'000 * kMicrosecond;
  {
    // 2.5 P: the cycles due at +1 P and +2 P were 1.5 P and 0.5 P late
    const auto h = makeHistogram();
    h->recordCorrected(2 * kPeriod + kPeriod / 2, kPeriod);
    const HistogramSnapshot s = h->snapshot();
    EXPECT_EQ(s.count(), 3u);
    EXPECT_EQ(s.min(), kPeriod / 2);
    EXPECT_EQ(s.sum(), static_cast<std::uint64_t>(kPeriod / 2 * (5 + 3 + 1)));
  }
  {
    // at most one period late: nothing else was due
    const auto h = makeHistogram();
    h->recordCorrected(kPeriod / 3, kPeriod);
    h->recordCorrected(kPeriod, kPeriod);
    EXPECT_EQ(h->count(), 2u);
  }
  {
    // no (or a nonsensical) interval: no correction
    const auto h = makeHistogram();
    h->recordCorrected(50 * kPeriod, 0);
    h->recordCorrected(50 * kPeriod, -kPeriod);
    EXPECT_EQ(h->count(), 2u);
  }
}

TEST(LatencyHistogramCorrected, ExtraRecordsAreBounded) {
  const auto h = makeHistogram();
  h->recordCorrected(kNanosecondsPerSecond, 1);  // 10⁹ cycles of 1 ns "missed"
  const HistogramSnapshot s = h->snapshot();
  EXPECT_EQ(s.count(), 1u + LatencyHistogram::kMaxCorrectionRecords);
  EXPECT_EQ(s.max(), kNanosecondsPerSecond);
  EXPECT_EQ(s.min(), kNanosecondsPerSecond - LatencyHistogram::kMaxCorrectionRecords);
}

// ------------------------------------------------------------------------------------------------

TEST(HistogramSnapshot, MergeEqualsRecordingEverythingInOne) {
  const auto a = makeHistogram();
  const auto b = makeHistogram();
  const auto both = makeHistogram();
  std::mt19937_64 rng(3);
  std::lognormal_distribution<double> latency(std::log(20'000.0), 1.0);
  for (int k = 0; k < 20'000; ++k) {
    const auto v = static_cast<Nanoseconds>(latency(rng));
    (k % 3 == 0 ? *a : *b).record(v);
    both->record(v);
  }
  b->record(3);  // the smallest value lives in the merged-in side
  both->record(3);

  auto merged = std::make_unique<HistogramSnapshot>(a->snapshot());
  *merged += b->snapshot();
  const auto expected = std::make_unique<HistogramSnapshot>(both->snapshot());
  EXPECT_EQ(merged->count(), expected->count());
  EXPECT_EQ(merged->sum(), expected->sum());
  EXPECT_EQ(merged->min(), 3);
  EXPECT_EQ(merged->max(), expected->max());
  for (std::size_t i = 0; i < Layout::kBucketCount; ++i) {
    ASSERT_EQ(merged->bucketCount(i), expected->bucketCount(i)) << i;
  }
  for (const double p : {0.0, 50.0, 99.0, 99.9, 100.0}) {
    EXPECT_EQ(merged->percentile(p), expected->percentile(p)) << p;
  }

  // merging into an empty snapshot, and merging an empty one, change nothing else
  auto accumulated = std::make_unique<HistogramSnapshot>();
  *accumulated += *expected;
  *accumulated += HistogramSnapshot();
  EXPECT_EQ(accumulated->count(), expected->count());
  EXPECT_EQ(accumulated->min(), expected->min());
  EXPECT_EQ(accumulated->max(), expected->max());
  EXPECT_EQ(accumulated->mean(), expected->mean());
}

// ------------------------------------------------------------------------------------------------

TEST(LatencyHistogram, SnapshotsDuringWritesAreMonotoneAndSelfConsistent) {
  const auto h = makeHistogram();
  constexpr int kChunks = 30;
  constexpr int kRecordsPerChunk = 10'000;
  constexpr int kRecords = kChunks * kRecordsPerChunk;
  std::atomic<int> snapshots{0};
  std::atomic<bool> reader_done{false};
  std::thread writer([&] {
    for (int k = 1; k <= kRecords; ++k) {
      if (k % 1000 == 0) {
        h->recordCorrected(3 * kMillisecond, kMillisecond);  // 3, 2 and 1 ms
      } else {
        h->record(k % 50'000);
      }
      if (k % kRecordsPerChunk == 0) {
        // let the reader start a snapshot after this chunk, so that some certainly land between
        // chunks; the others overlap the writes
        const int target = snapshots.load(std::memory_order_acquire) + 2;
        while (snapshots.load(std::memory_order_acquire) < target &&
               !reader_done.load(std::memory_order_acquire)) {
          std::this_thread::yield();
        }
      }
    }
  });

  const std::uint64_t expected = kRecords + 2u * (kRecords / 1000);
  auto previous = std::make_unique<HistogramSnapshot>();
  auto current = std::make_unique<HistogramSnapshot>();
  int partial_snapshots = 0;  // taken while the writer was busy: 0 < count < expected
  while (previous->count() < expected && !HasFailure()) {
    *current = h->snapshot();
    snapshots.fetch_add(1, std::memory_order_release);
    if (current->count() > 0 && current->count() < expected) ++partial_snapshots;
    EXPECT_GE(current->count(), previous->count());
    std::size_t decreased = Layout::kBucketCount;
    for (std::size_t i = 0; i < Layout::kBucketCount && decreased == Layout::kBucketCount; ++i) {
      if (current->bucketCount(i) < previous->bucketCount(i)) decreased = i;
    }
    EXPECT_EQ(decreased, Layout::kBucketCount) << "a bucket count went down";
    if (current->count() > 0) {
      // min, max and sum cover every bucketed record (published with the bucket increment)
      std::size_t first = 0, last = Layout::kBucketCount - 1;
      while (current->bucketCount(first) == 0) ++first;
      while (current->bucketCount(last) == 0) --last;
      EXPECT_LE(current->min(), Layout::bucketHighest(first));
      EXPECT_GE(current->max(), Layout::bucketLowest(last));
      EXPECT_LE(current->min(), current->max());
      EXPECT_EQ(current->percentile(100.0), current->max());
      EXPECT_LE(current->percentile(50.0), current->max());
    }
    std::swap(previous, current);
  }
  reader_done.store(true, std::memory_order_release);
  writer.join();
  EXPECT_GE(partial_snapshots, kChunks - 1);
  const HistogramSnapshot final_snapshot = h->snapshot();
  EXPECT_EQ(final_snapshot.count(), expected);
  EXPECT_EQ(h->count(), expected);
  EXPECT_EQ(final_snapshot.sum(), previous->sum());
  EXPECT_EQ(final_snapshot.max(), 3 * kMillisecond);
  EXPECT_EQ(final_snapshot.min(), 1);  // k % 50'000 == 0 only where k % 1000 == 0
}

// ------------------------------------------------------------------------------------------------

TEST(AllocationCount, CountsOperatorNewInsideTheScopeOnly) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  int* volatile sink = nullptr;
  test::HeapCountingScope count;
  sink = new int(1);
  delete sink;
  {
    std::vector<double> v(100, 1.0);
    EXPECT_EQ(v.size(), 100u);  // no failure, so no gtest allocation inside the scope
  }
  const long inside = count.stop().allocations;
  sink = new int(2);
  delete sink;
  EXPECT_EQ(inside, 2);
  EXPECT_EQ(count.stop().allocations, 2);  // nothing counted after stop()
}

TEST(LatencyHistogram, RecordingAndSnapshottingAllocateNothing) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  const auto h = makeHistogram();
  auto s = std::make_unique<HistogramSnapshot>();
  test::HeapCountingScope count;
  for (Nanoseconds v = 0; v < 200'000; ++v) h->record(v * 97);
  h->record(-1);
  h->record(20 * kNanosecondsPerSecond);
  h->recordCorrected(50 * kMillisecond, kMillisecond);
  *s = h->snapshot();
  const HistogramSummary summary = s->summary();
  const long allocations = count.stop().allocations;
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(summary.count, 200'000u + 2u + 50u);
}

}  // namespace
}  // namespace hilsim::rt
