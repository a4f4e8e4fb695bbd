// How the `hilsim` CLI fails: its exit codes (docs/CLI.md) and the one-line error every command
// throws. At the bottom of client/cli: every command includes it, it includes nothing of the CLI.
#pragma once

#include <stdexcept>
#include <string>

namespace hilsim::cli {

/// Exit codes of `hilsim` (docs/CLI.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  ///< bad model, input file, output file, diverged run
inline constexpr int kExitUsage = 2;    ///< bad command line: unknown option/solver, dt <= 0, ...

/// A problem the CLI reports as one line on stderr, then exits with `exit_code`: kExitUsage for a
/// misuse of the command line (unknown solver, dt ≤ 0, ...), kExitFailure for everything else
/// (files, models, data).
class CliError : public std::runtime_error {
 public:
  explicit CliError(const std::string& message, int exit_code = kExitFailure)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exitCode() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace hilsim::cli
