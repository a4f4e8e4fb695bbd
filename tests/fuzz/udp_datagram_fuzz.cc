// Fuzz target: what a session's UDP port does with a datagram before the session sees it,
// hilsim::server::DatagramScreen (server/udp_screen.h) — the frame check (length, magic, BLAKE2b
// tag, replay window) and the UdpCommand decode — under both schemes, with the fixed key and
// token of tests/fuzz/seeds/udp_datagram/. The first byte picks the path:
//   0: the bytes as received under MAC (the seeds are frames sealed with the test key, so that
//      mutations that keep the tag reach the window and the decoder);
//   1: MAC with the frame sealed here — 8 bytes of counter, then the payload — so that every
//      mutation of the payload reaches the decoder past a valid tag;
//   2: the bytes as received under TOKEN.
// Beyond crashes and sanitizer reports, the documented properties are checked: an accepted
// command is the port's session's, under MAC its sequence is the frame's counter and the frame's
// tag verifies; the same datagram screened again is never accepted (MAC: replayed; TOKEN, with
// the source's gate advanced: duplicate).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "proto/udp_frame.h"
#include "server/udp_screen.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using hilsim::server::DatagramScreen;
using hilsim::server::Rejection;
namespace udp = hilsim::udp;

constexpr std::uint64_t kSessionId = 0x5eed'0000'0000'0042;
constexpr hilsim::server::UdpToken kToken = {7,  1,  9,   3, 250, 4,  0,  128,
                                             77, 12, 31, 200, 5,   66, 18, 99};

const udp::Key& testKey() {
  static const udp::Key key = [] {
    std::array<std::uint8_t, udp::kKeyBytes> bytes;
    for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<std::uint8_t>(k);
    return udp::Key(bytes);
  }();
  return key;
}

void checkMac(std::span<const std::uint8_t> datagram) {
  DatagramScreen screen(kSessionId, testKey());
  if (screen.screen(datagram) != Rejection::kNone) return;
  udp::Opened frame;
  if (udp::open(testKey(), udp::Direction::kCommand, datagram, &frame) != udp::Check::kOk ||
      screen.command().sequence() != frame.counter ||
      screen.command().session_id() != kSessionId || screen.window().newest() != frame.counter) {
    std::abort();
  }
  if (screen.screen(datagram) != Rejection::kReplayed) std::abort();
}

void checkToken(std::span<const std::uint8_t> datagram) {
  DatagramScreen screen(kSessionId, kToken);
  if (screen.screen(datagram) != Rejection::kNone) return;
  if (screen.command().session_id() != kSessionId || screen.command().sequence() == 0) {
    std::abort();
  }
  hilsim::server::SequenceGate gate;
  gate.accept(screen.command().sequence());
  if (screen.screen(datagram, &gate) != Rejection::kDuplicate) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hilsim::fuzz::initFuzzTarget();
  if (!udp::initialize()) std::abort();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  hilsim::fuzz::guardOutput([&] {
    switch (data[0] % 3) {
      case 0:
        checkMac(rest);
        break;
      case 1: {
        if (rest.size() < 8) return;
        std::uint64_t counter = 0;
        std::memcpy(&counter, rest.data(), 8);  // little-endian hosts only, as the frame
        const std::span<const std::uint8_t> payload = rest.subspan(8);
        std::vector<std::uint8_t> frame(payload.size() + udp::kFrameOverheadBytes);
        std::memcpy(frame.data() + udp::kHeaderBytes, payload.data(), payload.size());
        const std::size_t n =
            udp::seal(testKey(), udp::Direction::kCommand, counter, frame, payload.size());
        if (n != frame.size()) std::abort();
        checkMac(frame);
        break;
      }
      default:
        checkToken(rest);
        break;
    }
  });
  return 0;
}
