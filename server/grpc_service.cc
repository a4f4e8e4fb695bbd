#include "server/grpc_service.h"

#include <spdlog/spdlog.h>

#include "server/conversions.h"
#include "server/grpc_reactors.h"
#include "server/grpc_status.h"

namespace hilsim::server {

namespace {

using grpc::Status;
using grpc::StatusCode;

bool constantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^
                                        static_cast<unsigned char>(b[i]));
  }
  return difference == 0;
}

std::string ownerMetadata(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find(grpc::string_ref(kOwnerMetadata.data(), kOwnerMetadata.size()));
  if (it == metadata.end()) return {};
  return std::string(it->second.data(), it->second.size());
}

grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context, const Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

std::string clientAddress(const std::string& peer) {
  const std::size_t colon = peer.rfind(':');
  if (peer.rfind("ipv4:", 0) == 0 || peer.rfind("ipv6:", 0) == 0) {
    if (colon != std::string::npos && colon > 4) return peer.substr(0, colon);
  }
  return peer;
}

// ---------------------------------------------------------------------------------------------

SimulationService::SimulationService(SessionRegistry& registry, const ServerConfig& config)
    : registry_(registry),
      config_(config),
      expected_authorization_(config.access_token.empty() ? std::string()
                                                          : "Bearer " + config.access_token) {}

Status SimulationService::admit(grpc::CallbackServerContext* context) const {
  if (shutting_down_.load(std::memory_order_acquire)) {
    return {StatusCode::UNAVAILABLE, "the server is shutting down"};
  }
  if (expected_authorization_.empty()) return Status::OK;
  const auto& metadata = context->client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return {StatusCode::UNAUTHENTICATED,
            "this server requires an access token: metadata 'authorization: Bearer <token>'"};
  }
  if (!constantTimeEquals(std::string_view(it->second.data(), it->second.size()),
                          expected_authorization_)) {
    return {StatusCode::UNAUTHENTICATED, "wrong access token"};
  }
  return Status::OK;
}

Status SimulationService::mayDrive(const ServerSession& session,
                                   const std::string& presented) const {
  if (session.drivenBy(presented, config_.operator_secret)) return Status::OK;
  return {StatusCode::PERMISSION_DENIED,
          sessionLabel(session.id()) +
              (session.ownerSecret().empty()
                   ? " is the operator's (a start-up session): this call needs the operator's "
                     "secret in the metadata 'hilsim-owner'"
                   : " belongs to the client that created it: this call needs its owner secret "
                     "(CreateSessionResponse.owner_secret) in the metadata 'hilsim-owner'")};
}

// The shape of every call on one session: admit the caller, find the session, check that a
// mutating call comes from its owner, act, reply.
template <typename Act>
grpc::ServerUnaryReactor* SimulationService::onSession(grpc::CallbackServerContext* context,
                                                       std::uint64_t session_id, Access access,
                                                       Act&& act) {
  if (Status s = admit(context); !s.ok()) return finish(context, s);
  std::shared_ptr<ServerSession> session;
  if (Status s = lookup(session_id, &session); !s.ok()) return finish(context, s);
  if (access == Access::kMutating) {
    if (Status s = mayDrive(*session, ownerMetadata(context)); !s.ok()) return finish(context, s);
  }
  return finish(context, act(session));
}

Status SimulationService::lookup(std::uint64_t session_id,
                                 std::shared_ptr<ServerSession>* session) const {
  if (session_id == 0) return invalid("session_id 0: session ids start at 1");
  *session = registry_.find(session_id);
  if (!*session) {
    return {StatusCode::NOT_FOUND,
            "no session " + std::to_string(session_id) + " (never created, or closed)"};
  }
  return Status::OK;
}

grpc::ServerUnaryReactor* SimulationService::ListModels(grpc::CallbackServerContext* context,
                                                        const v1::ListModelsRequest*,
                                                        v1::ListModelsResponse* response) {
  if (Status s = admit(context); !s.ok()) return finish(context, s);
  *response = registry_.bundledModels();
  return finish(context, Status::OK);
}

grpc::ServerUnaryReactor* SimulationService::CreateSession(grpc::CallbackServerContext* context,
                                                           const v1::CreateSessionRequest* request,
                                                           v1::CreateSessionResponse* response) {
  if (Status s = admit(context); !s.ok()) return finish(context, s);
  return finish(context,
                registry_.create(*request, response, 0, clientAddress(context->peer())));
}

grpc::ServerUnaryReactor* SimulationService::StartSession(grpc::CallbackServerContext* context,
                                                          const v1::SessionRequest* request,
                                                          v1::SessionInfo* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    std::string why;
    if (!session->start(&why)) return transitionFailed(why);
    session->fillInfo(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::PauseSession(grpc::CallbackServerContext* context,
                                                          const v1::SessionRequest* request,
                                                          v1::SessionInfo* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    std::string why;
    if (!session->pause(&why)) return transitionFailed(why);
    session->fillInfo(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::StopSession(grpc::CallbackServerContext* context,
                                                         const v1::SessionRequest* request,
                                                         v1::SessionInfo* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    std::string why;
    if (!session->stop(&why)) return transitionFailed(why);
    session->fillInfo(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::ResetSession(grpc::CallbackServerContext* context,
                                                          const v1::ResetSessionRequest* request,
                                                          v1::SessionInfo* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    std::optional<Eigen::VectorXd> q, v;
    if (!request->q().empty()) {
      if (std::string e = checkVector(request->q(), session->nq(), "q", "nq"); !e.empty()) {
        return invalid(e);
      }
      q = Eigen::Map<const Eigen::VectorXd>(request->q().data(), session->nq());
    }
    if (!request->v().empty()) {
      if (std::string e = checkVector(request->v(), session->nv(), "v", "nv"); !e.empty()) {
        return invalid(e);
      }
      v = Eigen::Map<const Eigen::VectorXd>(request->v().data(), session->nv());
    }
    session->reset(q, v);
    session->fillInfo(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::CloseSession(grpc::CallbackServerContext* context,
                                                          const v1::SessionRequest* request,
                                                          v1::CloseSessionResponse* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    session.reset();  // the registry's close waits for the last holder
    if (!registry_.close(request->session_id(), response->mutable_final_stats())) {
      return Status{StatusCode::NOT_FOUND,
                    "no session " + std::to_string(request->session_id()) + " (closed meanwhile)"};
    }
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::GetSession(grpc::CallbackServerContext* context,
                                                        const v1::SessionRequest* request,
                                                        v1::SessionInfo* response) {
  return onSession(context, request->session_id(), Access::kRead,
                   [&](std::shared_ptr<ServerSession>& session) {
    session->fillInfo(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::ListSessions(grpc::CallbackServerContext* context,
                                                          const v1::ListSessionsRequest*,
                                                          v1::ListSessionsResponse* response) {
  if (Status s = admit(context); !s.ok()) return finish(context, s);
  for (const std::shared_ptr<ServerSession>& session : registry_.list()) {
    session->fillInfo(response->add_sessions());
  }
  for (v1::WorkerStats& worker : registry_.workerStats()) *response->add_workers() = std::move(worker);
  return finish(context, Status::OK);
}

grpc::ServerUnaryReactor* SimulationService::GetStats(grpc::CallbackServerContext* context,
                                                      const v1::SessionRequest* request,
                                                      v1::SessionStats* response) {
  return onSession(context, request->session_id(), Access::kRead,
                   [&](std::shared_ptr<ServerSession>& session) {
    session->fillStats(response);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::InjectFault(grpc::CallbackServerContext* context,
                                                         const v1::InjectFaultRequest* request,
                                                         v1::InjectedFault* response) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    rt::FaultSpec spec;
    if (std::string e = fromProto(request->fault(), false, "fault", &spec); !e.empty()) {
      return invalid(e);
    }
    std::uint32_t id = 0;
    try {
      id = session->session().injectFault(spec);
    } catch (const rt::SessionBusyError& e) {
      return Status(grpc::StatusCode::RESOURCE_EXHAUSTED, e.what());
    } catch (const rt::SessionError& e) {
      return invalid(e.what());
    }
    *response = request->fault();
    response->set_id(id);
    response->set_rate(spec.rate);
    response->set_burst(static_cast<std::uint32_t>(spec.burst));
    spdlog::info("{}: fault {} ({}{}) injected", sessionLabel(session->id()), id,
                 rt::faultTypeName(spec.type), spec.joint.empty() ? "" : " on " + spec.joint);
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::ClearFaults(grpc::CallbackServerContext* context,
                                                         const v1::ClearFaultsRequest* request,
                                                         v1::ClearFaultsResponse*) {
  return onSession(context, request->session_id(), Access::kMutating,
                   [&](std::shared_ptr<ServerSession>& session) {
    if (!session->session().clearFaults(request->id())) {
      return Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                    "too many requests wait for the session's next cycle");
    }
    return Status::OK;
  });
}

grpc::ServerUnaryReactor* SimulationService::Step(grpc::CallbackServerContext* context,
                                                  const v1::Command* request,
                                                  v1::State* response) {
  const rt::Nanoseconds receive_time = rt::monotonicNow();
  if (Status s = admit(context); !s.ok()) return finish(context, s);
  std::shared_ptr<ServerSession> session;
  if (Status s = lookup(request->session_id(), &session); !s.ok()) return finish(context, s);
  if (Status s = mayDrive(*session, ownerMetadata(context)); !s.ok()) return finish(context, s);
  TransportCounters& counters = session->grpcCounters();
  counters.received.fetch_add(1, std::memory_order_relaxed);
  if (session->mode() != rt::SessionMode::kLockstep) {
    return finish(context, transitionFailed(sessionLabel(session->id()) +
                                            " is not LOCKSTEP: Step drives lockstep sessions"));
  }
  if (session->session().state() != rt::SessionState::kRunning) {
    return finish(context, transitionFailed(
                               sessionLabel(session->id()) + " is " +
                               std::string(rt::sessionStateName(session->session().state())) +
                               ": start it first"));
  }
  if (session->hasControlStream()) {
    return finish(context, transitionFailed(sessionLabel(session->id()) +
                                            " has an open Control stream (one controller at a "
                                            "time)"));
  }
  const std::uint32_t steps = request->steps();
  const bool with_torques = !isSync(*request);
  if (!with_torques && steps == 0) {
    const Rejection outcome = session->submit(*request, receive_time);
    counters.count(outcome);
    session->latestState(response);
    response->set_send_time_ns(rt::monotonicNow());
    return finish(context, Status::OK);
  }

  if (session->session().dropPending()) {
    return finish(context, {StatusCode::UNAVAILABLE,
                            sessionLabel(session->id()) +
                                " is dropping the queued cycles of a call that ended; retry"});
  }
  const std::uint64_t drops_before = session->workDrops();
  std::lock_guard lock(session->stepMutex());
  // Calls are served one at a time: each runs after the cycles already requested.
  const std::uint64_t cycles = with_torques ? std::max(1u, steps) : steps;
  // The base before the command is queued: its cycles may run before the next line.
  std::uint64_t& last_target = session->stepTarget();
  const std::uint64_t base = std::max(last_target, session->session().publishedCycle());
  const Rejection outcome = session->submit(*request, receive_time);
  counters.count(outcome);
  switch (outcome) {
    case Rejection::kNone: break;
    case Rejection::kDropped:
      return finish(context, {StatusCode::RESOURCE_EXHAUSTED,
                              "the session's command channel is full"});
    case Rejection::kOverBudget:
      return finish(context, {StatusCode::RESOURCE_EXHAUSTED,
                              describeRejection(outcome, *request, 0, *session)});
    case Rejection::kInactive:
      return finish(context, transitionFailed(sessionLabel(session->id()) + " is not running"));
    default:
      return finish(context,
                    invalid(describeRejection(outcome, *request, 0, *session)));
  }
  const std::uint64_t target = base + cycles;
  last_target = target;
  if (!with_torques) session->session().requestSteps(cycles);
  return newStepReactor(std::move(session), response, target, drops_before);
}

grpc::ServerBidiReactor<v1::Command, v1::State>* SimulationService::Control(
    grpc::CallbackServerContext* context) {
  return newControlReactor(registry_, admit(context),
                           [this, presented = ownerMetadata(context)](const ServerSession& session) {
                             return mayDrive(session, presented);
                           });
}

grpc::ServerWriteReactor<v1::State>* SimulationService::StreamStates(
    grpc::CallbackServerContext* context, const v1::StreamStatesRequest* request) {
  if (Status s = admit(context); !s.ok()) return newStateStreamReactor(s);
  std::shared_ptr<ServerSession> session;
  if (Status s = lookup(request->session_id(), &session); !s.ok()) {
    return newStateStreamReactor(s);
  }
  // Every reader costs the session's publisher a state per cycle: their number is bounded, and
  // one client may hold only its share of them.
  const std::string client = clientAddress(context->peer());
  if (!session->claimClientReader(client, config_.max_stream_readers_per_client)) {
    return newStateStreamReactor(Status{
        StatusCode::RESOURCE_EXHAUSTED,
        sessionLabel(session->id()) + " has " +
            std::to_string(config_.max_stream_readers_per_client) +
            " StreamStates readers of this client, the limit per client "
            "(limits.max_stream_readers_per_client)"});
  }
  if (!session->claimReader(config_.max_stream_readers)) {
    session->releaseClientReader(client);
    return newStateStreamReactor(
        Status{StatusCode::RESOURCE_EXHAUSTED,
               sessionLabel(session->id()) + " has " + std::to_string(config_.max_stream_readers) +
                   " StreamStates readers, this server's limit (limits.max_stream_readers)"});
  }
  return newStateStreamReactor(std::move(session), request->decimation(),
                               request->ground_truth(), client);
}

}  // namespace hilsim::server
