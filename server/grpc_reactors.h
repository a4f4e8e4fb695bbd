// The reactors of SimulationService's calls that outlive their handler (grpc_service.cc): Step,
// answered once its cycles have run; the Control stream; the StreamStates feed. Each deletes
// itself when gRPC is done with it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "hilsim/v1/service.grpc.pb.h"
#include "server/server_session.h"
#include "server/session_registry.h"

namespace hilsim::server {

/// Why `command` was refused, as the message of an INVALID_ARGUMENT status (names the rule and the
/// values); `newest` is the newest sequence accepted on its stream.
std::string describeRejection(Rejection rejection, const v1::Command& command, std::uint64_t newest,
                              const ServerSession& session);

/// Step on a LOCKSTEP session: answers with the state of cycle `target` once it has run (ABORTED,
/// CANCELLED or FAILED_PRECONDITION when the session faults, closes or leaves RUNNING first).
/// `drops_before`: the session's workDrops() before the command was queued (a drop since then
/// answers ABORTED at once).
grpc::ServerUnaryReactor* newStepReactor(std::shared_ptr<ServerSession> session, v1::State* response,
                                         std::uint64_t target, std::uint64_t drops_before);

/// Whether the caller of a call may drive a session (its owner, or the operator): OK or
/// PERMISSION_DENIED.
using OwnerCheck = std::function<grpc::Status(const ServerSession&)>;

/// A Control stream; `admitted` is the caller's admission (an error ends the stream with it),
/// `may_drive` checks the session its first message names.
grpc::ServerBidiReactor<v1::Command, v1::State>* newControlReactor(SessionRegistry& registry,
                                                                   grpc::Status admitted,
                                                                   OwnerCheck may_drive);

/// A StreamStates call refused with `refusal`.
grpc::ServerWriteReactor<v1::State>* newStateStreamReactor(const grpc::Status& refusal);

/// A StreamStates feed of `session` (one of its claimed readers): every `decimation`-th state,
/// the truth with `ground_truth`, else what the session's sensors read.
grpc::ServerWriteReactor<v1::State>* newStateStreamReactor(std::shared_ptr<ServerSession> session,
                                                           std::uint32_t decimation,
                                                           bool ground_truth, std::string client);

}  // namespace hilsim::server
