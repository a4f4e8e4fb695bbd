// What every example controller takes on its command line: the server, the access token and how
// long to run.
//
//   <program> [--server HOST:PORT] [--token TOKEN] [--duration SECONDS] [--help]
//
// Defaults: HILSIM_SERVER or 127.0.0.1:50051, HILSIM_ACCESS_TOKEN, the program's own duration.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace hilsim::examples {

struct ExampleOptions {
  std::string server = "127.0.0.1:50051";
  std::string token;
  double duration = 5.0;  ///< [s]
  bool help = false;      ///< --help or -h: print exampleUsage() and exit 0
};

/// The usage line.
inline std::string exampleUsage(const std::string& program) {
  return "usage: " + program + " [--server HOST:PORT] [--token TOKEN] [--duration SECONDS] [--help]";
}

/// A duration in (0, 86400] s from text; throws std::runtime_error naming the option.
inline double seconds(const std::string& text) {
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !(value > 0.0 && value <= 86400.0))
    throw std::runtime_error("--duration: expected seconds in (0, 86400], got '" + text + "'");
  return value;
}

/// Parses argv; throws std::runtime_error with the usage line or the bad option.
inline ExampleOptions parseExampleOptions(int argc, char** argv, const std::string& program,
                                          double default_duration) {
  ExampleOptions options;
  options.duration = default_duration;
  if (const char* server = std::getenv("HILSIM_SERVER")) options.server = server;
  if (const char* token = std::getenv("HILSIM_ACCESS_TOKEN")) options.token = token;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (k + 1 >= argc) throw std::runtime_error(exampleUsage(program));
    if (arg == "--server") options.server = argv[++k];
    else if (arg == "--token") options.token = argv[++k];
    else if (arg == "--duration") options.duration = seconds(argv[++k]);
    else throw std::runtime_error("unknown option '" + arg + "'");
  }
  return options;
}

/// "host" of "host:port" (the UDP port comes from the session).
inline std::string hostOf(const std::string& target) { return target.substr(0, target.rfind(':')); }

}  // namespace hilsim::examples
