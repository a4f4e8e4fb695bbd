// UdpController: a robot controller's end of a session's UDP port (proto/hilsim/v1/udp.proto,
// docs/PROTOCOL.md "UDP datagrams"). Sends Commands as UdpCommand datagrams and reads back the
// States the server sends, without per-cycle heap allocation once the first few cycles have sized
// its buffers, so that it can sit inside a 1 kHz (or faster) control loop.
//
// Example: a PD controller on a REALTIME session (ids, port and token from CreateSession).
//
//   hilsim::client::UdpController udp("127.0.0.1", info.udp_port(), session_id, udp_token);
//   hilsim::v1::State state;
//   udp.sync();                                        // become the session's UDP peer
//   if (!udp.receive(state, std::chrono::milliseconds(100))) return;  // server not answering
//   std::vector<double> tau(state.v_size());
//   while (running) {
//     for (int k = 0; k < state.v_size(); ++k) {
//       tau[k] = kp * (target[k] - state.q(k)) - kd * state.v(k);
//     }
//     udp.send(tau);                                    // applied at the next control cycle
//     if (!udp.receive(state, std::chrono::milliseconds(10))) udp.sync();  // lost: ask again
//   }
//
// Threads: one object belongs to one thread at a time (nothing is locked inside). Clocks:
// client_send_time_ns is CLOCK_MONOTONIC of this host [ns], so on the server's own host the
// State's server time stamps compare with it directly.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hilsim/v1/udp.pb.h"

namespace hilsim::client {

class UdpController {
 public:
  using Token = std::array<std::uint8_t, 16>;

  /// What the controller did since it was made.
  struct Stats {
    std::uint64_t sent = 0;          ///< datagrams handed to the kernel (commands and syncs)
    std::uint64_t send_errors = 0;   ///< datagrams the kernel refused (socket buffer full, …)
    std::uint64_t received = 0;      ///< States returned by receive()
    std::uint64_t parse_errors = 0;  ///< datagrams that were not a UdpState carrying a State
    std::uint64_t receive_errors = 0;  ///< socket errors while receiving (e.g. ICMP unreachable)
    std::uint64_t timeouts = 0;      ///< receive() calls that returned false
  };

  /// Resolves `host` (name or address) and opens a UDP socket on an ephemeral local port,
  /// connected to host:port so that only datagrams from the session's port are read. `token` is
  /// CreateSessionResponse.udp_token. Throws std::system_error when the host does not resolve or
  /// the socket cannot be opened.
  UdpController(const std::string& host, std::uint16_t port, std::uint64_t session_id,
                const Token& token);
  /// The same with the token as the 16 bytes of a string (the proto `bytes` field); throws
  /// std::invalid_argument when it is not 16 bytes long.
  UdpController(const std::string& host, std::uint16_t port, std::uint64_t session_id,
                std::string_view token);
  ~UdpController();
  UdpController(const UdpController&) = delete;
  UdpController& operator=(const UdpController&) = delete;

  /// Sends a sync (a Command without torques): the server answers at once with its newest State
  /// and makes this socket its peer. In LOCKSTEP, `steps` ≥ 1 advances that many cycles with the
  /// torques last applied and is answered after them. Returns the sequence used, or 0 when the
  /// kernel refused the datagram (counted in send_errors; the sequence is used up all the same).
  std::uint64_t sync(std::uint32_t steps = 0);

  /// Sends joint forces (nv values, v order [N·m, N]) with the next sequence number and
  /// client_send_time_ns = CLOCK_MONOTONIC now. `steps`: LOCKSTEP cycles to apply them for (0
  /// means 1); ignored in the other modes. Returns the sequence, or 0 as for sync(). Sizes and
  /// values are not checked here: the server rejects and counts what breaks the contract.
  std::uint64_t send(std::span<const double> tau, std::uint32_t steps = 0);
  /// A push on a floating base carried by every send() from now on (Command.base_wrench): six
  /// values, the force in the world frame [N] then the torque [N·m]; empty to stop pushing.
  /// Throws std::invalid_argument for another size.
  void setBaseWrench(std::span<const double> wrench);

  /// Waits up to `timeout` (0: only what has already arrived) for the next State and stores it
  /// in `out` (swapped with an internal message: both keep their arrays' capacity, so this does
  /// not allocate once warm). Datagrams that do not parse are counted and skipped. False on
  /// timeout, `out` then unchanged. States arrive in the order the server sent them; after a slow
  /// cycle several may be queued — compare `cycle` to skip old ones.
  bool receive(v1::State& out, std::chrono::nanoseconds timeout);

  /// Sends `bytes` as one datagram from this socket, bypassing the Command encoding (fault
  /// injection and protocol tests). True when the kernel took it.
  bool sendRaw(std::span<const std::uint8_t> bytes);
  /// The last datagram sync() or send() encoded (valid until the next call).
  std::span<const std::uint8_t> lastDatagram() const {
    return {send_buffer_.data(), last_size_};
  }

  /// The sequence number the next sync() or send() uses (1 for a fresh controller).
  std::uint64_t nextSequence() const { return next_sequence_; }
  std::uint64_t sessionId() const { return session_id_; }
  const Stats& stats() const { return stats_; }
  /// The local (source) port: the server's peer port while this controller is the peer.
  std::uint16_t localPort() const { return local_port_; }
  /// The socket's file descriptor, to wait on it with other descriptors (poll, epoll).
  int nativeHandle() const { return fd_; }

 private:
  struct Socket;
  std::uint64_t transmit(std::uint32_t steps);
  /// Decodes a UdpState datagram straight into `out`; false when it carries no valid State.
  bool decode(const std::uint8_t* data, std::size_t size, v1::State& out);

  std::unique_ptr<Socket> socket_;
  std::uint64_t session_id_;
  std::uint64_t next_sequence_ = 1;
  std::uint16_t local_port_ = 0;
  int fd_ = -1;
  v1::UdpCommand command_;                 // reused: token set once, fields overwritten
  std::vector<std::uint8_t> send_buffer_;  // grows to the largest command, then stays
  std::size_t last_size_ = 0;
  std::vector<std::uint8_t> receive_buffer_;  // 64 KiB: any datagram fits
  v1::State scratch_;                         // parsed into, then swapped with the caller's
  Stats stats_;
};

}  // namespace hilsim::client
