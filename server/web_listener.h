// Stopping a civetweb web server (the metrics exporter's and the viewer's) without its 2 s wait.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace hilsim::server {

/// Calls `stop` (which stops a civetweb server listening on `address`:`port`) while connecting
/// to that port every 20 ms from another thread. civetweb's listener thread polls its socket in
/// 2 s quanta and sees the stop flag only when the poll returns: each connection ends the wait,
/// so stopping takes milliseconds instead of up to two seconds.
void stopWebServer(const std::string& address, std::uint16_t port,
                   const std::function<void()>& stop);

}  // namespace hilsim::server
