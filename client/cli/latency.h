// hilsim latency: runs a controller loop against a server's session over UDP or gRPC at a chosen
// rate and measures round trip, command age, one-way time, loss and drift (docs/CLI.md). The
// statistics and report writers are client/latency_report.h.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "client/latency_report.h"
#include "client/simulation_client.h"

namespace hilsim::cli {

struct LatencyOptions {
  std::string server = "127.0.0.1:50051";  ///< gRPC target "host:port"
  client::ClientOptions client;            ///< token, TLS, deadline of the unary calls
  std::string transport = "udp";           ///< "udp" or "grpc" (the Control stream)
  double rate = 1000.0;                    ///< controller loop [Hz]; also a new session's rate
  double duration = 10.0;                  ///< [s]
  /// A new session: the bundled model (empty: the server's default) and mode ("realtime",
  /// "lockstep"); created, started, and closed at the end.
  std::string model;
  std::string mode = "realtime";
  /// An existing, running session instead (0: create one). UDP needs its key (64 hex digits) or,
  /// on a server that speaks TOKEN, its token (32 hex digits).
  std::uint64_t session_id = 0;
  std::string udp_token_hex;
  std::string udp_key_hex;
  std::string csv;  ///< per-command CSV file; empty: none
  std::string svg;  ///< chart; empty: none
  bool json = false;
  /// Whether client and server share CLOCK_MONOTONIC; absent: when the server's host is
  /// 127.0.0.1, ::1 or localhost.
  std::optional<bool> same_host;
};

/// Runs the controller loop and returns the report (server statistics included). Throws CliError
/// on bad options (exit code 2) and on a server that cannot be reached or does not answer, and
/// client::RpcError when a call fails. With a client::InterruptGuard alive, a SIGINT or SIGTERM
/// ends the loop early: the report covers the commands sent until then, and `elapsed_s` (when
/// given) says how long the loop ran [s]. A session the run created is closed in every case.
client::LatencyReport runLatency(const LatencyOptions& options, double* elapsed_s = nullptr);

/// Checks that the CSV and SVG files can be written, runs runLatency under an InterruptGuard,
/// then writes the files and prints the text report (or JSON) to `out`. Interrupted, it does
/// the same with what was measured and then throws CliError with the exit code of the signal
/// (130 for SIGINT, 143 for SIGTERM).
void latencyCommand(const LatencyOptions& options, std::ostream& out);

/// The host part of a gRPC target: "h" for "h:port", "::1" for "[::1]:port".
std::string targetHost(const std::string& target);

/// Parses 32 hex digits into the 16 bytes of a UDP token; CliError (exit code 2) otherwise.
std::string parseTokenHex(const std::string& hex);
/// The 32 bytes of a UDP key from its 64 hex digits (--udp-key); CliError (usage) otherwise.
std::string parseKeyHex(const std::string& hex);
/// The bytes of a token as lowercase hex.
std::string tokenHex(const std::string& bytes);

}  // namespace hilsim::cli
