// Text helpers the latency reports share (latency_report.cc, latency_svg.cc); internal to the
// client library.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "client/latency_report.h"

namespace hilsim::client::detail {

/// `value` printed with the printf `pattern` (one double conversion).
std::string format(const char* pattern, double value);

/// A duration in µs for labels, from nanoseconds: three significant digits.
std::string microsLabel(double ns);

/// `text` with &, <, > and " escaped for XML.
std::string xmlEscape(const std::string& text);

/// `text` in capitals (ASCII).
std::string upper(std::string text);

/// One line naming the run: "UDP, 1000 Hz, iiwa14 (realtime), server 127.0.0.1:50051".
std::string runTitle(const LatencyRunInfo& info);

// Axis scales of the SVG report (latency_svg.cc), declared here for the tests.

/// The smallest "nice" number, 1, 2, 2.5 or 5 × 10^k, at or above `value` (> 0).
double niceCeiling(double value);

/// Ticks 0 … niceCeiling(max) (max > 0) in 4 or 5 even steps, each step itself nice; steps of at least 1
/// when `integral` (counts).
std::vector<double> countTicks(double max, bool integral);

/// Labels for the ticks of one axis, all with as many decimals as the finest one needs (none when
/// all are integers): "50", "100", never "50.0" beside "100".
std::vector<std::string> tickLabels(std::span<const double> values);

}  // namespace hilsim::client::detail
