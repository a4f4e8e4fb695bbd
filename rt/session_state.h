// Session life cycle and pacing modes (ARCHITECTURE.md: modes are a contract).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hilsim::rt {

/// created → running ⇄ paused → stopped; any → faulted; reset → created.
enum class SessionState : std::uint8_t { kCreated, kRunning, kPaused, kStopped, kFaulted };

enum class SessionMode : std::uint8_t {
  kRealtime,  ///< paced by the wall clock, deadlines watched
  kLockstep,  ///< advances only on a command or a step request: deterministic
  kFree,      ///< as fast as possible
};

std::string_view sessionStateName(SessionState state);  ///< "created", "running", …
std::string_view sessionModeName(SessionMode mode);     ///< "realtime", "lockstep", "free"
std::optional<SessionMode> parseSessionMode(std::string_view name);

}  // namespace hilsim::rt
