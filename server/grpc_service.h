// The gRPC service hilsim.v1.Simulation (proto/hilsim/v1/service.proto) on the callback API:
// unary calls answer from the handler; Step, Control and StreamStates are reactors that are
// also state sinks of their session, so the session's publisher thread drives their writes and
// no gRPC thread ever waits for a control cycle.
#pragma once

#include <atomic>
#include <string>
#include <string_view>

#include "hilsim/v1/service.grpc.pb.h"
#include "server/server_config.h"
#include "server/session_registry.h"

namespace hilsim::server {

/// The metadata key of the owner secret that mutating calls present (docs/PROTOCOL.md).
inline constexpr std::string_view kOwnerMetadata = "hilsim-owner";

/// A gRPC peer ("ipv4:127.0.0.1:40000", "ipv6:[::1]:40000") without its port: the client the
/// per-client quotas count.
std::string clientAddress(const std::string& peer);

class SimulationService final : public v1::Simulation::CallbackService {
 public:
  SimulationService(SessionRegistry& registry, const ServerConfig& config);

  /// From now on every new call fails with UNAVAILABLE (the server is shutting down).
  void beginShutdown() { shutting_down_.store(true, std::memory_order_release); }

  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;
  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const v1::CreateSessionRequest* request,
                                          v1::CreateSessionResponse* response) override;
  grpc::ServerUnaryReactor* StartSession(grpc::CallbackServerContext* context,
                                         const v1::SessionRequest* request,
                                         v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* PauseSession(grpc::CallbackServerContext* context,
                                         const v1::SessionRequest* request,
                                         v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* StopSession(grpc::CallbackServerContext* context,
                                        const v1::SessionRequest* request,
                                        v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* ResetSession(grpc::CallbackServerContext* context,
                                         const v1::ResetSessionRequest* request,
                                         v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const v1::SessionRequest* request,
                                         v1::CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* GetSession(grpc::CallbackServerContext* context,
                                       const v1::SessionRequest* request,
                                       v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* context,
                                         const v1::ListSessionsRequest* request,
                                         v1::ListSessionsResponse* response) override;
  grpc::ServerUnaryReactor* Step(grpc::CallbackServerContext* context, const v1::Command* request,
                                 v1::State* response) override;
  grpc::ServerBidiReactor<v1::Command, v1::State>* Control(
      grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<v1::State>* StreamStates(grpc::CallbackServerContext* context,
                                                    const v1::StreamStatesRequest* request) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const v1::SessionRequest* request,
                                     v1::SessionStats* response) override;
  grpc::ServerUnaryReactor* InjectFault(grpc::CallbackServerContext* context,
                                        const v1::InjectFaultRequest* request,
                                        v1::InjectedFault* response) override;
  grpc::ServerUnaryReactor* ClearFaults(grpc::CallbackServerContext* context,
                                        const v1::ClearFaultsRequest* request,
                                        v1::ClearFaultsResponse* response) override;

 private:
  /// UNAVAILABLE while shutting down, UNAUTHENTICATED without the access token, else OK.
  grpc::Status admit(grpc::CallbackServerContext* context) const;
  /// The session a request names, or the status to fail with.
  grpc::Status lookup(std::uint64_t session_id, std::shared_ptr<ServerSession>* session) const;
  /// admit → lookup → act(session) → reply: the shape of every call on one session. `act`
  /// returns the call's status.
  /// A mutating call (kMutating) also checks that the caller owns the session (mayDrive).
  enum class Access { kRead, kMutating };
  template <typename Act>
  grpc::ServerUnaryReactor* onSession(grpc::CallbackServerContext* context,
                                      std::uint64_t session_id, Access access, Act&& act);
  /// OK when `presented` (the call's `hilsim-owner` metadata) is the session's owner secret or
  /// the operator's; PERMISSION_DENIED otherwise.
  grpc::Status mayDrive(const ServerSession& session, const std::string& presented) const;

  SessionRegistry& registry_;
  const ServerConfig& config_;
  std::string expected_authorization_;  // "Bearer <token>", empty when no token is configured
  std::atomic<bool> shutting_down_{false};
};

}  // namespace hilsim::server
