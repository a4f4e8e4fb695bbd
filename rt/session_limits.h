// The bounds of a session's rate and substeps, in one place for every boundary that checks them:
// the session core, the server's configuration file and requests, the command line.
#pragma once

#include <string>

namespace hilsim::rt {

inline constexpr double kMinControlRate = 100.0;     ///< [Hz]
inline constexpr double kMaxControlRate = 10'000.0;  ///< [Hz]
inline constexpr int kMaxSubsteps = 1000;            ///< integrator steps per control cycle

/// Whether `hz` is a control rate a session runs at (false for NaN)
constexpr bool controlRateAllowed(double hz) {
  return hz >= kMinControlRate && hz <= kMaxControlRate;
}
constexpr bool substepsAllowed(long long substeps) {
  return substeps >= 1 && substeps <= kMaxSubsteps;
}

/// "100 to 10000 Hz", "1 to 1000": the ranges as messages give them (`to` the word between)
inline std::string controlRateRange(const char* to = "to") {
  return std::to_string(static_cast<int>(kMinControlRate)) + " " + to + " " +
         std::to_string(static_cast<int>(kMaxControlRate)) + " Hz";
}
inline std::string substepsRange(const char* to = "to") {
  return "1 " + std::string(to) + " " + std::to_string(kMaxSubsteps);
}

}  // namespace hilsim::rt
