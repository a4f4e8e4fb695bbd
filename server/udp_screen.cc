#include "server/udp_screen.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <sodium.h>

#include "hilsim/v1/udp.pb.h"

namespace hilsim::server {

DatagramScreen::DatagramScreen(std::uint64_t session_id, const UdpToken& token)
    : session_id_(session_id), mac_(false), token_(token) {
  command_.mutable_tau()->Reserve(128);  // rt::kMaxCoordinates: no growth on the path
}

DatagramScreen::DatagramScreen(std::uint64_t session_id, const udp::Key& key)
    : session_id_(session_id), mac_(true), key_(key) {
  command_.mutable_tau()->Reserve(128);
}

DatagramScreen::~DatagramScreen() { sodium_memzero(token_.data(), token_.size()); }

Rejection DatagramScreen::screen(std::span<const std::uint8_t> datagram,
                                 const SequenceGate* gate) {
  // 1. a datagram longer than one Ethernet frame's payload is refused unread
  if (datagram.size() > kMaxDatagramBytes) return Rejection::kOversize;
  return mac_ ? screenMac(datagram) : screenToken(datagram, gate);
}

Rejection DatagramScreen::screenMac(std::span<const std::uint8_t> datagram) {
  // 2. length, magic and tag before any byte of the payload is read
  udp::Opened frame;
  if (udp::open(key_, udp::Direction::kCommand, datagram, &frame) != udp::Check::kOk) {
    return Rejection::kUnauthenticated;
  }
  // 3, 4. the key's window, whatever the source address: a captured frame is refused from anywhere
  switch (window_.check(frame.counter)) {
    case udp::ReplayWindow::Verdict::kFresh: break;
    case udp::ReplayWindow::Verdict::kReplayed: return Rejection::kReplayed;
    case udp::ReplayWindow::Verdict::kStale: return Rejection::kStale;
  }
  window_.accept(frame.counter);
  // 5, 6. one sequence: the command's is the frame's counter (a token, if any, is ignored)
  std::string_view token;
  if (!decode(frame.payload, &command_, &token) || command_.sequence() != frame.counter) {
    return Rejection::kMalformed;
  }
  if (command_.session_id() != session_id_) return Rejection::kUnknownSession;
  return Rejection::kNone;
}

Rejection DatagramScreen::screenToken(std::span<const std::uint8_t> datagram,
                                      const SequenceGate* gate) {
  // 2.
  std::string_view token;
  if (!decode(datagram, &command_, &token) || command_.sequence() == 0) {
    return Rejection::kMalformed;
  }
  // 3, 4 (crypto_verify_16: constant time, whatever the first difference)
  if (command_.session_id() != session_id_) return Rejection::kUnknownSession;
  if (token.size() != token_.size() ||
      crypto_verify_16(reinterpret_cast<const unsigned char*>(token.data()), token_.data()) != 0) {
    return Rejection::kUnauthenticated;
  }
  // 5, 6: a source never accepted before has a fresh sequence space
  if (gate != nullptr) return gate->check(command_.sequence());
  return Rejection::kNone;
}

bool DatagramScreen::decode(std::span<const std::uint8_t> data, v1::Command* command,
                            std::string_view* token) {
  // UdpCommand is { bytes token = 1; Command command = 2; }. Parsing it as a whole would build a
  // new Command (and a heap string for the 16-byte token) per datagram; instead walk its two
  // fields: the token stays a view into the datagram, the command is parsed into the reused
  // message (whose tau keeps its capacity).
  using google::protobuf::internal::WireFormatLite;
  constexpr std::uint32_t kTokenTag = WireFormatLite::MakeTag(
      v1::UdpCommand::kTokenFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  constexpr std::uint32_t kCommandTag = WireFormatLite::MakeTag(
      v1::UdpCommand::kCommandFieldNumber, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
  google::protobuf::io::CodedInputStream in(data.data(), static_cast<int>(data.size()));
  bool have_command = false;
  *token = {};
  for (;;) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    if (tag != kTokenTag && tag != kCommandTag) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    std::uint32_t length = 0;
    if (!in.ReadVarint32(&length)) return false;
    const void* body = nullptr;
    int available = 0;
    if (!in.GetDirectBufferPointer(&body, &available)) available = 0;
    if (static_cast<std::uint64_t>(available) < length) return false;  // truncated
    const auto* bytes = static_cast<const std::uint8_t*>(body);
    const int n = static_cast<int>(length);
    if (tag == kTokenTag) {
      *token = {reinterpret_cast<const char*>(bytes), length};
    } else if (!have_command) {
      if (!command->ParseFromArray(bytes, n)) return false;
      have_command = true;
    } else {
      google::protobuf::io::CodedInputStream part(bytes, n);
      if (!command->MergeFromCodedStream(&part)) return false;
    }
    if (!in.Skip(n)) return false;
  }
  // ReadTag() returns 0 both at the end and on a zero tag: only the former consumed it all
  return in.ConsumedEntireMessage() && have_command;
}

}  // namespace hilsim::server
