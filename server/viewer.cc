#include "server/viewer.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hilsim/v1/service.pb.h"
#include "hilsim/v1/viewer.pb.h"
#include "server/client_quota.h"
#include "server/session_registry.h"
#include "server/viewer_assets.h"
#include "server/viewer_route.h"
#include "server/viewer_scene.h"
#include "server/web_listener.h"

namespace hilsim::server {
namespace {

using Clock = std::chrono::steady_clock;

/// The largest mesh file served (a detailed robot link is a few MiB).
constexpr std::streamoff kMaxMeshBytes = std::streamoff{64} << 20;

std::string toJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return "{}";
  return json;
}

/// A JSON string literal of `text` (quotes and control characters escaped).
std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 15];
      out += kHex[c & 15];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

const char* reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/// Writes a whole response; returns `status` (civetweb: the request was handled).
int respond(mg_connection* conn, int status, std::string_view content_type, std::string_view body) {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %.*s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
            "Connection: close\r\n\r\n",
            status, reasonPhrase(status), static_cast<int>(content_type.size()),
            content_type.data(), body.size());
  mg_write(conn, body.data(), body.size());
  return status;
}

int respondJson(mg_connection* conn, int status, const std::string& json) {
  return respond(conn, status, "application/json", json);
}

int respondError(mg_connection* conn, int status, const std::string& message) {
  return respondJson(conn, status, "{\"error\":" + jsonString(message) + "}");
}

/// Constant-time comparison (the access token).
bool sameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return difference == 0;
}

}  // namespace

/// One open page: its WebSocket and what it watches.
struct Watcher {
  std::mutex mutex;  // held while writing; the close handler takes it before the connection goes
  mg_connection* connection = nullptr;  // null once closed
  std::shared_ptr<ServerSession> session;
  std::unique_ptr<ViewerPoser> poser;
  std::uint64_t last_cycle = ~std::uint64_t{0};
  int last_state = -1;
  Clock::time_point last_sent{};
  bool said_closed = false;
  std::string client;  // the page's peer address (limits.max_viewer_pages_per_client)
};

struct Viewer::Impl {
  const ServerConfig& config;
  SessionRegistry& registry;
  ViewerCounters counters;
  mg_context* context = nullptr;
  std::uint16_t port = 0;
  std::mutex start_error_mutex;
  std::string start_error;  // the last thing civetweb logged (why mg_start failed)

  std::mutex watchers_mutex;
  std::vector<std::shared_ptr<Watcher>> watchers;
  ClientQuota client_pages;  // open pages per peer address

  std::mutex feed_mutex;
  std::condition_variable feed_wake;
  bool feed_stop = false;
  bool feed_now = false;  // a page just opened: send before the next tick
  std::thread feed;

  Impl(const ServerConfig& c, SessionRegistry& r) : config(c), registry(r) {}

  std::shared_ptr<ServerSession> findSession(std::uint64_t id) const {
    // list(), not find(): looking does not count as using the session for its lease
    for (std::shared_ptr<ServerSession>& session : registry.list()) {
      if (session->id() == id && !session->closed()) return session;
    }
    return nullptr;
  }

  bool authorised(const mg_connection* conn) const {
    if (config.access_token.empty()) return true;
    if (const char* header = mg_get_header(conn, "Authorization")) {
      std::string_view value(header);
      if (value.substr(0, 7) == "Bearer " && sameSecret(value.substr(7), config.access_token)) {
        return true;
      }
    }
    const mg_request_info* info = mg_get_request_info(conn);
    if (info->query_string != nullptr) {
      std::string token(1024, '\0');
      const int length = mg_get_var(info->query_string, std::strlen(info->query_string), "token",
                                    token.data(), token.size());
      if (length >= 0) {
        token.resize(static_cast<std::size_t>(length));
        return sameSecret(token, config.access_token);
      }
    }
    return false;
  }

  bool mayDrive(const mg_connection* conn, const ServerSession& session) const {
    const char* header = mg_get_header(conn, "X-Hilsim-Owner");
    return header != nullptr && session.drivenBy(header, config.operator_secret);
  }

  /// DNS rebinding: a site whose name an attacker points at this host would be "same origin" to
  /// the browser. Without an access token only hosts that cannot be rebound are served: an IP
  /// literal or localhost. With a token any name is (the token protects it).
  bool trustedHost(const mg_connection* conn) const {
    if (!config.access_token.empty()) return true;
    const char* header = mg_get_header(conn, "Host");
    if (header == nullptr) return true;  // HTTP/1.0 tools; a browser always sends Host
    std::string_view host(header);
    if (!host.empty() && host.front() == '[') return host.find(']') != std::string_view::npos;
    host = host.substr(0, host.find(':'));
    if (host == "localhost") return true;
    in_addr address{};
    return inet_pton(AF_INET, std::string(host).c_str(), &address) == 1;
  }

  /// A page of another site must not drive the viewer from the operator's browser: a WebSocket
  /// may come from any origin, so its Origin must be this server's own.
  static bool sameOrigin(const mg_connection* conn) {
    const char* origin = mg_get_header(conn, "Origin");
    const char* host = mg_get_header(conn, "Host");
    if (origin == nullptr) return true;  // not a browser
    if (host == nullptr) return false;
    const std::string_view o(origin);
    return o == "http://" + std::string(host) || o == "https://" + std::string(host);
  }

  int refuse(mg_connection* conn, int status, const std::string& message) {
    counters.refused.fetch_add(1, std::memory_order_relaxed);
    return respondError(conn, status, message);
  }

  int serve(mg_connection* conn) {
    counters.requests.fetch_add(1, std::memory_order_relaxed);
    const mg_request_info* info = mg_get_request_info(conn);
    const ViewerRoute route =
        parseViewerRoute(info->request_method != nullptr ? info->request_method : "",
                         info->local_uri != nullptr ? info->local_uri : "");
    using Kind = ViewerRoute::Kind;
    switch (route.kind) {
      case Kind::kNotFound: return refuse(conn, 404, "no such page or API path");
      case Kind::kMethodNotAllowed: return refuse(conn, 405, "method not allowed on this path");
      case Kind::kAsset: {
        const ViewerAsset* asset = findViewerAsset(route.asset);
        if (asset == nullptr) return refuse(conn, 404, "no such file");
        return respond(conn, 200, asset->content_type, asset->bytes);
      }
      case Kind::kFrames: return refuse(conn, 400, "this path takes a WebSocket upgrade");
      default: break;
    }
    if (!trustedHost(conn)) {
      return refuse(conn, 403,
                    "reach the viewer by IP address or localhost, or set security.access_token");
    }
    if (!authorised(conn)) {
      return refuse(conn, 401, "this server requires its access token (security.access_token)");
    }
    if (route.kind == Kind::kSessions) return respondJson(conn, 200, sessionsJson());
    std::shared_ptr<ServerSession> session = findSession(route.session_id);
    if (!session) return refuse(conn, 404, "no session " + std::to_string(route.session_id));
    if (route.kind == Kind::kScene) {
      v1::ViewerScene scene;
      buildViewerScene(*session, &scene);
      return respondJson(conn, 200, toJson(scene));
    }
    if (route.kind == Kind::kMesh) return serveMesh(conn, *session, route.mesh);
    // kAction. A form of another site could post here (a "simple" request needs no CORS
    // approval); it cannot set this header without the server's approval, which it never gets.
    const char* marker = mg_get_header(conn, "X-Hilsim-Viewer");
    if (marker == nullptr || !sameOrigin(conn)) {
      return refuse(conn, 403, "actions need the X-Hilsim-Viewer header and this server's origin");
    }
    // as over gRPC, only the session's owner (or the operator) drives it
    if (!mayDrive(conn, *session)) {
      return refuse(conn, 403,
                    "this session belongs to the client that created it: actions need its owner "
                    "secret, or the operator's, in the X-Hilsim-Owner header");
    }
    session->touch();
    std::string why;
    bool ok = true;
    switch (route.action) {
      case ViewerRoute::Action::kStart: ok = session->start(&why); break;
      case ViewerRoute::Action::kPause: ok = session->pause(&why); break;
      case ViewerRoute::Action::kReset: session->reset(); break;
      case ViewerRoute::Action::kNone: break;
    }
    if (!ok) return refuse(conn, 409, why);
    v1::SessionInfo info_out;
    session->fillInfo(&info_out);
    return respondJson(conn, 200, toJson(info_out));
  }

  /// Visual `index`'s mesh file: only a file the scene offers (found beside the model file at
  /// load time); the request names an index, never a path.
  int serveMesh(mg_connection* conn, ServerSession& session, std::uint64_t index) {
    const std::string path = viewerMeshFile(session.model(), index);
    if (path.empty()) return refuse(conn, 404, "no mesh " + std::to_string(index));
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    const std::streamoff size = file ? static_cast<std::streamoff>(file.tellg()) : -1;
    if (size < 0) return refuse(conn, 404, "mesh " + std::to_string(index) + " cannot be read");
    if (size > kMaxMeshBytes) {
      return refuse(conn, 413, "mesh " + std::to_string(index) + " is larger than " +
                                   std::to_string(kMaxMeshBytes >> 20) + " MiB");
    }
    std::string bytes(static_cast<std::size_t>(size), '\0');
    file.seekg(0);
    if (!file.read(bytes.data(), size)) {
      return refuse(conn, 404, "mesh " + std::to_string(index) + " cannot be read");
    }
    return respond(conn, 200, "application/octet-stream", bytes);
  }

  std::string sessionsJson() {
    v1::ViewerSessions out;
    for (const std::shared_ptr<ServerSession>& session : registry.list()) {
      if (session->closed()) continue;
      session->fillInfo(out.mutable_list()->add_sessions());
    }
    for (v1::WorkerStats& worker : registry.workerStats())
      *out.mutable_list()->add_workers() = std::move(worker);
    v1::ViewerCounters* c = out.mutable_viewer();
    c->set_requests(counters.requests.load(std::memory_order_relaxed));
    c->set_refused(counters.refused.load(std::memory_order_relaxed));
    c->set_frames_sent(counters.frames_sent.load(std::memory_order_relaxed));
    c->set_send_errors(counters.send_errors.load(std::memory_order_relaxed));
    c->set_pages(static_cast<std::uint32_t>(counters.pages.load(std::memory_order_relaxed)));
    c->set_rate_hz(config.viewer_rate_hz);
    return toJson(out);
  }

  // --- WebSockets ---

  int acceptPage(const mg_connection* conn) {
    counters.requests.fetch_add(1, std::memory_order_relaxed);
    const mg_request_info* info = mg_get_request_info(conn);
    const ViewerRoute route =
        parseViewerRoute("GET", info->local_uri != nullptr ? info->local_uri : "");
    auto reject = [this] {
      counters.refused.fetch_add(1, std::memory_order_relaxed);
      return 1;  // civetweb answers the upgrade with an error
    };
    if (route.kind != ViewerRoute::Kind::kFrames || !trustedHost(conn) || !authorised(conn) ||
        !sameOrigin(conn)) {
      return reject();
    }
    std::shared_ptr<ServerSession> session = findSession(route.session_id);
    if (!session) return reject();
    // everything that can throw before the page is counted
    auto watcher = std::make_shared<Watcher>();
    watcher->session = std::move(session);
    watcher->poser = std::make_unique<ViewerPoser>(watcher->session->model());
    auto held = std::make_unique<std::shared_ptr<Watcher>>(std::move(watcher));
    const std::string client = info->remote_addr;
    if (!client_pages.claim(client, config.max_viewer_pages_per_client)) return reject();
    (*held)->client = client;
    if (counters.pages.fetch_add(1, std::memory_order_acq_rel) >= kMaxPages) {
      counters.pages.fetch_sub(1, std::memory_order_acq_rel);
      client_pages.release(client);
      return reject();
    }
    // owned by the connection until the close handler takes it back
    mg_set_user_connection_data(conn, held.release());
    return 0;
  }

  void pageReady(mg_connection* conn) {
    auto* held = static_cast<std::shared_ptr<Watcher>*>(mg_get_user_connection_data(conn));
    if (held == nullptr) return;
    {
      std::lock_guard lock((*held)->mutex);
      (*held)->connection = conn;
    }
    {
      std::lock_guard lock(watchers_mutex);
      watchers.push_back(*held);
    }
    {
      std::lock_guard lock(feed_mutex);
      feed_now = true;  // the first frame now, not at the next tick
    }
    feed_wake.notify_one();
  }

  void pageClosed(const mg_connection* conn) {
    auto* held = static_cast<std::shared_ptr<Watcher>*>(mg_get_user_connection_data(conn));
    if (held == nullptr) return;
    {
      std::lock_guard lock(watchers_mutex);
      watchers.erase(std::remove(watchers.begin(), watchers.end(), *held), watchers.end());
    }
    {
      std::lock_guard lock((*held)->mutex);  // waits for a frame being written
      (*held)->connection = nullptr;
    }
    client_pages.release((*held)->client);
    delete held;
    counters.pages.fetch_sub(1, std::memory_order_acq_rel);
  }

  /// Sends `watcher` its session's newest state when it changed, or once a second anyway (the
  /// timing figures move while a session is paused in LOCKSTEP, and the page sees it is alive).
  void sendFrame(Watcher& watcher, Clock::time_point now) {
    std::lock_guard lock(watcher.mutex);
    if (watcher.connection == nullptr || watcher.said_closed) return;
    ServerSession& session = *watcher.session;
    v1::ViewerFrame frame;
    frame.set_session_id(session.id());
    if (session.closed()) {
      frame.set_closed(true);
      watcher.said_closed = true;
    } else {
      v1::State state;
      session.latestState(&state, true);  // the robot as it is, not as its sensors say
      if (state.cycle() == watcher.last_cycle &&
          static_cast<int>(state.state()) == watcher.last_state &&
          now - watcher.last_sent < std::chrono::seconds(1)) {
        return;
      }
      watcher.last_cycle = state.cycle();
      watcher.last_state = static_cast<int>(state.state());
      frame.set_cycle(state.cycle());
      frame.set_time(state.time());
      frame.set_state(state.state());
      *frame.mutable_q() = state.q();
      *frame.mutable_v() = state.v();
      *frame.mutable_tau() = state.tau();
      *frame.mutable_tau_commanded() = state.tau_commanded();
      *frame.mutable_limit_force() = state.limit_force();
      *frame.mutable_contact_force() = state.contact_force();
      *frame.mutable_faults() = state.faults();
      watcher.poser->pose(state.q(), &frame);
      v1::SessionStats stats;
      session.fillStats(&stats);
      *frame.mutable_timing() = stats.timing();
      *frame.mutable_constraints() = stats.constraints();
      frame.set_real_time_factor(stats.real_time_factor());
      if (stats.has_fault()) frame.set_fault(stats.fault().reason());
    }
    watcher.last_sent = now;
    const std::string json = toJson(frame);
    if (mg_websocket_write(watcher.connection, MG_WEBSOCKET_OPCODE_TEXT, json.data(),
                           json.size()) > 0) {
      counters.frames_sent.fetch_add(1, std::memory_order_relaxed);
    } else {
      // a page that took nothing within websocket_timeout_ms (or went away) gets no more: a
      // frame cut short leaves its stream out of step, and it would hold the feed each tick
      counters.send_errors.fetch_add(1, std::memory_order_relaxed);
      watcher.said_closed = true;
    }
    if (watcher.said_closed) closePage(watcher);
  }

  /// Asks the page to close its WebSocket (status 1000, normal closure); with watcher.mutex held.
  static void closePage(Watcher& watcher) {
    static constexpr char kNormalClosure[] = {0x03, static_cast<char>(0xe8)};
    mg_websocket_write(watcher.connection, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE, kNormalClosure,
                       sizeof kNormalClosure);
    watcher.said_closed = true;
  }

  /// Closes every page's WebSocket: civetweb's stop waits for their threads, which otherwise
  /// wait for the pages' next keep-alive.
  void closeAllPages() {
    std::vector<std::shared_ptr<Watcher>> all;
    {
      std::lock_guard lock(watchers_mutex);
      all = watchers;
    }
    for (const std::shared_ptr<Watcher>& watcher : all) {
      std::lock_guard lock(watcher->mutex);
      if (watcher->connection != nullptr && !watcher->said_closed) closePage(*watcher);
    }
  }

  void feedMain() {
    const auto period = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / config.viewer_rate_hz));
    Clock::time_point next = Clock::now();
    std::vector<std::shared_ptr<Watcher>> current;
    while (true) {
      {
        std::unique_lock lock(feed_mutex);
        feed_wake.wait_until(lock, next, [this] { return feed_stop || feed_now; });
        if (feed_stop) return;
        feed_now = false;
      }
      const Clock::time_point now = Clock::now();
      next = std::max(next + period, now);  // no burst after a stall
      {
        std::lock_guard lock(watchers_mutex);
        current = watchers;
      }
      for (const std::shared_ptr<Watcher>& watcher : current) {
        try {
          sendFrame(*watcher, now);
        } catch (const std::exception& e) {
          // a frame that cannot be built must not end the feed of every other page
          counters.send_errors.fetch_add(1, std::memory_order_relaxed);
          spdlog::warn("viewer: frame of session {} not sent: {}", watcher->session->id(),
                       e.what());
        }
      }
      current.clear();
    }
  }

  // civetweb's callbacks (C): nothing thrown may cross them.
  static int onRequest(mg_connection* conn, void* impl) {
    try {
      return static_cast<Impl*>(impl)->serve(conn);
    } catch (const std::exception& e) {
      try {
        return respondError(conn, 500, std::string("internal error: ") + e.what());
      } catch (...) {
        return 500;
      }
    } catch (...) {
      return 500;
    }
  }
  static int onConnect(const mg_connection* conn, void* impl) {
    try {
      return static_cast<Impl*>(impl)->acceptPage(conn);
    } catch (...) {
      return 1;
    }
  }
  static void onReady(mg_connection* conn, void* impl) {
    try {
      static_cast<Impl*>(impl)->pageReady(conn);
    } catch (...) {
      // not in the feed (out of memory): the page gets no frames and its close frees it
    }
  }
  static int onData(mg_connection*, int bits, char*, std::size_t, void*) {
    // The page sends only keep-alives; a close frame ends the connection.
    return (bits & 0x0f) == MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE ? 0 : 1;
  }
  static void onClose(const mg_connection* conn, void* impl) {
    static_cast<Impl*>(impl)->pageClosed(conn);
  }
  static int onLog(const mg_connection* conn, const char* message) {
    const mg_context* context = mg_get_context(conn);
    auto* impl = context != nullptr ? static_cast<Impl*>(mg_get_user_data(context)) : nullptr;
    if (impl != nullptr) {
      std::lock_guard lock(impl->start_error_mutex);
      impl->start_error = message;
    }
    spdlog::debug("viewer: {}", message);
    return 1;
  }
};

Viewer::Viewer(const ServerConfig& config, SessionRegistry& registry)
    : impl_(std::make_unique<Impl>(config, registry)) {
  mg_init_library(0);
  const std::string listen = config.bind_address + ":" + std::to_string(config.viewer_port);
  // Every open page holds a worker (its WebSocket); the others serve the files and the API. A
  // connection holds a worker from its accept until its request is read (civetweb reads it on
  // the worker): idle or slow connections take the workers for request_timeout_ms each, so there
  // are many (threads that wait cost only their stacks) and the timeout is short.
  const std::string threads = std::to_string(kMaxPages + kApiWorkers);
  const char* options[] = {"listening_ports", listen.c_str(),
                           "num_threads", threads.c_str(),
                           "request_timeout_ms", "1000",
                           // no CORS approval of any kind: civetweb's default is "*" (any site
                           // could read the API from the operator's browser)
                           "access_control_allow_origin", "",
                           "access_control_allow_methods", "",
                           "access_control_allow_headers", "",
                           // a page that stops reading holds the feed thread at most 2 s, once
                           // (then it is closed); an idle one is pinged, and closed when its
                           // browser does not answer (a half-open peer frees its place)
                           "websocket_timeout_ms", "2000",
                           "enable_websocket_ping_pong", "yes",
                           "enable_keep_alive", "no",
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = Impl::onLog;
  impl_->context = mg_start(&callbacks, impl_.get(), options);
  if (impl_->context == nullptr) {
    mg_exit_library();
    std::lock_guard lock(impl_->start_error_mutex);
    throw std::runtime_error("viewer: cannot listen on " + listen +
                             (impl_->start_error.empty() ? "" : " (" + impl_->start_error + ")"));
  }
  mg_server_port ports[1]{};
  if (mg_get_server_ports(impl_->context, 1, ports) < 1 || ports[0].port <= 0) {
    mg_stop(impl_->context);
    mg_exit_library();
    throw std::runtime_error("viewer: no listening port on " + listen);
  }
  impl_->port = static_cast<std::uint16_t>(ports[0].port);
  mg_set_request_handler(impl_->context, "/", Impl::onRequest, impl_.get());
  mg_set_websocket_handler(impl_->context, "/ws", Impl::onConnect, Impl::onReady, Impl::onData,
                           Impl::onClose, impl_.get());
  impl_->feed = std::thread([impl = impl_.get()] { impl->feedMain(); });
}

Viewer::~Viewer() {
  {
    std::lock_guard lock(impl_->feed_mutex);
    impl_->feed_stop = true;
  }
  impl_->feed_wake.notify_one();
  impl_->feed.join();
  impl_->closeAllPages();
  // mg_stop closes every connection (each page's close handler runs) and joins civetweb's threads
  stopWebServer(impl_->config.bind_address, impl_->port, [this] { mg_stop(impl_->context); });
  mg_exit_library();
}

std::uint16_t Viewer::port() const { return impl_->port; }

const ViewerCounters& Viewer::counters() const { return impl_->counters; }

}  // namespace hilsim::server
