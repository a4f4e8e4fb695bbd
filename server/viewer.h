// The browser viewer (docs/VIEWER.md): an HTTP and WebSocket server (civetweb) on
// listen.viewer.port that serves the page built into the server (viewer_assets.h), a JSON API
// over the session registry, and one WebSocket of frames per open page. Frames are built on the
// viewer's own feed thread from each session's newest published state, at viewer.rate_hz; the
// sessions' RT threads never see the viewer.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "server/server_config.h"

namespace hilsim::server {

class SessionRegistry;

/// What the viewer has served and refused since it started (GET /api/sessions reports them).
struct ViewerCounters {
  std::atomic<std::uint64_t> requests{0};      ///< HTTP requests and WebSocket upgrades
  std::atomic<std::uint64_t> refused{0};       ///< answered 4xx: unknown path, method, session,
                                               ///< missing token, too many pages
  std::atomic<std::uint64_t> frames_sent{0};   ///< WebSocket frames written
  std::atomic<std::uint64_t> send_errors{0};   ///< frames a page did not take (it went away)
  std::atomic<int> pages{0};                   ///< WebSockets open now
};

class Viewer {
 public:
  /// Most WebSockets open at once; one more is refused. civetweb gives each open WebSocket a
  /// worker thread of its own, so the server runs this many workers and kApiWorkers more for
  /// requests. One client holds at most limits.max_viewer_pages_per_client of them.
  static constexpr int kMaxPages = 16;
  /// Workers for files and API requests: a connection holds one until its request is read (at
  /// most 1 s), so idle connections must arrive faster than this many a second to delay others.
  static constexpr int kApiWorkers = 64;

  /// Serves on config.bind_address:config.viewer_port (0: an ephemeral port). When
  /// config.access_token is set every request but the page's own files must carry it
  /// (`Authorization: Bearer <token>`, or `?token=<token>` for the WebSocket). Throws
  /// std::runtime_error when it cannot listen.
  Viewer(const ServerConfig& config, SessionRegistry& registry);
  ~Viewer();  ///< closes every page's WebSocket and stops serving
  Viewer(const Viewer&) = delete;
  Viewer& operator=(const Viewer&) = delete;

  std::uint16_t port() const;
  const ViewerCounters& counters() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hilsim::server
