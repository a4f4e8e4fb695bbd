// The `hilsim` command line (CLI11): parses arguments, runs a command from commands.h, and turns
// every failure into one line on `err` and a non-zero exit code. The contract is docs/CLI.md.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "client/cli/errors.h"  // the exit codes

namespace hilsim::cli {

/// Runs `hilsim` with `args` (without the program name). Normal output goes to `out`; on failure
/// exactly one line "hilsim: error: <message>" goes to `err`. Never throws.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// The version string printed by `hilsim --version`.
std::string versionString();

}  // namespace hilsim::cli
