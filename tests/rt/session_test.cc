// Session: life cycle, the three modes, watchdog policies in the running loop, faults that never
// take the process down, and lockstep determinism.

#include "rt/session.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <array>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

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

// Position drives: until a first command they hold the initial pose; then they follow the
// commands' set-points, their loops run before every physics step — the very bits of the drives
// and the engine stepped by hand.
TEST(Session, PositionDrivesHoldThenFollowAndEqualTheLoopsSteppedByHand) {
  constexpr int kSubsteps = 4, kHold = 50, kCommands = 300;
  constexpr double kp = 300.0, kd = 2.0;
  SessionConfig c = config(SessionMode::kLockstep, arm());
  c.substeps = kSubsteps;
  c.drives = {{"*", CommandInterface::kPosition, kp, kd, 0.0}};
  Session s(c);
  ASSERT_TRUE(s.start());
  s.requestSteps(kHold);
  ASSERT_TRUE(s.waitForCycle(kHold, kSecond));
  const Model& model = *arm();
  const Eigen::VectorXd q0 = model.initialConfiguration();
  StateSnapshot state = s.latestState();
  for (int k = 0; k < model.nq; ++k) {
    EXPECT_NEAR(state.q[k], q0[k], 0.02) << "held against gravity (a sag of g(q)/kp), joint " << k;
  }
  const auto reference = [&](int k, int dof) { return 0.3 * std::sin(0.01 * k + dof); };
  for (int k = 1; k <= kCommands; ++k) {
    Command command;
    command.sequence = static_cast<std::uint64_t>(k);
    command.nv = model.nv;
    for (int dof = 0; dof < model.nv; ++dof) command.position[dof] = reference(k, dof);
    ASSERT_TRUE(s.pushCommand(command));
    ASSERT_TRUE(s.waitForCycle(kHold + k, kSecond));
  }
  state = s.latestState();
  ASSERT_EQ(s.state(), SessionState::kRunning) << s.stats().fault;

  JointDrives drives(model, c.drives, 1.0 / (1000.0 * kSubsteps));
  Simulator sim(arm(), Formulation::kAba, Integrator::kRk4, 1.0 / (1000.0 * kSubsteps));
  std::array<double, kMaxCoordinates> position{}, velocity{}, tau_ff{};
  drives.holdAt(q0, position.data());
  Eigen::VectorXd tau(model.nv);
  const auto cycle = [&] {
    for (int step = 0; step < kSubsteps; ++step) {
      drives.compute(sim.q(), sim.v(), {tau_ff.data(), position.data(), velocity.data()}, tau);
      sim.step(tau);
    }
  };
  for (int k = 0; k < kHold; ++k) cycle();
  for (int k = 1; k <= kCommands; ++k) {
    for (int dof = 0; dof < model.nv; ++dof) position[dof] = reference(k, dof);
    cycle();
  }
  EXPECT_EQ(std::memcmp(state.q.data(), sim.q().data(), sizeof(double) * model.nq), 0);
  EXPECT_EQ(std::memcmp(state.v.data(), sim.v().data(), sizeof(double) * model.nv), 0);
  EXPECT_EQ(std::memcmp(state.tau_commanded.data(), tau.data(), sizeof(double) * model.nv), 0)
      << "tau_commanded: the loops' output at the last physics step";
  double moved = 0.0;
  for (int dof = 0; dof < model.nv; ++dof) moved = std::max(moved, std::abs(state.q[dof] - q0[dof]));
  EXPECT_GT(moved, 0.05) << "the drives moved the arm";
}

// Actuator models sit between the command and the joint every physics step: a lockstep session
// with a delayed, lagged, quantised drive is the engine stepped by hand through the same models;
// tau_commanded is what was asked, tau what the joint got.
TEST(Session, ActuatorModelsRunEveryPhysicsStepBetweenTheCommandAndTheJoint) {
  constexpr int kSubsteps = 2, kCommands = 200;
  SessionConfig c = config(SessionMode::kLockstep, pendulum());
  c.substeps = kSubsteps;
  c.actuators = {{"*", 0.01, 3e-3, 0.05, 0.0, 0.0}};
  Session s(c);
  ASSERT_TRUE(s.start());
  for (int k = 1; k <= kCommands; ++k) {
    ASSERT_TRUE(s.pushCommand(command(s.model(), k, 2.0 * std::sin(0.05 * k))));
    ASSERT_TRUE(s.waitForCycle(k, kSecond));
  }
  const StateSnapshot state = s.latestState();
  const double dt = 1.0 / (1000.0 * kSubsteps);
  ActuatorModels actuators(*pendulum(), c.actuators, dt);
  Simulator sim(pendulum(), Formulation::kAba, Integrator::kRk4, dt);
  Eigen::VectorXd asked(1), delivered(1);
  for (int k = 1; k <= kCommands; ++k) {
    asked[0] = command(s.model(), k, 2.0 * std::sin(0.05 * k)).tau[0];
    for (int step = 0; step < kSubsteps; ++step) {
      actuators.apply(sim.q(), asked, delivered);
      sim.step(delivered);
    }
  }
  EXPECT_EQ(std::memcmp(state.q.data(), sim.q().data(), sizeof(double)), 0);
  EXPECT_EQ(std::memcmp(state.v.data(), sim.v().data(), sizeof(double)), 0);
  EXPECT_EQ(state.tau_commanded[0], asked[0]);
  EXPECT_EQ(state.tau[0], delivered[0]);
  EXPECT_NE(state.tau[0], state.tau_commanded[0]) << "6 steps late, lagged and quantised";
  // a reset empties the delay line: the first steps after it deliver nothing
  s.reset();
  ASSERT_TRUE(s.start());
  ASSERT_TRUE(s.pushCommand(command(s.model(), kCommands + 1, 1.0)));
  ASSERT_TRUE(s.waitForCycle(1, kSecond));
  EXPECT_EQ(s.latestState().tau[0], 0.0) << "the 3 ms delay holds the command back";
}

// Sensor models in a lockstep session: readings beside the truth in every state, reproducible bit
// for bit from the seed (two sessions, and one session after a reset), late by their delay.
TEST(Session, SensorReadingsAreReproducibleFromTheSeedAndLateByTheirDelay) {
  constexpr int kCommands = 200;
  SessionConfig c = config(SessionMode::kLockstep, pendulum());
  c.sensors.joints = {{"hinge", 0.0, 1e-3, 0.0, 1e-2, 0.0, 0.1, 0.0}};
  c.sensors.delay_cycles = 3;
  c.sensors.seed = 5;
  const auto run = [&](Session& s, std::vector<StateSnapshot>* states) {
    for (int k = 1; k <= kCommands; ++k) {
      EXPECT_TRUE(s.pushCommand(command(s.model(), k, std::sin(0.03 * k))));
      EXPECT_TRUE(s.waitForCycle(k, kSecond));
      states->push_back(s.latestState());
    }
  };
  Session a(c), b(c);
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  std::vector<StateSnapshot> first, second, again;
  run(a, &first);
  run(b, &second);
  a.reset();
  ASSERT_TRUE(a.start());
  run(a, &again);
  double largest_error = 0.0;
  for (int k = 0; k < kCommands; ++k) {
    ASSERT_TRUE(first[k].measured);
    EXPECT_EQ(first[k].sensors.q[0], second[k].sensors.q[0]) << k;
    EXPECT_EQ(first[k].sensors.tau[0], second[k].sensors.tau[0]) << k;
    EXPECT_EQ(first[k].sensors.q[0], again[k].sensors.q[0]) << k << ": a reset restarts the noise";
    EXPECT_EQ(first[k].q[0], again[k].q[0]) << k << ": and the truth is the truth";
    if (k >= 3) {
      // the reading of cycle k is the truth of cycle k − 3, plus noise of σ = 1 mrad
      const double error = first[k].sensors.q[0] - first[k - 3].q[0];
      EXPECT_LT(std::abs(error), 6e-3) << k;
      largest_error = std::max(largest_error, std::abs(error));
    }
  }
  EXPECT_GT(largest_error, 0.0) << "the noise is on";
}

// Every hardware model at once — position and velocity drives, every actuator effect, noisy
// delayed sensors — in lockstep: two sessions of one seed run bit for bit alike.
TEST(Session, LockstepWithEveryHardwareModelIsBitForBitReproducible) {
  const Model& model = *arm();
  SessionConfig c = config(SessionMode::kLockstep, arm());
  c.substeps = 4;
  c.drives = {{"*", CommandInterface::kPosition, 300.0, 2.0, 0.0},
              {model.joint_names[7], CommandInterface::kVelocity, 0.0, 0.5, 5.0}};
  c.actuators = {{"*", 3e-4, 1e-3, 0.01, 0.02, 0.1}};
  c.sensors.joints = {{"*", 1e-5, 2e-5, 1e-5, 1e-3, 0.0, 0.2, 0.1}};
  c.sensors.delay_cycles = 1;
  c.sensors.seed = 99;
  const auto run = [&] {
    Session s(c);
    EXPECT_TRUE(s.start());
    for (int k = 1; k <= 300; ++k) {
      Command command;
      command.sequence = static_cast<std::uint64_t>(k);
      command.nv = model.nv;
      for (int dof = 0; dof < model.nv; ++dof) {
        command.position[dof] = 0.2 * std::sin(0.01 * k + dof);
        command.velocity[dof] = 0.3;
        command.tau[dof] = 0.1;
      }
      EXPECT_TRUE(s.pushCommand(command));
      EXPECT_TRUE(s.waitForCycle(k, kSecond));
    }
    return s.latestState();
  };
  const StateSnapshot a = run(), b = run();
  ASSERT_EQ(a.cycle, 300u);
  EXPECT_EQ(std::memcmp(a.q.data(), b.q.data(), sizeof(double) * model.nq), 0);
  EXPECT_EQ(std::memcmp(a.v.data(), b.v.data(), sizeof(double) * model.nv), 0);
  EXPECT_EQ(std::memcmp(&a.sensors, &b.sensors, sizeof(SensorReadings)), 0);
  EXPECT_NE(a.sensors.q[0], a.q[0]) << "the readings are not the truth";
}

TEST(Session, DrivesThatAreUnstableAtThePhysicsStepAreRefused) {
  SessionConfig c = config(SessionMode::kLockstep, arm());
  c.drives = {{arm()->joint_names[7], CommandInterface::kVelocity, 0.0, 1e4, 0.0}};
  try {
    Session refused(c);
    ADD_FAILURE() << "kd = 10⁴ N·m·s/rad accepted at dt = 1 ms on the wrist";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("unstable at dt = 0.001 s"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find(arm()->joint_names[7]), std::string::npos) << e.what();
  }
  c.drives = {{"no_such_joint", CommandInterface::kEffort}};
  EXPECT_THROW(Session refused(c), SessionError);
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
