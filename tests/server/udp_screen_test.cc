// The authenticated UDP frame and the server's datagram screen without sockets: the tag against a
// known answer (the one tests/client/python/test_udp_controller.py checks with hashlib), frames
// sealed and opened, every way a frame can fail, the replay window, both schemes' rejection order,
// and no heap traffic on the path once warm.

#include "server/udp_screen.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hilsim/v1/udp.pb.h"
#include "proto/udp_frame.h"
#include "tests/support/allocation_hooks.h"

namespace hilsim::server {
namespace {

using Verdict = udp::ReplayWindow::Verdict;

constexpr std::uint64_t kSessionId = 0x5eed'0000'0000'0042;

udp::Key testKey(std::uint8_t first = 0) {
  std::array<std::uint8_t, udp::kKeyBytes> bytes;
  for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<std::uint8_t>(first + k);
  return udp::Key(bytes);
}

std::string hex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::span<const std::uint8_t> view(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

/// A UdpCommand's bytes: MAC payload (no token) or TOKEN datagram.
std::string command(std::uint64_t sequence, std::vector<double> tau = {},
                    std::uint64_t session_id = kSessionId, const std::string& token = {}) {
  v1::UdpCommand d;
  if (!token.empty()) d.set_token(token);
  v1::Command* c = d.mutable_command();
  c->set_session_id(session_id);
  c->set_sequence(sequence);
  for (const double t : tau) c->add_tau(t);
  return d.SerializeAsString();
}

/// `payload` sealed in a frame.
std::string frame(const udp::Key& key, udp::Direction direction, std::uint64_t counter,
                  const std::string& payload) {
  std::vector<std::uint8_t> buffer(payload.size() + udp::kFrameOverheadBytes);
  std::memcpy(buffer.data() + udp::kHeaderBytes, payload.data(), payload.size());
  const std::size_t size = udp::seal(key, direction, counter, buffer, payload.size());
  EXPECT_EQ(size, buffer.size());
  return {buffer.begin(), buffer.end()};
}

/// A controller's command frame: counter = sequence.
std::string commandFrame(const udp::Key& key, std::uint64_t sequence,
                         std::vector<double> tau = {0.5}) {
  return frame(key, udp::Direction::kCommand, sequence, command(sequence, std::move(tau)));
}

class Environment : public ::testing::Environment {
  void SetUp() override { ASSERT_TRUE(udp::initialize()); }
};
[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new Environment);

TEST(UdpFrame, TagIsKeyedBlake2b128) {
  // known answer: key 00 01 … 1f, message "hilsim"; Python's
  // hashlib.blake2b(b"hilsim", key=bytes(range(32)), digest_size=16) gives the same
  const std::string message = "hilsim";
  std::array<std::uint8_t, udp::kTagBytes> tag;
  udp::computeTag(testKey(), view(message), tag);
  EXPECT_EQ(hex(tag), "2c990b41f1e7cdae8d63e7241d7b054f");
}

TEST(UdpFrame, SealsAndOpensByteForByte) {
  const udp::Key key = testKey();
  const std::string f = frame(key, udp::Direction::kCommand, 0x0102030405060708, "abc");
  ASSERT_EQ(f.size(), 3 + 28u);
  EXPECT_EQ(f.substr(0, 4), "HSC1");
  EXPECT_EQ(f.substr(4, 8), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));  // little-endian
  EXPECT_EQ(f.substr(12, 3), "abc");
  std::array<std::uint8_t, udp::kTagBytes> tag;
  udp::computeTag(key, view(f).first(15), tag);
  EXPECT_EQ(f.substr(15), std::string(tag.begin(), tag.end()));
  udp::Opened opened;
  ASSERT_EQ(udp::open(key, udp::Direction::kCommand, view(f), &opened), udp::Check::kOk);
  EXPECT_EQ(opened.counter, 0x0102030405060708u);
  EXPECT_EQ(std::string(opened.payload.begin(), opened.payload.end()), "abc");
  EXPECT_EQ(frame(key, udp::Direction::kState, 1, "").substr(0, 4), "HSS1");
  // too small a buffer: nothing written
  std::array<std::uint8_t, 30> small{};
  EXPECT_EQ(udp::seal(key, udp::Direction::kCommand, 1, small, 3), 0u);
}

TEST(UdpFrame, RefusesEveryAlteration) {
  const udp::Key key = testKey();
  const std::string good = commandFrame(key, 99);
  udp::Opened opened;
  auto check = [&](const std::string& f, udp::Direction d = udp::Direction::kCommand) {
    return udp::open(key, d, view(f), &opened);
  };
  ASSERT_EQ(check(good), udp::Check::kOk);
  for (std::size_t byte = 0; byte < good.size(); ++byte) {
    std::string flipped = good;
    flipped[byte] = static_cast<char>(flipped[byte] ^ 0x10);
    EXPECT_NE(check(flipped), udp::Check::kOk) << "byte " << byte;
  }
  EXPECT_EQ(check(good.substr(0, 27)), udp::Check::kTooShort);
  EXPECT_EQ(check(good.substr(0, good.size() - 1)), udp::Check::kBadTag);  // truncated
  EXPECT_EQ(check(good + "x"), udp::Check::kBadTag);
  EXPECT_EQ(check(good, udp::Direction::kState), udp::Check::kBadMagic);  // never reflected
  EXPECT_EQ(udp::open(testKey(1), udp::Direction::kCommand, view(good), &opened),
            udp::Check::kBadTag);
}

TEST(UdpFrame, ReplayWindowTellsReplayedFromStale) {
  udp::ReplayWindow w;
  EXPECT_EQ(w.check(0), Verdict::kStale);
  EXPECT_EQ(w.check(1), Verdict::kFresh);
  w.accept(100);
  w.accept(102);
  w.accept(105);
  EXPECT_EQ(w.newest(), 105u);
  EXPECT_EQ(w.check(105), Verdict::kReplayed);
  EXPECT_EQ(w.check(102), Verdict::kReplayed);
  EXPECT_EQ(w.check(100), Verdict::kReplayed);
  EXPECT_EQ(w.check(104), Verdict::kStale) << "re-ordered: never accepted, older than the newest";
  EXPECT_EQ(w.check(101), Verdict::kStale);
  EXPECT_EQ(w.check(99), Verdict::kStale);
  EXPECT_EQ(w.check(106), Verdict::kFresh);
  w.accept(104);  // not fresh: ignored
  EXPECT_EQ(w.check(104), Verdict::kStale);
  // 64 below the newest are remembered, then they are only stale
  w.accept(105 + 64);
  EXPECT_EQ(w.check(105), Verdict::kReplayed);
  EXPECT_EQ(w.check(102), Verdict::kStale);
  w.accept(105 + 65);
  EXPECT_EQ(w.check(105), Verdict::kStale);
  EXPECT_EQ(w.check(105 + 64), Verdict::kReplayed);
  w.accept(1'000'000);  // a jump beyond the map's width forgets it all
  EXPECT_EQ(w.check(105 + 65), Verdict::kStale);
  EXPECT_EQ(w.check(1'000'000), Verdict::kReplayed);
}

TEST(DatagramScreen, MacRulesInOrder) {
  const udp::Key key = testKey();
  DatagramScreen screen(kSessionId, key);
  ASSERT_TRUE(screen.mac());
  auto run = [&](const std::string& d) { return screen.screen(view(d)); };

  ASSERT_EQ(run(commandFrame(key, 10)), Rejection::kNone);
  EXPECT_EQ(screen.command().sequence(), 10u);
  EXPECT_EQ(screen.command().tau(0), 0.5);
  // 1. oversize before anything else
  EXPECT_EQ(run(commandFrame(key, 11, std::vector<double>(200, 0.0))), Rejection::kOversize);
  // 2. unauthenticated: short, magic, tag, key — and a state frame is never taken as a command
  EXPECT_EQ(run(""), Rejection::kUnauthenticated);
  EXPECT_EQ(run(commandFrame(key, 11).substr(0, 27)), Rejection::kUnauthenticated);
  EXPECT_EQ(run(frame(key, udp::Direction::kState, 11, command(11))),
            Rejection::kUnauthenticated);
  EXPECT_EQ(run(commandFrame(testKey(1), 11)), Rejection::kUnauthenticated);
  EXPECT_EQ(run(command(11, {0.5}, kSessionId, std::string(16, 'x'))),
            Rejection::kUnauthenticated)
      << "a TOKEN datagram";
  // 3, 4: the window, before the payload is parsed
  EXPECT_EQ(run(commandFrame(key, 10)), Rejection::kReplayed);
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 10, "garbage")), Rejection::kReplayed);
  EXPECT_EQ(run(commandFrame(key, 9)), Rejection::kStale);
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 0, command(0))), Rejection::kStale);
  // 5. malformed: unparseable, no command, sequence ≠ counter — each counter used up all the same
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 11, "\xff\xff\xff")), Rejection::kMalformed);
  EXPECT_EQ(run(commandFrame(key, 11)), Rejection::kReplayed) << "an authentic frame is recorded";
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 12, "")), Rejection::kMalformed);
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 13, command(14))), Rejection::kMalformed);
  // 6. unknown session
  EXPECT_EQ(run(frame(key, udp::Direction::kCommand, 15, command(15, {}, kSessionId + 1))),
            Rejection::kUnknownSession);
  // a new counter after all of these is accepted
  EXPECT_EQ(run(commandFrame(key, 16)), Rejection::kNone);
  EXPECT_EQ(screen.window().newest(), 16u);
}

TEST(DatagramScreen, TokenRulesInOrder) {
  const UdpToken token = {7, 1, 9, 3, 250, 4, 0, 128, 77, 12, 31, 200, 5, 66, 18, 99};
  const std::string t(token.begin(), token.end());
  DatagramScreen screen(kSessionId, token);
  ASSERT_FALSE(screen.mac());
  auto run = [&](const std::string& d, const SequenceGate* gate = nullptr) {
    return screen.screen(view(d), gate);
  };
  EXPECT_EQ(run(command(1, {0.5}, kSessionId, t)), Rejection::kNone);
  EXPECT_EQ(run(std::string(1473, '\0')), Rejection::kOversize);
  EXPECT_EQ(run(command(0, {}, kSessionId + 1, "x")), Rejection::kMalformed);
  EXPECT_EQ(run(command(1, {}, kSessionId + 1, "x")), Rejection::kUnknownSession);
  EXPECT_EQ(run(command(1, {}, kSessionId, t.substr(0, 15))), Rejection::kUnauthenticated);
  EXPECT_EQ(run(commandFrame(testKey(), 1)), Rejection::kMalformed) << "a MAC frame";
  SequenceGate gate;
  gate.accept(5);
  EXPECT_EQ(run(command(4, {}, kSessionId, t), &gate), Rejection::kStale);
  EXPECT_EQ(run(command(5, {}, kSessionId, t), &gate), Rejection::kDuplicate);
  EXPECT_EQ(run(command(6, {}, kSessionId, t), &gate), Rejection::kNone);
}

TEST(DatagramScreen, NoHeapTrafficOnThePathOnceWarm) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "the sanitizer owns the allocator";
  const udp::Key key = testKey();
  DatagramScreen screen(kSessionId, key);
  const std::vector<double> tau(7, 0.25);
  std::vector<std::string> frames;
  for (std::uint64_t s = 1; s <= 200; ++s) frames.push_back(commandFrame(key, s, tau));
  std::string forged = frames[150];
  forged.back() = static_cast<char>(forged.back() ^ 1);
  ASSERT_EQ(screen.screen(view(frames[0])), Rejection::kNone);  // sizes the reused Command
  // the controller's side: a state frame built in a fixed buffer, then opened and checked
  std::array<std::uint8_t, 512> state_buffer{};
  udp::ReplayWindow states;
  std::size_t accepted = 0, refused = 0;
  test::HeapCountingScope scope;
  for (std::size_t k = 1; k < frames.size(); ++k) {
    accepted += screen.screen(view(frames[k])) == Rejection::kNone;
    refused += screen.screen(view(frames[k])) == Rejection::kReplayed;
    refused += screen.screen(view(forged)) == Rejection::kUnauthenticated;
    const std::size_t size = udp::seal(key, udp::Direction::kState, k, state_buffer, 300);
    udp::Opened opened;
    if (udp::open(key, udp::Direction::kState, {state_buffer.data(), size}, &opened) ==
            udp::Check::kOk &&
        states.check(opened.counter) == Verdict::kFresh) {
      states.accept(opened.counter);
    }
  }
  const test::HeapCounts counted = scope.stop();
  EXPECT_EQ(accepted, frames.size() - 1);
  EXPECT_EQ(refused, 2 * (frames.size() - 1));
  EXPECT_EQ(states.newest(), frames.size() - 1);
  EXPECT_EQ(counted.allocations, 0);
  EXPECT_EQ(counted.deallocations, 0);
}

}  // namespace
}  // namespace hilsim::server
