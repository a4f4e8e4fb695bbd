#include "client/cli/app.h"

#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
#include <new>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "client/cli/commands.h"
#include "client/cli/latency.h"
#include "client/cli/rt_probe.h"
#include "client/cli/session_commands.h"
#include "client/cli/text.h"
#include "client/interrupt.h"
#include "engine/formulations/formulations.h"
#include "engine/io/model_loader.h"
#include "rt/session_limits.h"

#ifndef HILSIM_VERSION
#define HILSIM_VERSION "unknown"
#endif

namespace hilsim::cli {
namespace {

/// Parses a number option given as text, so that "abc", "nan" and "1e999" all get the same clear
/// message (CLI11 would accept "nan").
double numberOption(const std::string& text, const std::string& option_name) {
  const auto value = parseNumber(text);
  if (!value) throw CliError(option_name + ": not a number: '" + text + "'", kExitUsage);
  if (!std::isfinite(*value)) throw CliError(option_name + ": not finite: '" + text + "'", kExitUsage);
  return *value;
}

std::string environmentOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

/// The server options' defaults, overridden by HILSIM_SERVER, HILSIM_ACCESS_TOKEN and
/// HILSIM_OWNER_SECRET.
ServerOptions serverOptionsFromEnvironment() {
  ServerOptions server;
  server.server = environmentOr("HILSIM_SERVER", server.server);
  server.client.access_token = environmentOr("HILSIM_ACCESS_TOKEN", "");
  server.client.owner_secret = environmentOr("HILSIM_OWNER_SECRET", "");
  return server;
}

/// --server, --token, --tls, --tls-ca and --json of the commands that talk to a server.
void addServerOptions(CLI::App* command, ServerOptions& server) {
  command->add_option("--server", server.server,
                      "Server's gRPC address host:port (env HILSIM_SERVER)")
      ->capture_default_str();
  command->add_option("--token", server.client.access_token,
                      "Access token sent as 'authorization: Bearer' (env HILSIM_ACCESS_TOKEN)");
  command->add_option("--owner-secret", server.client.owner_secret,
                      "Owner secret of the session acted on, as 'session create' printed it, or "
                      "the server's operator secret (env HILSIM_OWNER_SECRET)");
  command->add_flag("--tls", server.client.tls, "Connect with TLS (system root certificates)");
  command->add_option("--tls-ca", server.client.tls_root_ca_file,
                      "Root certificate (PEM) to check the server's TLS certificate; "
                      "implies --tls");
  command->add_flag("--json", server.json, "Print the response message as JSON");
}

/// `server` as given, with TLS switched on when --tls-ca names a root certificate.
ServerOptions withImpliedTls(ServerOptions server) {
  if (!server.client.tls_root_ca_file.empty()) server.client.tls = true;
  return server;
}

std::string defaultModelOrEmpty() {
  try {
    return defaultModelName();
  } catch (...) {
    return "iiwa14";
  }
}

/// A (sub)command: its CLI11 app, and what runs when the command line selected it. `run` owns the
/// values the options write to, so they outlive the parse.
struct Command {
  CLI::App* app;
  std::function<void(std::ostream& out)> run;
};

/// Runs the first command the command line selected (CLI11 allows exactly one per level).
void runSelected(const std::vector<Command>& commands, std::ostream& out) {
  for (const Command& command : commands) {
    if (!command.app->parsed()) continue;
    command.run(out);
    return;
  }
}

/// --floating-base, --inertia and --massless: how a URDF model is read (docs/MODEL_FORMAT.md).
struct UrdfArgs {
  bool floating_base = false;
  std::string inertia;
  std::string massless;

  UrdfOptions options() const { return urdfOptionsOrThrow(floating_base, inertia, massless); }
};

void addUrdfOptions(CLI::App* command, bool& floating_base, std::string& inertia,
                    std::string& massless) {
  command->add_flag("--floating-base", floating_base,
                    "A URDF's root link on a free joint (a YAML model says so itself)");
  command->add_option("--inertia", inertia,
                      "A URDF link whose principal moments break the triangle inequality: "
                      "as_given (default, with a warning), balance or strict")
      ->type_name("POLICY");
  command->add_option("--massless", massless,
                      "A URDF joint whose links have no mass: refuse (default), weld, or "
                      "armature=<kg·m²> added to it")
      ->type_name("POLICY");
}

void addUrdfOptions(CLI::App* command, UrdfArgs& args) {
  addUrdfOptions(command, args.floating_base, args.inertia, args.massless);
}

// hilsim info
Command addInfoCommand(CLI::App& app) {
  struct Args {
    std::string model;
    bool json = false;
    UrdfArgs urdf;
  };
  auto args = std::make_shared<Args>();
  CLI::App* info = app.add_subcommand("info", "Describe a model: sizes, mass, gravity, joints");
  info->add_option("-m,--model", args->model, "Model file (.urdf, .yaml) or bundled model name")
      ->required();
  info->add_flag("--json", args->json, "Print one JSON document instead of text");
  addUrdfOptions(info, args->urdf);
  return {info, [args](std::ostream& out) {
            const auto model = loadModelOrThrow(
                args->model, args->urdf.options());
            writeModelInfo(*model, args->json, out, modelSource(args->model));
          }};
}

// hilsim models
Command addModelsCommand(CLI::App& app) {
  CLI::App* models = app.add_subcommand("models", "List the bundled models (default first)");
  return {models, [](std::ostream& out) { writeBundledModels(out); }};
}

// hilsim eval
Command addEvalCommand(CLI::App& app, const std::string& solver_help) {
  struct Args {
    std::string model, solver = "aba", input, output;
    bool inverse = false;
    UrdfArgs urdf;
  };
  auto args = std::make_shared<Args>();
  CLI::App* eval = app.add_subcommand(
      "eval", "Batch dynamics over a CSV file: rows q,v,tau -> qdd (or q,v,qdd -> tau)");
  eval->add_option("-m,--model", args->model, "Model file or bundled model name")->required();
  eval->add_option("-s,--solver", args->solver, solver_help)
      ->capture_default_str();
  eval->add_option("-i,--input", args->input, "Input CSV (header row, then q, v, tau per row)")
      ->required();
  eval->add_option("-o,--output", args->output, "Output CSV (header row, then qdd or tau per row)")
      ->required();
  eval->add_flag("--inverse", args->inverse,
                 "Inverse dynamics (RNEA): rows q, v, qdd -> tau; --solver is ignored");
  addUrdfOptions(eval, args->urdf);
  return {eval, [args](std::ostream& out) {
            const Formulation formulation = parseSolverOrThrow(args->solver);
            const auto model = loadModelOrThrow(
                args->model, args->urdf.options());
            const int rows =
                evalCsv(*model, formulation, args->inverse, args->input, args->output);
            // what was written where: the output file holds only the numbers
            out << "wrote " << rows << (rows == 1 ? " row" : " rows") << " of "
                << (args->inverse ? "tau (rnea)" : "qdd (" + std::string(formulationName(formulation)) + ")")
                << ", " << model->nv << " columns each, to " << args->output << "\n";
          }};
}

/// The options of hilsim simulate as typed; numbers stay text until checked.
struct SimulateArgs {
  std::string model = defaultModelOrEmpty(), solver = "aba", integrator = "rk4";
  std::string dt = "0.001", duration = "1.0", output, q0, v0, tau;
  int threads = 1;
  UrdfArgs urdf;
};

void runSimulateCommand(const SimulateArgs& args, std::ostream& out) {
  SimulateOptions options;
  options.formulation = parseSolverOrThrow(args.solver);
  options.integrator = parseIntegratorOrThrow(args.integrator);
  options.dt = numberOption(args.dt, "--dt");
  options.duration = numberOption(args.duration, "--duration");
  options.q0 = args.q0;
  options.v0 = args.v0;
  options.tau = args.tau;
  options.output = args.output;
  options.threads = args.threads;
  if (options.threads < 1 || options.threads > 256)
    throw CliError("--threads must be 1 to 256, got " + std::to_string(args.threads), kExitUsage);
  if (options.dt <= 0.0) throw CliError("--dt must be > 0, got " + args.dt, kExitUsage);
  if (options.duration < 0.0) {
    throw CliError("--duration must be >= 0, got " + args.duration, kExitUsage);
  }
  const auto model =
      loadModelOrThrow(args.model, args.urdf.options());
  const SimulateSummary summary = simulate(model, options);
  writeSimulateSummary(*model, options, summary, out);
}

// hilsim simulate
Command addSimulateCommand(CLI::App& app, const std::string& solver_help) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* sim = app.add_subcommand(
      "simulate",
      "Simulate from rest under constant joint forces (zero unless --tau); print a timing/energy "
      "summary");
  sim->add_option("-m,--model", args->model, "Model file or bundled model name")
      ->capture_default_str();
  addUrdfOptions(sim, args->urdf);
  sim->add_option("-s,--solver", args->solver, solver_help)
      ->capture_default_str();
  sim->add_option("-I,--integrator", args->integrator,
                  "Integrator: rk4, euler (semi-implicit) or imex_euler (models with massless "
                  "bodies)")
      ->capture_default_str();
  sim->add_option("--dt", args->dt, "Time step [s], > 0")
      ->capture_default_str()
      ->type_name("SECONDS");
  sim->add_option("-T,--duration", args->duration, "Simulated time [s], >= 0")
      ->capture_default_str()
      ->type_name("SECONDS");
  sim->add_option("-o,--output", args->output, "Trajectory CSV: t, q..., v..., energy per step");
  sim->add_option("--q0", args->q0, "Initial configuration: nq comma-separated values")
      ->type_name("LIST");
  sim->add_option("--v0", args->v0, "Initial velocity: nv comma-separated values")
      ->type_name("LIST");
  sim->add_option("--tau", args->tau,
                  "Joint forces held for the whole run: nv comma-separated values [N m or N]")
      ->type_name("LIST");
  sim->add_option("-j,--threads", args->threads,
                  "Threads per evaluation of a parallel solver (hdca); results are the same for "
                  "every count")
      ->capture_default_str();
  return {sim, [args](std::ostream& out) { runSimulateCommand(*args, out); }};
}

/// The options of hilsim rt-probe as typed; rate and duration stay text until checked.
struct ProbeArgs {
  std::string model = defaultModelOrEmpty(), rate = "1000", duration = "5";
  std::string solver = "aba", integrator = "rk4";
  int substeps = 1, priority = 0, cpu = -1;
  bool json = false, no_mlock = false;
};

void runProbeCommand(const ProbeArgs& args, std::ostream& out) {
  // the session's log lines go to stderr: stdout carries the report (or the JSON document)
  spdlog::set_default_logger(spdlog::stderr_color_mt("hilsim"));
  rt::ProbeOptions options;
  options.rate = numberOption(args.rate, "--rate");
  options.duration = numberOption(args.duration, "--duration");
  if (!rt::controlRateAllowed(options.rate)) {
    throw CliError("--rate must be within " + rt::controlRateRange() + ", got " + args.rate,
                   kExitUsage);
  }
  if (options.duration <= 0.0 || options.duration > 3600.0) {
    throw CliError("--duration must be > 0 and at most 3600 s, got " + args.duration, kExitUsage);
  }
  if (!rt::substepsAllowed(args.substeps)) {
    throw CliError("--substeps must be within " + rt::substepsRange(), kExitUsage);
  }
  if (args.priority < 0 || args.priority > 99) {
    throw CliError("--priority must be within 0 to 99", kExitUsage);
  }
  options.formulation = parseSolverOrThrow(args.solver);
  options.integrator = parseIntegratorOrThrow(args.integrator);
  options.substeps = args.substeps;
  options.thread.lock_memory = !args.no_mlock;
  options.thread.fifo_priority = args.priority;
  options.thread.cpu = args.cpu;
  options.model = loadModelOrThrow(args.model);
  options.model_name = args.model;
  if (::isatty(STDERR_FILENO) == 1) {  // on a terminal, what the wait is for; quiet when piped
    std::cerr << "rt-probe: two phases of " << args.duration
              << " s (bare clock_nanosleep loop, then hilsim's loop on " << args.model << ")…\n";
  }
  // Ctrl-C: the probe ends after its current block of about a second and reports what it has
  const client::InterruptGuard interrupts;
  options.stop_requested = [] { return client::InterruptGuard::requested(); };
  writeProbeReport(rt::runJitterProbe(options), args.json, out);
  if (client::InterruptGuard::requested()) {
    throw CliError(std::string("interrupted by ") + client::InterruptGuard::signalName() +
                       "; the report covers the blocks measured until then",
                   client::InterruptGuard::exitCode());
  }
}

// hilsim rt-probe
Command addProbeCommand(CLI::App& app, const std::string& solver_help) {
  auto args = std::make_shared<ProbeArgs>();
  CLI::App* probe = app.add_subcommand(
      "rt-probe",
      "Measure wake-up jitter: a bare clock_nanosleep loop, then hilsim's real-time loop on a "
      "model, at the same rate; print both, their ratio and the loop overhead");
  probe->add_option("-r,--rate", args->rate, "Control rate, " + rt::controlRateRange())
      ->capture_default_str()
      ->type_name("HZ");
  probe->add_option("-T,--duration", args->duration, "Seconds per phase, > 0")
      ->capture_default_str()
      ->type_name("SECONDS");
  probe->add_option("-m,--model", args->model, "Model file or bundled model name")
      ->capture_default_str();
  probe->add_option("--substeps", args->substeps, "Physics steps per control cycle")
      ->capture_default_str();
  probe->add_option("-s,--solver", args->solver, solver_help)
      ->capture_default_str();
  probe->add_option("-I,--integrator", args->integrator, "Integrator: rk4, euler or imex_euler")
      ->capture_default_str();
  probe->add_option("--priority", args->priority,
                    "SCHED_FIFO priority 1-99 for both loops (0: normal scheduling)")
      ->capture_default_str();
  probe->add_option("--cpu", args->cpu, "Pin both loops to this CPU (-1: no pinning)")
      ->capture_default_str();
  probe->add_flag("--no-mlock", args->no_mlock, "Do not lock memory (mlockall)");
  probe->add_flag("--json", args->json, "Print one JSON document (times in ns)");
  return {probe, [args](std::ostream& out) { runProbeCommand(*args, out); }};
}

/// The options of all hilsim session commands (each parse fills those of one command).
struct SessionArgs {
  ServerOptions server = serverOptionsFromEnvironment();
  CreateOptions create;
  std::string create_rate, create_idle_timeout, id;
  StepSetPoints step_set_points;
  std::uint32_t steps = 1;
  std::string fault;           // session fault SPEC
  std::uint32_t fault_id = 0;  // session clear-faults [ID]
};

// hilsim session create
Command addSessionCreateCommand(CLI::App& session, const std::shared_ptr<SessionArgs>& args,
                                const std::string& solver_help) {
  CreateOptions& create = args->create;
  CLI::App* command = session.add_subcommand("create", "Create a session");
  command->add_option("-m,--model", create.model,
                      "A model the server has (bundled or in its models.directory), or a "
                      ".urdf, .yaml or .yml file here, sent to it")
      ->required();
  command->add_option("-n,--name", create.name,
                      "Session name, for the other session commands (default: session-<id>)");
  addUrdfOptions(command, create.floating_base, create.inertia, create.massless);
  command->add_option("--idle-timeout", args->create_idle_timeout,
                      "Lease: the server closes the session after this long unused [s]; 0: "
                      "never (default: the server's session_defaults)")
      ->type_name("SECONDS");
  command->add_option("--mode", create.mode, "realtime, lockstep or free")
      ->capture_default_str();
  command->add_option("-r,--rate", args->create_rate,
                      "Control rate, " + rt::controlRateRange() + " (default: the server's)")
      ->type_name("HZ");
  command->add_option("--substeps", create.substeps,
                      "Physics steps per control cycle, " + rt::substepsRange() +
                          " (default: the server's)");
  command->add_option("-s,--solver", create.solver, solver_help);
  command->add_option("-j,--threads", create.threads,
                      "Threads per evaluation of a parallel solver (hdca), 1 to 64 (default: the "
                      "server's, 1)");
  command->add_option("-I,--integrator", create.integrator, "rk4, euler or imex_euler");
  command->add_option("--watchdog", create.watchdog, "hold, zero, damping or fault");
  command->add_option("--drive", create.drives,
                      "A joint's command interface (repeatable): JOINT=effort, "
                      "JOINT=position:kp=K,kd=D or JOINT=velocity:kd=D[,ki=I]; JOINT * for "
                      "every revolute, prismatic and planar joint not named (docs/REALISM.md)")
      ->type_name("SPEC");
  command->add_option("--actuator", create.actuators,
                      "A joint's actuator model (repeatable): JOINT:time_constant=T,delay=D,"
                      "resolution=R,ripple=A,ripple_period=P, any of them [s, N·m or N, rad or m]; "
                      "JOINT * for every joint not named (docs/REALISM.md)")
      ->type_name("SPEC");
  command->add_option("--fault", create.faults,
                      "A scheduled fault (repeatable): TYPE[@JOINT][:start=S,duration=D,rate=R,"
                      "burst=B,cycles=C,value=V] [s of simulation time, control cycles]; TYPE "
                      "drop_commands, delay_commands, drop_states, delay_states, freeze_sensor, "
                      "offset_sensor, lock_joint, free_joint, cut_drive, stall (docs/REALISM.md)")
      ->type_name("SPEC");
  command->add_option("--fault-seed", create.fault_seed, "Seed of the faults' drops")
      ->type_name("N");
  command->add_option("--max-fault-delay", create.max_fault_delay,
                      "Longest delay an injected fault may ask for, 0 to 1000 [control cycles]")
      ->type_name("CYCLES");
  command->add_flag("--start", create.start, "Start the session at once");
  addServerOptions(command, args->server);
  return {command, [args](std::ostream& out) {
            CreateOptions options = args->create;
            if (!args->create_rate.empty()) {
              options.rate = numberOption(args->create_rate, "--rate");
            }
            if (!args->create_idle_timeout.empty()) {
              options.idle_timeout = numberOption(args->create_idle_timeout, "--idle-timeout");
            }
            sessionCreate(withImpliedTls(args->server), options, out);
          }};
}

// hilsim session start|pause|stop|reset|close|get|stats ID
Command addSessionIdCommand(CLI::App& session, const std::shared_ptr<SessionArgs>& args,
                            const std::string& action) {
  const std::string help =
      action == "get"     ? "Show a session: configuration, model, newest state"
      : action == "stats" ? "Show a session's statistics"
      : action == "close" ? "Stop and remove a session; print its final statistics"
                          : "Send " + action + " to a session";
  CLI::App* command = session.add_subcommand(action, help);
  command->add_option("SESSION", args->id, "Session id or name")->required();
  addServerOptions(command, args->server);
  return {command, [args, action](std::ostream& out) {
            const ServerOptions server = withImpliedTls(args->server);
            const std::uint64_t id = resolveSession(server, args->id);
            if (action == "get") sessionGet(server, id, out);
            else if (action == "stats") sessionStats(server, id, out);
            else sessionAction(server, action, id, out);
          }};
}

// hilsim session …
Command addSessionCommand(CLI::App& app, const std::string& solver_help) {
  auto args = std::make_shared<SessionArgs>();
  CLI::App* session = app.add_subcommand(
      "session", "Manage a server's sessions: create, start, pause, stop, reset, close, step, "
                 "fault, clear-faults, list, get, stats");
  session->require_subcommand(1);
  std::vector<Command> commands = {addSessionCreateCommand(*session, args, solver_help)};
  for (const char* action : {"start", "pause", "stop", "reset", "close", "get", "stats"}) {
    commands.push_back(addSessionIdCommand(*session, args, action));
  }
  CLI::App* step = session->add_subcommand(
      "step", "Advance a lockstep session by N control cycles and print its state");
  step->add_option("SESSION", args->id, "Session id or name")->required();
  step->add_option("N", args->steps, "Control cycles, 1 to the server's limits.max_step_cycles")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  step->add_option("--tau", args->step_set_points.tau,
                   "Joint forces (feed-forward on position and velocity joints) for those "
                   "cycles: nv comma-separated values [N·m, N] (default: zeros)");
  step->add_option("--position", args->step_set_points.position,
                   "Position set-points of the joints with a position interface: nv "
                   "comma-separated values, v order [rad, m]");
  step->add_option("--velocity", args->step_set_points.velocity,
                   "Velocity set-points of the joints with a velocity interface (velocity "
                   "feed-forward on position joints): nv comma-separated values [rad/s, m/s]");
  addServerOptions(step, args->server);
  commands.push_back({step, [args](std::ostream& out) {
                        const ServerOptions server = withImpliedTls(args->server);
                        sessionStep(server, resolveSession(server, args->id), args->steps,
                                    args->step_set_points, out);
                      }});
  CLI::App* fault = session->add_subcommand(
      "fault", "Inject a fault into a session (from its next cycle unless start= says later)");
  fault->add_option("SESSION", args->id, "Session id or name")->required();
  fault->add_option("SPEC", args->fault,
                    "TYPE[@JOINT][:start=S,duration=D,rate=R,burst=B,cycles=C,value=V] "
                    "(docs/REALISM.md, \"Fault injection\")")
      ->required();
  addServerOptions(fault, args->server);
  commands.push_back({fault, [args](std::ostream& out) {
                        const ServerOptions server = withImpliedTls(args->server);
                        sessionFault(server, resolveSession(server, args->id), args->fault, out);
                      }});
  CLI::App* clear = session->add_subcommand(
      "clear-faults", "End a session's fault ID, or every fault, at its next cycle");
  clear->add_option("SESSION", args->id, "Session id or name")->required();
  clear->add_option("ID", args->fault_id, "The fault's id (default: every fault)");
  addServerOptions(clear, args->server);
  commands.push_back({clear, [args](std::ostream& out) {
                        const ServerOptions server = withImpliedTls(args->server);
                        sessionClearFaults(server, resolveSession(server, args->id),
                                           args->fault_id, out);
                      }});
  CLI::App* list = session->add_subcommand("list", "List the server's sessions");
  addServerOptions(list, args->server);
  commands.push_back({list, [args](std::ostream& out) {
                        sessionList(withImpliedTls(args->server), out);
                      }});
  return {session, [commands](std::ostream& out) { runSelected(commands, out); }};
}

/// The options of hilsim latency as typed; rate, duration and session id stay text until checked.
struct LatencyArgs {
  ServerOptions server = serverOptionsFromEnvironment();
  LatencyOptions options;
  std::string rate = "1000", duration = "10", session;
  bool same_host = false, other_host = false;
};

void runLatencyCommand(const LatencyArgs& args, std::ostream& out) {
  const ServerOptions server = withImpliedTls(args.server);
  if (args.same_host && args.other_host) {
    throw CliError("--same-host and --other-host exclude each other", kExitUsage);
  }
  LatencyOptions options = args.options;
  options.server = server.server;
  options.client = server.client;
  options.json = server.json;
  options.rate = numberOption(args.rate, "--rate");
  options.duration = numberOption(args.duration, "--duration");
  if (!args.session.empty()) options.session_id = resolveSession(server, args.session);
  if (args.same_host) options.same_host = true;
  if (args.other_host) options.same_host = false;
  latencyCommand(options, out);
}

// hilsim latency
Command addLatencyCommand(CLI::App& app) {
  auto args = std::make_shared<LatencyArgs>();
  LatencyOptions& options = args->options;
  CLI::App* latency = app.add_subcommand(
      "latency", "Run a controller loop against a server over UDP or gRPC and report round "
                 "trip, command age, loss and drift");
  addServerOptions(latency, args->server);
  latency->add_option("--transport", options.transport, "udp or grpc")
      ->capture_default_str();
  latency->add_option("-r,--rate", args->rate, "Controller rate [Hz] (and the new session's)")
      ->capture_default_str()
      ->type_name("HZ");
  latency->add_option("-T,--duration", args->duration, "Seconds, > 0 and <= 3600")
      ->capture_default_str()
      ->type_name("SECONDS");
  latency->add_option("-m,--model", options.model,
                      "Bundled model of the new session (default: the server's default)");
  latency->add_option("--mode", options.mode, "realtime or lockstep")
      ->capture_default_str();
  latency->add_option("--session", args->session,
                      "Use this running session (id or name) instead of creating one");
  latency->add_option("--udp-key", options.udp_key_hex,
                      "The session's UDP key in hex (with --session over UDP)");
  latency->add_option("--udp-token", options.udp_token_hex,
                      "The session's UDP token in hex (with --session over UDP, on a server with "
                      "listen.udp.authentication: token)");
  latency->add_option("--csv", options.csv, "Write one row per command to this file");
  latency->add_option("--svg", options.svg,
                      "Write a chart (histogram and time series) to this SVG file");
  latency->add_flag("--same-host", args->same_host,
                    "Client and server share a clock: report one-way times (default: when the "
                    "server is on 127.0.0.1, ::1 or localhost)");
  latency->add_flag("--other-host", args->other_host,
                    "Client and server clocks differ: no one-way times");
  return {latency, [args](std::ostream& out) { runLatencyCommand(*args, out); }};
}

/// Every top-level command, in the order of `hilsim --help`.
std::vector<Command> addCommands(CLI::App& app) {
  // the formulations the engine has, from its registry
  const std::string solver_help =
      "Forward-dynamics formulation: " + formulationNames(", ", " or ");
  std::vector<Command> commands;
  commands.push_back(addInfoCommand(app));
  commands.push_back(addModelsCommand(app));
  commands.push_back(addEvalCommand(app, solver_help));
  commands.push_back(addSimulateCommand(app, solver_help));
  commands.push_back(addProbeCommand(app, solver_help));
  commands.push_back(addSessionCommand(app, solver_help));
  commands.push_back(addLatencyCommand(app));
  return commands;
}

std::string suggestion(const std::string& word, const std::vector<std::string>& candidates);

/// A first word that is neither an option nor a command: say so, with the nearest command (CLI11
/// would only say that a command is required).
void rejectUnknownCommand(const std::vector<std::string>& args,
                          const std::vector<Command>& commands) {
  if (args.empty() || args.front().empty() || args.front().front() == '-') return;
  std::string names;
  std::vector<std::string> candidates;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (commands[i].app->get_name() == args.front()) return;
    if (i > 0) names += i + 1 == commands.size() ? " or " : ", ";
    names += commands[i].app->get_name();
    candidates.push_back(commands[i].app->get_name());
  }
  throw CliError("unknown command '" + args.front() + "'" + suggestion(args.front(), candidates) +
                     " (expected " + names + "; see hilsim --help)",
                 kExitUsage);
}

// Edit distance (insertions, deletions, substitutions) between two words: short words only.
std::size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// " (did you mean X?)" for the candidate nearest to `word`, when it is near enough to be a typo
// (at most a third of its letters, at least 2, apart), else "".
std::string suggestion(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, word.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const std::size_t d = editDistance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best.empty() ? std::string() : " (did you mean " + best + "?)";
}

// After CLI11 refused a command line, a better message where one word explains it: a
// subcommand that does not exist ("session lst"), or an option the command does not have
// ("info --modle"), with the nearest name. CLI11 names only the first rule the line broke
// ("--model is required"), which the mistyped word caused. Returns "" when no word explains it.
std::string explainRefusal(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* command = &app;
  std::string path = "hilsim";
  std::size_t i = 0;
  // descend through the words that name subcommands
  for (; i < args.size(); ++i) {
    CLI::App* sub = nullptr;
    std::vector<std::string> names;
    for (CLI::App* candidate : command->get_subcommands([](CLI::App*) { return true; })) {
      names.push_back(candidate->get_name());
      if (candidate->get_name() == args[i]) sub = candidate;
    }
    if (sub != nullptr) {
      command = sub;
      path += " " + args[i];
      continue;
    }
    if (!names.empty() && command->get_require_subcommand_min() > 0 && !args[i].empty() &&
        args[i].front() != '-') {
      return "unknown command '" + args[i] + "' for '" + path + "'" + suggestion(args[i], names) +
             "; see " + path + " --help";
    }
    break;
  }
  std::vector<std::string> option_names = {"--help"};
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) option_names.push_back("--" + name);
  }
  for (; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (word.size() < 2 || word.front() != '-' || parseNumber(word)) continue;
    const std::string name = word.substr(0, word.find('='));
    const CLI::Option* option = command->get_option_no_throw(name);
    if (option == nullptr && name != "-h" && name != "--help") {
      return "unknown option '" + name + "' for '" + path + "'" + suggestion(name, option_names) +
             "; see " + path + " --help";
    }
    // the next word is this option's value ("--tau -1,2"), not an option
    if (option != nullptr && option->get_type_size_max() > 0 && name == word) ++i;
  }
  return {};
}

}  // namespace

std::string versionString() { return std::string("hilsim ") + HILSIM_VERSION; }

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    CLI::App app("hilsim: the command-line client of the hilsim multibody simulation service "
                 "(model info, batch dynamics, simulation, sessions on a server, latency). See "
                 "docs/CLI.md.",
                 "hilsim");
    app.set_version_flag("--version", versionString());
    app.require_subcommand(1);
    app.fallthrough(false);
    const std::vector<Command> commands = addCommands(app);
    rejectUnknownCommand(args, commands);

    // CLI11 wants argv order with the program name removed: parse(vector) takes them reversed
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::Success& e) {
      return app.exit(e, out, err);  // --help, --version
    } catch (const CLI::ParseError& e) {
      const std::string explained = explainRefusal(app, args);
      if (!explained.empty()) err << "hilsim: error: " << oneLine(explained) << "\n";
      else err << "hilsim: error: " << oneLine(e.what()) << " (see hilsim --help)\n";
      return kExitUsage;
    }

    runSelected(commands, out);
    out.flush();
    return kExitOk;
  } catch (const CliError& e) {
    err << "hilsim: error: " << oneLine(e.what()) << "\n";
    return e.exitCode();
  } catch (const std::bad_alloc&) {
    err << "hilsim: error: out of memory\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << "hilsim: error: " << oneLine(e.what()) << "\n";
    return kExitFailure;
  } catch (...) {
    err << "hilsim: error: unexpected failure\n";
    return kExitFailure;
  }
}

}  // namespace hilsim::cli
