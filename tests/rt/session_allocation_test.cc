// The RT thread never touches the heap: 10,000 cycles of a session in each mode on the bundled
// arm, with commands flowing in and states read out, counting allocations on the RT thread only
// (allocation_hooks.h; counting starts in the RT thread's start hook, after its set-up).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/io/model_loader.h"
#include "examples/quadruped_stance/stance_law.h"
#include "rt/session.h"
#include "rt/worker_set.h"
#include "tests/support/allocation_hooks.h"

namespace hilsim::rt {
namespace {

constexpr std::uint64_t kCycles = 10'000;

struct Mode {
  SessionMode mode;
  double rate;
  WatchdogPolicy policy;
};

void PrintTo(const Mode& mode, std::ostream* out) {
  *out << sessionModeName(mode.mode) << " at " << mode.rate << " Hz, watchdog "
       << watchdogPolicyName(mode.policy);
}

class RtThreadAllocations : public ::testing::TestWithParam<Mode> {};

TEST_P(RtThreadAllocations, NoneOverTenThousandCycles) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  const Mode mode = GetParam();
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("iiwa14"));
  c.mode = mode.mode;
  c.control_rate = mode.rate;
  c.substeps = 2;
  c.thread.lock_memory = false;
  // short silences trip the watchdog now and then, so its policy path runs too
  c.watchdog = WatchdogConfig{mode.policy, 3, 1.0};
  c.overrun = OverrunPolicy::kCatchUp;
  c.name = "alloc";
  c.on_rt_thread_start = [] { test::beginHeapCounting(); };
  Session s(c);
  const test::HeapCounts before = test::allThreadsHeapCounts();

  ASSERT_TRUE(s.start());
  std::atomic<bool> done{false};
  std::thread controller([&] {
    std::uint64_t sequence = 0;
    while (!done.load()) {
      Command command;
      command.sequence = ++sequence;
      command.nv = s.model().nv;
      command.steps = 1;
      for (int k = 0; k < command.nv; ++k) command.tau[k] = 0.1 * std::sin(1e-3 * sequence + k);
      if (mode.mode == SessionMode::kLockstep) {
        if (s.pushCommand(command)) s.waitForCycle(sequence, kNanosecondsPerSecond);
      } else if (sequence % 7 != 0) {  // every 7th command is "lost"
        s.pushCommand(command);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(1000));
      }
      (void)s.latestState();
    }
  });
  const bool reached = s.waitForCycle(kCycles, 60 * kNanosecondsPerSecond);
  const test::HeapCounts after = test::allThreadsHeapCounts();
  done.store(true);
  controller.join();
  s.stop();

  ASSERT_TRUE(reached) << "state " << sessionStateName(s.state()) << ": " << s.stats().fault;
  EXPECT_EQ(after.allocations - before.allocations, 0);
  EXPECT_EQ(after.deallocations - before.deallocations, 0);
  EXPECT_GT(s.stats().commands_applied, 100u);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, RtThreadAllocations,
    ::testing::Values(Mode{SessionMode::kRealtime, 10'000.0, WatchdogPolicy::kDamping},
                      Mode{SessionMode::kRealtime, 10'000.0, WatchdogPolicy::kZeroTorque},
                      Mode{SessionMode::kFree, 1000.0, WatchdogPolicy::kHoldLast},
                      Mode{SessionMode::kLockstep, 1000.0, WatchdogPolicy::kHoldLast}),
    [](const auto& info) {
      return std::string(sessionModeName(info.param.mode)) + "_" +
             std::string(watchdogPolicyName(info.param.policy));
    });

// Command interfaces, actuator and sensor models: position loops on every joint, a velocity loop
// with its integral on two, their set-points changing every cycle, watchdog silences that cut and
// restore the drives, every actuator effect and every joint sensor on every joint.
TEST(RtThreadAllocations, NoneWithDrivesActuatorAndSensorModels) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("iiwa14"));
  const Model& model = *c.model;
  c.mode = SessionMode::kRealtime;
  c.control_rate = 4000.0;
  c.thread.lock_memory = false;
  c.watchdog = WatchdogConfig{WatchdogPolicy::kZeroTorque, 3, 1.0};
  c.drives = {{"*", CommandInterface::kPosition, 200.0, 2.0, 0.0},
              {model.joint_names[2], CommandInterface::kVelocity, 0.0, 2.0, 5.0},
              {model.joint_names[5], CommandInterface::kVelocity, 0.0, 1.0, 5.0}};
  // and every actuator effect on every joint: delay line, quantum, lag, ripple; and every
  // joint sensor with noise, bias, resolution and a delay line
  c.actuators = {{"*", 2e-3, 1e-3, 0.01, 0.05, 0.1}};
  c.sensors.joints = {{"*", 1e-5, 2e-5, 1e-5, 1e-3, 1e-3, 0.2, 0.5}};
  c.sensors.delay_cycles = 3;
  c.sensors.seed = 1;
  c.name = "alloc-drives";
  c.on_rt_thread_start = [] { test::beginHeapCounting(); };
  Session s(c);
  const test::HeapCounts before = test::allThreadsHeapCounts();
  ASSERT_TRUE(s.start());
  std::atomic<bool> done{false};
  std::thread controller([&] {
    std::uint64_t sequence = 0;
    while (!done.load()) {
      Command command;
      command.sequence = ++sequence;
      command.nv = model.nv;
      for (int k = 0; k < model.nv; ++k) {
        command.position[k] = 0.2 * std::sin(1e-3 * sequence + k);
        command.velocity[k] = 0.1 * std::cos(1e-3 * sequence + k);
        command.tau[k] = 0.05;
      }
      // every 50th command a silence long enough to trip the watchdog (3 cycles at 4 kHz)
      if (sequence % 50 != 0) s.pushCommand(command);
      std::this_thread::sleep_for(std::chrono::microseconds(sequence % 50 == 0 ? 2000 : 200));
      (void)s.latestState();
    }
  });
  const bool reached = s.waitForCycle(kCycles, 60 * kNanosecondsPerSecond);
  const test::HeapCounts after = test::allThreadsHeapCounts();
  done.store(true);
  controller.join();
  s.stop();
  ASSERT_TRUE(reached) << "state " << sessionStateName(s.state()) << ": " << s.stats().fault;
  EXPECT_EQ(after.allocations - before.allocations, 0);
  EXPECT_EQ(after.deallocations - before.deallocations, 0);
  EXPECT_GT(s.stats().commands_applied, 100u);
  EXPECT_GT(s.stats().watchdog_trips, 0u);
}

// Injected faults: every kind begins and ends during the run (scheduled ones, and one injected on
// demand before the start), the delay lines full, drops drawing, a brake slipping and holding.
TEST(RtThreadAllocations, NoneWithEveryInjectedFault) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("iiwa14"));
  const Model& model = *c.model;
  c.mode = SessionMode::kRealtime;
  c.control_rate = 4000.0;  // 10,000 cycles: 2.5 s
  c.thread.lock_memory = false;
  c.watchdog = WatchdogConfig{WatchdogPolicy::kDamping, 40, 1.0};
  c.faults.seed = 7;
  c.faults.max_delay_cycles = 20;
  const auto at = [](FaultType type, double start, double duration, std::string joint = "") {
    FaultSpec f;
    f.type = type;
    f.start = start;
    f.duration = duration;
    f.joint = std::move(joint);
    f.rate = 0.3;
    f.burst = 2;
    f.cycles = 10;
    f.value = 0.5;
    return f;
  };
  c.faults.schedule = {at(FaultType::kDropCommands, 0.1, 0.3),
                       at(FaultType::kDelayCommands, 0.3, 0.3),
                       at(FaultType::kDropStates, 0.5, 0.3),
                       at(FaultType::kDelayStates, 0.7, 0.3),
                       at(FaultType::kFreezeSensor, 0.9, 0.3, "*"),
                       at(FaultType::kOffsetSensor, 1.1, 0.3, model.joint_names[3]),
                       at(FaultType::kLockJoint, 1.3, 0.3, "*"),
                       at(FaultType::kFreeJoint, 1.5, 0.3, model.joint_names[5]),
                       at(FaultType::kCutDrive, 1.7, 0.3, "*"),
                       at(FaultType::kStall, 1.9, 0.1)};
  c.name = "alloc-faults";
  c.on_rt_thread_start = [] { test::beginHeapCounting(); };
  Session s(c);
  s.injectFault(at(FaultType::kLockJoint, 0.05, 0.05, model.joint_names[2]));
  const test::HeapCounts before = test::allThreadsHeapCounts();
  ASSERT_TRUE(s.start());
  std::atomic<bool> done{false};
  std::thread controller([&] {
    std::uint64_t sequence = 0;
    while (!done.load()) {
      Command command;
      command.sequence = ++sequence;
      command.nv = model.nv;
      for (int k = 0; k < model.nv; ++k) command.tau[k] = 5.0 * std::sin(1e-3 * sequence + k);
      s.pushCommand(command);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      (void)s.latestState();
    }
  });
  const bool reached = s.waitForCycle(kCycles, 60 * kNanosecondsPerSecond);
  const test::HeapCounts after = test::allThreadsHeapCounts();
  done.store(true);
  controller.join();
  s.stop();
  ASSERT_TRUE(reached) << "state " << sessionStateName(s.state()) << ": " << s.stats().fault;
  EXPECT_EQ(after.allocations - before.allocations, 0);
  EXPECT_EQ(after.deallocations - before.deallocations, 0);
  const FaultStats faults = s.stats().faults;
  EXPECT_EQ(faults.started, 11u);
  EXPECT_EQ(faults.ended, 11u);
  EXPECT_GT(faults.commands_lost, 0u);
  EXPECT_GT(faults.commands_delayed, 0u);
  EXPECT_GT(faults.states_withheld, 0u);
}

// The contact stage's cycle: the quadruped standing under its stance law, pushed now and then
// (base wrench on and off), its foot forces and the solver's counts published every cycle.
TEST(RtThreadAllocations, NoneWithContactsAndPushes) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("quadruped"));
  c.mode = SessionMode::kLockstep;
  c.thread.lock_memory = false;
  c.name = "alloc-contacts";
  // its IMU and contact force sensors read every cycle
  c.sensors.imu.enabled = true;
  c.sensors.imu.orientation_noise = 1e-3;
  c.sensors.imu.linear_acceleration_noise = 0.02;
  c.sensors.contact_force_noise = 0.5;
  c.on_rt_thread_start = [] { test::beginHeapCounting(); };
  Session s(c);
  const examples::StanceLaw law(s.model(), 3.0, 0.05);
  const test::HeapCounts before = test::allThreadsHeapCounts();
  ASSERT_TRUE(s.start());
  constexpr std::uint64_t kContactCycles = 5000;
  StateSnapshot state = s.latestState();
  for (std::uint64_t sequence = 1; sequence <= kContactCycles; ++sequence) {
    Command command;
    command.sequence = sequence;
    command.nv = s.model().nv;
    command.steps = 1;
    law.torques({state.q.data(), static_cast<std::size_t>(state.nq)},
                {state.v.data(), static_cast<std::size_t>(state.nv)},
                {command.tau.data(), static_cast<std::size_t>(command.nv)});
    if ((sequence / 100) % 4 == 1) command.base_wrench = {2.0, -3.0, 0.0, 0.0, 0.0, 0.1};
    ASSERT_TRUE(s.pushCommand(command));
    ASSERT_TRUE(s.waitForCycle(sequence, kNanosecondsPerSecond));
    state = s.latestState();
  }
  const test::HeapCounts after = test::allThreadsHeapCounts();
  s.stop();
  ASSERT_EQ(s.state(), SessionState::kStopped) << s.stats().fault;
  EXPECT_EQ(after.allocations - before.allocations, 0);
  EXPECT_EQ(after.deallocations - before.deallocations, 0);
  EXPECT_GT(state.contact_force[2], 0.0) << "a foot on the ground";
  EXPECT_GT(state.solver_max_iterations, 0);
}

// A shared worker's rounds: realtime sessions of several rates and watchdog policies, a
// lockstep and a free one on one worker, commands flowing in, one session paused and resumed and
// another started late (the worker takes a new member in), counting on the worker's thread.
TEST(RtThreadAllocations, NoneOnASharedWorkerOverTenThousandCycles) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  WorkersConfig w;
  w.count = 1;
  w.lock_memory = false;
  w.max_utilisation = 1.0;
  w.on_start = [] { test::beginHeapCounting(); };
  WorkerSet workers(w);
  const auto arm = std::make_shared<const Model>(loadModel("iiwa14"));
  std::vector<std::unique_ptr<Session>> sessions;
  const std::vector<std::pair<SessionMode, double>> kinds = {
      {SessionMode::kRealtime, 4000.0}, {SessionMode::kRealtime, 2000.0},
      {SessionMode::kRealtime, 1000.0}, {SessionMode::kRealtime, 500.0},
      {SessionMode::kLockstep, 1000.0}, {SessionMode::kFree, 1000.0}};
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    SessionConfig c;
    c.model = arm;
    c.mode = kinds[k].first;
    c.control_rate = kinds[k].second;
    c.thread.lock_memory = false;
    c.watchdog = WatchdogConfig{k % 2 ? WatchdogPolicy::kDamping : WatchdogPolicy::kZeroTorque, 3, 1.0};
    c.overrun = OverrunPolicy::kCatchUp;
    c.name = "shared-" + std::to_string(k);
    sessions.push_back(std::make_unique<Session>(c, &EventLogger::global(), &workers));
  }
  // let the worker's set-up and first idle pass happen before counting is compared
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const test::HeapCounts before = test::allThreadsHeapCounts();
  for (std::size_t k = 0; k + 1 < sessions.size(); ++k) ASSERT_TRUE(sessions[k]->start());
  std::atomic<bool> done{false};
  std::thread controller([&] {
    std::uint64_t sequence = 0;
    while (!done.load()) {
      ++sequence;
      for (auto& s : sessions) {
        Command command;
        command.sequence = sequence;
        command.nv = s->model().nv;
        for (int k = 0; k < command.nv; ++k) command.tau[k] = 0.1 * std::sin(1e-3 * sequence + k);
        if (sequence % 5 != 0) s->pushCommand(command);  // silences trip the watchdogs
        (void)s->latestState();
      }
      if (sequence == 500) sessions.back()->start();  // a member joins while the worker runs
      if (sequence == 700) sessions[1]->pause();
      if (sequence == 900) sessions[1]->resume();
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  const bool reached = sessions[2]->waitForCycle(kCycles / 4, 60 * kNanosecondsPerSecond);
  const test::HeapCounts after = test::allThreadsHeapCounts();
  done.store(true);
  controller.join();
  std::uint64_t cycles = 0;
  for (auto& s : sessions) cycles += s->stats().cycles;
  for (auto& s : sessions) s->stop();
  ASSERT_TRUE(reached) << sessionStateName(sessions[2]->state());
  EXPECT_GT(cycles, kCycles);
  EXPECT_GT(sessions[4]->stats().cycles, 100u) << "the lockstep session ran";
  EXPECT_GT(sessions.back()->stats().cycles, 100u) << "the late free session ran";
  EXPECT_EQ(after.allocations - before.allocations, 0);
  EXPECT_EQ(after.deallocations - before.deallocations, 0);
}

TEST(RtThreadAllocations, TheCounterSeesAnAllocationOnTheRtThread) {
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
  // a start hook that allocates after counting begins is seen: the test above can fail
  SessionConfig c;
  c.model = std::make_shared<const Model>(loadModel("pendulum"));
  c.mode = SessionMode::kLockstep;
  c.thread.lock_memory = false;
  c.on_rt_thread_start = [] {
    test::beginHeapCounting();
    static void* volatile sink;
    sink = new int(1);
    delete static_cast<int*>(sink);
  };
  const test::HeapCounts before = test::allThreadsHeapCounts();
  Session s(c);
  ASSERT_TRUE(s.start());
  s.requestSteps(1);
  ASSERT_TRUE(s.waitForCycle(1, kNanosecondsPerSecond));
  const test::HeapCounts after = test::allThreadsHeapCounts();
  s.stop();
  EXPECT_GE(after.allocations - before.allocations, 1);
}

}  // namespace
}  // namespace hilsim::rt
