#include "client/cli/app.h"

#include <cmath>
#include <cstdlib>
#include <exception>
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
#include "engine/io/model_loader.h"

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

/// --server, --token, --tls, --tls-ca and --json of the commands that talk to a server.
void addServerOptions(CLI::App* command, ServerOptions& server) {
  command->add_option("--server", server.server,
                      "Server's gRPC address host:port (env HILSIM_SERVER)")
      ->capture_default_str();
  command->add_option("--token", server.client.access_token,
                      "Access token sent as 'authorization: Bearer' (env HILSIM_ACCESS_TOKEN)");
  command->add_flag("--tls", server.client.tls, "Connect with TLS (system root certificates)");
  command->add_option("--tls-ca", server.client.tls_root_ca_file,
                      "Root certificate (PEM) to check the server's TLS certificate; "
                      "implies --tls");
  command->add_flag("--json", server.json, "Print the response message as JSON");
}

std::string defaultModelOrEmpty() {
  try {
    return defaultModelName();
  } catch (...) {
    return "iiwa14";
  }
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

    // hilsim info
    std::string info_model;
    bool info_json = false;
    CLI::App* info = app.add_subcommand("info", "Describe a model: sizes, mass, gravity, joints");
    info->add_option("-m,--model", info_model, "Model file (.urdf, .yaml) or bundled model name")
        ->required();
    info->add_flag("--json", info_json, "Print one JSON document instead of text");

    // hilsim models
    CLI::App* models = app.add_subcommand("models", "List the bundled models (default first)");

    // hilsim eval
    std::string eval_model, eval_solver = "aba", eval_input, eval_output;
    bool eval_inverse = false;
    CLI::App* eval = app.add_subcommand(
        "eval", "Batch dynamics over a CSV file: rows q,v,tau -> qdd (or q,v,qdd -> tau)");
    eval->add_option("-m,--model", eval_model, "Model file or bundled model name")->required();
    eval->add_option("-s,--solver", eval_solver, "Forward-dynamics formulation: aba or crba")
        ->capture_default_str();
    eval->add_option("-i,--input", eval_input, "Input CSV (header row, then q, v, tau per row)")
        ->required();
    eval->add_option("-o,--output", eval_output, "Output CSV (header row, then qdd or tau per row)")
        ->required();
    eval->add_flag("--inverse", eval_inverse,
                   "Inverse dynamics (RNEA): rows q, v, qdd -> tau; --solver is ignored");

    // hilsim simulate
    std::string sim_model = defaultModelOrEmpty(), sim_solver = "aba", sim_integrator = "rk4";
    std::string sim_dt = "0.001", sim_duration = "1.0", sim_output, sim_q0, sim_v0;
    CLI::App* sim = app.add_subcommand(
        "simulate", "Simulate from rest under zero joint forces; print a timing/energy summary");
    sim->add_option("-m,--model", sim_model, "Model file or bundled model name")
        ->capture_default_str();
    sim->add_option("-s,--solver", sim_solver, "Forward-dynamics formulation: aba or crba")
        ->capture_default_str();
    sim->add_option("-I,--integrator", sim_integrator,
                    "Integrator: rk4, euler (semi-implicit) or imex_euler (models with massless "
                    "bodies)")
        ->capture_default_str();
    sim->add_option("--dt", sim_dt, "Time step [s], > 0")->capture_default_str()->type_name("SECONDS");
    sim->add_option("-T,--duration", sim_duration, "Simulated time [s], >= 0")
        ->capture_default_str()
        ->type_name("SECONDS");
    sim->add_option("-o,--output", sim_output, "Trajectory CSV: t, q..., v..., energy per step");
    sim->add_option("--q0", sim_q0, "Initial configuration: nq comma-separated values")
        ->type_name("LIST");
    sim->add_option("--v0", sim_v0, "Initial velocity: nv comma-separated values")->type_name("LIST");

    // hilsim rt-probe
    std::string probe_model = defaultModelOrEmpty(), probe_rate = "1000", probe_duration = "5";
    std::string probe_solver = "aba", probe_integrator = "rk4";
    int probe_substeps = 1, probe_priority = 0, probe_cpu = -1;
    bool probe_json = false, probe_no_mlock = false;
    CLI::App* probe = app.add_subcommand(
        "rt-probe",
        "Measure wake-up jitter: a bare clock_nanosleep loop, then hilsim's real-time loop on a "
        "model, at the same rate; print both, their ratio and the loop overhead");
    probe->add_option("-r,--rate", probe_rate, "Control rate [Hz], 100 to 10000")
        ->capture_default_str()
        ->type_name("HZ");
    probe->add_option("-T,--duration", probe_duration, "Seconds per phase, > 0")
        ->capture_default_str()
        ->type_name("SECONDS");
    probe->add_option("-m,--model", probe_model, "Model file or bundled model name")
        ->capture_default_str();
    probe->add_option("--substeps", probe_substeps, "Physics steps per control cycle")
        ->capture_default_str();
    probe->add_option("-s,--solver", probe_solver, "Forward-dynamics formulation: aba or crba")
        ->capture_default_str();
    probe->add_option("-I,--integrator", probe_integrator, "Integrator: rk4, euler or imex_euler")
        ->capture_default_str();
    probe->add_option("--priority", probe_priority,
                      "SCHED_FIFO priority 1-99 for both loops (0: normal scheduling)")
        ->capture_default_str();
    probe->add_option("--cpu", probe_cpu, "Pin both loops to this CPU (-1: no pinning)")
        ->capture_default_str();
    probe->add_flag("--no-mlock", probe_no_mlock, "Do not lock memory (mlockall)");
    probe->add_flag("--json", probe_json, "Print one JSON document (times in ns)");

    // hilsim session …
    ServerOptions server;
    server.server = environmentOr("HILSIM_SERVER", server.server);
    server.client.access_token = environmentOr("HILSIM_ACCESS_TOKEN", "");
    CLI::App* session = app.add_subcommand(
        "session", "Manage a server's sessions: create, start, pause, stop, reset, close, list, "
                   "get, stats");
    session->require_subcommand(1);
    CreateOptions create;
    std::string create_rate, session_id_text;
    CLI::App* session_create = session->add_subcommand("create", "Create a session");
    session_create->add_option("-m,--model", create.model, "Bundled model name")->required();
    session_create->add_option("--mode", create.mode, "realtime, lockstep or free")
        ->capture_default_str();
    session_create->add_option("-r,--rate", create_rate,
                               "Control rate [Hz], 100 to 10000 (default: the server's)")
        ->type_name("HZ");
    session_create->add_option("--substeps", create.substeps,
                               "Physics steps per control cycle, 1 to 1000 "
                               "(default: the server's)");
    session_create->add_option("-s,--solver", create.solver, "aba or crba");
    session_create->add_option("-I,--integrator", create.integrator, "rk4, euler or imex_euler");
    session_create->add_option("--watchdog", create.watchdog, "hold, zero, damping or fault");
    session_create->add_flag("--start", create.start, "Start the session at once");
    addServerOptions(session_create, server);
    std::vector<CLI::App*> session_actions;
    for (const char* action : {"start", "pause", "stop", "reset", "close", "get", "stats"}) {
      const std::string help =
          std::string(action) == "get"     ? "Show a session: configuration, model, newest state"
          : std::string(action) == "stats" ? "Show a session's statistics"
          : std::string(action) == "close" ? "Stop and remove a session; print its final statistics"
                                           : std::string("Send ") + action + " to a session";
      CLI::App* command = session->add_subcommand(action, help);
      command->add_option("ID", session_id_text, "Session id")->required();
      addServerOptions(command, server);
      session_actions.push_back(command);
    }
    CLI::App* session_list = session->add_subcommand("list", "List the server's sessions");
    addServerOptions(session_list, server);

    // hilsim latency
    LatencyOptions latency_options;
    std::string latency_rate = "1000", latency_duration = "10", latency_session;
    bool latency_same_host = false, latency_other_host = false;
    CLI::App* latency = app.add_subcommand(
        "latency", "Run a controller loop against a server over UDP or gRPC and report round "
                   "trip, command age, loss and drift");
    addServerOptions(latency, server);
    latency->add_option("--transport", latency_options.transport, "udp or grpc")
        ->capture_default_str();
    latency->add_option("-r,--rate", latency_rate, "Controller rate [Hz] (and the new session's)")
        ->capture_default_str()
        ->type_name("HZ");
    latency->add_option("-T,--duration", latency_duration, "Seconds, > 0 and <= 3600")
        ->capture_default_str()
        ->type_name("SECONDS");
    latency->add_option("-m,--model", latency_options.model,
                        "Bundled model of the new session (default: the server's default)");
    latency->add_option("--mode", latency_options.mode, "realtime or lockstep")
        ->capture_default_str();
    latency->add_option("--session", latency_session,
                        "Use this running session instead of creating one");
    latency->add_option("--udp-token", latency_options.udp_token_hex,
                        "The session's UDP token in hex (with --session over UDP)");
    latency->add_option("--csv", latency_options.csv, "Write one row per command to this file");
    latency->add_option("--svg", latency_options.svg,
                        "Write a chart (histogram and time series) to this SVG file");
    latency->add_flag("--same-host", latency_same_host,
                      "Client and server share a clock: report one-way times (default: when the "
                      "server is on 127.0.0.1, ::1 or localhost)");
    latency->add_flag("--other-host", latency_other_host,
                      "Client and server clocks differ: no one-way times");

    // a first word that is neither an option nor a command: say so (CLI11 would only say that a
    // command is required)
    if (!args.empty() && !args.front().empty() && args.front().front() != '-' &&
        args.front() != "info" && args.front() != "models" && args.front() != "eval" &&
        args.front() != "simulate" && args.front() != "rt-probe" && args.front() != "session" &&
        args.front() != "latency") {
      throw CliError("unknown command '" + args.front() +
                         "' (expected info, models, eval, simulate, rt-probe, session or latency; "
                         "see hilsim --help)",
                     kExitUsage);
    }

    // CLI11 wants argv order with the program name removed: parse(vector) takes them reversed
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      app.parse(reversed);
    } catch (const CLI::Success& e) {
      return app.exit(e, out, err);  // --help, --version
    } catch (const CLI::ParseError& e) {
      err << "hilsim: error: " << oneLine(e.what()) << " (see hilsim --help)\n";
      return kExitUsage;
    }

    if (info->parsed()) {
      const auto model = loadModelOrThrow(info_model);
      writeModelInfo(*model, info_json, out, modelSource(info_model));
    } else if (models->parsed()) {
      writeBundledModels(out);
    } else if (eval->parsed()) {
      const Formulation formulation = parseSolverOrThrow(eval_solver);
      const auto model = loadModelOrThrow(eval_model);
      evalCsv(*model, formulation, eval_inverse, eval_input, eval_output);
    } else if (sim->parsed()) {
      SimulateOptions options;
      options.formulation = parseSolverOrThrow(sim_solver);
      options.integrator = parseIntegratorOrThrow(sim_integrator);
      options.dt = numberOption(sim_dt, "--dt");
      options.duration = numberOption(sim_duration, "--duration");
      options.q0 = sim_q0;
      options.v0 = sim_v0;
      options.output = sim_output;
      if (options.dt <= 0.0) throw CliError("--dt must be > 0, got " + sim_dt, kExitUsage);
      if (options.duration < 0.0) {
        throw CliError("--duration must be >= 0, got " + sim_duration, kExitUsage);
      }
      const auto model = loadModelOrThrow(sim_model);
      const SimulateSummary summary = simulate(model, options);
      writeSimulateSummary(*model, options, summary, out);
    } else if (probe->parsed()) {
      // the session's log lines go to stderr: stdout carries the report (or the JSON document)
      spdlog::set_default_logger(spdlog::stderr_color_mt("hilsim"));
      rt::ProbeOptions options;
      options.rate = numberOption(probe_rate, "--rate");
      options.duration = numberOption(probe_duration, "--duration");
      if (options.rate < 100.0 || options.rate > 10000.0) {
        throw CliError("--rate must be within 100 to 10000 Hz, got " + probe_rate, kExitUsage);
      }
      if (options.duration <= 0.0 || options.duration > 3600.0) {
        throw CliError("--duration must be > 0 and at most 3600 s, got " + probe_duration,
                       kExitUsage);
      }
      if (probe_substeps < 1 || probe_substeps > 1000) {
        throw CliError("--substeps must be within 1 to 1000", kExitUsage);
      }
      if (probe_priority < 0 || probe_priority > 99) {
        throw CliError("--priority must be within 0 to 99", kExitUsage);
      }
      options.formulation = parseSolverOrThrow(probe_solver);
      options.integrator = parseIntegratorOrThrow(probe_integrator);
      options.substeps = probe_substeps;
      options.thread.lock_memory = !probe_no_mlock;
      options.thread.fifo_priority = probe_priority;
      options.thread.cpu = probe_cpu;
      options.model = loadModelOrThrow(probe_model);
      options.model_name = probe_model;
      writeProbeReport(rt::runJitterProbe(options), probe_json, out);
    } else if (session->parsed()) {
      if (!server.client.tls_root_ca_file.empty()) server.client.tls = true;
      if (session_create->parsed()) {
        if (!create_rate.empty()) create.rate = numberOption(create_rate, "--rate");
        sessionCreate(server, create, out);
      } else if (session_list->parsed()) {
        sessionList(server, out);
      } else {
        for (CLI::App* command : session_actions) {
          if (!command->parsed()) continue;
          const std::uint64_t id = parseSessionId(session_id_text);
          const std::string action = command->get_name();
          if (action == "get") sessionGet(server, id, out);
          else if (action == "stats") sessionStats(server, id, out);
          else sessionAction(server, action, id, out);
        }
      }
    } else if (latency->parsed()) {
      if (!server.client.tls_root_ca_file.empty()) server.client.tls = true;
      if (latency_same_host && latency_other_host) {
        throw CliError("--same-host and --other-host exclude each other", kExitUsage);
      }
      latency_options.server = server.server;
      latency_options.client = server.client;
      latency_options.json = server.json;
      latency_options.rate = numberOption(latency_rate, "--rate");
      latency_options.duration = numberOption(latency_duration, "--duration");
      if (!latency_session.empty()) latency_options.session_id = parseSessionId(latency_session);
      if (latency_same_host) latency_options.same_host = true;
      if (latency_other_host) latency_options.same_host = false;
      latencyCommand(latency_options, out);
    }
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
