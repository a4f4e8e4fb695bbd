// Session: life cycle, the three modes, watchdog policies in the running loop, faults that never
// take the process down, and lockstep determinism.

#include "rt/session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "tests/support/bundled_models.h"

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kSecond = kNanosecondsPerSecond;

using test::arm;
using test::pendulum;

SessionConfig config(SessionMode mode, std::shared_ptr<const Model> model = pendulum()) {
  SessionConfig c;
  c.model = std::move(model);
  c.mode = mode;
  c.control_rate = 1000.0;
  c.thread.lock_memory = false;  // tests run unprivileged as well
  c.name = "test";
  return c;
}

Command command(const Model& model, std::uint64_t sequence, double tau, std::uint32_t steps = 1) {
  Command c;
  c.sequence = sequence;
  c.nv = model.nv;
  c.steps = steps;
  for (int k = 0; k < model.nv; ++k) c.tau[k] = tau * (k + 1);
  return c;
}

/// Polls until `done()` or `timeout`.
template <typename Done>
bool eventually(Done done, Nanoseconds timeout = 5 * kSecond) {
  const Nanoseconds until = monotonicNow() + timeout;
  while (monotonicNow() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST(Session, LifeCycle) {
  Session s(config(SessionMode::kRealtime));
  EXPECT_EQ(s.state(), SessionState::kCreated);
  EXPECT_FALSE(s.pause());
  EXPECT_NE(s.failReason().find("cannot pause a created session"), std::string::npos);
  ASSERT_TRUE(s.start());
  EXPECT_EQ(s.state(), SessionState::kRunning);
  EXPECT_TRUE(s.waitForCycle(10, kSecond));
  EXPECT_TRUE(s.pause());
  EXPECT_EQ(s.state(), SessionState::kPaused);
  // paused: the simulation holds still
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::uint64_t paused_at = s.latestState().cycle;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.latestState().cycle, paused_at);
  EXPECT_TRUE(s.resume());
  EXPECT_TRUE(s.waitForCycle(paused_at + 10, kSecond));
  EXPECT_TRUE(s.stop());
  EXPECT_EQ(s.state(), SessionState::kStopped);
  EXPECT_FALSE(s.start());
  EXPECT_NE(s.failReason().find("reset it first"), std::string::npos);
  s.reset();
  EXPECT_EQ(s.state(), SessionState::kCreated);
  EXPECT_EQ(s.latestState().cycle, 0u);
  EXPECT_EQ(s.latestState().time, 0.0);
  EXPECT_TRUE(s.start());
  EXPECT_TRUE(s.waitForCycle(5, kSecond));
}

TEST(Session, InvalidConfigurationsAreRefusedWithTheirReason) {
  auto expectError = [](SessionConfig c, const std::string& text) {
    try {
      Session s(std::move(c));
      ADD_FAILURE() << "accepted; expected an error naming " << text;
    } catch (const SessionError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  SessionConfig c = config(SessionMode::kRealtime);
  c.control_rate = 50.0;
  expectError(c, "control_rate");
  c = config(SessionMode::kRealtime);
  c.substeps = 0;
  expectError(c, "substeps");
  c = config(SessionMode::kRealtime);
  c.initial_q = Eigen::VectorXd::Zero(3);
  expectError(c, "initial q");
  c = config(SessionMode::kRealtime);
  c.model = nullptr;
  expectError(c, "no model");
  c = config(SessionMode::kRealtime);
  c.watchdog.missed_cycles_limit = 0;
  expectError(c, "missed_cycles_limit");
}

TEST(Session, CommandsOfTheWrongSizeAreRejectedAndCounted) {
  Session s(config(SessionMode::kLockstep));
  Command c = command(s.model(), 1, 0.0);
  c.nv = 2;
  EXPECT_FALSE(s.pushCommand(c));
  EXPECT_EQ(s.stats().commands_rejected, 1u);
  EXPECT_EQ(s.stats().commands_received, 0u);
}

TEST(Session, LockstepAdvancesExactlyOnCommandsAndStepRequests) {
  Session s(config(SessionMode::kLockstep));
  ASSERT_TRUE(s.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(s.latestState().cycle, 0u) << "no command, no step";
  ASSERT_TRUE(s.pushCommand(command(s.model(), 7, 0.5, 5)));
  ASSERT_TRUE(s.waitForCycle(5, kSecond));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  StateSnapshot state = s.latestState();
  EXPECT_EQ(state.cycle, 5u);
  EXPECT_DOUBLE_EQ(state.time, 5 * 1e-3);
  EXPECT_EQ(state.command_sequence, 7u);
  EXPECT_EQ(state.tau[0], 0.5);
  s.requestSteps(3);
  ASSERT_TRUE(s.waitForCycle(8, kSecond));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  state = s.latestState();
  EXPECT_EQ(state.cycle, 8u);
  EXPECT_EQ(state.tau[0], 0.5) << "step requests hold the last torques";
  const SessionStats stats = s.stats();
  EXPECT_EQ(stats.commands_applied, 1u);
  EXPECT_EQ(stats.cycles, 8u);
}

/// Runs a lockstep session through `n` commands and returns its final state.
StateSnapshot runLockstep(int n, std::uint32_t substeps) {
  SessionConfig c = config(SessionMode::kLockstep, arm());
  c.substeps = static_cast<int>(substeps);
  Session s(c);
  EXPECT_TRUE(s.start());
  for (int k = 1; k <= n; ++k) {
    EXPECT_TRUE(s.pushCommand(command(s.model(), k, std::sin(0.01 * k))));
    EXPECT_TRUE(s.waitForCycle(k, kSecond));
  }
  return s.latestState();
}

TEST(Session, LockstepIsBitForBitReproducibleAndEqualsTheOfflineSimulator) {
  constexpr int kCommands = 300;
  const StateSnapshot a = runLockstep(kCommands, 2);
  const StateSnapshot b = runLockstep(kCommands, 2);
  ASSERT_EQ(a.cycle, static_cast<std::uint64_t>(kCommands));
  ASSERT_EQ(b.cycle, a.cycle);
  EXPECT_EQ(std::memcmp(a.q.data(), b.q.data(), sizeof(double) * a.nq), 0);
  EXPECT_EQ(std::memcmp(a.v.data(), b.v.data(), sizeof(double) * a.nv), 0);

  // the same torques stepped by hand through the engine give the very same bits
  Simulator sim(arm(), Formulation::kAba, Integrator::kRk4, 1.0 / (1000.0 * 2));
  Eigen::VectorXd tau(arm()->nv);
  for (int k = 1; k <= kCommands; ++k) {
    const Command c = command(*arm(), k, std::sin(0.01 * k));
    for (int j = 0; j < arm()->nv; ++j) tau[j] = c.tau[j];
    sim.step(tau);
    sim.step(tau);
  }
  EXPECT_EQ(std::memcmp(a.q.data(), sim.q().data(), sizeof(double) * a.nq), 0);
  EXPECT_EQ(std::memcmp(a.v.data(), sim.v().data(), sizeof(double) * a.nv), 0);
  EXPECT_GT(std::abs(a.v[0]), 1e-3) << "the arm moved";
}

TEST(Session, AMasslessModelNeedsImexEulerAndThenRunsLikeTheOfflineSimulator) {
  // the massless oscillator of docs/MASSLESS.md: one algebraic velocity
  const auto model =
      std::make_shared<const Model>(loadModel(HILSIM_SOURCE_DIR "/examples/massless/oscillator_massless.yaml"));
  ASSERT_EQ(model->nalgebraic, 1);
  SessionConfig c = config(SessionMode::kLockstep, model);
  c.integrator = Integrator::kRk4;
  try {
    Session refused(c);
    ADD_FAILURE() << "rk4 accepted on a massless model";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("imex_euler"), std::string::npos) << e.what();
  }
  c.integrator = Integrator::kImexEuler;
  Eigen::VectorXd q0(2);
  q0 << 0.01, 0.09;
  c.initial_q = q0;
  Session s(c);
  ASSERT_TRUE(s.start());
  Simulator sim(model, Formulation::kAba, Integrator::kImexEuler, 1e-3);
  sim.setState(*c.initial_q, Eigen::VectorXd::Zero(2));
  Eigen::VectorXd tau(2);
  for (int k = 1; k <= 200; ++k) {
    const Command command_k = command(*model, k, 0.01 * std::sin(0.05 * k));
    ASSERT_TRUE(s.pushCommand(command_k));
    ASSERT_TRUE(s.waitForCycle(k, kSecond));
    tau << command_k.tau[0], command_k.tau[1];
    sim.step(tau);
  }
  const StateSnapshot state = s.latestState();
  EXPECT_EQ(std::memcmp(state.q.data(), sim.q().data(), sizeof(double) * 2), 0);
  EXPECT_EQ(std::memcmp(state.v.data(), sim.v().data(), sizeof(double) * 2), 0);
}

TEST(Session, NonFiniteTorqueFaultsTheSessionNotTheProcess) {
  Session s(config(SessionMode::kLockstep));
  ASSERT_TRUE(s.start());
  ASSERT_TRUE(s.pushCommand(command(s.model(), 1, 0.1, 3)));
  ASSERT_TRUE(s.waitForCycle(3, kSecond));
  Command bad = command(s.model(), 2, 0.1);
  bad.tau[0] = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(s.pushCommand(bad));
  ASSERT_TRUE(eventually([&] { return s.state() == SessionState::kFaulted; }));
  const SessionStats stats = s.stats();
  EXPECT_NE(stats.fault.find("command 2 has a non-finite torque"), std::string::npos) << stats.fault;
  EXPECT_NE(stats.fault.find("DoF 0"), std::string::npos) << stats.fault;
  EXPECT_EQ(s.latestState().cycle, 3u) << "the faulty command was never applied";
  EXPECT_TRUE(s.latestState().v.size() > 0 && std::isfinite(s.latestState().v[0]));
  EXPECT_FALSE(s.start());
  s.reset();
  EXPECT_EQ(s.state(), SessionState::kCreated);
  EXPECT_TRUE(s.stats().fault.empty());
}

TEST(Session, DivergingStateFaultsWithTheOffendingDof) {
  SessionConfig c = config(SessionMode::kFree);
  c.max_speed = 2.0;  // rad/s
  Session s(c);
  ASSERT_TRUE(s.pushCommand(command(s.model(), 1, 1e3)));  // spins the pendulum up
  ASSERT_TRUE(s.start());
  ASSERT_TRUE(eventually([&] { return s.state() == SessionState::kFaulted; }));
  const std::string fault = s.stats().fault;
  EXPECT_NE(fault.find("diverged"), std::string::npos) << fault;
  EXPECT_NE(fault.find("DoF 0"), std::string::npos) << fault;
  EXPECT_LE(std::abs(s.latestState().v[0]), 2.0) << "the published state is the last good one";
}

TEST(Session, ALoopTheStepCannotKeepClosedFaultsNamingTheClosure) {
  // 5 N·m held on the delta's motors (its joint limits kept as data) spins its arms up until a
  // step no longer follows the motion (near 0.28 s): the session faults there naming the rod,
  // instead of running on towards 1e24; the published state is the last good one
  static const auto delta = [] {
    Model m = loadModel("delta");
    m.limits_enforced = false;
    return std::make_shared<const Model>(std::move(m));
  }();
  SessionConfig c = config(SessionMode::kFree, delta);
  Session s(c);
  Command push = command(*delta, 1, 0.0);
  for (int k = 0; k < 3; ++k) push.tau[k] = 5.0;
  ASSERT_TRUE(s.pushCommand(push));
  ASSERT_TRUE(s.start());
  ASSERT_TRUE(eventually([&] { return s.state() == SessionState::kFaulted; }));
  const SessionStats stats = s.stats();
  EXPECT_EQ(stats.fault_info.kind, FaultKind::kConstraintFailure);
  ASSERT_GE(stats.fault_info.index, 0);
  ASSERT_LT(stats.fault_info.index, static_cast<std::int64_t>(delta->loops.size()));
  const std::string rod = delta->loops[stats.fault_info.index].name;
  EXPECT_NE(stats.fault.find("closure '" + rod + "' (distance) stayed open by"), std::string::npos)
      << stats.fault;
  EXPECT_NE(stats.fault.find("singular configuration"), std::string::npos) << stats.fault;
  EXPECT_NE(stats.fault.find("(cycle "), std::string::npos) << stats.fault;
  EXPECT_GT(stats.fault_info.value, 1e-9);
  EXPECT_LT(stats.fault_info.time, 2.0);
  const auto published = s.latestState();
  for (int k = 0; k < delta->nv; ++k) {
    EXPECT_TRUE(std::isfinite(published.v[k]));
    EXPECT_LT(std::abs(published.v[k]), 1e3) << "the published state is the last good one";
  }
  s.reset();
  EXPECT_EQ(s.state(), SessionState::kCreated);
  EXPECT_TRUE(s.stats().fault.empty());
}

/// A realtime session at 1 kHz given one command and then left silent.
struct SilentController {
  explicit SilentController(WatchdogPolicy policy) {
    SessionConfig c = config(SessionMode::kRealtime);
    c.watchdog = WatchdogConfig{policy, 20, 3.0};
    c.initial_v = Eigen::VectorXd::Constant(1, 2.0);
    session = std::make_unique<Session>(c);
    EXPECT_TRUE(session->start());
    EXPECT_TRUE(session->pushCommand(command(session->model(), 1, 5.0)));
    EXPECT_TRUE(eventually([&] { return session->stats().commands_applied == 1; }));
    // 20 silent cycles at 1 kHz trip it; wait well beyond
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::unique_ptr<Session> session;
};

TEST(Session, WatchdogFaultPolicyFaultsAfterTwentySilentCycles) {
  SilentController run(WatchdogPolicy::kFault);
  ASSERT_EQ(run.session->state(), SessionState::kFaulted);
  const SessionStats stats = run.session->stats();
  EXPECT_NE(stats.fault.find("watchdog: no command for 20 consecutive cycles"), std::string::npos)
      << stats.fault;
  EXPECT_EQ(stats.watchdog_trips, 1u);
}

TEST(Session, WatchdogZeroTorquePolicy) {
  SilentController run(WatchdogPolicy::kZeroTorque);
  const StateSnapshot state = run.session->latestState();
  EXPECT_EQ(run.session->state(), SessionState::kRunning);
  EXPECT_TRUE(state.watchdog_tripped);
  EXPECT_EQ(state.tau[0], 0.0);
  EXPECT_EQ(run.session->stats().watchdog_trips, 1u);
  EXPECT_GE(run.session->stats().command_age, 50'000'000) << "≥ 50 ms old";
}

TEST(Session, WatchdogHoldPolicy) {
  SilentController run(WatchdogPolicy::kHoldLast);
  const StateSnapshot state = run.session->latestState();
  EXPECT_TRUE(state.watchdog_tripped);
  EXPECT_EQ(state.tau[0], 5.0);
  EXPECT_EQ(run.session->stats().watchdog_trips, 1u);
}

TEST(Session, WatchdogDampingPolicy) {
  SilentController run(WatchdogPolicy::kDamping);
  for (int k = 0; k < 5; ++k) {
    const StateSnapshot state = run.session->latestState();
    ASSERT_TRUE(state.watchdog_tripped);
    // τ = −D v at the start of the cycle; v moves by at most g/l·dt ≈ 0.01 rad/s in one cycle
    EXPECT_LT(state.tau[0] * state.v[0], 0.0) << "damping opposes the motion";
    EXPECT_NEAR(state.tau[0], -3.0 * state.v[0], 3.0 * 0.05) << "τ = −D v";
    std::this_thread::sleep_for(std::chrono::milliseconds(7));
  }
  // a fresh command clears the trip
  ASSERT_TRUE(run.session->pushCommand(command(run.session->model(), 2, 1.0)));
  ASSERT_TRUE(eventually([&] { return !run.session->latestState().watchdog_tripped; }));
  EXPECT_EQ(run.session->latestState().command_sequence, 2u);
}

TEST(Session, RealtimeRunsAtTheWallClockRate) {
  Session s(config(SessionMode::kRealtime));
  ASSERT_TRUE(s.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const SessionStats stats = s.stats();
  // the loop keeps phase on the wall clock; skipped cycles (if the machine stalls) lose sim time
  EXPECT_NEAR(stats.real_time_factor, 1.0, 0.05);
  EXPECT_NEAR(static_cast<double>(stats.timing.cycles), 500.0, 50.0);
  EXPECT_GT(stats.timing.wakeup_latency.count, 0u);
}

TEST(Session, FreeModeRunsFasterThanRealTime) {
  Session s(config(SessionMode::kFree));
  ASSERT_TRUE(s.start());
  ASSERT_TRUE(s.waitForCycle(20000, 10 * kSecond));
  EXPECT_GT(s.stats().real_time_factor, 2.0);
}

}  // namespace
}  // namespace hilsim::rt

namespace hilsim::rt {
namespace {

// Several producers, readers and a controller pausing and resuming, against a 10 kHz loop: run
// under ThreadSanitizer in CI. Each command's torques encode its sequence number, so a torn state
// read would show as a mismatch. The code is a sum of binary fractions, exact in double whatever
// the compiler contracts into FMAs.
double torqueCode(std::uint64_t sequence, int k) {
  return static_cast<double>(sequence % 64) * 0.0625 + k * 0.015625;
}

TEST(SessionStress, ConcurrentProducersReadersAndControl) {
  SessionConfig c = config(SessionMode::kRealtime, arm());
  c.control_rate = 10'000.0;
  c.watchdog = WatchdogConfig{WatchdogPolicy::kHoldLast, 20, 1.0};
  c.max_speed = 1e9;  // the arm swings under arbitrary torques; only consistency matters here
  Session s(c);
  ASSERT_TRUE(s.start());
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> next_sequence{1};
  std::atomic<long> inconsistent{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < 2; ++p) {
    threads.emplace_back([&] {
      while (!done.load()) {
        Command command;
        command.sequence = next_sequence.fetch_add(1);
        command.nv = s.model().nv;
        for (int k = 0; k < command.nv; ++k) command.tau[k] = torqueCode(command.sequence, k);
        s.pushCommand(command);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      std::uint64_t last_cycle = 0;
      while (!done.load()) {
        const StateSnapshot state = s.latestState();
        if (state.cycle < last_cycle) ++inconsistent;
        last_cycle = state.cycle;
        if (state.command_sequence > 0) {
          for (int k = 0; k < state.nv; ++k) {
            if (state.tau[k] != torqueCode(state.command_sequence, k)) ++inconsistent;
          }
        }
        (void)s.stats();
      }
    });
  }
  threads.emplace_back([&] {
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      s.pause();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s.resume();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  done.store(true);
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(s.state(), SessionState::kRunning);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the loop takes what is queued
  const SessionStats stats = s.stats();
  s.stop();
  EXPECT_EQ(inconsistent.load(), 0);
  EXPECT_GT(stats.commands_applied, 100u);
  EXPECT_EQ(stats.commands_received, stats.commands_applied + stats.commands_superseded)
      << "every accepted command is either applied or superseded by a newer one";
}

}  // namespace
}  // namespace hilsim::rt
