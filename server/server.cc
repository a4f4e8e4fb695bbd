#include "server/server.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "rt/realtime_setup.h"
#include "server/grpc_service.h"
#include "server/metrics.h"
#include "server/session_registry.h"
#include "server/viewer.h"

namespace hilsim::server {

namespace {

constexpr int kMaxConnectionIdleMs = 5 * 60 * 1000;  // gRPC's default: never

std::string readFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read the ") + what + " '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// 127.0.0.0/8, ::1 or "localhost": traffic to it never leaves the host.
bool loopbackAddress(const std::string& address) {
  return address == "localhost" || address == "::1" || address.rfind("127.", 0) == 0;
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerConfig c) : config(std::move(c)) {}

  ServerConfig config;
  std::unique_ptr<SessionRegistry> registry;
  std::unique_ptr<SimulationService> service;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<MetricsExporter> metrics;
  std::unique_ptr<Viewer> viewer;
  int grpc_port = 0;
  bool running = false;
  std::mutex mutex;
};

namespace {

// Throws "address A:P already in use" when a listener holds `address`:`port` (port 0, an
// ephemeral port, is always free), before any listener starts. The listeners' own errors do not
// say so: gRPC reports a port of 0, the metrics exporter "null context when constructing
// CivetServer", and a start-up session's UDP port would fail after gRPC said "listening".
void checkPortFree(const std::string& address, int port, int socket_type) {
  if (port == 0) return;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socket_type;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return;
  bool in_use = false;
  for (addrinfo* a = found; a != nullptr && !in_use; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;  // as the listeners: a port in TIME_WAIT is free, a listening one is not
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE) in_use = true;
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (in_use)
    throw std::runtime_error("address " + address + ":" + std::to_string(port) +
                             " already in use" + (socket_type == SOCK_DGRAM ? " (UDP)" : ""));
}

}  // namespace

Server::Server(ServerConfig config) : impl_(std::make_unique<Impl>(std::move(config))) {}

Server::~Server() { shutdown(); }

void Server::start() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mutex);
  if (s.running) return;
  checkPortFree(s.config.bind_address, s.config.grpc_port, SOCK_STREAM);
  if (s.config.metrics_enabled) {
    checkPortFree(s.config.bind_address, s.config.metrics_port, SOCK_STREAM);
  }
  if (s.config.viewer_enabled) {
    checkPortFree(s.config.bind_address, s.config.viewer_port, SOCK_STREAM);
  }
  if (s.config.udp_enabled) {
    for (const StartupSession& startup : s.config.startup_sessions) {
      checkPortFree(s.config.bind_address, startup.udp_port, SOCK_DGRAM);
    }
  }
  // Memory is locked once, now, for every session to come: a process-wide mlockall walks every
  // mapping, and done at each session's start it stalled the sessions already running.
  if (s.config.session_defaults.thread().lock_memory() ||
      (s.config.workers.count > 0 && s.config.workers.lock_memory)) {
    const rt::SetupResult locked = rt::lockMemory();
    if (locked.ok) {
      spdlog::info("memory: {}", locked.detail);
    } else {
      spdlog::warn("memory not locked, running on without it: {}", locked.detail);
    }
  }
  s.registry = std::make_unique<SessionRegistry>(s.config);
  s.service = std::make_unique<SimulationService>(*s.registry, s.config);

  std::shared_ptr<grpc::ServerCredentials> credentials;
  if (!s.config.tls_certificate_file.empty()) {
    grpc::SslServerCredentialsOptions options;
    options.pem_key_cert_pairs.push_back(
        {readFile(s.config.tls_key_file, "TLS key"),
         readFile(s.config.tls_certificate_file, "TLS certificate")});
    credentials = grpc::SslServerCredentials(options);
  } else {
    credentials = grpc::InsecureServerCredentials();
  }
  grpc::ServerBuilder builder;
  // gRPC turns SO_REUSEPORT on by default: a second server on the same port would start and the
  // kernel would share the calls between the two at random
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // A connection that never completes its handshake (HTTP/2 preface, TLS) holds a descriptor
  // and memory: closed after limits.handshake_timeout_s (gRPC's default is 120 s).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             static_cast<int>(s.config.handshake_timeout_s * 1000.0));
  // A connection without a call for this long is closed (a client's channel reconnects by
  // itself at its next call): idle connections do not pile up either.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, kMaxConnectionIdleMs);
  // Room for a CreateSession of limits.max_model_text_bytes (gRPC refuses a message above 4 MiB
  // by default); every other request is far smaller, and its fields are bounded on their own.
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::max<std::size_t>(std::size_t{4} << 20, s.config.max_model_text_bytes + (64 << 10))));
  const std::string address = s.config.bind_address + ":" + std::to_string(s.config.grpc_port);
  builder.AddListeningPort(address, credentials, &s.grpc_port);
  builder.RegisterService(s.service.get());
  s.grpc_server = builder.BuildAndStart();
  if (!s.grpc_server || s.grpc_port == 0) {
    s.grpc_server.reset();
    s.registry.reset();
    throw std::runtime_error("cannot listen for gRPC on " + address +
                             " (address in use, or not an address of this host?)");
  }
  if (s.config.metrics_enabled) {
    SessionRegistry* registry = s.registry.get();
    s.metrics = std::make_unique<MetricsExporter>(
        s.config.bind_address, s.config.metrics_port, [registry] { return registry->sample(); },
        [registry] { return registry->workerStats(); });
  }
  if (s.config.viewer_enabled) {
    try {
      s.viewer = std::make_unique<Viewer>(s.config, *s.registry);
    } catch (...) {
      s.metrics.reset();
      s.grpc_server->Shutdown();
      s.grpc_server.reset();
      s.registry.reset();
      throw;
    }
  }
  spdlog::info("hilsim-server listening: gRPC {}:{}{}{}, UDP {}{}, metrics {}, viewer {}",
               s.config.bind_address, s.grpc_port,
               s.config.tls_certificate_file.empty() ? "" : " (TLS)",
               s.config.access_token.empty() ? "" : " (access token required)",
               !s.config.udp_enabled ? std::string("disabled")
               : s.config.udp_port_first == 0
                   ? std::string("ephemeral ports")
                   : "ports " + std::to_string(s.config.udp_port_first) + "-" +
                         std::to_string(s.config.udp_port_last),
               !s.config.udp_enabled ? ""
               : s.config.udp_authentication == v1::UDP_AUTHENTICATION_MAC
                   ? " (MAC)"
                   : " (token: datagrams unauthenticated but for a token in clear)",
               s.metrics ? "http://" + s.config.bind_address + ":" +
                               std::to_string(s.metrics->port()) + "/metrics"
                         : std::string("disabled"),
               s.viewer ? "http://" + s.config.bind_address + ":" +
                              std::to_string(s.viewer->port()) + "/"
                        : std::string("disabled"));
  if (s.config.udp_enabled && s.config.udp_authentication == v1::UDP_AUTHENTICATION_MAC &&
      s.config.tls_certificate_file.empty() && !loopbackAddress(s.config.bind_address)) {
    // the key is what protects the UDP path; without TLS it crosses the network once in clear
    spdlog::warn("UDP keys are handed out by CreateSession over plaintext gRPC on {}: anyone who "
                 "reads that traffic can forge datagrams; configure security.tls",
                 s.config.bind_address);
  }
  if (s.viewer) {
    spdlog::info("viewer: open http://{}:{}/ in a browser", s.config.bind_address == "0.0.0.0"
                                                               ? "127.0.0.1"
                                                               : s.config.bind_address,
                 s.viewer->port());
  }
  s.running = true;

  for (const StartupSession& startup : s.config.startup_sessions) {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name(startup.model);
    *request.mutable_config() = startup.config;
    // a start-up session waits for its controller as long as the server runs, unless its own
    // configuration gives it a lease (session_defaults' is for the clients' sessions)
    if (!startup.config.has_idle_timeout_s()) request.mutable_config()->set_idle_timeout_s(0.0);
    v1::CreateSessionResponse response;
    const grpc::Status status =
        s.registry->create(request, &response, startup.udp_port, "config", startup.udp_key);
    if (!status.ok()) {
      throw std::runtime_error("start-up session '" + startup.config.name() +
                               "': " + status.error_message());
    }
    const std::uint64_t id = response.session().session_id();
    // secrets are never logged: neither a key (MAC) nor a token (TOKEN)
    std::string credentials;
    if (!response.udp_token().empty()) {
      credentials = ", UDP token random (not logged: reachable over gRPC only)";
    } else if (!response.udp_key().empty()) {
      credentials = startup.udp_key.empty()
                        ? ", UDP key random (no udp_key_file: reachable over gRPC only)"
                        : ", UDP key from its udp_key_file";
    }
    std::string why;
    if (startup.start && !s.registry->find(id)->start(&why)) {
      throw std::runtime_error("start-up session '" + startup.config.name() + "': " + why);
    }
    spdlog::info("start-up session {} '{}': model {}, UDP port {}{}{}", id,
                 response.session().name(), startup.model, response.session().udp_port(),
                 credentials, startup.start ? ", running" : "");
  }
}

void Server::shutdown() {
  Impl& s = *impl_;
  std::lock_guard lock(s.mutex);
  if (!s.running) return;
  s.running = false;
  spdlog::info("hilsim-server shutting down");
  s.service->beginShutdown();
  // The viewer first (no page acts on a session while they close), then the sessions: their
  // streams end (CANCELLED) and their final statistics are logged; then the gRPC server, which
  // waits for the calls still in flight.
  s.viewer.reset();
  s.registry->closeAll();
  s.grpc_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  s.grpc_server->Wait();
  s.metrics.reset();
  s.grpc_server.reset();
  s.service.reset();
  s.registry.reset();
  spdlog::info("hilsim-server stopped");
}

std::uint16_t Server::grpcPort() const { return static_cast<std::uint16_t>(impl_->grpc_port); }

std::uint16_t Server::viewerPort() const {
  return impl_->viewer ? impl_->viewer->port() : 0;
}

std::uint16_t Server::metricsPort() const {
  return impl_->metrics ? impl_->metrics->port() : 0;
}

std::string Server::grpcTarget() const {
  return impl_->config.bind_address + ":" + std::to_string(impl_->grpc_port);
}

const ServerConfig& Server::config() const { return impl_->config; }

SessionRegistry& Server::sessions() { return *impl_->registry; }

}  // namespace hilsim::server
