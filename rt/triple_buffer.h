// A lock-free "latest value" channel between one producer and one consumer (the trio design):
// the producer publishes snapshots as fast as it likes, the consumer always reads the newest
// complete one, and older unread snapshots are silently replaced. Used for state snapshots, where
// only the newest matters (e.g. RT loop → streaming side).
//
// THREADING CONTRACT — exactly one producer thread and exactly one consumer thread:
//   producer only:  writeBuffer(), publish(), write()
//   consumer only:  update(), readBuffer(), read()
// The roles may move to another thread only across a synchronisation point (e.g. thread start).
//
// Real-time guarantees: no allocation after construction, no lock, no system call, no spinning;
// every call is wait-free (one atomic exchange at most). Neither side can delay the other.
//
// How it works: three slots. The producer owns one (the write slot), the consumer owns one (the
// read slot), and the third (the middle slot) is owned by the atomic `middle_`, which holds its
// index plus a "fresh" bit meaning "the middle slot holds a snapshot the consumer has not taken".
// publish() swaps the write slot with the middle one and sets fresh; update() swaps the read slot
// with the middle one if fresh is set and clears it. Each side only ever touches its own slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace hilsim::rt {

template <typename T>
class TripleBuffer {
  // Copying a snapshot must be a plain memory copy: it can neither allocate nor throw.
  static_assert(std::is_trivially_copyable_v<T>,
                "TripleBuffer values must be trivially copyable fixed-size structs");

 public:
  /// All three slots value-initialised: before the first publish the consumer reads T{}.
  TripleBuffer() = default;

  /// All three slots hold `initial`: before the first publish the consumer reads `initial`.
  explicit TripleBuffer(const T& initial) noexcept {
    for (Slot& slot : slots_) slot.value = initial;
  }

  TripleBuffer(const TripleBuffer&) = delete;
  TripleBuffer& operator=(const TripleBuffer&) = delete;
  TripleBuffer(TripleBuffer&&) = delete;
  TripleBuffer& operator=(TripleBuffer&&) = delete;

  // ---- producer thread ------------------------------------------------------------------------

  /// Producer only. The slot to fill in place; its content is whatever was there (an older
  /// snapshot), so overwrite every field. Valid until the next publish().
  T& writeBuffer() noexcept { return slots_[write_index_].value; }

  /// Producer only. Makes the write slot the newest snapshot; the producer gets a new write slot.
  void publish() noexcept {
    // acq_rel: release, so that our writes to the slot we hand over happen-before the consumer's
    // reads of it (it acquires in update()); acquire, because the slot we get back may be one the
    // consumer just released, and its last reads must happen-before our next writes to it.
    // (A release-only publish races there: the stress test under ThreadSanitizer reports it.)
    const auto handed_over = static_cast<std::uint8_t>(write_index_ | kFresh);
    const std::uint8_t previous = middle_.exchange(handed_over, std::memory_order_acq_rel);
    write_index_ = static_cast<std::uint8_t>(previous & kIndexMask);
  }

  /// Producer only. Copies `value` into the write slot and publishes it.
  void write(const T& value) noexcept {
    writeBuffer() = value;
    publish();
  }

  // ---- consumer thread ------------------------------------------------------------------------

  /// Consumer only. If a snapshot newer than readBuffer() was published, makes it the read slot
  /// and returns true; otherwise returns false and readBuffer() keeps its value.
  bool update() noexcept {
    // A relaxed peek is enough to decide: only the consumer clears the bit, so once seen set it
    // stays set until the exchange below, which is what synchronises. A stale "not fresh" merely
    // defers the snapshot to the next call.
    if ((middle_.load(std::memory_order_relaxed) & kFresh) == 0) return false;
    // acq_rel: acquire, so that the producer's writes to the slot we take happen-before our reads;
    // release, so that our reads of the slot we hand back happen-before the producer reuses it.
    const std::uint8_t previous = middle_.exchange(read_index_, std::memory_order_acq_rel);
    read_index_ = static_cast<std::uint8_t>(previous & kIndexMask);
    return true;
  }

  /// Consumer only. The newest snapshot as of the last update(); stable until the next update().
  const T& readBuffer() const noexcept { return slots_[read_index_].value; }

  /// Consumer only. update(), then copies readBuffer() into `out`. Returns whether the snapshot
  /// is new since the previous update/read; `out` is the latest snapshot either way.
  bool read(T& out) noexcept {
    const bool fresh = update();
    out = readBuffer();
    return fresh;
  }

 private:
  static constexpr std::uint8_t kIndexMask = 0b011;
  static constexpr std::uint8_t kFresh = 0b100;
  static constexpr std::size_t kCacheLine = 64;

  // One cache line (or more) per slot, so the two sides never share a line while copying.
  struct alignas(kCacheLine) Slot {
    T value{};
  };

  Slot slots_[3];
  alignas(kCacheLine) std::atomic<std::uint8_t> middle_{1};  // slot 1, nothing fresh
  alignas(kCacheLine) std::uint8_t write_index_ = 0;         // producer's private state
  alignas(kCacheLine) std::uint8_t read_index_ = 2;          // consumer's private state
};

}  // namespace hilsim::rt
