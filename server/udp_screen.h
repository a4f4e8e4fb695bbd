// DatagramScreen: the checks a session's UDP port makes on a datagram before the session sees its
// command (udp.proto, "Rejection"), under either authentication scheme, with no socket, thread or
// session attached — so that tests/fuzz/udp_datagram_fuzz.cc can feed it raw bytes.
//
//   MAC   (the default): 1 oversize, 2 unauthenticated (shorter than a frame, wrong magic, wrong
//         tag — nothing else is read before the tag verifies), 3 replayed, 4 stale (the replay
//         window of the session key), 5 malformed (payload, sequence ≠ the frame's counter),
//         6 unknown_session.
//   TOKEN (compatibility): 1 oversize, 2 malformed, 3 unknown_session, 4 unauthenticated (token,
//         compared in constant time), 5 stale and 6 duplicate against the source's SequenceGate.
//
// Allocation: the Command is parsed into one reused message (its arrays keep their capacity), the
// token is a view into the datagram, the tag is computed on the stack. One thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "hilsim/v1/control.pb.h"
#include "proto/udp_frame.h"
#include "server/transport_stats.h"

namespace hilsim::server {

/// The compatibility scheme's 16-byte token (CreateSessionResponse.udp_token).
using UdpToken = std::array<std::uint8_t, 16>;

class DatagramScreen {
 public:
  /// Longest accepted datagram: an Ethernet frame's UDP payload over IPv4 (rule 1).
  static constexpr std::size_t kMaxDatagramBytes = 1472;

  /// TOKEN: datagrams are UdpCommands carrying `token`.
  DatagramScreen(std::uint64_t session_id, const UdpToken& token);
  /// MAC: datagrams are frames (proto/udp_frame.h) tagged with `key`.
  DatagramScreen(std::uint64_t session_id, const udp::Key& key);
  ~DatagramScreen();  ///< zeroes the token (the key zeroes itself)
  DatagramScreen(const DatagramScreen&) = delete;
  DatagramScreen& operator=(const DatagramScreen&) = delete;

  bool mac() const { return mac_; }

  /// The rules above, in order; kNone: command() is the datagram's command. `gate`: TOKEN, the
  /// sequence gate of the datagram's source (nullptr: a source not seen before); unused under
  /// MAC, whose window is the session key's whatever the source. Under MAC an authentic frame
  /// that passes the window is recorded in it at once, so that it is never taken twice even when
  /// a later rule refuses it.
  Rejection screen(std::span<const std::uint8_t> datagram, const SequenceGate* gate = nullptr);
  /// The command of the datagram screen() last accepted.
  const v1::Command& command() const { return command_; }
  /// MAC: the counters accepted so far.
  const udp::ReplayWindow& window() const { return window_; }

  /// Parses a UdpCommand's two fields: its command into `command`, its token as a view into
  /// `data` (empty when absent). False when it does not parse or has no command. The same result
  /// as UdpCommand::ParseFromArray (the last token wins, repeated commands merge, unknown fields
  /// are skipped, truncation fails) without its allocations.
  static bool decode(std::span<const std::uint8_t> data, v1::Command* command,
                     std::string_view* token);

 private:
  Rejection screenMac(std::span<const std::uint8_t> datagram);
  Rejection screenToken(std::span<const std::uint8_t> datagram, const SequenceGate* gate);

  const std::uint64_t session_id_;
  const bool mac_;
  UdpToken token_{};
  udp::Key key_;
  udp::ReplayWindow window_;
  v1::Command command_;  // the datagram's command, reused
};

}  // namespace hilsim::server
