// The server's sessions: creation from a CreateSessionRequest (model loading, configuration,
// UDP port), lookup, listing and closing. Thread-safe; used by the gRPC service, the metrics
// exporter and the server's start-up and shutdown.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/support/status.h>

#include "hilsim/v1/service.pb.h"
#include "server/metrics.h"
#include "server/server_config.h"
#include "server/server_session.h"

namespace hilsim::server {

class UdpEndpoint;

class SessionRegistry {
 public:
  SessionRegistry(const ServerConfig& config, rt::EventLogger* events = &rt::EventLogger::global());
  ~SessionRegistry();  ///< closes every session
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  /// Loads the model, resolves the configuration, builds the session and opens its UDP port.
  /// `udp_port` 0: the next free port of the configured range. Status codes as CreateSession.
  grpc::Status create(const v1::CreateSessionRequest& request, v1::CreateSessionResponse* response,
                      std::uint16_t udp_port = 0);
  /// The session, or null when no such session exists (never created, or closed).
  std::shared_ptr<ServerSession> find(std::uint64_t id) const;
  /// Every session, in creation order.
  std::vector<std::shared_ptr<ServerSession>> list() const;
  /// Closes one session (stops it, ends its streams, closes its UDP port) and returns its final
  /// statistics. False when there is no such session.
  bool close(std::uint64_t id, v1::SessionStats* final_stats);
  /// Closes every session, logging each one's final statistics.
  void closeAll();

  /// The bundled models, the default first.
  const v1::ListModelsResponse& bundledModels() const { return bundled_; }
  /// Figures for the metrics exporter.
  std::vector<SessionMetricsSample> sample() const;

 private:
  struct Entry {
    std::shared_ptr<ServerSession> session;
    std::unique_ptr<UdpEndpoint> udp;
    std::string model_name;
  };
  grpc::Status loadModel(const v1::ModelSource& source, std::shared_ptr<const Model>* model,
                         std::string* name) const;
  std::unique_ptr<UdpEndpoint> openUdp(ServerSession& session, std::uint16_t requested_port);
  void logFinalStats(ServerSession& session);

  const ServerConfig& config_;
  rt::EventLogger* events_;
  v1::ListModelsResponse bundled_;
  std::string model_directory_;
  // Models load one at a time: a model text costs up to ~0.3 s and ~130 MB to parse at the
  // default limits, and concurrent requests must not multiply that.
  mutable std::mutex load_mutex_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Entry> sessions_;  // ids grow: creation order
  std::uint64_t next_id_ = 1;
  std::uint16_t next_udp_port_ = 0;
};

}  // namespace hilsim::server
