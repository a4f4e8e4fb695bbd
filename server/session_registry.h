// The server's sessions: creation from a CreateSessionRequest (model loading, configuration,
// UDP port), lookup, listing and closing. Thread-safe; used by the gRPC service, the metrics
// exporter and the server's start-up and shutdown.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
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
  /// The `owner` of create() for the operator's sessions (start-up sessions): no owner secret, no
  /// quota; only the operator's secret drives them.
  static constexpr const char* kOperator = "config";

  /// How long CreateSession with a model text waits for another text's load before it answers
  /// UNAVAILABLE. Loads within the default limits take well under a second (docs/SERVER.md), but
  /// a text built to be slow can take longer, and a waiting call holds one of gRPC's callback
  /// threads, which every rpc shares: the client retries instead, and no thread is parked.
  static constexpr std::chrono::milliseconds kTextLoadWait{2000};

  SessionRegistry(const ServerConfig& config, rt::EventLogger* events = &rt::EventLogger::global());
  ~SessionRegistry();  ///< closes every session
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  /// Loads the model, resolves the configuration, builds the session and opens its UDP port.
  /// `udp_port` 0: the next free port of the configured range. Status codes as CreateSession.
  /// A full server answers before any model is loaded; a bundled model (or one of
  /// models.directory) is the one loaded at start-up, shared by its sessions; a model text, or a
  /// file added to models.directory since, is loaded for the request, after waiting at most
  /// kTextLoadWait for another load.
  /// `owner`: who asks — the client's address (clientAddress of the gRPC peer), whose sessions
  /// are counted against limits.max_sessions_per_client and which gets an owner secret
  /// (CreateSessionResponse.owner_secret) — or kOperator. `udp_key`: MAC, the 32 bytes of
  /// the session's key (a start-up session's udp_key_file); empty: a random one.
  grpc::Status create(const v1::CreateSessionRequest& request, v1::CreateSessionResponse* response,
                      std::uint16_t udp_port = 0, std::string owner = "config",
                      std::string_view udp_key = {});
  /// The session, or null when no such session exists (never created, or closed). Counts as a
  /// use of the session for its lease.
  std::shared_ptr<ServerSession> find(std::uint64_t id) const;
  /// The shared workers (null when rt.workers.count is 0).
  const rt::WorkerSet* workers() const;
  /// Their statistics in wire form (empty without shared workers).
  std::vector<v1::WorkerStats> workerStats() const;
  /// Every session, in creation order.
  std::vector<std::shared_ptr<ServerSession>> list() const;
  /// Closes one session (stops it, ends its streams, closes its UDP port) and returns its final
  /// statistics. False when there is no such session.
  bool close(std::uint64_t id, v1::SessionStats* final_stats);
  /// Closes every session, logging each one's final statistics.
  void closeAll();

  /// The models offered: the bundled ones and those of models.directory, the default first.
  const v1::ListModelsResponse& bundledModels() const { return bundled_; }
  /// Holds back the load of every model text until released, as a load in progress does (tests
  /// of the bound on waiting).
  [[nodiscard]] std::unique_lock<std::mutex> holdTextLoads() const {
    return std::unique_lock(load_mutex_);
  }
  /// Figures for the metrics exporter.
  std::vector<SessionMetricsSample> sample() const;
  /// Closes every session whose lease has run out (idle longer than its idle_timeout_s), logging
  /// why. The registry's lease thread calls it four times a second; returns how many it closed.
  int closeIdleSessions();

 private:
  struct Entry {
    std::shared_ptr<ServerSession> session;
    std::unique_ptr<UdpEndpoint> udp;
    std::string model_name;
  };
  grpc::Status loadModel(const v1::ModelSource& source, std::shared_ptr<const Model>* model,
                         std::string* name) const;
  /// RESOURCE_EXHAUSTED when the server is full or `client` holds its quota; with mutex_ held.
  grpc::Status checkSessionLimit(const std::string& client) const;
  std::unique_ptr<UdpEndpoint> openUdp(ServerSession& session, std::uint16_t requested_port);
  // <models.directory>/<name>.yaml, .yml or .urdf where one exists, else empty
  std::string directoryModelPath(const std::string& name) const;
  void logFinalStats(ServerSession& session);

  const ServerConfig& config_;
  rt::EventLogger* events_;
  std::shared_ptr<SharedWorkers> shared_;  // rt.workers; null: every session on its own thread
  v1::ListModelsResponse bundled_;
  // loaded once, at start-up: a Model is immutable, and sessions share it read-only
  std::map<std::string, std::shared_ptr<const Model>> bundled_models_;
  std::map<std::string, std::string> unloadable_models_;  // name → why it does not load
  std::string model_directory_;
  // Model texts load one at a time, so that concurrent requests do not multiply their memory
  // (~130 MB for 512 KiB of YAML). No measurement bounds how long a text built to be slow takes
  // to load, so a request waits for the lock at most kTextLoadWait.
  mutable std::mutex load_mutex_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Entry> sessions_;  // ids grow: creation order
  std::uint64_t next_id_ = 1;
  std::uint16_t next_udp_port_ = 0;
  // the lease thread: closeIdleSessions() every kLeaseCheckInterval until the registry goes
  std::mutex lease_mutex_;
  std::condition_variable lease_wake_;
  bool lease_stop_ = false;
  std::thread lease_thread_;
};

}  // namespace hilsim::server
