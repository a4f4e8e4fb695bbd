#include "client/simulation_client.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "rt/clock.h"

namespace hilsim::client {
namespace {

std::string readFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + what + " '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + what + " '" + path + "'");
  return text.str();
}

std::shared_ptr<grpc::Channel> makeChannel(const std::string& target,
                                           const ClientOptions& options) {
  grpc::ChannelArguments arguments;
  // Reconnect quickly after a server restart instead of backing off for up to two minutes.
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  if (!options.tls) {
    return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), arguments);
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_root_ca_file.empty()) {
    ssl.pem_root_certs = readFile(options.tls_root_ca_file, "TLS root certificate file");
  }
  if (!options.tls_server_name.empty()) {
    arguments.SetSslTargetNameOverride(options.tls_server_name);
  }
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), arguments);
}

std::string describe(const std::string& rpc, const grpc::Status& status) {
  std::string text = rpc + ": " + statusCodeName(status.error_code());
  if (!status.error_message().empty()) text += ": " + status.error_message();
  return text;
}

v1::SessionRequest sessionRequest(std::uint64_t session_id) {
  v1::SessionRequest request;
  request.set_session_id(session_id);
  return request;
}

}  // namespace

RpcError::RpcError(std::string rpc, const grpc::Status& status)
    : std::runtime_error(describe(rpc, status)),
      rpc_(std::move(rpc)),
      code_(status.error_code()),
      server_message_(status.error_message()) {}

std::string statusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    default: return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

// ---------------------------------------------------------------------------------------------
// SimulationClient

SimulationClient::SimulationClient(const std::string& target, ClientOptions options)
    : target_(target),
      options_(std::move(options)),
      channel_(makeChannel(target_, options_)),
      stub_(v1::Simulation::NewStub(channel_)) {}

SimulationClient::SimulationClient(std::shared_ptr<grpc::Channel> channel, ClientOptions options)
    : target_("<channel>"),
      options_(std::move(options)),
      channel_(std::move(channel)),
      stub_(v1::Simulation::NewStub(channel_)) {}

SimulationClient::~SimulationClient() = default;

bool SimulationClient::waitForConnected(std::chrono::milliseconds timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

void SimulationClient::prepareStream(grpc::ClientContext& context,
                                     std::uint64_t session_id) const {
  if (!options_.access_token.empty()) {
    context.AddMetadata("authorization", "Bearer " + options_.access_token);
  }
  if (session_id != 0) {
    if (const std::string secret = ownerSecret(session_id); !secret.empty()) {
      context.AddMetadata("hilsim-owner", secret);
    }
  }
}

std::string SimulationClient::ownerSecret(std::uint64_t session_id) const {
  std::lock_guard lock(secrets_mutex_);
  const auto it = owner_secrets_.find(session_id);
  return it != owner_secrets_.end() ? it->second : options_.owner_secret;
}

void SimulationClient::setOwnerSecret(std::uint64_t session_id, std::string secret) {
  std::lock_guard lock(secrets_mutex_);
  owner_secrets_[session_id] = std::move(secret);
}

void SimulationClient::prepare(grpc::ClientContext& context, std::uint64_t session_id) const {
  prepareStream(context, session_id);
  context.set_deadline(std::chrono::system_clock::now() + options_.deadline);
}

v1::ListModelsResponse SimulationClient::listModels() {
  return call("ListModels", &Stub::ListModels, v1::ListModelsRequest());
}

v1::CreateSessionResponse SimulationClient::createSession(
    const v1::CreateSessionRequest& request) {
  v1::CreateSessionResponse response = call("CreateSession", &Stub::CreateSession, request);
  if (!response.owner_secret().empty()) {
    setOwnerSecret(response.session().session_id(), response.owner_secret());
  }
  return response;
}

v1::CreateSessionResponse SimulationClient::createSession(const std::string& bundled_model,
                                                          const v1::SessionConfig& config) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name(bundled_model);
  *request.mutable_config() = config;
  return createSession(request);
}

v1::SessionInfo SimulationClient::startSession(std::uint64_t session_id) {
  return call("StartSession", &Stub::StartSession, sessionRequest(session_id), session_id);
}

v1::SessionInfo SimulationClient::pauseSession(std::uint64_t session_id) {
  return call("PauseSession", &Stub::PauseSession, sessionRequest(session_id), session_id);
}

v1::SessionInfo SimulationClient::stopSession(std::uint64_t session_id) {
  return call("StopSession", &Stub::StopSession, sessionRequest(session_id), session_id);
}

v1::SessionInfo SimulationClient::resetSession(const v1::ResetSessionRequest& request) {
  return call("ResetSession", &Stub::ResetSession, request, request.session_id());
}

v1::SessionInfo SimulationClient::resetSession(std::uint64_t session_id) {
  v1::ResetSessionRequest request;
  request.set_session_id(session_id);
  return resetSession(request);
}

v1::CloseSessionResponse SimulationClient::closeSession(std::uint64_t session_id) {
  return call("CloseSession", &Stub::CloseSession, sessionRequest(session_id), session_id);
}

v1::SessionInfo SimulationClient::getSession(std::uint64_t session_id) {
  return call("GetSession", &Stub::GetSession, sessionRequest(session_id));
}

v1::ListSessionsResponse SimulationClient::listSessions() {
  return call("ListSessions", &Stub::ListSessions, v1::ListSessionsRequest());
}

v1::SessionStats SimulationClient::getStats(std::uint64_t session_id) {
  return call("GetStats", &Stub::GetStats, sessionRequest(session_id));
}

v1::InjectedFault SimulationClient::injectFault(std::uint64_t session_id,
                                               const v1::InjectedFault& fault) {
  v1::InjectFaultRequest request;
  request.set_session_id(session_id);
  *request.mutable_fault() = fault;
  return call("InjectFault", &Stub::InjectFault, request, session_id);
}

void SimulationClient::clearFaults(std::uint64_t session_id, std::uint32_t id) {
  v1::ClearFaultsRequest request;
  request.set_session_id(session_id);
  request.set_id(id);
  call("ClearFaults", &Stub::ClearFaults, request, session_id);
}

v1::State SimulationClient::step(const v1::Command& command) {
  return call("Step", &Stub::Step, command, command.session_id());
}

std::unique_ptr<ControlStream> SimulationClient::openControl(std::uint64_t session_id) {
  auto context = std::make_unique<grpc::ClientContext>();
  prepareStream(*context, session_id);
  auto stream = stub_->Control(context.get());
  return std::make_unique<ControlStream>(std::move(context), std::move(stream), session_id);
}

std::unique_ptr<StateStream> SimulationClient::streamStates(std::uint64_t session_id,
                                                           std::uint32_t decimation) {
  auto context = std::make_unique<grpc::ClientContext>();
  prepareStream(*context);
  v1::StreamStatesRequest request;
  request.set_session_id(session_id);
  request.set_decimation(decimation);
  auto reader = stub_->StreamStates(context.get(), request);
  return std::make_unique<StateStream>(std::move(context), std::move(reader));
}

// ---------------------------------------------------------------------------------------------
// ControlStream

ControlStream::ControlStream(
    std::unique_ptr<grpc::ClientContext> context,
    std::unique_ptr<grpc::ClientReaderWriter<v1::Command, v1::State>> stream,
    std::uint64_t session_id)
    : context_(std::move(context)), stream_(std::move(stream)), session_id_(session_id) {}

ControlStream::~ControlStream() {
  if (finished_) return;
  // Cancelling first makes the reads below end at once instead of waiting for the server.
  context_->TryCancel();
  finish();
}

std::uint64_t ControlStream::write(v1::Command& command) {
  if (writes_done_ || finished_) return 0;
  command.set_session_id(session_id_);
  command.set_sequence(sequence_ + 1);
  last_send_time_ns_ = rt::monotonicNow();
  command.set_client_send_time_ns(last_send_time_ns_);
  if (!stream_->Write(command)) return 0;
  return ++sequence_;
}

std::uint64_t ControlStream::sync(std::uint32_t steps) {
  v1::Command command;
  command.set_steps(steps);
  return write(command);
}

std::uint64_t ControlStream::send(std::span<const double> tau, std::uint32_t steps) {
  v1::Command command;
  command.mutable_tau()->Add(tau.begin(), tau.end());
  command.set_steps(steps);
  return write(command);
}

bool ControlStream::read(v1::State& state, std::int64_t* receive_time_ns) {
  if (finished_) return false;
  if (!stream_->Read(&state)) return false;
  if (receive_time_ns != nullptr) *receive_time_ns = rt::monotonicNow();
  return true;
}

void ControlStream::writesDone() {
  if (writes_done_ || finished_) return;
  writes_done_ = true;
  stream_->WritesDone();
}

void ControlStream::cancel() { context_->TryCancel(); }

grpc::Status ControlStream::finish() {
  if (finished_) return status_;
  writesDone();
  v1::State discard;
  while (stream_->Read(&discard)) {
  }
  status_ = stream_->Finish();
  finished_ = true;
  return status_;
}

// ---------------------------------------------------------------------------------------------
// StateStream

StateStream::StateStream(std::unique_ptr<grpc::ClientContext> context,
                         std::unique_ptr<grpc::ClientReader<v1::State>> reader)
    : context_(std::move(context)), reader_(std::move(reader)) {}

StateStream::~StateStream() {
  if (finished_) return;
  context_->TryCancel();
  finish();
}

bool StateStream::read(v1::State& state) {
  if (finished_ || ended_) return false;
  if (reader_->Read(&state)) return true;
  ended_ = true;
  return false;
}

void StateStream::cancel() { context_->TryCancel(); }

grpc::Status StateStream::finish() {
  if (finished_) return status_;
  // The feed never ends by itself while the session lives: end it rather than wait forever.
  if (!ended_) context_->TryCancel();
  v1::State discard;
  while (reader_->Read(&discard)) {
  }
  status_ = reader_->Finish();
  finished_ = true;
  return status_;
}

}  // namespace hilsim::client
