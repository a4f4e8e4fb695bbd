// Ctrl-C and `kill` for tools that own something on a server: while an InterruptGuard lives,
// SIGINT and SIGTERM set a flag instead of ending the process, so that the tool's loop can stop,
// close the sessions it created and report what it measured. A second signal ends the process
// as the default action would (a tool that does not answer can still be stopped).
#pragma once

namespace hilsim::client {

class InterruptGuard {
 public:
  /// Installs the handlers (one guard at a time); the destructor puts the previous ones back.
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  /// Whether SIGINT or SIGTERM arrived while a guard lived.
  static bool requested() noexcept;
  /// The signal that arrived (SIGINT or SIGTERM), 0 for none.
  static int signal() noexcept;
  /// "SIGINT" or "SIGTERM" (empty for none).
  static const char* signalName() noexcept;
  /// The shell's exit code for it: 128 + the signal (130 for SIGINT, 143 for SIGTERM).
  static int exitCode() noexcept;
  /// Forgets a signal that arrived (tests; a tool that goes on after handling one).
  static void clear() noexcept;
};

}  // namespace hilsim::client
