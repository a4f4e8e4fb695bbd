#include "rt/jitter_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "rt/session.h"

namespace hilsim::rt {

namespace {

double ratio(Nanoseconds a, Nanoseconds b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

/// The cyclictest-style baseline: sleep to absolute deadlines and record how late each wake-up
/// is, with nothing else in the cycle. Same thread set-up as the hilsim phase.
void runBaselineBlock(const ProbeOptions& options, double seconds, LatencyHistogram& latency,
                      ProbePhase& phase) {
  std::thread thread([&] {
    applyThreadSetup(options.thread);
    const Nanoseconds period = static_cast<Nanoseconds>(std::llround(1e9 / options.rate));
    const auto cycles = static_cast<std::uint64_t>(std::llround(seconds * options.rate));
    Nanoseconds scheduled = monotonicNow() + period;
    for (std::uint64_t k = 0; k < cycles; ++k) {
      sleepUntil(scheduled);
      const Nanoseconds woke = monotonicNow();
      latency.recordCorrected(woke - scheduled, period);
      if (woke > scheduled + period) ++phase.deadline_misses;
      scheduled += period;
    }
    phase.cycles += cycles;
  });
  thread.join();
}

}  // namespace

ProbeReport runJitterProbe(const ProbeOptions& options) {
  ProbeReport report;
  report.options = options;
  report.host = describeHost();

  SessionConfig config;
  config.model = options.model;
  config.mode = SessionMode::kRealtime;
  config.control_rate = options.rate;
  config.substeps = options.substeps;
  config.formulation = options.formulation;
  config.integrator = options.integrator;
  config.thread = options.thread;
  config.overrun = OverrunPolicy::kSkip;
  config.name = "rt-probe";
  auto session = std::make_unique<Session>(config);
  auto baseline_latency = std::make_unique<LatencyHistogram>();

  // The two loops take turns in blocks of about a second, so that a slow spell of the host
  // falls on both rather than on one. Zero torque throughout: the watchdog stays unarmed and the
  // arm falls and swings.
  const int blocks = std::max(1, static_cast<int>(std::lround(options.duration)));
  const double block = options.duration / blocks;
  for (int b = 0; b < blocks; ++b) {
    if (b > 0 && options.stop_requested && options.stop_requested()) break;
    runBaselineBlock(options, block, *baseline_latency, report.baseline);
    if (b == 0) session->start();
    else session->resume();
    std::this_thread::sleep_for(std::chrono::duration<double>(block));
    session->pause();
  }
  session->stop();
  report.baseline.wakeup_latency = baseline_latency->summary();

  const SessionStats stats = session->stats();
  report.setup = session->setupReport();
  report.hilsim.wakeup_latency = stats.timing.wakeup_latency;
  report.hilsim.cycles = stats.timing.cycles;
  report.hilsim.deadline_misses = stats.timing.deadline_misses;
  report.hilsim.skipped_cycles = stats.timing.skipped_cycles;
  report.compute_time = stats.timing.compute_time;
  report.step_time = session->stepTime().summary();
  report.overhead = session->cycleOverhead().summary();
  report.p50_ratio = ratio(report.hilsim.wakeup_latency.p50, report.baseline.wakeup_latency.p50);
  report.p99_ratio = ratio(report.hilsim.wakeup_latency.p99, report.baseline.wakeup_latency.p99);
  report.p999_ratio =
      ratio(report.hilsim.wakeup_latency.p999, report.baseline.wakeup_latency.p999);
  return report;
}

}  // namespace hilsim::rt
