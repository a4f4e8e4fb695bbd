// UdpEndpoint: one session's UDP port, the low-latency controller path (proto/hilsim/v1/udp.proto,
// docs/PROTOCOL.md "UDP datagrams"). Receives command datagrams — authenticated frames under the
// session's key (MAC) or UdpCommands with its token (TOKEN) —, applies the rejection rules of
// udp.proto in order (DatagramScreen, then the session's), hands accepted commands to the session,
// and sends UdpState datagrams (framed and tagged under MAC) to the peer — the source of the
// newest accepted datagram while it has sent one within the last second.
//
// Threads: each endpoint has its own network thread running its own asio::io_context, so that a
// flood on one session's port never delays another session. Datagrams leave from two threads:
// the session's publisher thread (onState: the per-cycle states) and the network thread (the
// answer to a sync). Both write with a non-blocking sendto() on the socket's descriptor under
// one small mutex that guards the peer, the reused UdpState and the send buffer. Neither thread
// is an RT thread; the RT loop only sees the session's command channel.
//
// Allocation: datagrams are received into a fixed buffer and their Command is parsed into one
// reused message; states are serialized from one reused message into a fixed buffer and tagged
// there. Once the first datagrams have sized those messages' arrays, traffic does not touch the
// heap.
#pragma once

#include <array>
#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>
#include <string_view>
#include <thread>

#include "hilsim/v1/udp.pb.h"
#include "rt/clock.h"
#include "rt/session.h"
#include "server/server_session.h"
#include "server/transport_stats.h"
#include "server/udp_screen.h"

namespace hilsim::server {

class UdpEndpoint final : public StateSink {
 public:
  /// Longest accepted datagram: an Ethernet frame's UDP payload over IPv4 (rule 1 of udp.proto).
  static constexpr std::size_t kMaxDatagramBytes = DatagramScreen::kMaxDatagramBytes;
  /// Silence after which the peer no longer receives states (ABB EGM's default timeout) [ns].
  static constexpr rt::Nanoseconds kPeerTimeout = rt::kNanosecondsPerSecond;
  /// TOKEN: source addresses whose sequence gates are kept; the least recently accepted is
  /// forgotten first (it may then start again at any sequence, as a restarted controller would).
  /// MAC has one replay window per session key instead.
  static constexpr std::size_t kMaxSources = 16;

  /// Binds address:port (0: an ephemeral port) for `session`, speaking MAC when the session has a
  /// key (ServerSession::udpKey), else TOKEN. Throws std::system_error when the
  /// address is not an IP address or the port cannot be bound (the registry then tries the next
  /// port of its range). Nothing is received or sent before start().
  UdpEndpoint(ServerSession& session, const std::string& address, std::uint16_t port);
  ~UdpEndpoint() override;  ///< stop()
  UdpEndpoint(const UdpEndpoint&) = delete;
  UdpEndpoint& operator=(const UdpEndpoint&) = delete;

  /// The bound port.
  std::uint16_t port() const { return port_; }
  /// Starts the network thread and registers as the session's state sink. Call once.
  void start();
  /// Unregisters from the session, stops the network thread and closes the socket. When it
  /// returns nothing is received or sent any more. Idempotent.
  void stop();

  /// Publisher thread: sends `state` to the peer when the mode says so (class comment of
  /// udp.proto "Transport": REALTIME every cycle, LOCKSTEP the answer to a command or a step
  /// request, FREE every call) and on a life-cycle change the peer has not been sent yet. Never
  /// blocks on the network.
  void onState(const rt::StateSnapshot& state, bool state_changed) override;

 private:
  using Endpoint = asio::ip::udp::endpoint;

  /// One source address and port and the newest sequence accepted from it.
  struct Source {
    Endpoint address;
    SequenceGate gate;
    std::uint64_t last_used = 0;  // accept counter value: the smallest is evicted first
    bool in_use = false;
  };

  void receiveNext();
  void onDatagram(std::size_t bytes, rt::Nanoseconds receive_time);
  Source* findSource(const Endpoint& address);
  void rememberAccepted(const Endpoint& address, std::uint64_t sequence);
  void afterAccepted(const v1::Command& command, rt::Nanoseconds receive_time);

  // Under send_mutex_.
  /// LOCKSTEP: `state` completes a command of the peer's that has not been answered yet.
  bool owesCommandAnswer(const rt::StateSnapshot& state) const;
  /// Stamps send_time_ns and sends; `from_publisher`: a per-cycle state (gap counting).
  void sendLocked(const rt::StateSnapshot& state, const Endpoint& to, bool from_publisher);

  ServerSession& session_;
  TransportCounters& counters_;
  const rt::SessionMode mode_;
  std::uint16_t port_ = 0;
  int fd_ = -1;  // the socket's descriptor, for sendto() from both threads
  std::atomic<bool> started_{false};
  std::atomic<bool> stopped_{false};

  asio::io_context io_;
  asio::ip::udp::socket socket_;
  std::thread thread_;

  // Network thread only.
  std::array<std::uint8_t, 2048> receive_buffer_{};  // > 1472: oversize shows without parsing
  Endpoint sender_;
  DatagramScreen screen_;  // the transport's rules, the key's replay window, the reused Command
  std::array<Source, kMaxSources> sources_{};
  std::uint64_t accept_counter_ = 0;

  // Shared by the two senders (publisher thread and network thread).
  std::mutex send_mutex_;
  Endpoint peer_;
  bool has_peer_ = false;
  rt::Nanoseconds peer_accepted_at_ = 0;  // receive time of the peer's newest accepted datagram
  // LOCKSTEP answers: commands with torques in (answered_, newest_command_] are still owed a
  // state; step_target_ (0: none) is the cycle that answers the newest step request.
  std::uint64_t newest_command_ = 0;
  std::uint64_t answered_ = 0;
  std::uint64_t step_target_ = 0;
  // The owed commands' sequences, oldest first (a ring sized once from the command channel's
  // capacity): one state answering several of them counts the others as states_skipped.
  std::vector<std::uint64_t> owed_;
  std::size_t owed_head_ = 0, owed_count_ = 0;
  void oweAnswer(std::uint64_t sequence);
  void markAnswered(std::uint64_t sequence);
  // REALTIME: the newest cycle sent in this run; a jump past it counts states_skipped.
  std::uint64_t gap_base_ = 0;
  bool has_gap_base_ = false;
  // The last state sent, so that the publisher never sends the same one twice in a row.
  std::uint64_t last_sent_cycle_ = 0;
  rt::SessionState last_sent_state_ = rt::SessionState::kCreated;
  bool has_last_sent_ = false;
  // The life-cycle state of the previous onState call (to tell a change from a first call).
  rt::SessionState seen_state_ = rt::SessionState::kCreated;
  bool has_seen_state_ = false;
  v1::UdpState message_;  // reused: its arrays keep their capacity
  // MAC: the counter of the newest state frame sent; strictly increasing for the session's life
  std::uint64_t send_counter_ = 0;
  std::array<std::uint8_t, 4096> send_buffer_{};  // ≥ 28 + 88 + 8·3·128, the largest framed state
  static_assert(4096 >= udp::kFrameOverheadBytes + 88 + 8 * 3 * rt::kMaxCoordinates,
                "a framed UdpState must fit send_buffer_");
};

}  // namespace hilsim::server
