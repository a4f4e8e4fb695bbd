// Text helpers the latency reports share (latency_report.cc, latency_svg.cc); internal to the
// client library.
#pragma once

#include <string>

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

}  // namespace hilsim::client::detail
