// SimulationClient: a thin C++ client of hilsim-server's gRPC service (hilsim.v1.Simulation,
// proto/hilsim/v1/service.proto). One method per unary rpc, returning the response or throwing
// RpcError; ControlStream and StateStream wrap the two streaming rpcs as RAII objects.
//
// Every call carries the configured deadline and, when set, the access token as
// `authorization: Bearer <token>` metadata. docs/CLIENT.md shows how to use it.
//
// Threads: a SimulationClient may be shared by threads (the channel and stub are thread-safe).
// A ControlStream or StateStream allows one thread reading and one thread writing at a time.
// Time stamps are CLOCK_MONOTONIC [ns] (rt/clock.h), the clock the server's own stamps use.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <grpcpp/grpcpp.h>

#include "hilsim/v1/service.grpc.pb.h"

namespace hilsim::client {

/// A failed rpc: the gRPC status code and the server's message. what() reads
/// "<Rpc>: <CODE>: <message>", e.g. "CreateSession: INVALID_ARGUMENT: control_rate_hz 5 …".
class RpcError : public std::runtime_error {
 public:
  RpcError(std::string rpc, const grpc::Status& status);
  grpc::StatusCode code() const { return code_; }
  const std::string& rpc() const { return rpc_; }
  /// The status message as the server sent it.
  const std::string& serverMessage() const { return server_message_; }

 private:
  std::string rpc_;
  grpc::StatusCode code_;
  std::string server_message_;
};

/// "OK", "CANCELLED", "INVALID_ARGUMENT", … (the canonical names of grpc::StatusCode).
std::string statusCodeName(grpc::StatusCode code);

/// How to reach and authenticate to a server.
struct ClientOptions {
  /// Sent as `authorization: Bearer <token>` on every call when not empty.
  std::string access_token;
  /// Connect with TLS. Server certificates are checked against `tls_root_ca_file` (PEM), or the
  /// system's roots when it is empty.
  bool tls = false;
  std::string tls_root_ca_file;
  /// Name to check the server certificate against instead of the target's host (e.g. when
  /// connecting to an address that the certificate does not name); empty: the target's host.
  std::string tls_server_name;
  /// Deadline of every unary call (streams have none: they last as long as the caller wants).
  std::chrono::milliseconds deadline{5000};
  /// Sent as the metadata `hilsim-owner` on the calls that change a session when this client
  /// did not create it (the sessions it creates use the secret CreateSession returned): another
  /// process's owner secret, or the server's operator secret (docs/SERVER.md, "Isolation between
  /// clients").
  std::string owner_secret;
};

class ControlStream;
class StateStream;

class SimulationClient {
 public:
  /// Creates the channel to `target` ("host:port"); connects lazily, at the first call. Throws
  /// std::runtime_error when the TLS root certificate file cannot be read.
  explicit SimulationClient(const std::string& target, ClientOptions options = {});
  /// Uses an existing channel (e.g. an in-process one); options.tls and the CA file are ignored.
  SimulationClient(std::shared_ptr<grpc::Channel> channel, ClientOptions options = {});
  ~SimulationClient();
  SimulationClient(const SimulationClient&) = delete;
  SimulationClient& operator=(const SimulationClient&) = delete;

  const std::string& target() const { return target_; }
  const ClientOptions& options() const { return options_; }
  /// Waits up to `timeout` for the channel to connect; false if it could not.
  bool waitForConnected(std::chrono::milliseconds timeout);

  // Unary rpcs (service.proto). Each throws RpcError on a non-OK status.
  v1::ListModelsResponse listModels();
  v1::CreateSessionResponse createSession(const v1::CreateSessionRequest& request);
  /// CreateSession on a bundled model.
  v1::CreateSessionResponse createSession(const std::string& bundled_model,
                                          const v1::SessionConfig& config = {});
  v1::SessionInfo startSession(std::uint64_t session_id);
  v1::SessionInfo pauseSession(std::uint64_t session_id);
  v1::SessionInfo stopSession(std::uint64_t session_id);
  v1::SessionInfo resetSession(const v1::ResetSessionRequest& request);
  v1::SessionInfo resetSession(std::uint64_t session_id);
  v1::CloseSessionResponse closeSession(std::uint64_t session_id);
  v1::SessionInfo getSession(std::uint64_t session_id);
  v1::ListSessionsResponse listSessions();
  v1::SessionStats getStats(std::uint64_t session_id);
  /// Injects `fault` into a session (docs/REALISM.md, "Fault injection"); returns it with its id.
  v1::InjectedFault injectFault(std::uint64_t session_id, const v1::InjectedFault& fault);
  /// Ends fault `id` of a session (0: every fault) at its next control cycle.
  void clearFaults(std::uint64_t session_id, std::uint32_t id = 0);
  /// LOCKSTEP: `steps` cycles with `command`'s torques (see service.proto); the State after them.
  v1::State step(const v1::Command& command);

  /// The owner secret this client sends for `session_id`: the one CreateSession returned to it,
  /// one set with setOwnerSecret, else options().owner_secret.
  std::string ownerSecret(std::uint64_t session_id) const;
  /// Drives `session_id` with `secret` from now on (a session another process created).
  void setOwnerSecret(std::uint64_t session_id, std::string secret);

  /// Opens a Control stream to `session_id` (nothing is sent until the first sync or send).
  std::unique_ptr<ControlStream> openControl(std::uint64_t session_id);
  /// Opens a StreamStates feed: every `decimation`-th cycle's State (0 or 1: every cycle).
  std::unique_ptr<StateStream> streamStates(std::uint64_t session_id,
                                            std::uint32_t decimation = 1);

 private:
  /// Sets the deadline and metadata of a unary call; with `session_id`, the owner secret of that
  /// session too (a call that changes it).
  void prepare(grpc::ClientContext& context, std::uint64_t session_id = 0) const;
  /// Sets the metadata of a streaming call (no deadline), as prepare.
  void prepareStream(grpc::ClientContext& context, std::uint64_t session_id = 0) const;

  using Stub = v1::Simulation::Stub;
  /// One unary call with deadline and token; RpcError naming `rpc` on a non-OK status.
  /// `owned_session`: the session the call changes (its owner secret is sent), 0 for none.
  template <typename Request, typename Response>
  Response call(const char* rpc,
                grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                const std::type_identity_t<Request>& request, std::uint64_t owned_session = 0) {
    grpc::ClientContext context;
    prepare(context, owned_session);
    Response response;
    const grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (!status.ok()) throw RpcError(rpc, status);
    return response;
  }

  std::string target_;
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Stub> stub_;
  mutable std::mutex secrets_mutex_;
  std::map<std::uint64_t, std::string> owner_secrets_;  // of the sessions this client created
};

/// The controller's channel (rpc Control): Commands out, States in, for one session. Sequence
/// numbers start at 1 and increase by one with every message sent (syncs included); each message
/// carries the send time on CLOCK_MONOTONIC as client_send_time_ns.
///
/// A write after the server ended the stream fails: send() and sync() then return 0; read() until
/// it returns false and finish() gives the status the server ended it with. The destructor
/// cancels a stream that is still open.
class ControlStream {
 public:
  ControlStream(std::unique_ptr<grpc::ClientContext> context,
                std::unique_ptr<grpc::ClientReaderWriter<v1::Command, v1::State>> stream,
                std::uint64_t session_id);
  ~ControlStream();
  ControlStream(const ControlStream&) = delete;
  ControlStream& operator=(const ControlStream&) = delete;

  std::uint64_t sessionId() const { return session_id_; }
  /// Sends a sync (no torques): binds the stream as first message, and is answered at once with
  /// the newest State. LOCKSTEP: `steps` ≥ 1 advances that many cycles with the torques last
  /// applied. Returns its sequence number, or 0 if the stream has ended.
  std::uint64_t sync(std::uint32_t steps = 0);
  /// Sends joint forces (nv values, v order) [N·m, N] for the next cycle (LOCKSTEP: for `steps`
  /// cycles, 0 meaning 1). Returns the sequence number, or 0 if the stream has ended.
  std::uint64_t send(std::span<const double> tau, std::uint32_t steps = 0);
  /// The client_send_time_ns of the last message sent [ns, CLOCK_MONOTONIC].
  std::int64_t lastSendTime() const { return last_send_time_ns_; }
  std::uint64_t lastSequence() const { return sequence_; }

  /// Blocks for the next State; false once the stream has ended (then call finish()).
  /// `receive_time_ns`, if given, gets the CLOCK_MONOTONIC time at which it arrived [ns].
  bool read(v1::State& state, std::int64_t* receive_time_ns = nullptr);
  /// Half-closes: the server ends the stream with OK (queued commands are still applied).
  void writesDone();
  /// Ends the stream from the client side (the status becomes CANCELLED).
  void cancel();
  /// Half-closes if needed, discards unread States and returns the final status. Once only; later
  /// calls return the same status.
  grpc::Status finish();

 private:
  std::uint64_t write(v1::Command& command);

  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::Command, v1::State>> stream_;
  std::uint64_t session_id_;
  std::uint64_t sequence_ = 0;
  std::int64_t last_send_time_ns_ = 0;
  bool writes_done_ = false;
  bool finished_ = false;
  grpc::Status status_;
};

/// A read-only state feed (rpc StreamStates). The destructor cancels it if still open.
class StateStream {
 public:
  StateStream(std::unique_ptr<grpc::ClientContext> context,
              std::unique_ptr<grpc::ClientReader<v1::State>> reader);
  ~StateStream();
  StateStream(const StateStream&) = delete;
  StateStream& operator=(const StateStream&) = delete;

  /// Blocks for the next State; false once the feed has ended (then call finish()).
  bool read(v1::State& state);
  /// Ends the feed from the client side; a blocked read() returns false. Any thread.
  void cancel();
  /// The final status: CANCELLED when the session was closed or after cancel(). A feed that has
  /// not ended yet is cancelled first. Later calls return the same status.
  grpc::Status finish();

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReader<v1::State>> reader_;
  bool ended_ = false;  // a read returned false
  bool finished_ = false;
  grpc::Status status_;
};

/// Closes a session on every way out of a scope (errors included) unless release()d: for tools
/// that create a session, so that none outlives them. A failing close is ignored: the error that
/// ended the scope, if any, is the one to report.
class SessionCloser {
 public:
  SessionCloser(SimulationClient& client, std::uint64_t session_id)
      : client_(client), id_(session_id) {}
  ~SessionCloser() {
    if (id_ == 0) return;
    try {
      client_.closeSession(id_);
    } catch (const std::exception&) {
    }
  }
  SessionCloser(const SessionCloser&) = delete;
  SessionCloser& operator=(const SessionCloser&) = delete;

  /// Closes it now and returns its final statistics; the destructor then does nothing.
  v1::CloseSessionResponse close() {
    const std::uint64_t id = id_;
    id_ = 0;
    return client_.closeSession(id);
  }

 private:
  SimulationClient& client_;
  std::uint64_t id_;
};

}  // namespace hilsim::client
