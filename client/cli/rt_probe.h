// hilsim rt-probe: prints a jitter-probe report (rt/jitter_probe.h) as text or JSON.
#pragma once

#include <ostream>

#include "rt/jitter_probe.h"

namespace hilsim::cli {

/// Text: host, set-up steps, the two percentile tables [µs], their ratios, the loop overhead,
/// deadline misses and whether the targets are met. JSON: the same as one document [ns].
void writeProbeReport(const rt::ProbeReport& report, bool json, std::ostream& out);

}  // namespace hilsim::cli
