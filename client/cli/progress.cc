#include "client/cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace hilsim::cli {

namespace {
constexpr std::chrono::milliseconds kRedrawInterval{500};
}

Progress::Progress(std::string label, double total, std::string unit)
    : Progress(std::move(label), total, std::move(unit), std::cerr, ::isatty(STDERR_FILENO) == 1) {}

Progress::Progress(std::string label, double total, std::string unit, std::ostream& out,
                   bool enabled)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      out_(&out),
      enabled_(enabled),
      next_draw_(std::chrono::steady_clock::now() + kRedrawInterval) {}

Progress::~Progress() {
  if (drawn_) {
    *out_ << "\r\033[K" << std::flush;  // back to the line's start, erase it
  }
}

void Progress::update(double done) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_draw_) return;
  next_draw_ = now + kRedrawInterval;
  draw(done);
}

void Progress::draw(double done) {
  char line[160];
  const double percent = total_ > 0.0 ? 100.0 * done / total_ : 0.0;
  std::snprintf(line, sizeof line, "\r%s  %.4g / %.4g %s (%.0f %%)\033[K", label_.c_str(), done,
                total_, unit_.c_str(), percent);
  *out_ << line << std::flush;
  drawn_ = true;
}

}  // namespace hilsim::cli
