// Statuses the gRPC handlers and reactors share (grpc_service.cc, grpc_reactors.cc).
#pragma once

#include <cstdint>
#include <string>

#include <grpcpp/grpcpp.h>

namespace hilsim::server {

/// INVALID_ARGUMENT with `message`.
inline grpc::Status invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

/// FAILED_PRECONDITION: a life-cycle transition the session's state does not allow.
inline grpc::Status transitionFailed(const std::string& why) {
  return {grpc::StatusCode::FAILED_PRECONDITION, why};
}

/// "session 7", for messages.
inline std::string sessionLabel(std::uint64_t id) { return "session " + std::to_string(id); }

}  // namespace hilsim::server
