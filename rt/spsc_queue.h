// A bounded single-producer/single-consumer FIFO for fixed-size messages between the RT loop and
// one other thread (commands in, events out). A thin wrapper over boost::lockfree::spsc_queue,
// chosen over atomic_queue and moodycamel's queues by bench/channels_bench.cc and the RT
// properties in docs/REALTIME.md ("Channels").
//
// THREADING CONTRACT — exactly one producer thread and exactly one consumer thread:
//   producer only:  tryPush()
//   consumer only:  tryPop()
//   any thread:     capacity(), sizeApprox(), dropped()
// Two threads pushing (or two popping) at once corrupt the queue; nothing detects it. The roles
// may move to another thread only across a synchronisation point (e.g. thread start or join).
// Construct and destroy the queue while neither side is using it.
//
// Real-time guarantees: the storage is allocated once, in the constructor; tryPush and tryPop are
// wait-free (a bounded number of steps, no lock, no system call, no allocation) and never block
// or spin on the other side. A full queue rejects the message rather than growing.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include <boost/lockfree/spsc_queue.hpp>

namespace hilsim::rt {

template <typename T>
class SpscQueue {
  // Copying a message must be a plain memory copy: it can neither allocate nor throw.
  static_assert(std::is_trivially_copyable_v<T>,
                "SpscQueue elements must be trivially copyable fixed-size structs");
  // boost::lockfree::spsc_queue default-constructs one T in its destructor.
  static_assert(std::is_default_constructible_v<T>,
                "SpscQueue elements need a default constructor");

 public:
  /// Allocates room for exactly `capacity` messages (the only allocation). Not thread-safe: build
  /// the queue before handing it to the two threads. Throws std::invalid_argument if capacity is 0.
  explicit SpscQueue(std::size_t capacity)
      : queue_(checkedCapacity(capacity)), capacity_(capacity) {}

  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;
  SpscQueue(SpscQueue&&) = delete;
  SpscQueue& operator=(SpscQueue&&) = delete;

  /// Producer thread only. Copies `value` in and returns true; if the queue is full, leaves it
  /// unchanged, counts one drop and returns false.
  [[nodiscard]] bool tryPush(const T& value) noexcept {
    if (queue_.push(value)) return true;
    // Only the producer writes the counter, so a plain load+store suffices (no locked RMW).
    dropped_.store(dropped_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return false;
  }

  /// Consumer thread only. Copies the oldest message into `out`, removes it and returns true;
  /// returns false (leaving `out` untouched) if the queue is empty.
  [[nodiscard]] bool tryPop(T& out) noexcept { return queue_.pop(out); }

  /// Any thread. The number of messages the queue holds when full, as given to the constructor.
  std::size_t capacity() const noexcept { return capacity_; }

  /// Any thread. The number of queued messages at some recent instant; exact only when neither
  /// side is running. For monitoring, not for deciding whether tryPush/tryPop will succeed.
  std::size_t sizeApprox() const noexcept { return queue_.read_available(); }

  /// Any thread. How many tryPush calls found the queue full since construction.
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  static std::size_t checkedCapacity(std::size_t capacity) {
    if (capacity == 0) throw std::invalid_argument("SpscQueue capacity must be at least 1");
    return capacity;
  }

  // Aligned so that its producer and consumer indices never share a line with our neighbours.
  alignas(64) boost::lockfree::spsc_queue<T> queue_;
  const std::size_t capacity_;
  // Written by the producer on every drop: keep it off the consumer's index cache line.
  alignas(64) std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace hilsim::rt
