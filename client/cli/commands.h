// The commands of the `hilsim` CLI as library functions (docs/CLI.md is the contract). Each takes
// its options, writes its normal output to `out`, and throws CliError (or ModelError from the
// loaders) with a one-line message on any problem; app.h turns that into stderr + exit code.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>

#include <Eigen/Core>

#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/model/model.h"

namespace hilsim::cli {

/// Loads a model by path or bundled name (hilsim::loadModel); a CliError on failure.
/// The model a --model names, with the URDF options of --floating-base and --inertia (a URDF file
/// or a bundled URDF; a YAML model sets them itself). CliError on any problem.
std::shared_ptr<const Model> loadModelOrThrow(const std::string& path_or_name,
                                              const UrdfOptions& options = {});
/// --floating-base, --inertia (as_given, balance, strict; empty: as_given) and --massless (refuse,
/// weld, armature=<kg·m²>; empty: refuse); CliError (usage) on an unknown policy.
UrdfOptions urdfOptionsOrThrow(bool floating_base, const std::string& inertia,
                               const std::string& massless = "");

/// Parses a solver name ("aba", "crba"); CliError (exit code 2) for any other.
Formulation parseSolverOrThrow(const std::string& name);
/// Parses an integrator name ("euler", "rk4"); CliError (exit code 2) for any other.
Integrator parseIntegratorOrThrow(const std::string& name);

// ---------------------------------------------------------------------------------------------
// hilsim info

/// Writes the description of `model` as text, or as one JSON document when `json`. `source` (the
/// file it came from) is printed when not empty.
void writeModelInfo(const Model& model, bool json, std::ostream& out,
                    const std::string& source = "");

/// Path the model argument resolves to: the bundled model's file for a bundled name, else the
/// argument itself.
std::string modelSource(const std::string& path_or_name);

// ---------------------------------------------------------------------------------------------
// hilsim models

/// Lists the bundled models, default first, one per line: name and file (or "(not found)").
void writeBundledModels(std::ostream& out);

// ---------------------------------------------------------------------------------------------
// hilsim eval

/// Batch dynamics over a CSV file. Forward (inverse = false): rows q, v, τ → q̈ with `formulation`.
/// Inverse: rows q, v, q̈ → τ by RNEA. Input is read and checked in full (column count, numbers,
/// finiteness, quaternion norms within kQuaternionNormTol, which are then renormalised) before
/// `output_path` is written, so a bad input leaves no output file behind. Returns the row count.
int evalCsv(const Model& model, Formulation formulation, bool inverse,
            const std::string& input_path, const std::string& output_path);

// ---------------------------------------------------------------------------------------------
// hilsim simulate

struct SimulateOptions {
  Formulation formulation = Formulation::kAba;
  Integrator integrator = Integrator::kRk4;
  double dt = 1e-3;        ///< [s], > 0
  double duration = 1.0;   ///< [s], ≥ 0; steps = round(duration / dt)
  std::string q0;          ///< comma list of nq values; empty: neutral configuration
  std::string v0;          ///< comma list of nv values; empty: at rest
  std::string tau;         ///< comma list of nv joint forces held for the run; empty: zero
  std::string output;      ///< trajectory CSV; empty: none
  int threads = 1;         ///< threads of a parallel formulation (hdca), ≥ 1
};

struct SimulateSummary {
  long long steps = 0;
  double simulated_time = 0.0;        ///< [s]
  double wall_time = 0.0;             ///< [s] whole run, output included
  double step_time = 0.0;             ///< [s] inside Simulator::step only
  double initial_energy = 0.0;        ///< [J]
  double final_energy = 0.0;          ///< [J]
  double applied_work = 0.0;          ///< work of the joint forces over the run [J]
  double dissipated_energy = 0.0;     ///< energy the dampers took out over the run [J]
  Eigen::VectorXd q, v;               ///< final state
  long long rows_written = 0;         ///< trajectory rows (0 without output)
  double meanStepNs() const { return steps > 0 ? 1e9 * step_time / steps : 0.0; }
  double realtimeFactor() const { return step_time > 0 ? simulated_time / step_time : 0.0; }
  /// (E_final − E_initial) / |E_initial|, or NaN when |E_initial| < 1e-12 J.
  double relativeEnergyDrift() const;
};

/// Runs the simulation from (q0, v0) (default: the model's initial configuration at rest, assembled
/// when it has loops) under constant joint forces options.tau (default zero); writes the trajectory
/// (header t, q_…, v_…, energy; one row per step plus the initial state) when options.output is set.
/// Throws CliError on bad options, when a step leaves a loop open (the constraint stage's failure,
/// naming the closure) or when the state becomes non-finite.
SimulateSummary simulate(std::shared_ptr<const Model> model, const SimulateOptions& options);

/// Human-readable summary of a run.
void writeSimulateSummary(const Model& model, const SimulateOptions& options,
                          const SimulateSummary& summary, std::ostream& out);

/// Parses a comma list of exactly `expected` finite numbers for option `option_name`.
Eigen::VectorXd parseVectorOption(const std::string& text, int expected,
                                  const std::string& option_name);

}  // namespace hilsim::cli
