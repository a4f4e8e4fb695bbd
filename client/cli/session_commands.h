// hilsim session …: create, start, pause, stop, reset, close, list, get and stats of a server's
// sessions over gRPC (docs/CLI.md). Each prints text for people, or with `json` the rpc's
// response message in protobuf's JSON mapping. Failed calls throw client::RpcError, bad options
// CliError; app.h turns both into one line on stderr and a non-zero exit code.
#pragma once

#include <cstdint>
#include <ostream>
#include <optional>
#include <string>

#include "engine/io/model_loader.h"
#include <vector>

#include <google/protobuf/message.h>

#include "client/simulation_client.h"
#include "hilsim/v1/service.pb.h"

namespace hilsim::cli {

/// Which server, how to authenticate, and the output format.
struct ServerOptions {
  std::string server = "127.0.0.1:50051";  ///< gRPC target "host:port"
  client::ClientOptions client;
  bool json = false;
};

/// hilsim session create.
struct CreateOptions {
  /// A model the server offers (bundled, or a file of its models.directory) by name, or a path to
  /// a .urdf, .yaml or .yml file here, whose text is sent (required)
  std::string model;
  bool floating_base = false;       ///< a URDF's root on a free joint
  std::string inertia;              ///< a URDF's inertia policy (--inertia); empty: the server's
  std::string massless;             ///< a URDF's massless policy (--massless); empty: refuse
  std::string name;                 ///< the session's name; empty: the server's ("session-<id>")
  /// lease [s]: closed after this long unused; 0: never; absent: the server's default
  std::optional<double> idle_timeout;
  std::string mode = "realtime";    ///< realtime, lockstep or free
  double rate = 0.0;                ///< control rate [Hz]; 0: the server's default
  int substeps = 0;                 ///< physics steps per cycle; 0: the server's default
  int threads = 0;                  ///< threads of a parallel solver (hdca); 0: the server's default
  std::string solver;               ///< a formulation name (formulations()); empty: the server's default
  std::string integrator;           ///< rk4 or euler; empty: the server's default
  std::string watchdog;             ///< hold, zero, damping or fault; empty: the server's default
  bool start = false;               ///< start the session at once
  /// Command interfaces, one per --drive: "JOINT=INTERFACE[:GAIN=VALUE,…]" (parseDrive)
  std::vector<std::string> drives;
  /// Actuator models, one per --actuator: "JOINT:NAME=VALUE,…" (parseActuator)
  std::vector<std::string> actuators;
  /// Scheduled faults, one per --fault: "TYPE[@JOINT][:NAME=VALUE,…]" (parseFault)
  std::vector<std::string> faults;
  std::optional<std::uint64_t> fault_seed;         ///< --fault-seed: the drops' seed
  std::optional<std::uint32_t> max_fault_delay;    ///< --max-fault-delay [control cycles]
};

/// One --drive: "JOINT=effort", "JOINT=position:kp=K,kd=D" or "JOINT=velocity:kd=D[,ki=I]";
/// JOINT "*" names every revolute, prismatic and planar joint no other --drive names. CliError
/// (usage) on a malformed one; the server checks names and gains.
v1::JointDrive parseDrive(const std::string& text);
/// One --actuator: "JOINT:time_constant=T,delay=D,resolution=R,ripple=A,ripple_period=P" (any
/// of them; seconds, N·m or N, rad or m); JOINT "*" for every joint not named otherwise.
v1::ActuatorModel parseActuator(const std::string& text);

/// One --fault or `session fault` spec: "TYPE[@JOINT][:start=S,duration=D,rate=R,burst=B,
/// cycles=C,value=V]" (any of the settings; seconds of simulation time, control cycles); TYPE
/// drop_commands, delay_commands, drop_states, delay_states, freeze_sensor, offset_sensor,
/// lock_joint, free_joint, cut_drive or stall; JOINT a joint's name or * for every joint.
/// CliError (usage) on a malformed one; the server checks names and ranges.
v1::InjectedFault parseFault(const std::string& text);

/// Parses a session id (a decimal number ≥ 1); CliError with exit code 2 otherwise.
std::uint64_t parseSessionId(const std::string& text);

/// Whether `text` names a session by id (digits) rather than by name.
bool isSessionId(const std::string& text);

/// The id of the session `text` names: an id as such, or the one session of that name on the
/// server (CliError when none or several have it, listing the sessions).
std::uint64_t resolveSession(const ServerOptions& server, const std::string& text);

/// The ModelSource for --model: a path (it contains '/' or ends in .urdf, .yaml or .yml) is read
/// here and sent as text, named by the path in the server's errors; anything else is a name the
/// server looks up. The URDF options go with a URDF file or a name (the server refuses them for a
/// YAML model it has); a YAML file here with options other than the defaults is a CliError, as is
/// a file that cannot be read.
v1::ModelSource modelSourceFor(const std::string& model, const UrdfOptions& options = {});

/// "realtime", "lockstep", "free" ↔ SessionMode; CliError (exit code 2) for another name.
v1::SessionMode parseSessionModeOrThrow(const std::string& name);
std::string sessionModeName(v1::SessionMode mode);
/// "CREATED", "RUNNING", … for a SessionState.
std::string sessionStateName(v1::SessionState state);

/// `message` in protobuf's JSON mapping, field names as in the .proto files, every field printed
/// (64-bit integers as strings, bytes as base64), indented, with a final newline.
std::string messageToJson(const google::protobuf::Message& message);

/// Creates a session (and starts it with `start`); prints its id, model, UDP port and the UDP
/// token in hex, which the server shows only here.
void sessionCreate(const ServerOptions& server, const CreateOptions& options, std::ostream& out);
/// start, pause, stop, reset or close of session `id`; prints the session's new state (close: its
/// final statistics).
void sessionAction(const ServerOptions& server, const std::string& action, std::uint64_t id,
                   std::ostream& out);
/// The set-points of `session step`: nv comma-separated values each [N·m or N; rad or m; rad/s
/// or m/s]; empty: not sent.
struct StepSetPoints {
  std::string tau, position, velocity;
};
/// LOCKSTEP: advances session `id` by `steps` control cycles with `set_points` (all empty: zero
/// torques, since an empty command would be a sync) and prints the State after them.
void sessionStep(const ServerOptions& server, std::uint64_t id, std::uint32_t steps,
                 const StepSetPoints& set_points, std::ostream& out);
/// One line per session: id, name, model, mode, rate, state, UDP port, controller stream, age,
/// idle time, owner, and its lease.
void sessionList(const ServerOptions& server, std::ostream& out);
/// Configuration, model layout, state and newest State of session `id`.
void sessionGet(const ServerOptions& server, std::uint64_t id, std::ostream& out);
/// Statistics of session `id` as a table (timing percentiles in µs, counters, real-time factor).
void sessionStats(const ServerOptions& server, std::uint64_t id, std::ostream& out);
/// Injects a fault (parseFault) into session `id`; prints it with its id.
void sessionFault(const ServerOptions& server, std::uint64_t id, const std::string& spec,
                  std::ostream& out);
/// Ends fault `fault` of session `id` (0: every fault).
void sessionClearFaults(const ServerOptions& server, std::uint64_t id, std::uint32_t fault,
                        std::ostream& out);
/// "cut_drive on hinge (id 3), torque × 0.25, from 1 s for 0.5 s": one fault in words (without
/// `detail`: its type, joint and id only, as GetStats lists the acting ones).
std::string describeInjectedFault(const v1::InjectedFault& fault, bool detail = true);

/// The text forms, for reuse.
void writeSessionInfo(const v1::SessionInfo& info, std::ostream& out);
void writeSessionStats(const v1::SessionStats& stats, std::ostream& out);

}  // namespace hilsim::cli
