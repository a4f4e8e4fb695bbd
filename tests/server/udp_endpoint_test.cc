// UDP fast path: a session's UdpEndpoint and a UdpController on loopback. The rejection rules of
// udp.proto (each counted once, never answered, harmless to the controller in charge), the
// answers per mode (sync, lockstep command, step request, every realtime cycle, free running),
// the 1 s peer timeout, per-source sequence spaces, and a PD controller closing its loop over UDP
// — under TOKEN; then the MAC scheme: forged, truncated, reflected, replayed (from any source)
// and re-ordered frames refused and counted, states authenticated, a restart with the same key.

#include "server/udp_endpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <set>
#include <thread>
#include <vector>

#include "client/udp_controller.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "server/conversions.h"
#include "server/server_session.h"

namespace hilsim::server {
namespace {

using client::UdpController;
using std::chrono::milliseconds;

constexpr std::uint64_t kSessionId = 0x5eed'0000'0000'0042;
constexpr ServerSession::Token kToken = {7,  1,  9,   3, 250, 4,  0,  128,
                                         77, 12, 31, 200, 5,   66, 18, 99};
/// The MAC scheme's session key.
udp::Key macKey(std::uint8_t first = 40) {
  std::array<std::uint8_t, udp::kKeyBytes> bytes;
  for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<std::uint8_t>(first + 3 * k);
  return udp::Key(bytes);
}
/// Long enough for any answer on a loaded 2-core machine; only failures wait this long.
constexpr milliseconds kWait{2000};
/// How long a datagram that must not be answered is given to show up anyway: loopback answers
/// take tens of microseconds, so 100 ms is a wide margin.
constexpr milliseconds kQuiet{100};

std::shared_ptr<const Model> pendulum() {
  static const auto model = std::make_shared<const Model>(loadModel("pendulum"));
  return model;
}

rt::SessionConfig sessionConfig(rt::SessionMode mode, std::size_t command_capacity,
                                std::shared_ptr<const Model> model) {
  rt::SessionConfig c;
  c.model = std::move(model);
  c.mode = mode;
  c.control_rate = 1000.0;
  c.command_capacity = command_capacity;
  c.thread.lock_memory = false;  // tests run unprivileged as well
  c.name = "udp-test";
  return c;
}

std::string tokenString() { return std::string(kToken.begin(), kToken.end()); }

/// One serialized UdpCommand, every field chosen by the caller.
std::string datagram(std::uint64_t sequence, std::vector<double> tau,
                     std::uint64_t session_id = kSessionId,
                     const std::string& token = tokenString(), std::uint32_t steps = 0) {
  v1::UdpCommand d;
  if (!token.empty()) d.set_token(token);
  v1::Command* c = d.mutable_command();
  c->set_session_id(session_id);
  c->set_sequence(sequence);
  c->set_steps(steps);
  for (const double t : tau) c->add_tau(t);
  return d.SerializeAsString();
}

std::span<const std::uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

rt::SessionConfig withDrives(rt::SessionConfig c, std::vector<rt::DriveConfig> drives) {
  c.drives = std::move(drives);
  return c;
}

/// `session`, given `key` first when there is one (MAC; else TOKEN).
ServerSession& keyed(ServerSession& session, const udp::Key* key) {
  if (key != nullptr) session.setUdpKey(*key);
  return session;
}

/// A session with its UDP endpoint on an ephemeral loopback port; TOKEN, or MAC with `key`.
struct Rig {
  explicit Rig(rt::SessionMode mode, std::size_t command_capacity = 64,
               std::shared_ptr<const Model> model = pendulum(), const udp::Key* key = nullptr,
               std::vector<rt::DriveConfig> drives = {})
      : session(kSessionId,
                withDrives(sessionConfig(mode, command_capacity, std::move(model)),
                           std::move(drives)),
                v1::ModelInfo(), v1::SessionConfig(), kToken),
        endpoint(keyed(session, key), "127.0.0.1", 0) {
    session.setUdpPort(endpoint.port());
    endpoint.start();
  }
  /// A controller of the session's scheme; under MAC with `first_sequence` (0: the default).
  std::unique_ptr<UdpController> controller(std::uint64_t first_sequence = 0) {
    if (const udp::Key* key = session.udpKey()) {
      return std::make_unique<UdpController>("127.0.0.1", endpoint.port(), kSessionId, *key,
                                             UdpController::Options{first_sequence});
    }
    return std::make_unique<UdpController>("127.0.0.1", endpoint.port(), kSessionId, kToken);
  }
  TransportCounters& udp() { return session.udpCounters(); }

  ServerSession session;
  UdpEndpoint endpoint;  // after the session: stopped before it goes
};

/// Polls until `done()` or `timeout`.
template <typename Done>
bool eventually(Done done, milliseconds timeout = kWait) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return done();
}

/// Makes `ctl` the peer of a created session, then starts the session: the controller reads the
/// sync's answer and the RUNNING state, so that only what the test provokes follows.
// `sync_cycle`, when given, receives the cycle of the sync's answer.
void syncAndStart(Rig& rig, UdpController& ctl, v1::State& s,
                  std::uint64_t* sync_cycle = nullptr) {
  ctl.sync();
  ASSERT_TRUE(ctl.receive(s, kWait));
  ASSERT_EQ(s.state(), v1::SESSION_STATE_CREATED);
  if (sync_cycle) *sync_cycle = s.cycle();
  ASSERT_TRUE(rig.session.start(nullptr));
  // a state the session published before the start (CREATED) may still be on its way
  do {
    ASSERT_TRUE(ctl.receive(s, kWait));
  } while (s.state() == v1::SESSION_STATE_CREATED);
  ASSERT_EQ(s.state(), v1::SESSION_STATE_RUNNING);
}

std::uint64_t load(const std::atomic<std::uint64_t>& counter) {
  return counter.load(std::memory_order_relaxed);
}

std::uint64_t rejected(const TransportCounters& c) {
  return load(c.oversize) + load(c.malformed) + load(c.unknown_session) +
         load(c.unauthenticated) + load(c.replayed) + load(c.stale) + load(c.duplicate) + load(c.wrong_size) +
         load(c.non_finite) + load(c.too_many_steps) + load(c.inactive) + load(c.dropped);
}

TEST(UdpEndpoint, BindsAnEphemeralPortAndRefusesATakenOne) {
  Rig rig(rt::SessionMode::kLockstep);
  EXPECT_NE(rig.endpoint.port(), 0);
  EXPECT_THROW(UdpEndpoint(rig.session, "127.0.0.1", rig.endpoint.port()), std::system_error);
  EXPECT_THROW(UdpEndpoint(rig.session, "not-an-address", 0), std::system_error);
  rig.endpoint.stop();
  rig.endpoint.stop();  // idempotent
  // once stopped the port is free again
  UdpEndpoint again(rig.session, "127.0.0.1", rig.endpoint.port());
  EXPECT_EQ(again.port(), rig.endpoint.port());
}

TEST(UdpEndpoint, SyncIsAnsweredAtOnceWithTheNewestState) {
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();
  v1::State s;
  const std::int64_t before = rt::monotonicNow();
  const std::uint64_t seq = ctl->sync();
  ASSERT_EQ(seq, 1u);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.session_id(), kSessionId);
  EXPECT_EQ(s.cycle(), 0u);
  EXPECT_EQ(s.state(), v1::SESSION_STATE_CREATED);
  EXPECT_EQ(s.q_size(), 1);
  EXPECT_EQ(s.command_sequence(), 0u);  // a sync is no command
  EXPECT_GE(s.send_time_ns(), before);
  EXPECT_GE(s.send_time_ns(), s.publish_time_ns());
  EXPECT_FALSE(ctl->receive(s, kQuiet));  // exactly one answer
  EXPECT_EQ(load(rig.udp().received), 1u);
  EXPECT_EQ(load(rig.udp().accepted), 1u);
  EXPECT_TRUE(eventually([&] { return load(rig.udp().states_sent) == 1; }));
}

TEST(UdpEndpoint, LockstepCommandIsAnsweredOnceAfterItsStepsAndAReplayIsADuplicate) {
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  ASSERT_EQ(s.cycle(), 0u);

  const std::vector<double> tau = {0.25};
  const std::int64_t sent_at = rt::monotonicNow();
  const std::uint64_t seq = ctl->send(tau, 5);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.cycle(), 5u);
  EXPECT_EQ(s.command_sequence(), seq);
  EXPECT_EQ(s.tau(0), 0.25);
  EXPECT_GE(s.command_client_send_time_ns(), sent_at);
  EXPECT_GE(s.command_receive_time_ns(), s.command_client_send_time_ns());
  EXPECT_GE(s.publish_time_ns(), s.command_receive_time_ns());
  EXPECT_GE(s.send_time_ns(), s.publish_time_ns());
  EXPECT_FALSE(ctl->receive(s, kQuiet)) << "the 4 intermediate cycles are not sent";

  // the same datagram again: counted as duplicate, not applied, not answered
  ASSERT_TRUE(ctl->sendRaw(ctl->lastDatagram()));
  EXPECT_TRUE(eventually([&] { return load(rig.udp().duplicate) == 1; }));
  EXPECT_FALSE(ctl->receive(s, kQuiet));
  EXPECT_EQ(rig.session.session().latestState().cycle, 5u);

  // a sync with steps is a step request: answered once the cycles ran, with the old command
  ctl->sync(3);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.cycle(), 8u);
  EXPECT_EQ(s.command_sequence(), seq);
  EXPECT_FALSE(ctl->receive(s, kQuiet));

  // steps 0 means 1
  const std::uint64_t next = ctl->send(tau);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.cycle(), 9u);
  EXPECT_EQ(s.command_sequence(), next);
  EXPECT_EQ(load(rig.udp().accepted), 4u);
}

// Set-points for a position drive travel in the datagram and are answered like torques; a
// command without the positions the session's drive needs is refused as wrong_size, unanswered.
TEST(UdpEndpoint, PositionSetPointsReachTheSessionsDrives) {
  Rig rig(rt::SessionMode::kLockstep, 64, pendulum(), nullptr,
          {{"hinge", rt::CommandInterface::kPosition, 200.0, 20.0, 0.0}});
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  // the gravity torque 9.81 sin 0.5 as feed-forward: the drive settles on its set-point
  const std::vector<double> position = {0.5}, feed_forward = {9.81 * std::sin(0.5)};
  const std::uint64_t seq = ctl->sendSetPoints(position, {}, feed_forward, 3000);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.command_sequence(), seq);
  EXPECT_EQ(s.cycle(), 3000u);
  EXPECT_NEAR(s.q(0), 0.5, 1e-9);
  ctl->send(feed_forward, 1);  // torques alone: this session needs positions
  EXPECT_TRUE(eventually([&] { return load(rig.udp().wrong_size) == 1; }));
  EXPECT_FALSE(ctl->receive(s, kQuiet));
}

// limits.max_step_cycles: a lockstep command or step request above it is counted as
// too_many_steps, never run nor answered; at the limit it runs. Other modes ignore steps.
TEST(UdpEndpoint, StepsAboveTheSessionsLimitAreRefusedUnanswered) {
  Rig rig(rt::SessionMode::kLockstep);
  rig.session.setMaxStepCycles(5);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  ctl->send(std::vector<double>{0.25}, 6);
  ctl->sync(6);
  EXPECT_TRUE(eventually([&] { return load(rig.udp().too_many_steps) == 2; }));
  EXPECT_FALSE(ctl->receive(s, kQuiet));
  EXPECT_EQ(rig.session.session().latestState().cycle, 0u);
  const std::uint64_t seq = ctl->send(std::vector<double>{0.25}, 5);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.cycle(), 5u);
  EXPECT_EQ(s.command_sequence(), seq);
  ctl->sync(5);
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.cycle(), 10u);

  Rig realtime(rt::SessionMode::kRealtime);
  realtime.session.setMaxStepCycles(5);
  auto rt_ctl = realtime.controller();
  ASSERT_NO_FATAL_FAILURE(syncAndStart(realtime, *rt_ctl, s));
  rt_ctl->send(std::vector<double>{0.25}, 4'000'000'000u);
  EXPECT_TRUE(eventually([&] { return load(realtime.udp().accepted) == 2; }));
  EXPECT_EQ(load(realtime.udp().too_many_steps), 0u);
}

TEST(UdpEndpoint, AClosedLoopModelRunsInLockstepExactlyAsOffline) {
  // the delta robot (six distance loops): each UDP command's answer is the offline Simulator's
  // state after the same steps under the same torques, bit for bit (same binary and machine).
  // The motors track a swing about the start by PD control on the answered state, inside the
  // workspace (docs/TESTING.md: no chaotic trajectory through a singular configuration).
  const auto delta = std::make_shared<const Model>(loadModel("delta"));
  Rig rig(rt::SessionMode::kLockstep, 64, delta);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  Simulator offline(delta, Formulation::kAba, Integrator::kRk4, 1e-3);
  const Eigen::VectorXd q_start = offline.q();
  std::vector<double> tau(delta->nv, 0.0);
  for (int k = 1; k <= 50; ++k) {
    for (int j = 0; j < 3; ++j) {  // the three motors; the offline state is the one answered last
      const double reference = q_start[j] + 0.3 * std::sin(0.1 * k + 2.0 * j);
      tau[j] = 20.0 * (reference - offline.q()[j]) - 1.0 * offline.v()[j];
    }
    const std::uint32_t steps = 1 + k % 3;
    ctl->send(tau, steps);
    ASSERT_TRUE(ctl->receive(s, kWait)) << "command " << k;
    const Eigen::Map<const Eigen::VectorXd> torque(tau.data(), delta->nv);
    for (std::uint32_t n = 0; n < steps; ++n) offline.step(torque);
    ASSERT_EQ(s.q_size(), delta->nq);
    for (int j = 0; j < delta->nq; ++j) ASSERT_EQ(s.q(j), offline.q()(j)) << "command " << k;
    for (int j = 0; j < delta->nv; ++j) ASSERT_EQ(s.v(j), offline.v()(j)) << "command " << k;
  }
}

TEST(UdpEndpoint, EveryLockstepCommandOfAPingPongControllerIsAnswered) {
  // the answer's cycle can run before the network thread has noted the command: none may be lost
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  constexpr int kCommands = 400;
  const std::vector<double> tau = {0.0};
  for (int k = 1; k <= kCommands; ++k) {
    const std::uint64_t seq = ctl->send(tau);
    ASSERT_TRUE(ctl->receive(s, kWait)) << "command " << k;
    ASSERT_EQ(s.command_sequence(), seq);
    ASSERT_EQ(s.cycle(), static_cast<std::uint64_t>(k));
  }
  EXPECT_FALSE(ctl->receive(s, kQuiet));
  EXPECT_EQ(load(rig.udp().states_sent), kCommands + 2u);  // and the sync's, the RUNNING one
  EXPECT_EQ(load(rig.udp().send_errors), 0u);
}

TEST(UdpEndpoint, APipeliningLockstepControllerGetsEveryCommandAnsweredOrCountedSkipped) {
  // Commands sent without waiting for answers: a state may answer several (newest wins), and a
  // full command channel drops some; each command is answered, or counted in states_skipped or
  // dropped, never silently lost.
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  constexpr int kCommands = 200;
  const std::vector<double> tau = {0.0};
  std::uint64_t last = 0;
  for (int k = 1; k <= kCommands; ++k) last = ctl->send(tau);
  std::set<std::uint64_t> answered;
  std::uint64_t newest_cycle = 0;
  while (ctl->receive(s, kQuiet)) {
    if (s.command_sequence() != 0) answered.insert(s.command_sequence());
    newest_cycle = std::max(newest_cycle, s.cycle());
  }
  const std::uint64_t dropped = load(rig.udp().dropped);
  EXPECT_EQ(newest_cycle, kCommands - dropped);  // one cycle per applied command
  EXPECT_EQ(answered.size() + load(rig.udp().states_skipped) + dropped,
            static_cast<std::uint64_t>(kCommands));
  if (dropped == 0) {
    EXPECT_TRUE(answered.count(last));
  }
}

/// The controller in charge while a test sends bad datagrams beside it: command() has one command
/// applied and answered by the state of its cycle, with no other state in the way; check() counts
/// one rejection under `counter`, waits for the server to count it too, then shows the controller
/// unaffected with command().
struct InCharge {
  Rig& rig;
  std::unique_ptr<UdpController>& ctl;
  v1::State s{};
  std::uint64_t cycle = 0;
  std::uint64_t last_accepted = 1;
  std::vector<double> tau = {0.1};
  TransportCounters expected{};

  void command() {
    const std::uint64_t seq = ctl->send(tau);
    ASSERT_TRUE(ctl->receive(s, kWait));
    EXPECT_EQ(s.command_sequence(), seq);
    EXPECT_EQ(s.cycle(), ++cycle);
    last_accepted = seq;
  }
  void check(const char* what, std::atomic<std::uint64_t> TransportCounters::*counter) {
    (expected.*counter).fetch_add(1);
    EXPECT_TRUE(eventually([&] { return load(rig.udp().*counter) == load(expected.*counter); }))
        << what;
    command();
  }
};

TEST(UdpEndpoint, EveryRejectionIsCountedOnceNeverAnsweredAndHarmless) {
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();    // the legitimate controller
  auto other = rig.controller();  // another source address and port
  InCharge in_charge{rig, ctl};
  v1::State& s = in_charge.s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  const std::vector<double>& tau = in_charge.tau;
  const std::uint64_t& last_accepted = in_charge.last_accepted;
  const std::uint64_t& cycle = in_charge.cycle;
  in_charge.command();
  auto check = [&](const char* what, std::atomic<std::uint64_t> TransportCounters::*counter) {
    in_charge.check(what, counter);
  };
  auto from_other = [&](const std::string& d) { ASSERT_TRUE(other->sendRaw(bytes(d))); };
  auto from_ctl = [&](const std::string& d) { ASSERT_TRUE(ctl->sendRaw(bytes(d))); };
  const std::uint64_t fresh = 1000;  // above anything accepted: only the rule under test fails

  // 1. oversize: a well-formed command of 200 torques (1657 bytes) is not even parsed
  from_ctl(datagram(fresh, std::vector<double>(200, 0.0)));
  check("oversize", &TransportCounters::oversize);
  from_other(std::string(1473, '\0'));
  check("oversize by one byte", &TransportCounters::oversize);
  // 2. malformed
  from_other(std::string("\xff\xff\xff\xff\xff", 5));
  check("unparseable", &TransportCounters::malformed);
  const std::string whole = datagram(fresh, tau);
  from_ctl(whole.substr(0, whole.size() - 4));
  check("truncated", &TransportCounters::malformed);
  from_other("");
  check("empty", &TransportCounters::malformed);
  {
    v1::UdpCommand no_command;
    no_command.set_token(tokenString());
    from_other(no_command.SerializeAsString());
    check("no command", &TransportCounters::malformed);
  }
  from_ctl(datagram(0, tau));
  check("sequence 0", &TransportCounters::malformed);
  from_ctl(datagram(0, tau, kSessionId + 1, "wrong"));
  check("sequence 0 before the other rules", &TransportCounters::malformed);
  // 3. unknown session (checked before the token)
  from_ctl(datagram(fresh, tau, kSessionId + 1));
  check("other session", &TransportCounters::unknown_session);
  from_other(datagram(fresh, tau, 0, ""));
  check("session 0 without token", &TransportCounters::unknown_session);
  // 4. unauthenticated (checked before the sequence)
  from_ctl(datagram(fresh, tau, kSessionId, ""));
  check("token absent", &TransportCounters::unauthenticated);
  from_ctl(datagram(fresh, tau, kSessionId, tokenString().substr(0, 15)));
  check("token of 15 bytes", &TransportCounters::unauthenticated);
  from_ctl(datagram(fresh, tau, kSessionId, tokenString() + "x"));
  check("token of 17 bytes", &TransportCounters::unauthenticated);
  std::string wrong = tokenString();
  wrong[15] = static_cast<char>(wrong[15] ^ 1);
  from_ctl(datagram(fresh, tau, kSessionId, wrong));
  check("wrong token", &TransportCounters::unauthenticated);
  from_ctl(datagram(1, tau, kSessionId, wrong));
  check("wrong token before stale", &TransportCounters::unauthenticated);
  // 5, 6: per source
  from_ctl(datagram(last_accepted - 1, tau));
  check("stale", &TransportCounters::stale);
  ASSERT_TRUE(ctl->sendRaw(ctl->lastDatagram()));
  check("duplicate", &TransportCounters::duplicate);
  from_ctl(datagram(last_accepted, {}));
  check("duplicate sync", &TransportCounters::duplicate);
  // 7, 8 (the sequences these use up stay free: a rejection never advances the gate)
  ctl->send(std::vector<double>{0.1, 0.2});
  check("wrong size", &TransportCounters::wrong_size);
  ctl->send(std::vector<double>{std::numeric_limits<double>::quiet_NaN()});
  check("NaN", &TransportCounters::non_finite);
  ctl->send(std::vector<double>{-std::numeric_limits<double>::infinity()});
  check("infinity", &TransportCounters::non_finite);
  from_ctl(datagram(last_accepted + 1, {0.1, std::nan("")}));
  check("wrong size before NaN", &TransportCounters::wrong_size);
  // 9. lockstep steps above limits.max_step_cycles: a command, and a sync asking for cycles
  const std::uint32_t too_many = rig.session.maxStepCycles() + 1;
  ASSERT_EQ(too_many, kDefaultMaxStepCycles + 1);
  from_ctl(datagram(fresh, tau, kSessionId, tokenString(), too_many));
  check("steps above the limit", &TransportCounters::too_many_steps);
  from_ctl(datagram(fresh, {}, kSessionId, tokenString(), 4'000'000'000u));
  check("a step request above the limit", &TransportCounters::too_many_steps);
  from_ctl(datagram(fresh, {std::nan("")}, kSessionId, tokenString(), too_many));
  check("NaN before steps", &TransportCounters::non_finite);

  const TransportCounters& got = rig.udp();
  EXPECT_EQ(load(got.oversize), 2u);
  EXPECT_EQ(load(got.malformed), 6u);
  EXPECT_EQ(load(got.unknown_session), 2u);
  EXPECT_EQ(load(got.unauthenticated), 5u);
  EXPECT_EQ(load(got.stale), 1u);
  EXPECT_EQ(load(got.duplicate), 2u);
  EXPECT_EQ(load(got.wrong_size), 2u);
  EXPECT_EQ(load(got.non_finite), 3u);
  EXPECT_EQ(load(got.too_many_steps), 2u);
  EXPECT_EQ(load(got.inactive) + load(got.dropped), 0u);
  EXPECT_EQ(load(got.accepted), cycle + 1);  // the sync and one command per check
  EXPECT_EQ(load(got.received), load(got.accepted) + rejected(got));
  // never answered: not to the other source, and nothing extra to the controller
  EXPECT_FALSE(other->receive(s, milliseconds(0)));
  EXPECT_FALSE(ctl->receive(s, kQuiet));
  EXPECT_EQ(rig.session.session().latestState().cycle, cycle);
}

TEST(UdpEndpoint, AFullCommandChannelDropsAndTheRestIsApplied) {
  // a lockstep session that has not started queues commands without running them
  Rig rig(rt::SessionMode::kLockstep, 4);
  auto ctl = rig.controller();
  const std::vector<double> tau = {0.0};
  for (int k = 0; k < 5; ++k) ctl->send(tau);
  // `received` counts a datagram on arrival, its outcome after it is handled: wait for both
  ASSERT_TRUE(eventually([&] {
    return load(rig.udp().received) == 5 &&
           load(rig.udp().accepted) + load(rig.udp().dropped) == 5;
  }));
  EXPECT_EQ(load(rig.udp().accepted), 4u);
  EXPECT_EQ(load(rig.udp().dropped), 1u);
  v1::State s;
  EXPECT_FALSE(ctl->receive(s, kQuiet)) << "nothing to answer before a cycle runs";
  ASSERT_TRUE(rig.session.start(nullptr));
  ASSERT_TRUE(rig.session.session().waitForCycle(4, rt::kNanosecondsPerSecond));
  std::uint64_t newest = 0;
  while (ctl->receive(s, kQuiet)) newest = std::max(newest, s.command_sequence());
  EXPECT_EQ(newest, 4u) << "commands 1 to 4 ran; 5 was dropped";
  EXPECT_EQ(rig.session.session().latestState().cycle, 4u);
}

TEST(UdpEndpoint, LifeCycleChangesReachThePeerAtOnceAndAStoppedSessionRefuses) {
  Rig rig(rt::SessionMode::kLockstep);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  ASSERT_TRUE(rig.session.pause(nullptr));
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.state(), v1::SESSION_STATE_PAUSED);
  ASSERT_TRUE(rig.session.start(nullptr));
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.state(), v1::SESSION_STATE_RUNNING);
  ASSERT_TRUE(rig.session.stop(nullptr));
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.state(), v1::SESSION_STATE_STOPPED);

  ctl->send(std::vector<double>{0.5});
  ctl->sync();
  EXPECT_TRUE(eventually([&] { return load(rig.udp().inactive) == 2; }));
  EXPECT_FALSE(ctl->receive(s, kQuiet)) << "an inactive session answers nothing";
  EXPECT_EQ(rig.session.session().latestState().command_sequence, 0u);

  // a reset makes it CREATED again at cycle 0; the sequence space carries on
  rig.session.reset();
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(s.state(), v1::SESSION_STATE_CREATED);
  EXPECT_EQ(s.cycle(), 0u);
  ctl->sync();
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_EQ(load(rig.udp().inactive), 2u);
}

TEST(UdpEndpoint, SequenceGatesAreKeptForTheSixteenNewestSources) {
  Rig rig(rt::SessionMode::kLockstep);
  v1::State s;
  std::vector<std::unique_ptr<UdpController>> controllers;
  for (std::size_t k = 0; k <= UdpEndpoint::kMaxSources; ++k) {
    controllers.push_back(rig.controller());
    controllers.back()->sync();
    ASSERT_TRUE(controllers.back()->receive(s, kWait));
  }
  // the second source is among the 16 newest: its replay is a duplicate
  UdpController& kept = *controllers[1];
  ASSERT_TRUE(kept.sendRaw(kept.lastDatagram()));
  ASSERT_TRUE(eventually([&] { return load(rig.udp().duplicate) == 1; }));
  EXPECT_FALSE(kept.receive(s, kQuiet));
  // the first was forgotten when the 17th came: it starts a new sequence space
  UdpController& forgotten = *controllers[0];
  ASSERT_TRUE(forgotten.sendRaw(forgotten.lastDatagram()));
  ASSERT_TRUE(forgotten.receive(s, kWait));
  EXPECT_EQ(load(rig.udp().accepted), UdpEndpoint::kMaxSources + 2);
}

TEST(UdpEndpoint, ARestartedControllerStartsAgainAtOne) {
  Rig rig(rt::SessionMode::kLockstep);
  v1::State s;
  const std::vector<double> tau = {0.0};
  std::uint16_t first_port = 0;
  {
    auto first = rig.controller();
    first_port = first->localPort();
    ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *first, s));
    for (int k = 0; k < 5; ++k) {
      first->send(tau);
      ASSERT_TRUE(first->receive(s, kWait));
    }
    EXPECT_EQ(s.command_sequence(), 6u);
  }
  auto second = rig.controller();
  ASSERT_NE(second->localPort(), first_port);
  EXPECT_EQ(second->sync(), 1u);
  ASSERT_TRUE(second->receive(s, kWait)) << "a new source is a new sequence space";
  EXPECT_EQ(s.cycle(), 5u);
  EXPECT_EQ(second->send(tau), 2u);
  ASSERT_TRUE(second->receive(s, kWait));
  EXPECT_EQ(s.command_sequence(), 2u);
  EXPECT_EQ(s.cycle(), 6u);
  EXPECT_EQ(load(rig.udp().stale) + load(rig.udp().duplicate), 0u);
}

TEST(UdpEndpoint, RealtimePeerReceivesEveryCycleAndItsCommandsApplyWithinAFewCycles) {
  Rig rig(rt::SessionMode::kRealtime);
  auto ctl = rig.controller();
  v1::State s;
  std::uint64_t sync_cycle = 0;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s, &sync_cycle));

  // answer every state with a command, as a 1 kHz controller does
  constexpr int kStates = 500;
  std::map<std::uint64_t, std::uint64_t> sent_after;  // sequence → cycle of the state it answers
  std::vector<std::uint64_t> lags;                    // cycles until a command shows up
  // from the sync's answer on: a loaded host may supersede the first RUNNING cycles already
  std::vector<std::uint64_t> cycles = {sync_cycle, s.cycle()};
  const std::vector<double> tau = {0.0};
  std::uint64_t applied = 0;
  for (int k = 0; k < kStates; ++k) {
    ASSERT_TRUE(ctl->receive(s, milliseconds(500))) << "state " << k;
    cycles.push_back(s.cycle());
    if (s.command_sequence() > applied) {
      applied = s.command_sequence();
      const auto it = sent_after.find(applied);
      ASSERT_NE(it, sent_after.end());
      lags.push_back(s.cycle() - it->second);
      EXPECT_LE(s.command_receive_time_ns(), s.publish_time_ns());
      EXPECT_LE(s.publish_time_ns(), s.send_time_ns());
    }
    sent_after[ctl->send(tau)] = s.cycle();
  }
  // pause: the last states go out, then the stream holds still
  ASSERT_TRUE(rig.session.pause(nullptr));
  while (ctl->receive(s, kQuiet)) cycles.push_back(s.cycle());
  EXPECT_EQ(s.state(), v1::SESSION_STATE_PAUSED);

  // commands: almost every one applied (two in one period supersede), most at the next cycle
  ASSERT_GE(lags.size(), static_cast<std::size_t>(kStates * 0.8));
  std::sort(lags.begin(), lags.end());
  EXPECT_GE(lags.front(), 1u) << "applied at a cycle that starts after the state it answers";
  EXPECT_LE(lags[lags.size() / 2], 3u) << "median command lag in cycles";
  // states: every gap in the cycles the peer saw was counted as skipped by the server (loopback
  // loses nothing); the sync's answer may repeat a cycle. How many are skipped depends on the
  // host's load; how fast the path is, is measured by bench/network_bench.cc, not here.
  std::uint64_t missing = 0;
  std::uint64_t newest = cycles.front();
  for (const std::uint64_t c : cycles) {
    if (c > newest + 1) missing += c - newest - 1;
    newest = std::max(newest, c);
  }
  EXPECT_EQ(missing, load(rig.udp().states_skipped));
  EXPECT_EQ(load(rig.udp().send_errors), 0u);
  EXPECT_EQ(load(rig.udp().accepted), kStates + 1u);
}

TEST(UdpEndpoint, PeerGoesInactiveAfterOneSecondOfSilence) {
  Rig rig(rt::SessionMode::kRealtime);
  ASSERT_TRUE(rig.session.start(nullptr));
  auto ctl = rig.controller();
  v1::State s;
  const std::int64_t synced_at = rt::monotonicNow();
  ctl->sync();
  ASSERT_TRUE(ctl->receive(s, kWait));
  // the server received the sync before it sent this answer: the 1 s count started earlier
  const std::int64_t answered_at = s.send_time_ns();
  std::int64_t last_send = 0;
  int received = 0;
  // read until the states stop for 300 ms
  while (ctl->receive(s, milliseconds(300))) {
    last_send = s.send_time_ns();
    ++received;
  }
  const std::int64_t quiet_at = rt::monotonicNow();
  const std::int64_t second = rt::kNanosecondsPerSecond;
  const std::int64_t ms = 1'000'000;
  EXPECT_GT(received, 100) << "states flow while the peer is active";
  // a state is sent only if its cycle ended within 1 s of the sync's arrival; 50 ms for the
  // publisher being preempted between that check and the send-time stamp
  EXPECT_LE(last_send, answered_at + second + 50 * ms) << "nothing after the 1 s timeout";
  // 200 ms for a starved publisher (the states of the last cycles may come late or not at all)
  EXPECT_GE(last_send, synced_at + second - 200 * ms) << "states until the timeout";
  EXPECT_GT(quiet_at, synced_at + second);
  const std::uint64_t sent = load(rig.udp().states_sent);
  std::this_thread::sleep_for(kQuiet);
  EXPECT_EQ(load(rig.udp().states_sent), sent);

  // any accepted datagram makes it active again
  ctl->sync();
  ASSERT_TRUE(ctl->receive(s, kWait));
  ASSERT_TRUE(ctl->receive(s, kWait));
  EXPECT_GT(s.send_time_ns(), quiet_at);
}

TEST(UdpEndpoint, FreeModeSendsTheNewestStateContinually) {
  Rig rig(rt::SessionMode::kFree);
  auto ctl = rig.controller();
  v1::State s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  std::uint64_t previous = s.cycle();
  int newer = 0;
  for (int k = 0; k < 100; ++k) {
    ASSERT_TRUE(ctl->receive(s, kWait));
    if (s.cycle() > previous) ++newer;
    previous = std::max(previous, s.cycle());
  }
  EXPECT_GE(newer, 98) << "each state newer than the last (the sync's answer may repeat one)";
}

TEST(UdpEndpoint, PdControllerOverUdpReachesItsTarget) {
  // the pendulum (m = 1 kg, L = 1 m: (m L²) q̈ = τ − m g L sin q) held at 0.5 rad by PD
  // plus gravity compensation at 1 kHz: ω = √kp = 7 rad/s, ζ = kd / (2 ω) ≈ 0.7, settled in
  // ≈ 1 s; one or two cycles of loop delay (1–2 ms) are small against 1/ω ≈ 140 ms
  Rig rig(rt::SessionMode::kRealtime);
  ASSERT_TRUE(rig.session.start(nullptr));
  auto ctl = rig.controller();
  constexpr double kTarget = 0.5, kp = 49.0, kd = 10.0, kGravity = 9.81;
  v1::State s;
  ctl->sync();
  ASSERT_TRUE(ctl->receive(s, kWait));
  std::vector<double> tau(1);
  std::uint64_t start = s.cycle();
  while (s.cycle() < start + 1500) {
    tau[0] = kp * (kTarget - s.q(0)) - kd * s.v(0) + kGravity * std::sin(s.q(0));
    ctl->send(tau);
    ASSERT_TRUE(ctl->receive(s, milliseconds(500)));
  }
  EXPECT_NEAR(s.q(0), kTarget, 0.01);
  EXPECT_NEAR(s.v(0), 0.0, 0.05);
  EXPECT_FALSE(s.watchdog_tripped());
}

// ---------------------------------------------------------------------------------------------
// MAC

/// `payload` in a command frame under `key` (what a controller sends, or a forger tries).
std::string commandFrame(const udp::Key& key, std::uint64_t counter, const std::string& payload,
                         udp::Direction direction = udp::Direction::kCommand) {
  std::vector<std::uint8_t> buffer(payload.size() + udp::kFrameOverheadBytes);
  std::copy(payload.begin(), payload.end(), buffer.begin() + udp::kHeaderBytes);
  udp::seal(key, direction, counter, buffer, payload.size());
  return {buffer.begin(), buffer.end()};
}

TEST(UdpEndpointMac, ForgedTruncatedReflectedReplayedAndReorderedFramesAreRefusedAndCounted) {
  const udp::Key key = macKey();
  Rig rig(rt::SessionMode::kLockstep, 64, pendulum(), &key);
  auto ctl = rig.controller();
  ASSERT_TRUE(ctl->authenticated());
  ASSERT_GT(ctl->nextSequence(), 1'600'000'000'000'000u) << "CLOCK_REALTIME in microseconds";
  auto other = rig.controller(1);  // another source address and port, same key
  InCharge in_charge{rig, ctl};
  v1::State& s = in_charge.s;
  ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *ctl, s));
  const std::vector<double>& tau = in_charge.tau;
  in_charge.command();
  const std::vector<std::uint8_t> last(ctl->lastDatagram().begin(), ctl->lastDatagram().end());
  const std::string captured(last.begin(), last.end());
  const std::string payload = captured.substr(udp::kHeaderBytes,
                                              captured.size() - udp::kFrameOverheadBytes);

  auto check = [&](const char* what, std::atomic<std::uint64_t> TransportCounters::*counter) {
    in_charge.check(what, counter);
  };
  auto from_ctl = [&](const std::string& d) { ASSERT_TRUE(ctl->sendRaw(bytes(d))); };
  // frames the test sealed with the controller's key used counters up to `first` − 1: the
  // controller goes on from there (a new socket, as a restarted process)
  auto continue_at = [&](std::uint64_t first) {
    ctl = std::make_unique<UdpController>("127.0.0.1", rig.endpoint.port(), kSessionId, key,
                                          UdpController::Options{first});
  };
  const std::uint64_t fresh = ctl->nextSequence() + 1000;  // above anything accepted

  // 2. unauthenticated
  std::string forged = commandFrame(key, fresh, datagram(fresh, {5.0}, kSessionId, ""));
  forged[udp::kHeaderBytes + 3] = static_cast<char>(forged[udp::kHeaderBytes + 3] ^ 1);
  from_ctl(forged);
  check("a payload bit flipped", &TransportCounters::unauthenticated);
  from_ctl(commandFrame(macKey(41), fresh, datagram(fresh, {5.0}, kSessionId, "")));
  check("another key", &TransportCounters::unauthenticated);
  from_ctl(captured.substr(0, captured.size() - 1));
  check("truncated", &TransportCounters::unauthenticated);
  from_ctl(captured.substr(0, udp::kMinFrameBytes - 1));
  check("shorter than a frame", &TransportCounters::unauthenticated);
  from_ctl(commandFrame(key, fresh, payload, udp::Direction::kState));
  check("a state's magic", &TransportCounters::unauthenticated);
  from_ctl(datagram(fresh, tau));
  check("a TOKEN datagram", &TransportCounters::unauthenticated);
  // 3. replayed: from the same source, and from another one (the window is the key's)
  from_ctl(captured);
  check("replayed", &TransportCounters::replayed);
  ASSERT_TRUE(other->sendRaw(bytes(captured)));
  check("replayed from another source", &TransportCounters::replayed);
  // 4. stale: re-ordered — two of the controller's frames, the newer first
  {
    const std::uint64_t n = ctl->nextSequence();
    const std::string early = commandFrame(key, n, datagram(n, tau, kSessionId, ""));
    const std::string late = commandFrame(key, n + 1, datagram(n + 1, tau, kSessionId, ""));
    from_ctl(late);
    ASSERT_TRUE(ctl->receive(s, kWait));
    EXPECT_EQ(s.command_sequence(), n + 1);
    ++in_charge.cycle;
    from_ctl(early);
    continue_at(n + 2);
    check("re-ordered", &TransportCounters::stale);
  }
  // 5. malformed: sequence ≠ counter; 6. unknown session
  from_ctl(commandFrame(key, fresh, datagram(fresh + 1, tau, kSessionId, "")));
  continue_at(fresh + 1);
  check("sequence is not the counter", &TransportCounters::malformed);
  from_ctl(commandFrame(key, fresh + 2, datagram(fresh + 2, tau, kSessionId + 1, "")));
  continue_at(fresh + 3);
  check("other session", &TransportCounters::unknown_session);

  const TransportCounters& got = rig.udp();
  EXPECT_EQ(load(in_charge.expected.unauthenticated), 6u);
  EXPECT_EQ(rejected(got), rejected(in_charge.expected)) << "each refused frame counted once";
  EXPECT_EQ(load(got.received), load(got.accepted) + rejected(got));
  EXPECT_EQ(rig.session.session().latestState().cycle, in_charge.cycle)
      << "no refused frame applied";
  EXPECT_FALSE(other->receive(s, milliseconds(0)));
  EXPECT_FALSE(ctl->receive(s, kQuiet));
  EXPECT_EQ(ctl->stats().unauthenticated + ctl->stats().replayed, 0u);
}

TEST(UdpEndpointMac, StatesAreFramedWithAnIncreasingCounterAndSizesIncludeTheFrame) {
  const udp::Key key = macKey();
  Rig rig(rt::SessionMode::kLockstep, 64, pendulum(), &key);
  // a raw socket in the controller's place reads the server's frames as they are
  asio::io_context io;
  asio::ip::udp::socket raw(io, asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const asio::ip::udp::endpoint server(asio::ip::make_address("127.0.0.1"), rig.endpoint.port());
  std::uint64_t newest = 0;
  for (std::uint64_t k = 1; k <= 3; ++k) {
    const std::string sync = commandFrame(key, k, datagram(k, {}, kSessionId, ""));
    raw.send_to(asio::buffer(sync), server);
    std::array<std::uint8_t, 2048> in{};
    const std::size_t n = raw.receive(asio::buffer(in));
    udp::Opened opened;
    ASSERT_EQ(udp::open(key, udp::Direction::kState, {in.data(), n}, &opened), udp::Check::kOk);
    EXPECT_GT(opened.counter, newest);
    newest = opened.counter;
    v1::UdpState state;
    ASSERT_TRUE(state.ParseFromArray(opened.payload.data(), static_cast<int>(opened.payload.size())));
    EXPECT_EQ(state.state().session_id(), kSessionId);
    EXPECT_LE(n, udpStateMaxBytes(rig.session.model(), {.mac = true}));
  }
  v1::SessionInfo info;
  rig.session.fillInfo(&info);
  EXPECT_EQ(info.udp_authentication(), v1::UDP_AUTHENTICATION_MAC);
  EXPECT_EQ(info.udp_state_max_bytes(), udpStateMaxBytes(rig.session.model()) + 28);
  EXPECT_EQ(info.udp_command_max_bytes(), udpCommandMaxBytes(rig.session.model()) - 18 + 28);
}

TEST(UdpEndpointMac, ARestartedControllerWithTheSameKeyContinuesAboveItsLastCounter) {
  const udp::Key key = macKey();
  Rig rig(rt::SessionMode::kLockstep, 64, pendulum(), &key);
  v1::State s;
  const std::vector<double> tau = {0.0};
  std::uint64_t last = 0;
  {
    auto first = rig.controller();
    ASSERT_NO_FATAL_FAILURE(syncAndStart(rig, *first, s));
    for (int k = 0; k < 5; ++k) {
      last = first->send(tau);
      ASSERT_TRUE(first->receive(s, kWait));
    }
  }
  auto second = rig.controller();  // a new process would start at CLOCK_REALTIME [µs] too
  EXPECT_GT(second->nextSequence(), last);
  const std::uint64_t seq = second->send(tau);
  ASSERT_TRUE(second->receive(s, kWait));
  EXPECT_EQ(s.command_sequence(), seq);
  EXPECT_EQ(s.cycle(), 6u);
  // one that starts at or below the newest (an explicit first_sequence) is refused
  auto behind = rig.controller(seq);
  behind->send(tau);
  EXPECT_TRUE(eventually([&] { return load(rig.udp().replayed) == 1; }));
  EXPECT_FALSE(behind->receive(s, kQuiet));
}

TEST(UdpControllerMac, DropsForgedReflectedAndReplayedStates) {
  const udp::Key key = macKey();
  asio::io_context io;
  asio::ip::udp::socket server(io,
                               asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  UdpController ctl("127.0.0.1", server.local_endpoint().port(), kSessionId, key,
                    UdpController::Options{10});
  EXPECT_EQ(ctl.sync(), 10u);
  std::array<std::uint8_t, 2048> in{};
  asio::ip::udp::endpoint from;
  const std::size_t n = server.receive_from(asio::buffer(in), from);
  udp::Opened opened;
  ASSERT_EQ(udp::open(key, udp::Direction::kCommand, {in.data(), n}, &opened), udp::Check::kOk);
  EXPECT_EQ(opened.counter, 10u);
  v1::UdpCommand got;
  ASSERT_TRUE(got.ParseFromArray(opened.payload.data(), static_cast<int>(opened.payload.size())));
  EXPECT_TRUE(got.token().empty());
  EXPECT_EQ(got.command().sequence(), 10u);

  auto state = [](std::uint64_t cycle) {
    v1::UdpState m;
    m.mutable_state()->set_cycle(cycle);
    return m.SerializeAsString();
  };
  const std::string good = commandFrame(key, 5, state(1), udp::Direction::kState);
  std::string forged = commandFrame(key, 6, state(2), udp::Direction::kState);
  forged[udp::kHeaderBytes] = static_cast<char>(forged[udp::kHeaderBytes] ^ 4);
  for (const std::string& d :
       {forged, commandFrame(key, 7, state(3)) /* a command's magic */,
        commandFrame(macKey(41), 8, state(4), udp::Direction::kState), state(5) /* unframed */,
        good, good, commandFrame(key, 4, state(6), udp::Direction::kState),
        commandFrame(key, 9, state(7), udp::Direction::kState)}) {
    server.send_to(asio::buffer(d), from);
  }
  v1::State s;
  ASSERT_TRUE(ctl.receive(s, kWait));
  EXPECT_EQ(s.cycle(), 1u);
  ASSERT_TRUE(ctl.receive(s, kWait));
  EXPECT_EQ(s.cycle(), 7u);
  EXPECT_FALSE(ctl.receive(s, milliseconds(20)));
  EXPECT_EQ(ctl.stats().unauthenticated, 4u);
  EXPECT_EQ(ctl.stats().replayed, 2u);
  EXPECT_EQ(ctl.stats().received, 2u);
}

TEST(UdpController, RejectsATokenThatIsNot16Bytes) {
  EXPECT_THROW(UdpController("127.0.0.1", 9, 1, std::string_view("short")),
               std::invalid_argument);
  UdpController ok("127.0.0.1", 9, 1, std::string_view(tokenString()));
  EXPECT_NE(ok.localPort(), 0);
  EXPECT_EQ(ok.nextSequence(), 1u);
}

TEST(UdpController, SkipsDatagramsThatAreNotStates) {
  // a stand-in server: a plain socket the controller talks to
  asio::io_context io;
  asio::ip::udp::socket server(io,
                               asio::ip::udp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  UdpController ctl("127.0.0.1", server.local_endpoint().port(), kSessionId, kToken);
  ctl.sync();
  std::array<std::uint8_t, 2048> in{};
  asio::ip::udp::endpoint from;
  const std::size_t n = server.receive_from(asio::buffer(in), from);
  v1::UdpCommand got;
  ASSERT_TRUE(got.ParseFromArray(in.data(), static_cast<int>(n)));
  EXPECT_EQ(got.token(), tokenString());
  EXPECT_EQ(got.command().session_id(), kSessionId);
  EXPECT_EQ(got.command().sequence(), 1u);
  EXPECT_EQ(got.command().tau_size(), 0);

  v1::UdpState good;
  good.mutable_state()->set_cycle(42);
  good.mutable_state()->add_q(1.5);
  const std::string good_bytes = good.SerializeAsString();
  server.send_to(asio::buffer(std::string("\xff\xff\xff", 3)), from);
  server.send_to(asio::buffer(good_bytes.substr(0, good_bytes.size() - 3)), from);
  server.send_to(asio::buffer(std::string()), from);  // no state in it
  server.send_to(asio::buffer(good_bytes), from);
  v1::State s;
  ASSERT_TRUE(ctl.receive(s, kWait));
  EXPECT_EQ(s.cycle(), 42u);
  ASSERT_EQ(s.q_size(), 1);
  EXPECT_EQ(s.q(0), 1.5);
  EXPECT_EQ(ctl.stats().parse_errors, 3u);
  EXPECT_EQ(ctl.stats().received, 1u);
  EXPECT_FALSE(ctl.receive(s, milliseconds(10)));
  EXPECT_EQ(ctl.stats().timeouts, 1u);
  EXPECT_EQ(ctl.stats().sent, 1u);
}

}  // namespace
}  // namespace hilsim::server
