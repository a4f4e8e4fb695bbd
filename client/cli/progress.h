// Progress of a long run on a terminal: one line on stderr, rewritten in place at most twice a
// second ("latency  3.5 / 10 s"), erased at the end. Nothing at all when stderr is not a
// terminal (piped, redirected, in tests), so logs and captured output stay clean.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

namespace hilsim::cli {

class Progress {
 public:
  /// `label` leads the line; `total` is the amount the run plans (seconds, steps). Shown only
  /// when stderr is a terminal.
  Progress(std::string label, double total, std::string unit);
  /// The same on `out`, shown when `enabled` (tests).
  Progress(std::string label, double total, std::string unit, std::ostream& out, bool enabled);
  ~Progress();  ///< erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Cheap when called often: redraws only when half a second has passed since the last time.
  void update(double done);

 private:
  void draw(double done);
  std::string label_, unit_;
  double total_;
  std::ostream* out_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point next_draw_;
};

}  // namespace hilsim::cli
