// Jitter probe: in one run, a bare clock_nanosleep loop (the cyclictest-style baseline of this
// host) and hilsim's real-time loop running a model, at the same rate and thread set-up, so that
// the loop's cost shows as a ratio against what the host itself allows (`hilsim rt-probe`).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/integrators/simulator.h"
#include "rt/histogram.h"
#include "rt/realtime_setup.h"

namespace hilsim::rt {

struct ProbeOptions {
  std::shared_ptr<const Model> model;
  std::string model_name;         ///< for the report
  double rate = 1000.0;           ///< [Hz]
  double duration = 5.0;          ///< per phase [s]
  int substeps = 1;
  Formulation formulation = Formulation::kAba;
  Integrator integrator = Integrator::kRk4;
  ThreadSetup thread;             ///< applied to both phases' threads
  /// Polled between the blocks of about a second the phases take turns in: true ends the probe
  /// there, with a report of what was measured (the CLI's Ctrl-C). Empty: never.
  std::function<bool()> stop_requested;
};

struct ProbePhase {
  HistogramSummary wakeup_latency;  ///< actual − scheduled wake-up [ns]
  std::uint64_t cycles = 0;
  std::uint64_t deadline_misses = 0;
  std::uint64_t skipped_cycles = 0;
};

struct ProbeReport {
  ProbeOptions options;
  std::string host;                   ///< describeHost()
  std::vector<SetupStep> setup;       ///< the RT thread's set-up, as applied in the hilsim phase
  ProbePhase baseline;                ///< bare clock_nanosleep loop
  ProbePhase hilsim;                  ///< the session's loop with the model
  HistogramSummary compute_time;      ///< hilsim: wake-up to end of cycle [ns]
  HistogramSummary step_time;         ///< hilsim: the engine's substeps [ns]
  HistogramSummary overhead;          ///< hilsim: compute − step, per cycle [ns]
  double p50_ratio = 0.0;             ///< hilsim / baseline wake-up latency
  double p99_ratio = 0.0;
  double p999_ratio = 0.0;

  static constexpr double kOverheadTargetNs = 2000.0;  ///< median loop overhead
  static constexpr double kP99RatioTarget = 1.2;       ///< hilsim p99 / baseline p99
  bool overheadTargetMet() const { return overhead.p50 <= kOverheadTargetNs; }
  bool p99TargetMet() const { return p99_ratio <= kP99RatioTarget; }
};

/// Runs the baseline, then the hilsim loop, each for options.duration. Blocks for about twice
/// that. Throws SessionError for invalid options.
ProbeReport runJitterProbe(const ProbeOptions& options);

}  // namespace hilsim::rt
