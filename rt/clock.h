// Monotonic time for the real-time loop: nanoseconds on CLOCK_MONOTONIC, which never steps with
// NTP or settimeofday (unlike the system clock).
#pragma once

#include <cerrno>
#include <cstdint>
#include <ctime>

namespace hilsim::rt {

/// A point in time or a duration on CLOCK_MONOTONIC [ns].
using Nanoseconds = std::int64_t;

constexpr Nanoseconds kNanosecondsPerSecond = 1'000'000'000;

/// Now on CLOCK_MONOTONIC [ns]. A vDSO call: no system call, safe on the RT thread.
inline Nanoseconds monotonicNow() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanoseconds>(ts.tv_sec) * kNanosecondsPerSecond + ts.tv_nsec;
}

inline timespec toTimespec(Nanoseconds t) noexcept {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(t / kNanosecondsPerSecond);
  ts.tv_nsec = static_cast<long>(t % kNanosecondsPerSecond);
  return ts;
}

/// Sleeps until the absolute time `t` on CLOCK_MONOTONIC (TIMER_ABSTIME, so that a late wake-up
/// never shifts later deadlines); restarts after signals. Returns at once if `t` has passed.
inline void sleepUntil(Nanoseconds t) noexcept {
  const timespec ts = toTimespec(t);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

}  // namespace hilsim::rt
