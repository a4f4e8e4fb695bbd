// hilsim-server's configuration (config/server.yaml, docs/SERVER.md): network endpoints, limits,
// session defaults, logging, metrics, TLS and access token, sessions created at start-up.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "hilsim/v1/session.pb.h"
#include "rt/session_limits.h"
#include "rt/worker_set.h"

namespace hilsim::server {

/// limits.max_step_cycles unless the configuration says otherwise.
inline constexpr std::uint32_t kDefaultMaxStepCycles = 10'000;

/// The configuration file is invalid: one line naming the file, the key and the problem.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A session the server creates (and optionally starts) when it starts.
struct StartupSession {
  std::string model;           ///< bundled model name
  v1::SessionConfig config;    ///< on top of the server's session defaults
  bool start = true;           ///< start it at once
  std::uint16_t udp_port = 0;  ///< 0: the next free port of the UDP range
  /// MAC: the session's 32-byte UDP key, read from `udp_key_file` (64 hexadecimal digits), so
  /// that a controller configured with the same file can reach it; empty: a random key, which no
  /// controller can know (the server never logs keys): gRPC only.
  std::string udp_key;
};

struct ServerConfig {
  std::string source = "<defaults>";  ///< the file it came from (for messages)

  // Network
  std::string bind_address = "127.0.0.1";  ///< gRPC, UDP and metrics listen here
  std::uint16_t grpc_port = 50051;         ///< 0: an ephemeral port (tests)
  bool udp_enabled = true;
  /// How session UDP ports authenticate datagrams (udp.proto, "Authentication"): MAC, a
  /// BLAKE2b tag under a per-session key (the default), or TOKEN, the 16-byte token in clear (a
  /// compatibility option for controllers that do not speak MAC yet).
  v1::UdpAuthentication udp_authentication = v1::UDP_AUTHENTICATION_MAC;
  /// Session UDP ports are taken from [udp_port_first, udp_port_last]; both 0: ephemeral ports.
  std::uint16_t udp_port_first = 50100;
  std::uint16_t udp_port_last = 50199;
  std::uint16_t metrics_port = 9464;  ///< Prometheus /metrics; 0: an ephemeral port (tests)
  bool metrics_enabled = true;        ///< false: no metrics endpoint
  std::uint16_t viewer_port = 8088;   ///< the browser viewer (docs/VIEWER.md); 0: ephemeral
  bool viewer_enabled = true;         ///< false: no viewer
  double viewer_rate_hz = 30.0;       ///< frames per second sent to each open page, 1 … 120

  // Security
  std::string tls_certificate_file;  ///< PEM; with tls_key_file enables TLS on gRPC
  std::string tls_key_file;          ///< PEM private key
  /// Required as `authorization: Bearer <token>` on every gRPC call when not empty. Read from
  /// `access_token`, or `access_token_file`, or the HILSIM_ACCESS_TOKEN environment variable.
  std::string access_token;
  /// The operator's secret (docs/SERVER.md, "Isolation between clients"): as the metadata
  /// `hilsim-owner` it acts on every session, the start-up ones included, which belong to the
  /// operator. Read from `operator_secret`, `operator_secret_file`, or HILSIM_OPERATOR_SECRET;
  /// empty: start-up sessions take no mutating call over gRPC.
  std::string operator_secret;

  // Limits
  int max_sessions = 16;
  double max_control_rate_hz = rt::kMaxControlRate;
  int max_substeps = rt::kMaxSubsteps;
  /// Highest SCHED_FIFO priority a session may ask for; 0 (the default) forbids SCHED_FIFO: a
  /// client's session runs at the server's own scheduling unless the operator grants more here.
  /// FREE sessions never run at a real-time priority.
  int max_fifo_priority = 0;
  /// CPUs a session may pin its RT thread to; empty (the default): none, a client cannot pin.
  std::vector<int> allowed_cpus;
  // What one request may ask of the server (docs/SERVER.md, "Bounded work per request").
  /// Bytes of a URDF or YAML model text in CreateSession; a YAML text with its included files,
  /// and the scalars read from them (aliases expanded), each held to it too.
  std::size_t max_model_text_bytes = 512 << 10;
  /// Bodies (YAML) or links (URDF) of a CreateSession model, welded ones included.
  int max_model_bodies = 2000;
  /// Assumed modes of one flexible body of a CreateSession model.
  int max_model_modes = 32;
  /// Finite elements of one generated beam (its modes cost O(elements³)).
  int max_beam_elements = 100;
  /// Lumped masses, or nodes, of one flexible body.
  int max_flexible_entries = 512;
  /// LOCKSTEP: control cycles one command, step request or Step call may ask for.
  std::uint32_t max_step_cycles = kDefaultMaxStepCycles;
  /// StreamStates streams open at once on one session (each costs its publisher a state a cycle).
  int max_stream_readers = 16;
  /// LOCKSTEP: CPU time one request (a Step call, a command) may ask for: its cycles times the
  /// session's measured cost of a cycle (all substeps) [s].
  double max_request_cpu_s = 1.0;
  /// LOCKSTEP: CPU time a session's queued work (cycles asked for and not yet run) may reach [s].
  double max_queued_cpu_s = 2.0;
  // Quotas per client: a client is a peer address (the IP, without the port).
  /// Sessions one client may hold open at once.
  int max_sessions_per_client = 8;
  /// StreamStates readers one client may hold open on one session.
  int max_stream_readers_per_client = 4;
  /// Viewer pages (WebSockets) one client may hold open at once.
  int max_viewer_pages_per_client = 4;
  /// gRPC: a connection that has not finished its HTTP/2 (and TLS) handshake within this time is
  /// closed [s].
  double handshake_timeout_s = 5.0;

  // Models and sessions
  std::string model_directory;  ///< bundled models; empty: the default search (model_loader.h)
  std::string default_model;    ///< listed first by ListModels; empty: defaultModelName()
  v1::SessionConfig session_defaults;  ///< fields left 0 by a request take these
  std::vector<StartupSession> startup_sessions;

  // Real time: the shared workers that run sessions (docs/REALTIME.md, "Workers"); count 0:
  // every session on a thread of its own
  rt::WorkersConfig workers;

  // Logging
  std::string log_level = "info";   ///< trace, debug, info, warn, error, critical, off
  std::string log_format = "text";  ///< "text" or "json" (one JSON object per line)
};

/// Reads and validates a configuration file. Throws ConfigError with the file, the key and the
/// problem (unknown key, wrong type, out-of-range value, unreadable TLS files, …).
ServerConfig loadServerConfig(const std::string& path);

/// Parses configuration text; `source` names it in error messages.
ServerConfig parseServerConfig(const std::string& yaml_text, const std::string& source);

}  // namespace hilsim::server
