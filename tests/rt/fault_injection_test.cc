// Fault injection: each fault observed in the states a controller gets (or does not get), its
// timing on the simulation clock, its draws' statistics and their seed, and lockstep runs with
// faults on that are the same bit for bit.

#include "rt/fault_injection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "rt/session.h"
#include "tests/support/bundled_models.h"

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kSecond = kNanosecondsPerSecond;
using test::arm;
using test::pendulum;

SessionConfig lockstep(std::shared_ptr<const Model> model) {
  SessionConfig c;
  c.model = std::move(model);
  c.mode = SessionMode::kLockstep;
  c.control_rate = 1000.0;
  c.thread.lock_memory = false;
  c.name = "faults";
  return c;
}

FaultSpec spec(FaultType type, double start, double duration, std::string joint = "") {
  FaultSpec s;
  s.type = type;
  s.start = start;
  s.duration = duration;
  s.joint = std::move(joint);
  return s;
}

Command torque(const Model& model, std::uint64_t sequence, double tau) {
  Command c;
  c.sequence = sequence;
  c.nv = model.nv;
  for (int k = 0; k < model.nv; ++k) c.tau[k] = tau;
  return c;
}

/// Drives a lockstep session one command per cycle (tau = tau_of(k)) and returns every state.
template <typename TauOf>
std::vector<StateSnapshot> run(Session& s, int commands, TauOf tau_of) {
  std::vector<StateSnapshot> states;
  const std::uint64_t first = s.latestState().cycle;
  for (int k = 1; k <= commands; ++k) {
    EXPECT_TRUE(s.pushCommand(torque(s.model(), first + k, tau_of(k))));
    EXPECT_TRUE(s.waitForCycle(first + k, kSecond)) << k;
    states.push_back(s.latestState());
  }
  return states;
}

// A burst process: a command starts a lost burst of b with probability p, so a renewal period
// holds p·b lost of p·b + (1 − p) commands; runs of lost commands are whole bursts.
TEST(FaultInjector, DroppedCommandsAreLostInBurstsAtTheirRateAndFollowTheSeed) {
  const Model& model = *pendulum();
  constexpr int kCommands = 40'000;
  constexpr double kRate = 0.2;
  constexpr int kBurst = 3;
  FaultsConfig config;
  config.seed = 11;
  FaultSpec drop = spec(FaultType::kDropCommands, 0.0, 0.0);
  drop.rate = kRate;
  drop.burst = kBurst;
  config.schedule = {drop};
  const Eigen::VectorXd q0 = model.initialConfiguration();
  const auto losses = [&](std::uint64_t seed) {
    FaultsConfig c = config;
    c.seed = seed;
    FaultInjector injector(model, c, 1e-3, 1e-3, q0);
    std::vector<bool> lost;
    const Command command = torque(model, 1, 1.0);
    for (int k = 0; k < kCommands; ++k) {
      injector.beginCycle(k, q0);
      lost.push_back(injector.filterCommand(&command, k) == nullptr);
    }
    EXPECT_EQ(injector.stats().commands_lost,
              static_cast<std::uint64_t>(std::count(lost.begin(), lost.end(), true)));
    return lost;
  };
  const std::vector<bool> a = losses(11), b = losses(11), c = losses(12);
  EXPECT_EQ(a, b) << "one seed, one sequence";
  EXPECT_NE(a, c) << "another seed, another sequence";
  const double fraction = static_cast<double>(std::count(a.begin(), a.end(), true)) / kCommands;
  const double expected = kRate * kBurst / (kRate * kBurst + 1.0 - kRate);  // 0.4286
  // ~kCommands / 1.4 renewal periods: the fraction's standard deviation is about 0.004; 0.02 is 5σ
  EXPECT_NEAR(fraction, expected, 0.02);
  int run_length = 0;
  for (int k = 0; k < kCommands; ++k) {
    if (a[k]) {
      ++run_length;
    } else if (run_length > 0) {
      EXPECT_EQ(run_length % kBurst, 0) << "a run of lost commands ending at " << k;
      run_length = 0;
    }
  }
}

// delay_commands: the set-points a cycle applies are the ones that arrived `cycles` cycles
// earlier; in lockstep the protocol stays whole (each state echoes the command that ran it).
TEST(FaultInjector, DelayedCommandsApplyTheirCyclesLateWhileLockstepEchoesStayCurrent) {
  constexpr int kDelay = 5, kCommands = 60;
  SessionConfig c = lockstep(pendulum());
  FaultSpec delay = spec(FaultType::kDelayCommands, 0.0, 0.0);
  delay.cycles = kDelay;
  c.faults.schedule = {delay};
  Session s(c);
  ASSERT_TRUE(s.start());
  const std::vector<StateSnapshot> states = run(s, kCommands, [](int k) { return 1.0 * k; });
  for (int k = 1; k <= kCommands; ++k) {
    const StateSnapshot& state = states[static_cast<std::size_t>(k - 1)];
    EXPECT_EQ(state.command_sequence, static_cast<std::uint64_t>(k));
    EXPECT_EQ(state.tau_commanded[0], k > kDelay ? 1.0 * (k - kDelay) : 0.0) << k;
  }
  EXPECT_EQ(s.stats().faults.commands_delayed, static_cast<std::uint64_t>(kCommands));
}

// Commands of two cycles each under a delay of two: the set-points of command k arrive in the
// first cycle of command k + 1, and each answer still echoes the command whose cycles it ends.
TEST(FaultInjector, LateSetPointsNeverTakeAnotherCommandsAnswer) {
  SessionConfig c = lockstep(pendulum());
  FaultSpec delay = spec(FaultType::kDelayCommands, 0.0, 0.0);
  delay.cycles = 2;
  c.faults.schedule = {delay};
  Session s(c);
  ASSERT_TRUE(s.start());
  for (int k = 1; k <= 20; ++k) {
    Command command = torque(s.model(), static_cast<std::uint64_t>(k), 1.0 * k);
    command.steps = 2;
    ASSERT_TRUE(s.pushCommand(command));
    ASSERT_TRUE(s.waitForCycle(2 * static_cast<std::uint64_t>(k), kSecond));
    const StateSnapshot state = s.latestState();
    EXPECT_EQ(state.command_sequence, static_cast<std::uint64_t>(k)) << k;
    EXPECT_EQ(state.command_steps_left, 0u) << k;
    EXPECT_EQ(state.tau_commanded[0], 1.0 * (k - 1)) << k;
  }
}

// Scheduled faults act over whole cycles from their start on the simulation clock, show in the
// states (their id, type and joint), and are counted; free_joint and cut_drive change what the
// joint gets (State.tau) and not what was asked (tau_commanded).
TEST(FaultInjector, ScheduledJointFaultsActOnTheirCyclesAndChangeWhatTheJointGets) {
  SessionConfig c = lockstep(pendulum());
  FaultSpec cut = spec(FaultType::kCutDrive, 0.010, 0.010, "hinge");
  cut.value = 0.25;
  c.faults.schedule = {spec(FaultType::kFreeJoint, 0.030, 0.005, "*"), cut};
  Session s(c);
  ASSERT_TRUE(s.start());
  const std::vector<StateSnapshot> states = run(s, 50, [](int) { return 2.0; });
  for (int k = 1; k <= 50; ++k) {
    // the state of cycle k ends cycle index k − 1, which starts at t = (k − 1) ms
    const StateSnapshot& state = states[static_cast<std::size_t>(k - 1)];
    const int index = k - 1;
    const bool cutting = index >= 10 && index < 20, freed = index >= 30 && index < 35;
    EXPECT_EQ(state.tau_commanded[0], 2.0);
    EXPECT_EQ(state.tau[0], cutting ? 0.5 : freed ? 0.0 : 2.0) << k;
    ASSERT_EQ(state.faults.count, cutting || freed ? 1 : 0) << k;
    if (cutting) {
      EXPECT_EQ(state.faults.list[0].id, 2u);
      EXPECT_EQ(state.faults.list[0].type, FaultType::kCutDrive);
      EXPECT_EQ(state.faults.list[0].body, 1);
    }
    if (freed) {
      EXPECT_EQ(state.faults.list[0].body, 0) << "every joint";
    }
  }
  const FaultStats stats = s.stats().faults;
  EXPECT_EQ(stats.started, 2u);
  EXPECT_EQ(stats.ended, 2u);
  EXPECT_EQ(stats.active, 0);
}

// A brake stops the joint and holds it against gravity, the other joints falling on; released,
// the joint moves again. The brake is tuned on the joint's inertia (a = b = 1) and holds up to the
// joint's effort limit: the arm's joint, falling at ~0.6 rad/s at onset, slips at the limit for
// a few cycles, then stays where it stopped (the static error, a change of torque over kp = I/dt²,
// is far below a micro-radian).
TEST(FaultInjector, ALockedJointStopsAndHoldsUntilTheLockEnds) {
  const Model& model = *arm();
  SessionConfig c = lockstep(arm());
  c.substeps = 2;
  c.initial_q = model.initialConfiguration();
  for (int k = 0; k < model.nq; ++k) (*c.initial_q)[k] = 0.4;  // bent: gravity pulls every joint
  c.faults.schedule = {spec(FaultType::kLockJoint, 0.050, 0.100, model.joint_names[2])};
  Session s(c);
  ASSERT_TRUE(s.start());
  const std::vector<StateSnapshot> states = run(s, 250, [](int) { return 0.0; });
  ASSERT_EQ(s.state(), SessionState::kRunning) << s.stats().fault;
  const auto dof = static_cast<std::size_t>(model.idx_v[2]);
  // cycle index 50 is the first locked one: it starts from the state of cycle 50
  const StateSnapshot& onset = states[49];
  const StateSnapshot& stopped = states[69];
  ASSERT_GT(std::abs(onset.v[dof]), 0.3) << "the joint was moving when the lock began";
  EXPECT_LT(std::abs(stopped.q[dof] - onset.q[dof]), std::abs(onset.v[dof]) * 5e-3)
      << "stopped within 5 ms of braking";
  EXPECT_EQ(s.stats().faults.started, 1u);
  double drift = 0.0, others_moved = 0.0;
  for (int k = 70; k <= 150; ++k) {
    const StateSnapshot& state = states[static_cast<std::size_t>(k - 1)];
    drift = std::max(drift, std::abs(state.q[dof] - stopped.q[dof]));
    others_moved = std::max(others_moved, std::abs(state.q[3] - onset.q[3]));
  }
  EXPECT_LT(drift, 1e-5) << "held where it stopped";
  EXPECT_GT(others_moved, 0.01) << "the unlocked joints fell on";
  EXPECT_GT(std::abs(states[249].q[dof] - stopped.q[dof]), 1e-2) << "released, it moves again";
}

// Sensor faults on a swinging pendulum with perfect sensors: a freeze holds the readings of the
// cycle it began in, an offset shifts the encoder by its value, a state delay hands out the
// truth of `cycles` cycles ago; outside them the controller reads the truth again.
TEST(FaultInjector, FrozenOffsetAndDelayedReadingsAgainstTheTruth) {
  constexpr int kDelay = 4;
  SessionConfig c = lockstep(pendulum());
  c.initial_q = Eigen::VectorXd::Constant(1, 0.5);
  FaultSpec offset = spec(FaultType::kOffsetSensor, 0.040, 0.010, "hinge");
  offset.value = 0.125;
  FaultSpec delay = spec(FaultType::kDelayStates, 0.060, 0.010);
  delay.cycles = kDelay;
  c.faults.schedule = {spec(FaultType::kFreezeSensor, 0.020, 0.010, "hinge"), offset, delay};
  Session s(c);
  ASSERT_TRUE(s.start());
  const std::vector<StateSnapshot> states = run(s, 80, [](int) { return 0.0; });
  for (int k = 1; k <= 80; ++k) {
    const StateSnapshot& state = states[static_cast<std::size_t>(k - 1)];
    const int index = k - 1;
    if (index >= 20 && index < 30) {
      ASSERT_TRUE(state.measured);
      EXPECT_EQ(state.sensors.q[0], states[20].q[0]) << k << ": frozen at the first frozen cycle";
      EXPECT_EQ(state.sensors.v[0], states[20].v[0]) << k;
      if (index > 20) {
        EXPECT_NE(state.q[0], states[20].q[0]) << k << ": the bob swings on";
      }
    } else if (index >= 40 && index < 50) {
      ASSERT_TRUE(state.measured);
      EXPECT_EQ(state.sensors.q[0], state.q[0] + 0.125) << k;
      EXPECT_EQ(state.sensors.v[0], state.v[0]) << k;
    } else if (index >= 60 && index < 70) {
      ASSERT_TRUE(state.measured);
      EXPECT_EQ(state.sensors.q[0], states[static_cast<std::size_t>(k - 1 - kDelay)].q[0]) << k;
    } else {
      EXPECT_FALSE(state.measured) << k << ": no fault, perfect sensors: the truth";
    }
  }
}

// drop_states withholds about its rate of the states, counted; in REALTIME a stall loses every
// command and state, trips the watchdog, and the controller's commands count again after it.
TEST(FaultInjector, DroppedStatesAreFlaggedAtTheirRate) {
  SessionConfig c = lockstep(pendulum());
  FaultSpec drop = spec(FaultType::kDropStates, 0.0, 0.0);
  drop.rate = 0.5;
  c.faults.schedule = {drop};
  c.faults.seed = 3;
  Session s(c);
  ASSERT_TRUE(s.start());
  constexpr int kCycles = 4000;
  const std::vector<StateSnapshot> states = run(s, kCycles, [](int) { return 0.0; });
  const auto withheld = static_cast<std::uint64_t>(
      std::count_if(states.begin(), states.end(), [](const StateSnapshot& x) { return x.withheld; }));
  EXPECT_EQ(s.stats().faults.states_withheld, withheld);
  // binomial: σ = √(n p (1 − p)) / n = 0.008; 0.04 is 5σ
  EXPECT_NEAR(static_cast<double>(withheld) / kCycles, 0.5, 0.04);
}

TEST(FaultInjector, AStallTripsTheWatchdogOfARealtimeSession) {
  SessionConfig c = lockstep(pendulum());
  c.mode = SessionMode::kRealtime;
  c.watchdog = WatchdogConfig{WatchdogPolicy::kZeroTorque, 20, 1.0};
  Session s(c);
  ASSERT_TRUE(s.start());
  std::atomic<bool> done{false};
  std::thread controller([&] {
    for (std::uint64_t k = 1; !done.load(); ++k) {
      s.pushCommand(torque(s.model(), k, 0.1));
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  ASSERT_TRUE(s.waitForCycle(100, 5 * kSecond));
  EXPECT_EQ(s.stats().watchdog_trips, 0u);
  FaultSpec stall = spec(FaultType::kStall, -1.0, 0.2);
  const std::uint32_t id = s.injectFault(stall);
  EXPECT_GT(id, 0u);
  const std::uint64_t from = s.latestState().cycle;
  ASSERT_TRUE(s.waitForCycle(from + 400, 5 * kSecond));
  done.store(true);
  controller.join();
  const SessionStats stats = s.stats();
  EXPECT_GE(stats.watchdog_trips, 1u) << "200 silent cycles against a limit of 20";
  EXPECT_GE(stats.faults.states_withheld, 200u);
  EXPECT_GT(stats.faults.commands_lost, 0u);
  EXPECT_EQ(stats.faults.started, 1u);
  EXPECT_EQ(stats.faults.ended, 1u);
  EXPECT_FALSE(stats.watchdog_tripped) << "commands count again after the stall";
}

// On demand: a fault injected into a lockstep session acts from the next cycle run until it is
// cleared; specs that cannot be are refused naming what is wrong.
TEST(FaultInjector, OnDemandFaultsActFromTheNextCycleUntilCleared) {
  SessionConfig c = lockstep(pendulum());
  c.faults.max_delay_cycles = 8;
  Session s(c);
  ASSERT_TRUE(s.start());
  run(s, 5, [](int) { return 1.0; });
  const std::uint32_t id = s.injectFault(spec(FaultType::kFreeJoint, -1.0, 0.0, "hinge"));
  std::vector<StateSnapshot> states = run(s, 5, [](int) { return 1.0; });
  for (const StateSnapshot& state : states) {
    EXPECT_EQ(state.tau[0], 0.0);
    ASSERT_EQ(state.faults.count, 1);
    EXPECT_EQ(state.faults.list[0].id, id);
  }
  ASSERT_TRUE(s.clearFaults(id));
  states = run(s, 2, [](int) { return 1.0; });
  EXPECT_EQ(states[0].tau[0], 1.0);
  EXPECT_EQ(states[0].faults.count, 0);
  EXPECT_EQ(s.stats().faults.ended, 1u);

  const auto refused = [&](const FaultSpec& bad, const std::string& why) {
    try {
      s.injectFault(bad);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const SessionError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused(spec(FaultType::kStall, 0.001, 0.002), "it would end at t = 0.003 s, and the session is at");
  refused(spec(FaultType::kLockJoint, -1.0, 0.0, "elbow"), "has no joint 'elbow'");
  refused(spec(FaultType::kLockJoint, -1.0, 0.0), "names no joint");
  refused(spec(FaultType::kStall, -1.0, 0.0, "hinge"), "names no joint");
  FaultSpec rate = spec(FaultType::kDropStates, -1.0, 0.0);
  rate.rate = 0.0;
  refused(rate, "rate 0 is outside (0, 1]");
  FaultSpec late = spec(FaultType::kDelayStates, -1.0, 0.0);
  late.cycles = 9;
  refused(late, "faults.max_delay_cycles");
  FaultSpec cut = spec(FaultType::kCutDrive, -1.0, 0.0, "hinge");
  cut.value = 1.5;
  refused(cut, "outside [0, 1]");
  refused(spec(FaultType::kFreeJoint, -1.0, -1.0, "hinge"), "duration -1 s must be within 0");
  refused(spec(FaultType::kFreeJoint, -1.0, 1e300, "hinge"), "duration 1e+300 s");
  refused(spec(FaultType::kFreeJoint, std::nan(""), 0.0, "hinge"), "start nan s");

  // the table holds 32 faults, those waiting for the next cycle included
  for (int k = 0; k < kMaxInjectedFaults; ++k) s.injectFault(spec(FaultType::kStall, 10.0, 1.0));
  try {
    s.injectFault(spec(FaultType::kStall, 10.0, 1.0));
    ADD_FAILURE() << "a 33rd fault accepted";
  } catch (const SessionBusyError& e) {
    EXPECT_NE(std::string(e.what()).find("holds 32 faults already"), std::string::npos) << e.what();
  }
  // a reset forgets them, and ids start again after the schedule's
  s.reset();
  ASSERT_TRUE(s.start());
  EXPECT_EQ(s.injectFault(spec(FaultType::kStall, -1.0, 0.0)), 1u);
  run(s, 1, [](int) { return 0.0; });
  EXPECT_EQ(s.stats().faults.started, 1u);
}

TEST(FaultInjector, ScheduleEntriesAreCheckedWhenTheSessionIsMade) {
  SessionConfig c = lockstep(test::pendulum());
  c.faults.schedule = {spec(FaultType::kOffsetSensor, -1.0, 0.0, "hinge")};
  EXPECT_THROW(Session{c}, SessionError) << "a scheduled fault needs its start";
  c.faults.schedule = {spec(FaultType::kLockJoint, 0.0, 0.0, "nowhere")};
  try {
    Session refused(c);
    ADD_FAILURE() << "an unknown joint accepted";
  } catch (const SessionError& e) {
    EXPECT_NE(std::string(e.what()).find("faults.schedule[0] (lock_joint)"), std::string::npos)
        << e.what();
  }
}

// Every fault at once in a lockstep run of the arm, drops drawing from the seed: two sessions
// of one configuration run bit for bit alike, and a reset re-arms the schedule and the draws.
TEST(FaultInjector, LockstepWithEveryFaultIsBitForBitReproducible) {
  const Model& model = *arm();
  SessionConfig c = lockstep(arm());
  c.substeps = 2;
  c.faults.seed = 42;
  FaultSpec drop_commands = spec(FaultType::kDropCommands, 0.0, 0.1);
  drop_commands.rate = 0.3;
  drop_commands.burst = 2;
  FaultSpec drop_states = spec(FaultType::kDropStates, 0.05, 0.1);
  drop_states.rate = 0.2;
  FaultSpec delay_commands = spec(FaultType::kDelayCommands, 0.1, 0.05);
  delay_commands.cycles = 3;
  FaultSpec delay_states = spec(FaultType::kDelayStates, 0.12, 0.05);
  delay_states.cycles = 2;
  FaultSpec offset = spec(FaultType::kOffsetSensor, 0.0, 0.2, model.joint_names[1]);
  offset.value = 0.01;
  FaultSpec cut = spec(FaultType::kCutDrive, 0.15, 0.05, "*");
  cut.value = 0.5;
  c.faults.schedule = {drop_commands,
                       drop_states,
                       delay_commands,
                       delay_states,
                       offset,
                       cut,
                       spec(FaultType::kFreezeSensor, 0.02, 0.1, model.joint_names[3]),
                       spec(FaultType::kLockJoint, 0.08, 0.05, model.joint_names[4]),
                       spec(FaultType::kFreeJoint, 0.18, 0.02, model.joint_names[6]),
                       spec(FaultType::kStall, 0.22, 0.01)};
  const auto tau_of = [](int k) { return 2.0 * std::sin(0.02 * k); };
  Session a(c), b(c);
  ASSERT_TRUE(a.start());
  ASSERT_TRUE(b.start());
  const std::vector<StateSnapshot> first = run(a, 300, tau_of), second = run(b, 300, tau_of);
  a.reset();
  ASSERT_TRUE(a.start());
  const std::vector<StateSnapshot> again = run(a, 300, tau_of);
  for (std::size_t k = 0; k < first.size(); ++k) {
    for (const std::vector<StateSnapshot>* other : {&second, &again}) {
      const StateSnapshot& x = first[k];
      const StateSnapshot& y = (*other)[k];
      ASSERT_EQ(std::memcmp(x.q.data(), y.q.data(), sizeof(double) * model.nq), 0) << k;
      ASSERT_EQ(std::memcmp(x.v.data(), y.v.data(), sizeof(double) * model.nv), 0) << k;
      ASSERT_EQ(std::memcmp(&x.sensors, &y.sensors, sizeof(SensorReadings)), 0) << k;
      ASSERT_EQ(x.withheld, y.withheld) << k;
      ASSERT_EQ(x.faults.count, y.faults.count) << k;
    }
  }
  const FaultStats stats = b.stats().faults;
  EXPECT_EQ(stats.started, 10u);
  EXPECT_EQ(stats.ended, 10u);
  EXPECT_GT(stats.commands_lost, 10u);
  EXPECT_GT(stats.states_withheld, 10u);
}

}  // namespace
}  // namespace hilsim::rt
