#include "rt/session_state.h"

namespace hilsim::rt {

std::string_view sessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kCreated: return "created";
    case SessionState::kRunning: return "running";
    case SessionState::kPaused: return "paused";
    case SessionState::kStopped: return "stopped";
    case SessionState::kFaulted: return "faulted";
  }
  return "?";
}

std::string_view sessionModeName(SessionMode mode) {
  switch (mode) {
    case SessionMode::kRealtime: return "realtime";
    case SessionMode::kLockstep: return "lockstep";
    case SessionMode::kFree: return "free";
  }
  return "?";
}

std::optional<SessionMode> parseSessionMode(std::string_view name) {
  if (name == "realtime") return SessionMode::kRealtime;
  if (name == "lockstep") return SessionMode::kLockstep;
  if (name == "free") return SessionMode::kFree;
  return std::nullopt;
}

}  // namespace hilsim::rt
