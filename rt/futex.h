// Linux futex wait/wake on a 32-bit atomic word: a blocking wait with a timeout for non-RT
// threads, and a wake that never blocks (one system call, made only when someone may wait).
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

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

/// Wakes every thread blocked in futexWait on `word`.
inline void futexWakeAll(std::atomic<std::uint32_t>& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

/// Tells the CPU that this is a spin-wait loop (x86 PAUSE): saves power and the pipeline flush
/// on exit, and leaves the sibling hyper-thread more room.
inline void cpuRelax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace hilsim::rt
