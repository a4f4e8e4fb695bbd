// Linux futex wait/wake on a 32-bit atomic word: a blocking wait with a timeout for non-RT
// threads, and a wake that never blocks (one system call, made only when someone may wait).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

#include "engine/parallel/executor.h"
#include "rt/clock.h"

namespace hilsim::rt {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "futex needs a plain 32-bit atomic word");

/// Blocks while `word` == `expected`, at most `timeout` ns (relative). Returns on a change, a
/// wake, the timeout or a signal; callers re-check their condition.
inline void futexWait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                      Nanoseconds timeout) noexcept {
  const timespec ts = toTimespec(timeout < 0 ? 0 : timeout);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

/// Blocks while `word` == `expected`, until the absolute CLOCK_MONOTONIC time `until` [ns]
/// (FUTEX_WAIT_BITSET: the same timer as clock_nanosleep with TIMER_ABSTIME, so a worker sleeping
/// to its next release can still be woken at once). Callers re-check their condition.
inline void futexWaitUntil(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                           Nanoseconds until) noexcept {
  const timespec ts = toTimespec(until < 0 ? 0 : until);
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_BITSET_PRIVATE, expected,
          &ts, nullptr, FUTEX_BITSET_MATCH_ANY);
}

/// Wakes every thread blocked in futexWait on `word`.
inline void futexWakeAll(std::atomic<std::uint32_t>& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

/// The engine's spin-wait hint (engine/parallel/executor.h), for rt's own spin loops.
inline void cpuRelax() noexcept { spinPause(); }

}  // namespace hilsim::rt
