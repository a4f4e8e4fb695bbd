#include "client/udp_controller.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <asio.hpp>
#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "hilsim/v1/service.pb.h"

namespace hilsim::client {

namespace {

using google::protobuf::internal::WireFormatLite;

/// Any UDP datagram fits (IPv4 payloads stop at 65,507 bytes).
constexpr std::size_t kReceiveBufferBytes = 65536;
/// Room for a command of the largest model a session accepts (57 + 8·128 bytes) and then some.
constexpr std::size_t kInitialSendBytes = 2048;

std::int64_t monotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// MAC's default first counter: CLOCK_REALTIME [µs], above anything an earlier run of a
/// controller with the same key sent at ≤ 1 datagram per microsecond.
std::uint64_t realtimeMicroseconds() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
}

udp::Key keyFromBytes(std::string_view bytes) {
  udp::Key key;
  if (!udp::Key::fromBytes(bytes, &key)) {
    throw std::invalid_argument("UDP key must be " + std::to_string(udp::kKeyBytes) +
                                " bytes, got " + std::to_string(bytes.size()));
  }
  return key;
}

UdpController::Token tokenFromBytes(std::string_view bytes) {
  UdpController::Token token;
  if (bytes.size() != token.size()) {
    throw std::invalid_argument("UDP token must be 16 bytes, got " +
                                std::to_string(bytes.size()));
  }
  for (std::size_t k = 0; k < token.size(); ++k) token[k] = static_cast<std::uint8_t>(bytes[k]);
  return token;
}

}  // namespace

struct UdpController::Socket {
  asio::io_context io;
  asio::ip::udp::socket socket{io};
};

UdpController::UdpController(const std::string& host, std::uint16_t port,
                             std::uint64_t session_id, std::string_view token)
    : UdpController(host, port, session_id, tokenFromBytes(token)) {}

UdpController::UdpController(const std::string& host, const v1::CreateSessionResponse& created,
                             Options options)
    : UdpController(host, static_cast<std::uint16_t>(created.session().udp_port()),
                    created.session().session_id(),
                    created.udp_key().empty()
                        ? Credentials{false, udp::Key(), tokenFromBytes(created.udp_token())}
                        : Credentials{true, keyFromBytes(created.udp_key()), Token{}},
                    options) {}

UdpController::UdpController(const std::string& host, std::uint16_t port,
                             std::uint64_t session_id, const udp::Key& key, Options options)
    : UdpController(host, port, session_id, Credentials{true, key, Token{}}, options) {}

UdpController::UdpController(const std::string& host, std::uint16_t port,
                             std::uint64_t session_id, const Token& token, Options options)
    : UdpController(host, port, session_id, Credentials{false, udp::Key(), token}, options) {}

UdpController::UdpController(const std::string& host, std::uint16_t port,
                             std::uint64_t session_id, const Credentials& credentials,
                             Options options)
    : socket_(std::make_unique<Socket>()),
      session_id_(session_id),
      mac_(credentials.mac),
      key_(credentials.key),
      send_buffer_(kInitialSendBytes),
      receive_buffer_(kReceiveBufferBytes) {
  if (mac_ && !udp::initialize()) {
    throw std::runtime_error("UDP controller: libsodium cannot start");
  }
  next_sequence_ = options.first_sequence != 0 ? options.first_sequence
                   : mac_                      ? realtimeMicroseconds()
                                               : 1;
  asio::error_code ec;
  asio::ip::udp::resolver resolver(socket_->io);
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec || results.empty()) {
    throw std::system_error(ec ? ec : std::make_error_code(std::errc::host_unreachable),
                            "UDP controller: cannot resolve '" + host + "'");
  }
  const asio::ip::udp::endpoint server = *results.begin();
  asio::ip::udp::socket& s = socket_->socket;
  s.open(server.protocol(), ec);
  if (!ec) s.bind(asio::ip::udp::endpoint(server.protocol(), 0), ec);
  // connected: the kernel drops datagrams from anyone but the session's port
  if (!ec) s.connect(server, ec);
  if (ec) {
    throw std::system_error(ec, "UDP controller: cannot open a socket to " + host + ":" +
                                    std::to_string(port));
  }
  local_port_ = s.local_endpoint().port();
  fd_ = s.native_handle();

  if (!mac_) command_.set_token(credentials.token.data(), credentials.token.size());
  v1::Command* c = command_.mutable_command();
  c->set_session_id(session_id_);
  c->mutable_tau()->Reserve(128);  // rt::kMaxCoordinates: no growth in the loop
}

UdpController::~UdpController() = default;

std::uint64_t UdpController::sync(std::uint32_t steps) {
  v1::Command* c = command_.mutable_command();
  c->mutable_tau()->Clear();
  c->mutable_position()->Clear();
  c->mutable_velocity()->Clear();
  return transmit(steps);  // a base wrench on a sync is checked and ignored, as its absent torques
}

void UdpController::setBaseWrench(std::span<const double> wrench) {
  if (!wrench.empty() && wrench.size() != 6)
    throw std::invalid_argument("base wrench: six values (force, then torque) or none");
  auto* out = command_.mutable_command()->mutable_base_wrench();
  out->Clear();
  out->Add(wrench.begin(), wrench.end());
}

std::uint64_t UdpController::send(std::span<const double> tau, std::uint32_t steps) {
  return sendSetPoints({}, {}, tau, steps);
}

std::uint64_t UdpController::sendSetPoints(std::span<const double> position,
                                           std::span<const double> velocity,
                                           std::span<const double> tau, std::uint32_t steps) {
  v1::Command* c = command_.mutable_command();
  // Clear keeps the arrays' capacity: no allocation once warm
  for (const auto& [values, field] : {std::pair{tau, c->mutable_tau()},
                                      std::pair{position, c->mutable_position()},
                                      std::pair{velocity, c->mutable_velocity()}}) {
    field->Clear();
    field->Add(values.begin(), values.end());
  }
  return transmit(steps);
}

std::uint64_t UdpController::transmit(std::uint32_t steps) {
  v1::Command* c = command_.mutable_command();
  const std::uint64_t sequence = next_sequence_++;
  c->set_sequence(sequence);
  c->set_steps(steps);
  c->set_client_send_time_ns(monotonicNowNs());
  // MAC: the payload after the frame's header, then the header and the tag around it
  const std::size_t payload = command_.ByteSizeLong();
  const std::size_t frame = payload + (mac_ ? udp::kFrameOverheadBytes : 0);
  if (frame > send_buffer_.size()) send_buffer_.resize(frame);
  command_.SerializeWithCachedSizesToArray(send_buffer_.data() + (mac_ ? udp::kHeaderBytes : 0));
  const std::size_t size =
      mac_ ? udp::seal(key_, udp::Direction::kCommand, sequence, send_buffer_, payload) : payload;
  last_size_ = size;
  return sendRaw({send_buffer_.data(), size}) ? sequence : 0;
}

bool UdpController::sendRaw(std::span<const std::uint8_t> bytes) {
  ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && errno == ECONNREFUSED) {
    // the ICMP error of an earlier datagram (nobody listened then), reported now: try again
    n = ::send(fd_, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  if (n < 0 || static_cast<std::size_t>(n) != bytes.size()) {
    ++stats_.send_errors;
    return false;
  }
  ++stats_.sent;
  return true;
}

bool UdpController::receive(v1::State& out, std::chrono::nanoseconds timeout) {
  const int fd = fd_;
  const std::int64_t deadline = monotonicNowNs() + timeout.count();
  for (;;) {
    const ssize_t n = ::recv(fd, receive_buffer_.data(), receive_buffer_.size(), MSG_DONTWAIT);
    if (n >= 0) {
      std::span<const std::uint8_t> message{receive_buffer_.data(), static_cast<std::size_t>(n)};
      if (mac_ && !openState(message, &message)) continue;
      if (decode(message.data(), message.size(), scratch_)) {
        // a swap of arrays, no copy: `out` is untouched unless a State arrived
        out.Swap(&scratch_);
        ++stats_.received;
        return true;
      }
      ++stats_.parse_errors;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      // ECONNREFUSED after an ICMP port-unreachable: nobody listens (yet); keep waiting
      ++stats_.receive_errors;
    }
    const std::int64_t left = deadline - monotonicNowNs();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    const timespec wait{static_cast<time_t>(left / 1'000'000'000),
                        static_cast<long>(left % 1'000'000'000)};
    if (::ppoll(&p, 1, &wait, nullptr) == 0) break;  // timed out
  }
  ++stats_.timeouts;
  return false;
}

bool UdpController::openState(std::span<const std::uint8_t> frame,
                              std::span<const std::uint8_t>* payload) {
  udp::Opened opened;
  if (udp::open(key_, udp::Direction::kState, frame, &opened) != udp::Check::kOk) {
    ++stats_.unauthenticated;
    return false;
  }
  if (states_.check(opened.counter) != udp::ReplayWindow::Verdict::kFresh) {
    ++stats_.replayed;  // a replay, or a state older than one already taken
    return false;
  }
  states_.accept(opened.counter);
  *payload = opened.payload;
  return true;
}

bool UdpController::decode(const std::uint8_t* data, std::size_t size, v1::State& out) {
  // UdpState is { State state = 1; }: walk its fields and parse field 1 straight into `out`, so
  // that no intermediate message is built (and `out`'s arrays keep their capacity).
  google::protobuf::io::CodedInputStream in(data, static_cast<int>(size));
  bool have_state = false;
  for (;;) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) break;  // end of the datagram (or a malformed tag: caught below)
    if (tag == WireFormatLite::MakeTag(v1::UdpState::kStateFieldNumber,
                                       WireFormatLite::WIRETYPE_LENGTH_DELIMITED)) {
      std::uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      const void* body = nullptr;
      int available = 0;
      if (!in.GetDirectBufferPointer(&body, &available) && length > 0) return false;
      if (static_cast<std::uint32_t>(available) < length) return false;
      const auto* bytes = static_cast<const std::uint8_t*>(body);
      bool ok;
      if (have_state) {
        // a repeated field 1 merges into the first, as protobuf would
        google::protobuf::io::CodedInputStream part(bytes, static_cast<int>(length));
        ok = out.MergeFromCodedStream(&part);
      } else {
        ok = out.ParseFromArray(bytes, static_cast<int>(length));
      }
      if (!ok || !in.Skip(static_cast<int>(length))) return false;
      have_state = true;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
  // ReadTag() returns 0 both at the end and on a zero tag: only the former consumed it all
  return have_state && in.ConsumedEntireMessage();
}

}  // namespace hilsim::client
