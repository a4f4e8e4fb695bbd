// UdpController: a robot controller's end of a session's UDP port (proto/hilsim/v1/udp.proto,
// docs/PROTOCOL.md "UDP datagrams"). Sends Commands and reads back the States the server sends,
// under the session's scheme: MAC (frames tagged with the session key, states checked and
// replays dropped) or TOKEN (plain UdpCommands with the token). No per-cycle heap allocation once
// the first few cycles have sized its buffers, so that it can sit inside a 1 kHz (or faster)
// control loop.
//
// Example: a PD controller on a REALTIME session (`created`: the CreateSessionResponse, whose
// udp_key or udp_token chooses the scheme).
//
//   hilsim::client::UdpController udp("127.0.0.1", created);
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
#include "proto/udp_frame.h"

namespace hilsim::v1 {
class CreateSessionResponse;
}

namespace hilsim::client {

/// How a UdpController starts (outside the class: a default argument of its constructors).
struct UdpControllerOptions {
  /// The first sequence number (under MAC also the first frame counter), then one more per
  /// datagram. 0: under MAC CLOCK_REALTIME in microseconds, so that a controller restarted with
  /// the same key starts above every counter it used before (at up to one datagram per
  /// microsecond); under TOKEN 1.
  std::uint64_t first_sequence = 0;
};

class UdpController {
 public:
  using Token = std::array<std::uint8_t, 16>;

  using Options = UdpControllerOptions;

  /// What the controller did since it was made.
  struct Stats {
    std::uint64_t sent = 0;          ///< datagrams handed to the kernel (commands and syncs)
    std::uint64_t send_errors = 0;   ///< datagrams the kernel refused (socket buffer full, …)
    std::uint64_t received = 0;      ///< States returned by receive()
    std::uint64_t parse_errors = 0;  ///< datagrams that were not a UdpState carrying a State
    /// MAC: datagrams that were not a state frame with the session key's tag (forged, corrupted,
    /// shorter than a frame)
    std::uint64_t unauthenticated = 0;
    /// MAC: authentic state frames whose counter was not above the newest taken (replayed or
    /// re-ordered)
    std::uint64_t replayed = 0;
    std::uint64_t receive_errors = 0;  ///< socket errors while receiving (e.g. ICMP unreachable)
    std::uint64_t timeouts = 0;      ///< receive() calls that returned false
  };

  /// Resolves `host` (name or address) and opens a UDP socket on an ephemeral local port,
  /// connected to host:port so that only datagrams from the session's port are read. Speaks MAC
  /// when `created` carries udp_key, else TOKEN with its udp_token; port and session id from
  /// `created.session()`. Throws std::system_error when the host does not resolve or the socket
  /// cannot be opened, std::invalid_argument when the key is not 32 bytes or the token not 16.
  UdpController(const std::string& host, const v1::CreateSessionResponse& created,
                Options options = {});
  /// MAC with `key` (CreateSessionResponse.udp_key, or a start-up session's udp_key_file).
  UdpController(const std::string& host, std::uint16_t port, std::uint64_t session_id,
                const udp::Key& key, Options options = {});
  /// TOKEN with `token` (CreateSessionResponse.udp_token).
  UdpController(const std::string& host, std::uint16_t port, std::uint64_t session_id,
                const Token& token, Options options = {});
  /// TOKEN with the token as the 16 bytes of a string (the proto `bytes` field); throws
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
  /// Sends set-points for joints with position and velocity interfaces (docs/REALISM.md), nv
  /// values each in v order (an empty span: not sent): `position` [rad, m], `velocity` [rad/s,
  /// m/s], and `tau` (efforts; feed-forward on position and velocity joints) [N·m, N]. Otherwise
  /// as send().
  std::uint64_t sendSetPoints(std::span<const double> position, std::span<const double> velocity,
                              std::span<const double> tau = {}, std::uint32_t steps = 0);
  /// A push on a floating base carried by every send() from now on (Command.base_wrench): six
  /// values, the force in the world frame [N] then the torque [N·m]; empty to stop pushing.
  /// Throws std::invalid_argument for another size.
  void setBaseWrench(std::span<const double> wrench);

  /// Waits up to `timeout` (0: only what has already arrived) for the next State and stores it
  /// in `out` (swapped with an internal message: both keep their arrays' capacity, so this does
  /// not allocate once warm). Datagrams that do not parse, and under MAC those whose tag fails or
  /// whose counter is not above the newest taken, are counted and skipped. False on
  /// timeout, `out` then unchanged. States arrive in the order the server sent them; after a slow
  /// cycle several may be queued — compare `cycle` to skip old ones.
  bool receive(v1::State& out, std::chrono::nanoseconds timeout);

  /// Sends `bytes` as one datagram from this socket, bypassing the Command encoding and the frame
  /// (fault injection and protocol tests). True when the kernel took it.
  bool sendRaw(std::span<const std::uint8_t> bytes);
  /// The last datagram sync() or send() encoded, frame included (valid until the next call).
  std::span<const std::uint8_t> lastDatagram() const {
    return {send_buffer_.data(), last_size_};
  }

  /// The sequence number the next sync() or send() uses (Options::first_sequence for a fresh one).
  std::uint64_t nextSequence() const { return next_sequence_; }
  /// Whether datagrams are MAC frames (else TOKEN).
  bool authenticated() const { return mac_; }
  std::uint64_t sessionId() const { return session_id_; }
  const Stats& stats() const { return stats_; }
  /// The local (source) port: the server's peer port while this controller is the peer.
  std::uint16_t localPort() const { return local_port_; }
  /// The socket's file descriptor, to wait on it with other descriptors (poll, epoll).
  int nativeHandle() const { return fd_; }

 private:
  struct Socket;
  /// The scheme and its secret: `key` under MAC, `token` under TOKEN.
  struct Credentials {
    bool mac;
    udp::Key key;
    Token token;
  };
  UdpController(const std::string& host, std::uint16_t port, std::uint64_t session_id,
                const Credentials& credentials, Options options);
  std::uint64_t transmit(std::uint32_t steps);
  /// MAC: checks a state frame; true and `*payload` the UdpState inside when it is authentic and
  /// newer than any taken before (counted otherwise).
  bool openState(std::span<const std::uint8_t> frame, std::span<const std::uint8_t>* payload);
  /// Decodes a UdpState datagram straight into `out`; false when it carries no valid State.
  bool decode(const std::uint8_t* data, std::size_t size, v1::State& out);

  std::unique_ptr<Socket> socket_;
  std::uint64_t session_id_;
  std::uint64_t next_sequence_ = 1;
  std::uint16_t local_port_ = 0;
  int fd_ = -1;
  const bool mac_;
  udp::Key key_;                // MAC: the session key (zeroed with the controller)
  udp::ReplayWindow states_;    // MAC: the counters of the states taken
  v1::UdpCommand command_;      // reused: token set once (TOKEN), fields overwritten
  std::vector<std::uint8_t> send_buffer_;  // grows to the largest command, then stays
  std::size_t last_size_ = 0;
  std::vector<std::uint8_t> receive_buffer_;  // 64 KiB: any datagram fits
  v1::State scratch_;                         // parsed into, then swapped with the caller's
  Stats stats_;
};

}  // namespace hilsim::client
