// hilsim-server as a library: the gRPC service, the per-session UDP endpoints, the Prometheus
// exporter and the sessions, started and stopped as one. server/main.cc wraps it in the
// executable; the integration tests run it in process on ephemeral ports.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/server_config.h"

namespace hilsim::server {

class SessionRegistry;

class Server {
 public:
  /// Keeps the configuration; nothing is bound yet.
  explicit Server(ServerConfig config);
  ~Server();  ///< shutdown() if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds the gRPC port (TLS and access token as configured), the metrics port, and creates the
  /// start-up sessions. Throws std::runtime_error naming what could not be bound or created.
  void start();
  /// Stops every session (their final statistics are logged), ends every open stream, stops the
  /// gRPC server and the exporter. Idempotent; safe from any thread except a gRPC callback.
  void shutdown();

  /// The ports actually bound (ephemeral ones resolved), valid after start().
  std::uint16_t grpcPort() const;
  std::uint16_t metricsPort() const;  ///< 0 when metrics are disabled
  std::uint16_t viewerPort() const;   ///< 0 when the viewer is disabled
  /// "address:port" for a client channel.
  std::string grpcTarget() const;

  const ServerConfig& config() const;
  SessionRegistry& sessions();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hilsim::server
