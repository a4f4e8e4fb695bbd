// The wire contract (proto/hilsim/v1): messages survive a round trip at realistic sizes, the UDP
// size limits stated in udp.proto and docs/PROTOCOL.md are the real ones, damaged datagrams never
// pass the documented rules, the enumerations map 1:1 onto hilsim's C++ enums, the service has
// every rpc with the right streaming shape, and every element of the contract is documented.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/integrators/simulator.h"
#include "engine/model/joint.h"
#include "hilsim/v1/control.pb.h"
#include "hilsim/v1/service.grpc.pb.h"
#include "hilsim/v1/session.pb.h"
#include "hilsim/v1/types.pb.h"
#include "hilsim/v1/udp.pb.h"
#include "rt/events.h"
#include "rt/periodic_loop.h"
#include "rt/session.h"
#include "rt/session_state.h"
#include "rt/watchdog.h"

namespace hilsim {
namespace {

namespace pb = google::protobuf;
using google::protobuf::util::MessageDifferencer;

// The numbers the contract states (udp.proto, docs/PROTOCOL.md).
constexpr std::size_t kMtuPayload = 1472;    // IPv4 UDP payload in a 1500-byte Ethernet frame
constexpr int kMaxUdpCommandDof = 176;       // largest nv whose UdpCommand fits kMtuPayload
constexpr int kMaxUdpStateDof = 57;          // largest nv whose UdpState fits (nq = nv or nv + 1)
constexpr int kMaxUdpStateCoordinates = 173;  // largest nq + 2·nv whose UdpState fits
constexpr std::size_t kTokenBytes = 16;

std::size_t udpCommandBound(int nv) { return 57 + 8 * static_cast<std::size_t>(nv); }
std::size_t udpStateBound(int nq, int nv) {
  return 88 + 8 * static_cast<std::size_t>(nq + 2 * nv);
}

std::string token() {
  std::string t(kTokenBytes, '\0');
  for (std::size_t k = 0; k < t.size(); ++k) t[k] = static_cast<char>(0xA5 ^ (37 * k));
  return t;
}

// A command as a controller would send it: realistic torques, a current time stamp.
v1::Command makeCommand(int nv, std::uint64_t sequence) {
  v1::Command c;
  c.set_session_id(0x1234'5678'9abc'def0ULL);
  c.set_sequence(sequence);
  c.set_client_send_time_ns(1'732'000'123'456'789'012LL);
  for (int k = 0; k < nv; ++k) c.add_tau(std::sin(0.3 * k + 0.1) * (k < 6 ? 40.0 : 2.5));
  c.set_steps(1);
  return c;
}

// A state after a realistic cycle: a floating base when nq > nv, a unit quaternion.
v1::State makeState(int nq, int nv, std::uint64_t cycle) {
  v1::State s;
  s.set_session_id(0x1234'5678'9abc'def0ULL);
  s.set_cycle(cycle);
  s.set_time(static_cast<double>(cycle) * 1e-3);
  s.set_state(v1::SESSION_STATE_RUNNING);
  for (int k = 0; k < nq; ++k) s.add_q(std::cos(0.7 * k) * 0.9);
  if (nq == nv + 1) {  // x y z, then a unit quaternion w x y z
    const double h = 0.5;
    s.set_q(3, std::cos(h));
    s.set_q(4, 0.0);
    s.set_q(5, 0.0);
    s.set_q(6, std::sin(h));
  }
  for (int k = 0; k < nv; ++k) s.add_v(0.01 * k - 0.2);
  for (int k = 0; k < nv; ++k) s.add_tau(-3.0 + 0.125 * k);
  s.set_command_sequence(cycle - 1);
  s.set_command_client_send_time_ns(1'732'000'123'456'789'012LL);
  s.set_command_receive_time_ns(98'765'432'100LL);
  s.set_publish_time_ns(98'765'532'100LL);
  s.set_send_time_ns(98'765'540'000LL);
  s.set_watchdog_tripped(false);
  return s;
}

// Every field set to its largest encoding: the sizes the contract's limits are stated for.
v1::UdpCommand worstUdpCommand(int nv) {
  v1::UdpCommand u;
  u.set_token(token());
  v1::Command* c = u.mutable_command();
  c->set_session_id(std::numeric_limits<std::uint64_t>::max());
  c->set_sequence(std::numeric_limits<std::uint64_t>::max());
  c->set_client_send_time_ns(std::numeric_limits<std::int64_t>::min());
  c->set_steps(std::numeric_limits<std::uint32_t>::max());
  for (int k = 0; k < nv; ++k) c->add_tau(1.0 + k);
  return u;
}

v1::UdpState worstUdpState(int nq, int nv) {
  v1::UdpState u;
  v1::State* s = u.mutable_state();
  s->set_session_id(std::numeric_limits<std::uint64_t>::max());
  s->set_cycle(std::numeric_limits<std::uint64_t>::max());
  s->set_time(1e9);
  s->set_state(v1::SESSION_STATE_FAULTED);
  for (int k = 0; k < nq; ++k) s->add_q(1.0 + k);
  for (int k = 0; k < nv; ++k) s->add_v(1.0 + k);
  for (int k = 0; k < nv; ++k) s->add_tau(1.0 + k);
  s->set_command_sequence(std::numeric_limits<std::uint64_t>::max());
  s->set_command_client_send_time_ns(std::numeric_limits<std::int64_t>::min());
  s->set_command_receive_time_ns(std::numeric_limits<std::int64_t>::max());
  s->set_publish_time_ns(std::numeric_limits<std::int64_t>::max());
  s->set_send_time_ns(std::numeric_limits<std::int64_t>::max());
  s->set_watchdog_tripped(true);
  return u;
}

template <typename Message>
Message roundTrip(const Message& in) {
  std::string bytes;
  EXPECT_TRUE(in.SerializeToString(&bytes));
  Message out;
  EXPECT_TRUE(out.ParseFromString(bytes));
  return out;
}

// ---------------------------------------------------------------------------------------------
// The datagram rules of udp.proto, as a server applies them (reference implementation for the
// test: the first rule broken wins).

enum class Verdict {
  kAccepted,
  kOversize,
  kMalformed,
  kUnknownSession,
  kUnauthenticated,
  kStale,
  kDuplicate,
  kWrongSize,
  kNonFinite,
};

struct Receiver {
  std::uint64_t session_id = 0x1234'5678'9abc'def0ULL;
  std::string token = hilsim::token();
  int nv = 7;
  std::uint64_t newest_sequence = 0;

  Verdict receive(const std::string& datagram) {
    if (datagram.size() > kMtuPayload) return Verdict::kOversize;
    v1::UdpCommand u;
    if (!u.ParseFromString(datagram) || !u.has_command() || u.command().sequence() == 0) {
      return Verdict::kMalformed;
    }
    const v1::Command& c = u.command();
    if (c.session_id() != session_id) return Verdict::kUnknownSession;
    if (u.token() != token) return Verdict::kUnauthenticated;
    if (c.sequence() < newest_sequence) return Verdict::kStale;
    if (c.sequence() == newest_sequence) return Verdict::kDuplicate;
    if (c.tau_size() != 0 && c.tau_size() != nv) return Verdict::kWrongSize;
    for (double t : c.tau()) {
      if (!std::isfinite(t)) return Verdict::kNonFinite;
    }
    newest_sequence = c.sequence();
    return Verdict::kAccepted;
  }
};

std::string udpDatagram(int nv, std::uint64_t sequence) {
  v1::UdpCommand u;
  u.set_token(token());
  *u.mutable_command() = makeCommand(nv, sequence);
  return u.SerializeAsString();
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(Contract, CommandAndStateRoundTripAt7And50Dof) {
  for (const auto& [nq, nv] : {std::pair{7, 7}, std::pair{51, 50}}) {
    SCOPED_TRACE("nq = " + std::to_string(nq) + ", nv = " + std::to_string(nv));
    const v1::Command command = makeCommand(nv, 42);
    const v1::Command command_back = roundTrip(command);
    EXPECT_TRUE(MessageDifferencer::Equals(command, command_back));
    ASSERT_EQ(command_back.tau_size(), nv);
    for (int k = 0; k < nv; ++k) EXPECT_EQ(command_back.tau(k), command.tau(k));  // bit-exact
    EXPECT_EQ(command_back.client_send_time_ns(), 1'732'000'123'456'789'012LL);

    const v1::State state = makeState(nq, nv, 1001);
    const v1::State state_back = roundTrip(state);
    EXPECT_TRUE(MessageDifferencer::Equals(state, state_back));
    EXPECT_EQ(state_back.q_size(), nq);
    EXPECT_EQ(state_back.v_size(), nv);
    EXPECT_EQ(state_back.tau_size(), nv);
    EXPECT_EQ(state_back.state(), v1::SESSION_STATE_RUNNING);

    // and inside the UDP datagrams
    v1::UdpCommand udp_command;
    udp_command.set_token(token());
    *udp_command.mutable_command() = command;
    EXPECT_TRUE(MessageDifferencer::Equals(udp_command, roundTrip(udp_command)));
    v1::UdpState udp_state;
    *udp_state.mutable_state() = state;
    EXPECT_TRUE(MessageDifferencer::Equals(udp_state, roundTrip(udp_state)));
  }
}

TEST(Contract, NonFiniteValuesSurviveTheWireSoTheServerMustCheckThem) {
  v1::Command c = makeCommand(3, 1);
  c.set_tau(0, std::numeric_limits<double>::quiet_NaN());
  c.set_tau(1, std::numeric_limits<double>::infinity());
  const v1::Command back = roundTrip(c);
  EXPECT_TRUE(std::isnan(back.tau(0)));
  EXPECT_TRUE(std::isinf(back.tau(1)));
}

TEST(Contract, SessionConfigDefaultsAreDistinguishableFromZero) {
  // damping_gain 0 and max_catch_up 0 are valid values, so they are `optional` on the wire
  v1::SessionConfig config;
  EXPECT_FALSE(config.watchdog().has_damping_gain());
  config.mutable_watchdog()->set_damping_gain(0.0);
  config.mutable_overrun()->set_max_catch_up(0);
  const v1::SessionConfig back = roundTrip(config);
  EXPECT_TRUE(back.watchdog().has_damping_gain());
  EXPECT_TRUE(back.overrun().has_max_catch_up());
  EXPECT_FALSE(back.thread().has_cpu());
}

// ---------------------------------------------------------------------------------------------
// UDP size limits

TEST(Contract, UdpCommandFitsOneEthernetFrameUpToTheStatedDof) {
  for (int nv : {16, 50, 100, kMaxUdpCommandDof}) {
    EXPECT_EQ(worstUdpCommand(nv).ByteSizeLong(), udpCommandBound(nv)) << "nv = " << nv;
  }
  EXPECT_LE(worstUdpCommand(kMaxUdpCommandDof).ByteSizeLong(), kMtuPayload);
  EXPECT_GT(worstUdpCommand(kMaxUdpCommandDof + 1).ByteSizeLong(), kMtuPayload);
  // so every command a session can take fits, and the server may drop anything longer unparsed
  EXPECT_LE(worstUdpCommand(rt::kMaxCoordinates).ByteSizeLong(), kMtuPayload);
  // the formula is an upper bound for small models too
  for (int nv = 0; nv < 16; ++nv) EXPECT_LE(worstUdpCommand(nv).ByteSizeLong(), udpCommandBound(nv));
  // a realistic command is no larger than the worst case
  v1::UdpCommand real;
  real.set_token(token());
  *real.mutable_command() = makeCommand(kMaxUdpCommandDof, 7);
  EXPECT_LE(real.ByteSizeLong(), kMtuPayload);
}

// With position and velocity drives a command carries their set-points: 63 + 24·nv bytes with
// all three arrays, up to 58 DoF in one frame; 60 + 16·nv without torques, up to 88 DoF
// (udp.proto, docs/PROTOCOL.md "Size limits").
TEST(Contract, UdpCommandWithSetPointsFitsOneEthernetFrameUpToTheStatedDof) {
  const auto with_set_points = [](int nv, bool tau) {
    v1::UdpCommand u = worstUdpCommand(nv);
    v1::Command* c = u.mutable_command();
    if (!tau) c->clear_tau();
    for (int k = 0; k < nv; ++k) c->add_position(1.0 + k);
    for (int k = 0; k < nv; ++k) c->add_velocity(1.0 + k);
    return u.ByteSizeLong();
  };
  for (int nv : {16, 40, 58}) {
    EXPECT_EQ(with_set_points(nv, true), 63u + 24u * static_cast<std::size_t>(nv)) << nv;
    EXPECT_EQ(with_set_points(nv, false), 60u + 16u * static_cast<std::size_t>(nv)) << nv;
  }
  EXPECT_LE(with_set_points(58, true), kMtuPayload);
  EXPECT_GT(with_set_points(59, true), kMtuPayload);
  EXPECT_LE(with_set_points(88, false), kMtuPayload);
  EXPECT_GT(with_set_points(89, false), kMtuPayload);
}

TEST(Contract, UdpStateFitsOneEthernetFrameUpToTheStatedDof) {
  for (const auto& [nq, nv] : {std::pair{16, 16}, std::pair{19, 18}, std::pair{51, 50}}) {
    EXPECT_EQ(worstUdpState(nq, nv).ByteSizeLong(), udpStateBound(nq, nv)) << nq << ", " << nv;
  }
  // fixed base (nq = nv) and floating base (nq = nv + 1)
  for (int extra : {0, 1}) {
    SCOPED_TRACE("nq = nv + " + std::to_string(extra));
    EXPECT_LE(worstUdpState(kMaxUdpStateDof + extra, kMaxUdpStateDof).ByteSizeLong(), kMtuPayload);
    EXPECT_GT(worstUdpState(kMaxUdpStateDof + 1 + extra, kMaxUdpStateDof + 1).ByteSizeLong(),
              kMtuPayload);
  }
  // the general rule nq + 2·nv ≤ 173
  EXPECT_LE(udpStateBound(kMaxUdpStateCoordinates - 2 * 40, 40), kMtuPayload);
  EXPECT_GT(udpStateBound(kMaxUdpStateCoordinates + 1 - 2 * 40, 40), kMtuPayload);
  EXPECT_LE(worstUdpState(kMaxUdpStateCoordinates - 2 * 40, 40).ByteSizeLong(), kMtuPayload);
  EXPECT_GT(worstUdpState(kMaxUdpStateCoordinates + 1 - 2 * 40, 40).ByteSizeLong(), kMtuPayload);
  // the examples of udp.proto: iiwa14 (bound), quadruped and TALOS (exact)
  EXPECT_LE(worstUdpState(7, 7).ByteSizeLong(), 256u);
  EXPECT_EQ(udpStateBound(7, 7), 256u);
  EXPECT_EQ(worstUdpState(19, 18).ByteSizeLong(), 528u);
  EXPECT_EQ(worstUdpState(51, 50).ByteSizeLong(), 1296u);
  for (int n = 1; n < 16; ++n) EXPECT_LE(worstUdpState(n, n).ByteSizeLong(), udpStateBound(n, n));
}

TEST(Contract, TheStateFieldsOfLimitsAndContactsAddWhatTheContractStates) {
  // udp.proto: tau_commanded and limit_force 8·nv + 3 each, nc contacts 32·nc + 8 (bounds, exact
  // from 16 DoF and 16 contacts on, as every length then takes two bytes)
  for (const auto& [nq, nv] : {std::pair{19, 18}, std::pair{7, 7}, std::pair{51, 50}}) {
    for (int contacts : {0, 4, 16, 64}) {
      v1::UdpState u = worstUdpState(nq, nv);
      v1::State* s = u.mutable_state();
      for (int k = 0; k < nv; ++k) s->add_tau_commanded(-1.0e300 + k);
      for (int k = 0; k < nv; ++k) s->add_limit_force(-1.0e300 + k);
      for (int k = 0; k < 3 * contacts; ++k) s->add_contact_force(-1.0e300 + k);
      for (int k = 0; k < contacts; ++k) s->add_contact_depth(1.0e-3 * k);
      const std::size_t bound = udpStateBound(nq, nv) + 2 * (8 * static_cast<std::size_t>(nv) + 3) +
                                (contacts > 0 ? 32 * static_cast<std::size_t>(contacts) + 8 : 0);
      EXPECT_LE(u.ByteSizeLong(), bound) << nv << " DoF, " << contacts << " contacts";
      if (nv >= 16 && (contacts == 0 || contacts >= 16)) {
        EXPECT_EQ(u.ByteSizeLong(), bound) << nv << " DoF, " << contacts << " contacts";
      }
    }
  }
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Contract, TheDocumentedLimitsAreTheTestedOnes) {
  const std::string udp = readFile(HILSIM_SOURCE_DIR "/proto/hilsim/v1/udp.proto");
  EXPECT_NE(udp.find("UdpCommand = 57 + 8·nv bytes"), std::string::npos);
  EXPECT_NE(udp.find("up to nv = " + std::to_string(kMaxUdpCommandDof) + " DoF"), std::string::npos);
  EXPECT_NE(udp.find("UdpState = 88 + 8·(nq + 2·nv) bytes"), std::string::npos);
  EXPECT_NE(udp.find("nq + 2·nv ≤ " + std::to_string(kMaxUdpStateCoordinates)), std::string::npos);
  EXPECT_NE(udp.find("up to " + std::to_string(kMaxUdpStateDof) + " DoF"), std::string::npos);
  const std::string doc = readFile(HILSIM_SOURCE_DIR "/docs/PROTOCOL.md");
  EXPECT_NE(doc.find("57 + 8·nv"), std::string::npos);
  EXPECT_NE(doc.find("88 + 8·(nq + 2·nv)"), std::string::npos);
  EXPECT_NE(doc.find("**" + std::to_string(kMaxUdpStateDof) + " DoF**"), std::string::npos);
  EXPECT_NE(doc.find("**" + std::to_string(kMaxUdpCommandDof) + " DoF**"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Damaged datagrams

TEST(Contract, EveryTruncatedDatagramFailsToParseOrIsRejected) {
  const std::string whole = udpDatagram(7, 5);
  {
    Receiver r;
    ASSERT_EQ(r.receive(whole), Verdict::kAccepted);
  }
  int parse_failures = 0;
  for (std::size_t length = 0; length < whole.size(); ++length) {
    Receiver r;
    const std::string cut = whole.substr(0, length);
    v1::UdpCommand parsed;
    if (!parsed.ParseFromString(cut)) ++parse_failures;
    EXPECT_NE(r.receive(cut), Verdict::kAccepted) << "truncated to " << length << " bytes";
  }
  // cutting one byte off — into the torques — is a parse error, not a shorter valid message
  v1::UdpCommand parsed;
  EXPECT_FALSE(parsed.ParseFromString(whole.substr(0, whole.size() - 1)));
  EXPECT_FALSE(parsed.ParseFromString(whole.substr(0, whole.size() / 2)));
  // only the cut exactly between token and command parses, and it has no command: malformed
  EXPECT_EQ(parse_failures, static_cast<int>(whole.size()) - 2);  // the empty prefix parses too
}

TEST(Contract, CorruptedDatagramsAreRejected) {
  const std::string whole = udpDatagram(7, 5);
  // which bytes hold what: token (tag, length, 16 bytes), then the nested command
  ASSERT_EQ(static_cast<unsigned char>(whole[0]), 0x0A);  // field 1, length-delimited
  ASSERT_EQ(static_cast<unsigned char>(whole[1]), kTokenBytes);
  {  // any flipped token bit: unauthenticated
    for (std::size_t k = 2; k < 2 + kTokenBytes; ++k) {
      std::string bad = whole;
      bad[k] = static_cast<char>(bad[k] ^ 0x10);
      Receiver r;
      EXPECT_EQ(r.receive(bad), Verdict::kUnauthenticated) << "byte " << k;
    }
  }
  {  // the torques' length claims more bytes than there are: parse error
    v1::Command c = makeCommand(7, 5);
    std::string bytes = c.SerializeAsString();
    const std::size_t tau_tag = bytes.find(static_cast<char>(0x22));  // field 4, length-delimited
    ASSERT_NE(tau_tag, std::string::npos);
    ASSERT_EQ(static_cast<unsigned char>(bytes[tau_tag + 1]), 56u);  // 7 doubles
    bytes[tau_tag + 1] = static_cast<char>(57);
    v1::Command parsed;
    EXPECT_FALSE(parsed.ParseFromString(bytes));
    bytes[tau_tag + 1] = static_cast<char>(55);  // not a whole number of doubles
    EXPECT_FALSE(parsed.ParseFromString(bytes));
  }
  {  // a torque's bits turned into a NaN: non-finite
    v1::UdpCommand u;
    ASSERT_TRUE(u.ParseFromString(whole));
    u.mutable_command()->set_tau(3, std::numeric_limits<double>::quiet_NaN());
    Receiver r;
    EXPECT_EQ(r.receive(u.SerializeAsString()), Verdict::kNonFinite);
  }
  {  // a torque more or less: wrong size; a sync (no torques) is fine
    Receiver r;
    EXPECT_EQ(r.receive(udpDatagram(8, 5)), Verdict::kWrongSize);
    EXPECT_EQ(r.receive(udpDatagram(6, 6)), Verdict::kWrongSize);
    EXPECT_EQ(r.receive(udpDatagram(0, 7)), Verdict::kAccepted);
  }
  {  // another session, an oversize datagram, sequence 0
    Receiver r;
    r.session_id += 1;
    EXPECT_EQ(r.receive(whole), Verdict::kUnknownSession);
    Receiver big;
    EXPECT_EQ(big.receive(std::string(kMtuPayload + 1, '\0')), Verdict::kOversize);
    EXPECT_EQ(big.receive(udpDatagram(7, 0)), Verdict::kMalformed);
  }
  {  // duplicates and reordering
    Receiver r;
    EXPECT_EQ(r.receive(udpDatagram(7, 10)), Verdict::kAccepted);
    EXPECT_EQ(r.receive(udpDatagram(7, 10)), Verdict::kDuplicate);
    EXPECT_EQ(r.receive(udpDatagram(7, 9)), Verdict::kStale);
    EXPECT_EQ(r.receive(udpDatagram(7, 11)), Verdict::kAccepted);
    // a rejected datagram does not move the newest sequence
    EXPECT_EQ(r.receive(udpDatagram(5, 20)), Verdict::kWrongSize);
    EXPECT_EQ(r.receive(udpDatagram(7, 12)), Verdict::kAccepted);
  }
}

TEST(Contract, RandomBytesNeverPassTheRules) {
  std::mt19937_64 rng(20261121);
  std::uniform_int_distribution<int> length(0, 1600);
  std::uniform_int_distribution<int> byte(0, 255);
  const std::string valid = udpDatagram(7, 5);
  for (int trial = 0; trial < 20'000; ++trial) {
    std::string datagram;
    if (trial % 2 == 0) {  // noise
      datagram.resize(static_cast<std::size_t>(length(rng)));
      for (char& ch : datagram) ch = static_cast<char>(byte(rng));
    } else {  // a valid datagram with 1 … 4 random bytes overwritten outside the torques' values
      datagram = valid;
      const std::size_t values_start = valid.size() - 7 * 8;
      for (int k = 0, n = 1 + trial % 4; k < n; ++k) {
        const auto at = static_cast<std::size_t>(rng() % values_start);
        datagram[at] = static_cast<char>(byte(rng));
      }
      if (datagram == valid) continue;
    }
    Receiver r;
    const Verdict verdict = r.receive(datagram);
    if (verdict == Verdict::kAccepted) {
      // corruption can only pass if it left token and session intact and changed what the rules
      // cannot tell from a real value (sequence, time stamp, steps), or hid the torques' tag so
      // that the command became a sync (never applied); never a torque count other than nv
      v1::UdpCommand u;
      ASSERT_TRUE(u.ParseFromString(datagram));
      EXPECT_EQ(u.token(), token());
      EXPECT_TRUE(u.command().tau_size() == 7 || u.command().tau_size() == 0);
      EXPECT_EQ(trial % 2, 1) << "random noise was accepted";
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Enumerations ↔ hilsim's C++ enums, by name

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string upper(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  return out;
}

// For every proto value but *_UNSPECIFIED: `parse(lowercase name without prefix)` must know it and
// `name(parsed)` must give the name back; for every C++ value: the proto enum has PREFIX + NAME.
template <typename Cpp, typename Parse, typename Name>
void expectOneToOne(const pb::EnumDescriptor* proto, const std::string& prefix,
                    const std::vector<Cpp>& cpp_values, Parse parse, Name name) {
  SCOPED_TRACE(proto->full_name());
  int mapped = 0;
  for (int i = 0; i < proto->value_count(); ++i) {
    const std::string full = proto->value(i)->name();
    ASSERT_EQ(full.rfind(prefix, 0), 0u) << full << " lacks the prefix " << prefix;
    const std::string suffix = full.substr(prefix.size());
    if (suffix == "UNSPECIFIED") {
      EXPECT_EQ(proto->value(i)->number(), 0);
      continue;
    }
    const auto parsed = parse(lower(suffix));
    ASSERT_TRUE(parsed.has_value()) << full << " has no C++ counterpart";
    EXPECT_EQ(std::string(name(*parsed)), lower(suffix));
    ++mapped;
  }
  for (Cpp value : cpp_values) {
    EXPECT_NE(proto->FindValueByName(prefix + upper(name(value))), nullptr)
        << "C++ value " << name(value) << " is missing from the contract";
  }
  EXPECT_EQ(mapped, static_cast<int>(cpp_values.size()));
}

TEST(Contract, EnumsMapOneToOneOntoTheCppEnums) {
  expectOneToOne(v1::SessionMode_descriptor(), "SESSION_MODE_",
                 std::vector{rt::SessionMode::kRealtime, rt::SessionMode::kLockstep,
                             rt::SessionMode::kFree},
                 rt::parseSessionMode, rt::sessionModeName);
  // every row of the formulation registry, and every integrator, has its proto value
  std::vector<Formulation> registry;
  for (const FormulationInfo& f : formulations()) registry.push_back(f.id);
  expectOneToOne(v1::Formulation_descriptor(), "FORMULATION_", registry, parseFormulation,
                 formulationName);
  expectOneToOne(v1::Integrator_descriptor(), "INTEGRATOR_",
                 std::vector<Integrator>(integrators().begin(), integrators().end()),
                 parseIntegrator, integratorName);
  expectOneToOne(v1::WatchdogPolicy_descriptor(), "WATCHDOG_POLICY_",
                 std::vector{rt::WatchdogPolicy::kHoldLast, rt::WatchdogPolicy::kZeroTorque,
                             rt::WatchdogPolicy::kDamping, rt::WatchdogPolicy::kFault},
                 rt::parseWatchdogPolicy, rt::watchdogPolicyName);
  expectOneToOne(v1::OverrunPolicy_descriptor(), "OVERRUN_POLICY_",
                 std::vector{rt::OverrunPolicy::kSkip, rt::OverrunPolicy::kCatchUp,
                             rt::OverrunPolicy::kFault},
                 rt::parseOverrunPolicy, rt::overrunPolicyName);

  // no parse functions for these: map through the names only
  const std::vector states{rt::SessionState::kCreated, rt::SessionState::kRunning,
                           rt::SessionState::kPaused, rt::SessionState::kStopped,
                           rt::SessionState::kFaulted};
  auto parse_state = [&](const std::string& n) -> std::optional<rt::SessionState> {
    for (auto s : states) {
      if (rt::sessionStateName(s) == n) return s;
    }
    return std::nullopt;
  };
  expectOneToOne(v1::SessionState_descriptor(), "SESSION_STATE_", states, parse_state,
                 rt::sessionStateName);
  const std::vector joints{JointType::kRevolute, JointType::kPrismatic, JointType::kSpherical,
                           JointType::kFreeFlyer, JointType::kPlanar};
  auto parse_joint = [&](const std::string& n) -> std::optional<JointType> {
    for (auto j : joints) {
      if (jointTypeName(j) == n) return j;
    }
    return std::nullopt;
  };
  expectOneToOne(v1::JointType_descriptor(), "JOINT_TYPE_", joints, parse_joint, jointTypeName);
}

TEST(Contract, FaultKindsHaveTheNumbersOfTheCppEnum) {
  // rt::FaultKind has no names; the contract mirrors it number for number (kNone = UNSPECIFIED)
  EXPECT_EQ(v1::Fault::Kind_descriptor()->value_count(), 7);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kNone), v1::Fault::KIND_UNSPECIFIED);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kNonFiniteCommand), v1::Fault::KIND_NON_FINITE_COMMAND);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kNonFiniteState), v1::Fault::KIND_NON_FINITE_STATE);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kExplodingState), v1::Fault::KIND_EXPLODING_STATE);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kDeadlineMiss), v1::Fault::KIND_DEADLINE_MISS);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kWatchdog), v1::Fault::KIND_WATCHDOG);
  EXPECT_EQ(static_cast<int>(rt::FaultKind::kConstraintFailure),
            v1::Fault::KIND_CONSTRAINT_FAILURE);
}

TEST(Contract, WireFieldsHoldTheCppRecords) {
  // the per-cycle arrays must carry the fixed records of rt/session.h
  const v1::State s = makeState(rt::kMaxCoordinates, rt::kMaxCoordinates, 3);
  const v1::State back = roundTrip(s);
  EXPECT_EQ(back.q_size(), rt::kMaxCoordinates);
  // rt::Command::steps is a uint32, sequence a uint64, times int64 [ns]
  v1::Command c;
  c.set_steps(std::numeric_limits<std::uint32_t>::max());
  c.set_sequence(std::numeric_limits<std::uint64_t>::max());
  c.set_client_send_time_ns(std::numeric_limits<rt::Nanoseconds>::min());
  const v1::Command c_back = roundTrip(c);
  EXPECT_EQ(c_back.steps(), std::numeric_limits<std::uint32_t>::max());
  EXPECT_EQ(c_back.sequence(), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(c_back.client_send_time_ns(), std::numeric_limits<rt::Nanoseconds>::min());
}

// ---------------------------------------------------------------------------------------------
// The service

TEST(Contract, ServiceHasEveryRpcWithItsStreamingShape) {
  // service.proto registers its descriptor (with the service) in the generated pool once its
  // object file is linked: the request messages it defines bring it in, as in any server or client
  ASSERT_EQ(v1::ListModelsRequest::descriptor()->file()->name(), "hilsim/v1/service.proto");
  const pb::ServiceDescriptor* service = pb::DescriptorPool::generated_pool()->FindServiceByName(
      v1::Simulation::service_full_name());
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(service->full_name(), "hilsim.v1.Simulation");

  struct Rpc {
    const char* name;
    const char* input;
    const char* output;
    bool client_streaming;
    bool server_streaming;
  };
  const std::vector<Rpc> expected{
      {"ListModels", "ListModelsRequest", "ListModelsResponse", false, false},
      {"CreateSession", "CreateSessionRequest", "CreateSessionResponse", false, false},
      {"StartSession", "SessionRequest", "SessionInfo", false, false},
      {"PauseSession", "SessionRequest", "SessionInfo", false, false},
      {"StopSession", "SessionRequest", "SessionInfo", false, false},
      {"ResetSession", "ResetSessionRequest", "SessionInfo", false, false},
      {"CloseSession", "SessionRequest", "CloseSessionResponse", false, false},
      {"GetSession", "SessionRequest", "SessionInfo", false, false},
      {"ListSessions", "ListSessionsRequest", "ListSessionsResponse", false, false},
      {"Step", "Command", "State", false, false},
      {"Control", "Command", "State", true, true},
      {"StreamStates", "StreamStatesRequest", "State", false, true},
      {"GetStats", "SessionRequest", "SessionStats", false, false},
      {"InjectFault", "InjectFaultRequest", "InjectedFault", false, false},
      {"ClearFaults", "ClearFaultsRequest", "ClearFaultsResponse", false, false},
  };
  EXPECT_EQ(service->method_count(), static_cast<int>(expected.size()));
  for (const Rpc& rpc : expected) {
    SCOPED_TRACE(rpc.name);
    const pb::MethodDescriptor* method = service->FindMethodByName(rpc.name);
    ASSERT_NE(method, nullptr);
    EXPECT_EQ(method->input_type()->full_name(), std::string("hilsim.v1.") + rpc.input);
    EXPECT_EQ(method->output_type()->full_name(), std::string("hilsim.v1.") + rpc.output);
    EXPECT_EQ(method->client_streaming(), rpc.client_streaming);
    EXPECT_EQ(method->server_streaming(), rpc.server_streaming);
  }
  // the generated code offers the callback API the server uses (STYLE.md §7) and a stub
  static_assert(std::is_class_v<v1::Simulation::CallbackService>);
  static_assert(std::is_class_v<v1::Simulation::Stub>);
}

TEST(Contract, StatsCarryEveryDocumentedCounter) {
  const pb::Descriptor* stats = v1::SessionStats::descriptor();
  for (const char* field : {"state", "mode", "fault", "cycles", "time", "wall_time_running",
                            "real_time_factor", "timing", "commands", "watchdog", "udp", "grpc",
                            "events_dropped", "rt_setup"}) {
    EXPECT_NE(stats->FindFieldByName(field), nullptr) << field;
  }
  const pb::Descriptor* timing = v1::TimingStats::descriptor();
  for (const char* field : {"cycles", "deadline_misses", "consecutive_misses",
                            "max_consecutive_misses", "skipped_cycles", "wakeup_latency",
                            "compute_time", "measured_period", "engine_step", "loop_overhead"}) {
    EXPECT_NE(timing->FindFieldByName(field), nullptr) << field;
  }
  const pb::Descriptor* summary = v1::LatencySummary::descriptor();
  for (const char* field : {"count", "min_ns", "max_ns", "mean_ns", "p50_ns", "p90_ns", "p99_ns",
                            "p999_ns"}) {
    EXPECT_NE(summary->FindFieldByName(field), nullptr) << field;
  }
  const pb::Descriptor* transport = v1::TransportStats::descriptor();
  for (const char* field : {"received", "accepted", "oversize", "malformed", "unknown_session",
                            "unauthenticated", "stale", "duplicate", "wrong_size", "non_finite",
                            "too_many_steps", "inactive", "dropped", "states_sent",
                            "states_skipped"}) {
    EXPECT_NE(transport->FindFieldByName(field), nullptr) << field;
  }
  // rejection counters are listed in the order the rules are checked (udp.proto); a rule added
  // later has a higher field number but its place in the list
  const std::vector<std::string> order{"oversize",   "malformed",      "unknown_session",
                                       "unauthenticated", "stale",    "duplicate",
                                       "wrong_size", "non_finite",     "too_many_steps",
                                       "inactive",   "dropped"};
  for (std::size_t k = 1; k < order.size(); ++k) {
    EXPECT_LT(transport->FindFieldByName(order[k - 1])->index(),
              transport->FindFieldByName(order[k])->index());
  }
}

// ---------------------------------------------------------------------------------------------
// Documentation: every message, field, oneof, enum, enum value, service and rpc has a comment
// (STYLE.md §7), read from the descriptor set protoc wrote with the source info.

class CommentIndex {
 public:
  explicit CommentIndex(const pb::FileDescriptorProto& file) : file_(file) {
    for (const auto& location : file.source_code_info().location()) {
      if (!location.leading_comments().empty() || !location.trailing_comments().empty()) {
        documented_.emplace_back(location.path().begin(), location.path().end());
      }
    }
  }
  void expectDocumented(const std::vector<int>& path, const std::string& what) const {
    const bool documented =
        std::find(documented_.begin(), documented_.end(), path) != documented_.end();
    EXPECT_TRUE(documented) << file_.name() << ": " << what << " has no comment";
  }

 private:
  const pb::FileDescriptorProto& file_;
  std::vector<std::vector<int>> documented_;
};

// Field numbers of descriptor.proto used in source-info paths.
constexpr int kFileMessage = 4, kFileEnum = 5, kFileService = 6;
constexpr int kMessageField = 2, kMessageNested = 3, kMessageEnum = 4, kMessageOneof = 8;
constexpr int kEnumValue = 2, kServiceMethod = 2;

void checkEnum(const CommentIndex& index, const pb::EnumDescriptorProto& e, std::vector<int> path,
               const std::string& scope) {
  index.expectDocumented(path, "enum " + scope + e.name());
  for (int i = 0; i < e.value_size(); ++i) {
    std::vector<int> p = path;
    p.insert(p.end(), {kEnumValue, i});
    index.expectDocumented(p, "enum value " + scope + e.name() + "." + e.value(i).name());
  }
}

void checkMessage(const CommentIndex& index, const pb::DescriptorProto& m, std::vector<int> path,
                  const std::string& scope) {
  const std::string name = scope + m.name();
  index.expectDocumented(path, "message " + name);
  for (int i = 0; i < m.field_size(); ++i) {
    std::vector<int> p = path;
    p.insert(p.end(), {kMessageField, i});
    index.expectDocumented(p, "field " + name + "." + m.field(i).name());
  }
  for (int i = 0; i < m.oneof_decl_size(); ++i) {
    if (m.oneof_decl(i).name().rfind("_", 0) == 0) continue;  // synthetic oneof of `optional`
    std::vector<int> p = path;
    p.insert(p.end(), {kMessageOneof, i});
    index.expectDocumented(p, "oneof " + name + "." + m.oneof_decl(i).name());
  }
  for (int i = 0; i < m.nested_type_size(); ++i) {
    std::vector<int> p = path;
    p.insert(p.end(), {kMessageNested, i});
    checkMessage(index, m.nested_type(i), p, name + ".");
  }
  for (int i = 0; i < m.enum_type_size(); ++i) {
    std::vector<int> p = path;
    p.insert(p.end(), {kMessageEnum, i});
    checkEnum(index, m.enum_type(i), p, name + ".");
  }
}

TEST(Contract, EveryElementIsDocumented) {
  pb::FileDescriptorSet set;
  {
    std::ifstream in(HILSIM_PROTO_DESCRIPTOR_SET, std::ios::binary);
    ASSERT_TRUE(in) << HILSIM_PROTO_DESCRIPTOR_SET;
    ASSERT_TRUE(set.ParseFromIstream(&in));
  }
  std::vector<std::string> files;
  int elements = 0;
  for (const pb::FileDescriptorProto& file : set.file()) {
    files.push_back(file.name());
    EXPECT_EQ(file.package(), "hilsim.v1");
    EXPECT_EQ(file.syntax(), "proto3");
    ASSERT_TRUE(file.has_source_code_info()) << file.name();
    const CommentIndex index(file);
    for (int i = 0; i < file.message_type_size(); ++i) {
      checkMessage(index, file.message_type(i), {kFileMessage, i}, "");
      ++elements;
    }
    for (int i = 0; i < file.enum_type_size(); ++i) {
      checkEnum(index, file.enum_type(i), {kFileEnum, i}, "");
      ++elements;
    }
    for (int i = 0; i < file.service_size(); ++i) {
      const auto& service = file.service(i);
      index.expectDocumented({kFileService, i}, "service " + service.name());
      for (int j = 0; j < service.method_size(); ++j) {
        index.expectDocumented({kFileService, i, kServiceMethod, j}, "rpc " + service.method(j).name());
      }
      ++elements;
    }
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"hilsim/v1/control.proto", "hilsim/v1/service.proto",
                                             "hilsim/v1/session.proto", "hilsim/v1/types.proto",
                                             "hilsim/v1/udp.proto", "hilsim/v1/viewer.proto"}));
  EXPECT_GT(elements, 30);
}

}  // namespace
}  // namespace hilsim
