// Lock-free channel benchmarks: the single-producer/single-consumer queues Debian ships, compared
// for hilsim's command path, and rt/'s SpscQueue and TripleBuffer.
//
// Queues, each bounded to kCapacity messages and driven only through its non-blocking try calls:
//   boost         boost::lockfree::spsc_queue<T>, capacity set at run time
//   atomic_queue  atomic_queue::AtomicQueueB2<T, ..., SPSC = true> (rounds capacity up to ≥ 4096)
//   rwq           moodycamel::ReaderWriterQueue<T> with try_enqueue (which never grows it)
//   rwcb          moodycamel::BlockingReaderWriterCircularBuffer<T>
//   hilsim        hilsim::rt::SpscQueue<T> (the wrapper over the chosen one)
// Messages: cmd1k (a 1,048-byte torque command, as the RT loop receives) and msg64 (64 bytes).
//
// Benchmarks (two-thread ones pin the benchmark thread and its partner to the first two allowed
// CPUs when they can, report wall-clock time, and add the median over iterations as a counter,
// which a preempted partner thread does not skew):
//   round_trip/<queue>/<msg>    one thread: tryPush then tryPop, the uncontended cost of both
//   ping_pong/<queue>/<msg>     a message goes to an echo thread on the other core and back through
//                               a second queue; time per round trip (≈ 2 one-way latencies);
//                               counters p50_ns, p99_ns per round trip
//   stream/<queue>/<msg>        a producer thread pushes flat out, this thread pops kBatch
//                               messages per iteration; items/s is the sustained throughput,
//                               p50_items_per_s the same over the median batch
//   triple_buffer/write|read/<msg>    one thread: write(), or write() then read()
//   triple_buffer/read_under_writes/<msg>  read() while a thread on the other core writes flat out
//
// Run (docs/REALTIME.md quotes the medians over 10 repetitions):
//   build/bench/hilsim_channels_bench --benchmark_repetitions=10
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <atomic_queue/atomic_queue.h>
#include <boost/lockfree/spsc_queue.hpp>
#include <readerwriterqueue/readerwritercircularbuffer.h>
#include <readerwriterqueue/readerwriterqueue.h>

#include "rt/clock.h"
#include "rt/spsc_queue.h"
#include "rt/triple_buffer.h"

namespace hilsim::bench {
namespace {

/// A joint-torque command as the RT loop receives it (1,048 bytes).
struct Command1k {
  std::uint64_t seq;
  std::int64_t t;
  int n;
  std::array<double, 128> tau;
};

/// A small message: one cache line.
struct Message64 {
  std::uint64_t seq;
  std::array<double, 7> x;
};
static_assert(sizeof(Message64) == 64);

constexpr std::size_t kCapacity = 256;  // messages; what a command queue would be given
constexpr int kBatch = 1024;            // messages popped per stream iteration

// ---- one interface over the libraries -----------------------------------------------------------

template <typename T>
class BoostQueue {
 public:
  explicit BoostQueue(std::size_t capacity) : queue_(capacity) {}
  bool tryPush(const T& value) { return queue_.push(value); }
  bool tryPop(T& out) { return queue_.pop(out); }

 private:
  boost::lockfree::spsc_queue<T> queue_;
};

template <typename T>
class AtomicQueue {
 public:
  explicit AtomicQueue(std::size_t capacity) : queue_(static_cast<unsigned>(capacity)) {}
  bool tryPush(const T& value) { return queue_.try_push(value); }
  bool tryPop(T& out) { return queue_.try_pop(out); }

 private:
  // maximise throughput (spin with pause), no total order, single producer/consumer
  atomic_queue::AtomicQueueB2<T, std::allocator<T>, true, false, true> queue_;
};

template <typename T>
class ReaderWriterQueue {
 public:
  explicit ReaderWriterQueue(std::size_t capacity) : queue_(capacity) {}
  bool tryPush(const T& value) { return queue_.try_enqueue(value); }
  bool tryPop(T& out) { return queue_.try_dequeue(out); }

 private:
  moodycamel::ReaderWriterQueue<T> queue_;
};

template <typename T>
class CircularBuffer {
 public:
  explicit CircularBuffer(std::size_t capacity) : queue_(capacity) {}
  bool tryPush(const T& value) { return queue_.try_enqueue(value); }
  bool tryPop(T& out) { return queue_.try_dequeue(out); }

 private:
  moodycamel::BlockingReaderWriterCircularBuffer<T> queue_;
};

// ---- CPU pinning --------------------------------------------------------------------------------

/// The CPUs this process may run on, in increasing order.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool pinCurrentThread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/// Pins the calling (benchmark) thread to the first allowed CPU for its lifetime and tells the
/// partner thread which CPU to take; restores the original affinity on destruction.
class TwoCorePinning {
 public:
  TwoCorePinning() {
    CPU_ZERO(&saved_);
    const std::vector<int> cpus = allowedCpus();
    if (cpus.size() < 2 || pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) != 0) {
      return;
    }
    partner_cpu_ = cpus[1];
    pinned_ = pinCurrentThread(cpus[0]);
  }
  ~TwoCorePinning() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  }
  TwoCorePinning(const TwoCorePinning&) = delete;
  TwoCorePinning& operator=(const TwoCorePinning&) = delete;

  /// Called on the partner thread.
  void pinPartner() const {
    if (pinned_) pinCurrentThread(partner_cpu_);
  }
  const char* label() const { return pinned_ ? "pinned" : "unpinned"; }

 private:
  cpu_set_t saved_;
  int partner_cpu_ = -1;
  bool pinned_ = false;
};

// ---- per-iteration timing -----------------------------------------------------------------------

/// Durations of individual iterations [ns], in storage reserved up front. On a shared two-core
/// machine one preempted partner thread inflates the mean by microseconds; the median does not
/// move, so the two-thread benchmarks report it (and the 99th percentile) as counters.
class IterationTimes {
 public:
  explicit IterationTimes(std::size_t capacity) { samples_.reserve(capacity); }

  void add(rt::Nanoseconds duration) {
    if (samples_.size() < samples_.capacity()) samples_.push_back(duration);
  }

  /// The q-quantile (0 ≤ q ≤ 1) of the recorded durations [ns]; 0 if none.
  double quantile(double q) {
    if (samples_.empty()) return 0.0;
    const auto rank = static_cast<std::size_t>(q * static_cast<double>(samples_.size() - 1));
    std::nth_element(samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(rank),
                     samples_.end());
    return static_cast<double>(samples_[rank]);
  }

 private:
  std::vector<rt::Nanoseconds> samples_;
};

constexpr std::size_t kMaxSamples = std::size_t{1} << 21;

// ---- queue benchmarks ---------------------------------------------------------------------------

template <template <typename> class Queue, typename Message>
void roundTrip(benchmark::State& state) {
  Queue<Message> queue(kCapacity);
  Message in{}, out{};
  for (auto _ : state) {
    ++in.seq;
    benchmark::DoNotOptimize(queue.tryPush(in));
    benchmark::DoNotOptimize(queue.tryPop(out));
    benchmark::DoNotOptimize(out);  // keeps the whole copy alive, not just the fields we check
  }
  if (out.seq != in.seq) state.SkipWithError("lost a message");
}

template <template <typename> class Queue, typename Message>
void pingPong(benchmark::State& state) {
  auto to_echo = std::make_unique<Queue<Message>>(kCapacity);
  auto from_echo = std::make_unique<Queue<Message>>(kCapacity);
  std::atomic<bool> stop{false};
  TwoCorePinning pinning;
  std::thread echo([&] {
    pinning.pinPartner();
    Message message{};
    while (!stop.load(std::memory_order_relaxed)) {
      if (!to_echo->tryPop(message)) continue;
      while (!from_echo->tryPush(message)) {
      }
    }
  });
  Message ping{}, pong{};
  IterationTimes times(kMaxSamples);
  for (auto _ : state) {
    const rt::Nanoseconds start = rt::monotonicNow();
    ++ping.seq;
    while (!to_echo->tryPush(ping)) {
    }
    while (!from_echo->tryPop(pong)) {
    }
    benchmark::DoNotOptimize(pong);
    times.add(rt::monotonicNow() - start);
  }
  stop.store(true, std::memory_order_relaxed);
  echo.join();
  state.counters["p50_ns"] = times.quantile(0.5);
  state.counters["p99_ns"] = times.quantile(0.99);
  state.SetLabel(pinning.label());
  if (pong.seq != ping.seq) state.SkipWithError("the echo lost a message");
}

template <template <typename> class Queue, typename Message>
void stream(benchmark::State& state) {
  auto queue = std::make_unique<Queue<Message>>(kCapacity);
  std::atomic<bool> stop{false};
  TwoCorePinning pinning;
  std::thread producer([&] {
    pinning.pinPartner();
    Message message{};
    while (!stop.load(std::memory_order_relaxed)) {
      if (queue->tryPush(message)) ++message.seq;
    }
  });
  Message out{};
  std::uint64_t expected = 0;
  bool in_order = true;
  IterationTimes times(kMaxSamples);
  for (auto _ : state) {
    const rt::Nanoseconds start = rt::monotonicNow();
    for (int k = 0; k < kBatch; ++k) {
      while (!queue->tryPop(out)) {
      }
      benchmark::DoNotOptimize(out);
      in_order &= out.seq == expected++;
    }
    times.add(rt::monotonicNow() - start);
  }
  stop.store(true, std::memory_order_relaxed);
  producer.join();
  state.SetItemsProcessed(state.iterations() * kBatch);
  // messages per second over the median batch: robust to the partner being preempted
  const double median_batch_ns = times.quantile(0.5);
  state.counters["p50_items_per_s"] =
      median_batch_ns > 0.0 ? kBatch * 1e9 / median_batch_ns : 0.0;
  state.SetLabel(pinning.label());
  if (!in_order) state.SkipWithError("messages out of order");
}

// ---- triple buffer benchmarks -------------------------------------------------------------------

template <typename Message>
void tripleBufferWrite(benchmark::State& state) {
  auto buffer = std::make_unique<rt::TripleBuffer<Message>>();
  Message in{};
  for (auto _ : state) {
    ++in.seq;
    buffer->write(in);
    benchmark::ClobberMemory();
  }
}

template <typename Message>
void tripleBufferRead(benchmark::State& state) {
  auto buffer = std::make_unique<rt::TripleBuffer<Message>>();
  Message in{}, out{};
  for (auto _ : state) {
    ++in.seq;
    buffer->write(in);
    benchmark::DoNotOptimize(buffer->read(out));
    benchmark::DoNotOptimize(out);
  }
  if (out.seq != in.seq) state.SkipWithError("read a stale snapshot");
}

template <typename Message>
void tripleBufferReadUnderWrites(benchmark::State& state) {
  auto buffer = std::make_unique<rt::TripleBuffer<Message>>();
  std::atomic<bool> stop{false};
  TwoCorePinning pinning;
  std::thread writer([&] {
    pinning.pinPartner();
    Message message{};
    while (!stop.load(std::memory_order_relaxed)) {
      ++message.seq;
      buffer->write(message);
    }
  });
  Message out{};
  std::int64_t fresh = 0;
  for (auto _ : state) {
    fresh += buffer->read(out) ? 1 : 0;
    benchmark::DoNotOptimize(out);
  }
  stop.store(true, std::memory_order_relaxed);
  writer.join();
  state.counters["fresh"] =
      benchmark::Counter(static_cast<double>(fresh) / static_cast<double>(state.iterations()));
  state.SetLabel(pinning.label());
}

// ---- registration -------------------------------------------------------------------------------

template <template <typename> class Queue, typename Message>
void registerQueue(const std::string& queue, const std::string& message) {
  const std::string suffix = "/" + queue + "/" + message;
  benchmark::RegisterBenchmark(("round_trip" + suffix).c_str(), roundTrip<Queue, Message>);
  benchmark::RegisterBenchmark(("ping_pong" + suffix).c_str(), pingPong<Queue, Message>)
      ->UseRealTime();
  benchmark::RegisterBenchmark(("stream" + suffix).c_str(), stream<Queue, Message>)
      ->UseRealTime();
}

template <typename Message>
void registerAll(const std::string& message) {
  registerQueue<BoostQueue, Message>("boost", message);
  registerQueue<AtomicQueue, Message>("atomic_queue", message);
  registerQueue<ReaderWriterQueue, Message>("rwq", message);
  registerQueue<CircularBuffer, Message>("rwcb", message);
  registerQueue<rt::SpscQueue, Message>("hilsim", message);
  benchmark::RegisterBenchmark(("triple_buffer/write/" + message).c_str(),
                               tripleBufferWrite<Message>);
  benchmark::RegisterBenchmark(("triple_buffer/read/" + message).c_str(),
                               tripleBufferRead<Message>);
  benchmark::RegisterBenchmark(("triple_buffer/read_under_writes/" + message).c_str(),
                               tripleBufferReadUnderWrites<Message>)
      ->UseRealTime();
}

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  hilsim::bench::registerAll<hilsim::bench::Command1k>("cmd1k");
  hilsim::bench::registerAll<hilsim::bench::Message64>("msg64");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
