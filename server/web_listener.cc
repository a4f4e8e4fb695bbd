#include "server/web_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

namespace hilsim::server {
namespace {

/// Where to connect to reach a listener bound to the IPv4 `address`:`port` from this host (a
/// wildcard address through loopback); nullopt if `address` is no IPv4 literal.
std::optional<sockaddr_in> localPeer(const std::string& address, std::uint16_t port) {
  sockaddr_in peer{};
  if (inet_pton(AF_INET, address.c_str(), &peer.sin_addr) != 1) return std::nullopt;
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  if (peer.sin_addr.s_addr == htonl(INADDR_ANY)) peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return peer;
}

/// Opens and at once closes a connection to `peer`.
void knock(const sockaddr_in& peer) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer);
  ::close(fd);
}

}  // namespace

void stopWebServer(const std::string& address, std::uint16_t port,
                   const std::function<void()>& stop) {
  const std::optional<sockaddr_in> peer = localPeer(address, port);
  std::atomic<bool> stopped{false};
  std::thread waker;
  if (peer) {
    waker = std::thread([&stopped, peer = *peer] {
      while (!stopped.load()) {
        knock(peer);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  stop();
  stopped = true;
  if (waker.joinable()) waker.join();
}

}  // namespace hilsim::server
