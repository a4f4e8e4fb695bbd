// Shared workers (rt/worker.h, rt/worker_set.h): earliest-deadline-first order and per-session
// timing under a mix of rates on one worker, isolation from a diverging, a faulting and an
// overrunning neighbour, sessions created, started, paused, reset and closed while the worker
// runs, placement on the least-loaded worker and admission by measured cost.

#include "rt/worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <sched.h>
#include <string>
#include <memory>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/io/model_loader.h"
#include "tests/support/bundled_models.h"
#include "rt/session.h"
#include "rt/worker_set.h"

namespace hilsim::rt {
namespace {

constexpr Nanoseconds kSecond = kNanosecondsPerSecond;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

using test::arm;
using test::pendulum;

SessionConfig config(double rate, const std::string& name,
                     std::shared_ptr<const Model> model = pendulum()) {
  SessionConfig c;
  c.model = std::move(model);
  c.mode = SessionMode::kRealtime;
  c.control_rate = rate;
  c.thread.lock_memory = false;  // tests run unprivileged as well
  c.name = name;
  return c;
}

WorkersConfig oneWorker() {
  WorkersConfig w;
  w.count = 1;
  w.lock_memory = false;
  w.max_utilisation = 1.0;
  return w;
}

/// One REALTIME cycle as the worker started it: the session and its release and deadline.
struct CycleRecord {
  const SessionCore* session = nullptr;
  Nanoseconds release = 0, deadline = 0, chosen = 0;
  Nanoseconds period = 0;  // the session's, kept: the trace outlives the sessions
};

/// Records the cycles a worker runs into storage allocated up front (the worker's thread only).
class CycleTrace {
 public:
  explicit CycleTrace(std::size_t capacity) { records_.resize(capacity); }
  void record(const SessionCore& core, Nanoseconds release, Nanoseconds deadline,
              Nanoseconds chosen) {
    const std::size_t n = size_.load(std::memory_order_relaxed);
    if (n == records_.size()) return;
    records_[n] = {&core, release, deadline, chosen, core.period()};
    size_.store(n + 1, std::memory_order_release);
  }
  std::vector<CycleRecord> records() const {
    return {records_.begin(), records_.begin() + size_.load(std::memory_order_acquire)};
  }

 private:
  std::vector<CycleRecord> records_;
  std::atomic<std::size_t> size_{0};
};

TEST(Worker, RunsDueCyclesEarliestDeadlineFirstAndEverySessionAtItsRate) {
  CycleTrace trace(200'000);
  WorkersConfig w = oneWorker();
  w.on_cycle = [&](const SessionCore& core, Nanoseconds release, Nanoseconds deadline,
                   Nanoseconds chosen) { trace.record(core, release, deadline, chosen); };
  // In time as often as a dedicated thread at the same rate, beside them in the same second:
  // this host is no real-time host (an unpinned, unprivileged thread on a shared VM wakes up to
  // milliseconds late now and then; hilsim rt-probe's bare clock_nanosleep loop at 4 kHz misses
  // several per cent of its deadlines at times), and what the worker adds must not show. One
  // second of a shared VM can be unlucky for one thread and not the other, so the comparison is
  // the median of three seconds; the first one's trace and counts are checked in full below.
  const auto lateness = [](const SessionStats& stats) {
    return static_cast<double>(stats.timing.deadline_misses + stats.timing.skipped_cycles) /
           static_cast<double>(std::max<std::uint64_t>(
               stats.timing.cycles + stats.timing.skipped_cycles, 1));
  };
  const std::vector<double> rates = {100.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0};
  std::vector<double> excess;  // per second: worst 4 kHz session's lateness above the bound
  for (int run = 0; run < 3; ++run) {
    SCOPED_TRACE("second " + std::to_string(run + 1));
    WorkersConfig config_of_run = w;
    if (run > 0) config_of_run.on_cycle = nullptr;
    WorkerSet workers(config_of_run);
    std::vector<std::unique_ptr<Session>> sessions;
    for (const double rate : rates) {
      for (int copy = 0; copy < 2; ++copy) {
        sessions.push_back(std::make_unique<Session>(
            config(rate, "mix-" + std::to_string(static_cast<int>(rate)) + "-" +
                             std::to_string(copy)),
            &EventLogger::global(), &workers));
      }
    }
    Session baseline(config(4000.0, "dedicated-4000"));  // a thread of its own
    ASSERT_TRUE(baseline.start());
    for (auto& s : sessions) ASSERT_TRUE(s->start());
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    for (auto& s : sessions) ASSERT_TRUE(s->stop());
    ASSERT_TRUE(baseline.stop());

    for (std::size_t i = 0; i < sessions.size(); ++i) {
      const SessionStats stats = sessions[i]->stats();
      SCOPED_TRACE(sessions[i]->config().name);
      EXPECT_EQ(stats.worker, 0);
      // every period of wall-clock time while running is a cycle, run or (late, under the skip
      // policy) dropped and counted: the schedule holds whatever the host's wake-up latency
      const double expected = stats.wall_time_running * sessions[i]->config().control_rate;
      EXPECT_NEAR(static_cast<double>(stats.timing.cycles + stats.timing.skipped_cycles),
                  expected, 0.01 * expected + 2.0);
    }
    const double dedicated_late = lateness(baseline.stats());
    double worst = 0.0;
    for (std::size_t i = sessions.size() - 2; i < sessions.size(); ++i) {  // the 4 kHz ones
      worst = std::max(worst, lateness(sessions[i]->stats()));
    }
    excess.push_back(worst - (2.0 * dedicated_late + 0.01));
    std::printf("second %d: 4 kHz on the worker late in %.2f %% of cycles, dedicated %.2f %%\n",
                run + 1, 100.0 * worst, 100.0 * dedicated_late);
  }
  // (Not under a sanitizer: ThreadSanitizer makes every cycle 5 to 15 times dearer, which loads
  // the one worker with twelve sessions' cycles and not the dedicated thread with its one.)
  std::sort(excess.begin(), excess.end());
  if (!kSanitized) {
    EXPECT_LE(excess[1], 0.0) << "the median second: at most twice a dedicated thread's "
                                 "lateness + 1 % (the excess is the margin over it)";
  }

  // Earliest deadline first: a cycle never runs while a cycle of an earlier deadline was
  // already due when it was chosen, unless that one's session missed its previous deadline (a late
  // session runs once per round of the worker: the isolation rule). Releases are aligned on
  // multiples of each period, so every 10 ms all twelve sessions are due at once. A cycle ends
  // before the worker chooses its next one.
  const std::vector<CycleRecord> records = trace.records();
  ASSERT_GT(records.size(), 5000u);
  std::map<const SessionCore*, std::size_t> previous;  // a session's record before the current
  std::vector<bool> after_a_miss(records.size(), false);
  for (std::size_t k = 0; k < records.size(); ++k) {
    const auto it = previous.find(records[k].session);
    if (it != previous.end() && it->second + 1 < records.size()) {
      after_a_miss[k] = records[it->second + 1].chosen > records[it->second].deadline;
    }
    previous[records[k].session] = k;
  }
  std::size_t inversions = 0, shared_releases = 0, excused = 0;
  for (std::size_t k = 0; k + 1 < records.size(); ++k) {
    const CycleRecord& a = records[k];
    const CycleRecord& b = records[k + 1];
    if (b.release > a.chosen) continue;  // b was not yet due when a was chosen
    ++shared_releases;
    if (b.deadline >= a.deadline) continue;
    if (after_a_miss[k + 1]) ++excused;
    else ++inversions;
  }
  EXPECT_GT(shared_releases, 1000u);
  EXPECT_EQ(inversions, 0u) << excused << " cycles of late sessions waited for their next round";
  const auto off_grid = std::count_if(records.begin(), records.end(), [](const CycleRecord& r) {
    return r.release % r.period != 0;
  });
  EXPECT_EQ(off_grid, 0) << "releases lie on multiples of the period";
}

TEST(Worker, ADivergingAFaultingAndAnOverrunningSessionDoNotMakeTheirNeighboursMiss) {
  WorkersConfig w = oneWorker();
  w.max_utilisation = 10.0;  // admission would refuse the overrunning session: here it must run
  CycleTrace trace(100'000);
  w.on_cycle = [&](const SessionCore& core, Nanoseconds release, Nanoseconds deadline,
                   Nanoseconds chosen) { trace.record(core, release, deadline, chosen); };
  WorkerSet workers(w);
  // the overrunning session: iiwa14 at 1 kHz with enough substeps for a cycle of about 2 ms,
  // measured on this machine (and build): it misses every deadline and skips
  SessionConfig slow = config(1000.0, "overrun", arm());
  {
    Session probe(slow);
    const Nanoseconds per_substep = std::max<Nanoseconds>(probe.measureCycleCost(), 1);
    slow.substeps = static_cast<int>(std::clamp<Nanoseconds>(2'000'000 / per_substep, 1, 1000));
  }
  slow.overrun = OverrunPolicy::kSkip;
  Session overrun(slow, &EventLogger::global(), &workers);
  ASSERT_GT(overrun.cycleCost(), 1'000'000) << "its cycle must outlast its period";

  SessionConfig diverging_config = config(1000.0, "diverging");
  diverging_config.max_speed = 0.05;  // the falling pendulum passes it within a few cycles
  diverging_config.initial_q = Eigen::VectorXd::Constant(1, 1.0);
  Session diverging(diverging_config, &EventLogger::global(), &workers);
  Session faulting(config(1000.0, "faulting"), &EventLogger::global(), &workers);

  // neighbours at 100 Hz: 10 ms periods, room for one of the slow session's cycles and theirs
  std::vector<std::unique_ptr<Session>> neighbours;
  for (int k = 0; k < 6; ++k) {
    neighbours.push_back(std::make_unique<Session>(config(100.0, "neighbour-" + std::to_string(k)),
                                                   &EventLogger::global(), &workers));
  }
  for (auto& s : neighbours) ASSERT_TRUE(s->start());
  ASSERT_TRUE(overrun.start());
  ASSERT_TRUE(diverging.start());
  ASSERT_TRUE(faulting.start());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Command bad;
  bad.nv = 1;
  bad.tau[0] = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(faulting.pushCommand(bad));
  std::this_thread::sleep_for(std::chrono::milliseconds(900));

  EXPECT_EQ(diverging.state(), SessionState::kFaulted);
  EXPECT_EQ(diverging.stats().fault_info.kind, FaultKind::kExplodingState);
  EXPECT_EQ(faulting.state(), SessionState::kFaulted);
  EXPECT_EQ(faulting.stats().fault_info.kind, FaultKind::kNonFiniteCommand);
  const SessionStats slow_stats = overrun.stats();
  EXPECT_EQ(overrun.state(), SessionState::kRunning);
  EXPECT_GT(slow_stats.timing.deadline_misses, 100u);
  EXPECT_GT(slow_stats.timing.skipped_cycles, 100u);
  for (auto& s : neighbours) {
    const SessionStats stats = s->stats();
    SCOPED_TRACE(s->config().name);
    EXPECT_EQ(s->state(), SessionState::kRunning);
    EXPECT_GE(stats.timing.cycles, 80u);
    // A host stall of about 10 ms (this shared VM has them now and then) makes every thread
    // miss once; more would be the worker's doing.
    EXPECT_LE(stats.timing.deadline_misses, 1u);
  }
  // The isolation property itself, from the worker's own order: after a neighbour's cycle came
  // due, the worker chose at most one cycle of the slow session before it — none while the slow
  // one is late (it waits for the sessions in time), one by earliest deadline when its last cycle
  // happened to end in time — besides the slow cycle that may be running at the release (cycles
  // are not pre-empted).
  const std::vector<CycleRecord> records = trace.records();
  std::size_t checked = 0, worst = 0;
  for (std::size_t k = 0; k < records.size(); ++k) {
    if (records[k].session == &overrun || records[k].session == &diverging ||
        records[k].session == &faulting) {
      continue;
    }
    std::size_t slow_cycles = 0;
    for (std::size_t j = k; j-- > 0 && records[j].chosen >= records[k].release;) {
      if (records[j].session == &overrun) ++slow_cycles;
    }
    worst = std::max(worst, slow_cycles);
    ++checked;
  }
  EXPECT_GT(checked, 400u);
  EXPECT_LE(worst, 1u) << "slow cycles chosen while a neighbour's cycle was due";
}

TEST(Worker, SessionsComeAndGoWhileTheWorkerRuns) {
  WorkersConfig w = oneWorker();
  w.capacity = 16;
  WorkerSet workers(w);
  std::vector<std::unique_ptr<Session>> steady;
  for (int k = 0; k < 4; ++k) {
    steady.push_back(std::make_unique<Session>(config(1000.0, "steady-" + std::to_string(k)),
                                               &EventLogger::global(), &workers));
    ASSERT_TRUE(steady.back()->start());
  }
  const Nanoseconds until = monotonicNow() + kSecond;
  int round = 0;
  while (monotonicNow() < until) {
    ++round;
    SessionConfig c = config(round % 2 ? 500.0 : 2000.0, "churn-" + std::to_string(round));
    if (round % 3 == 0) c.mode = SessionMode::kLockstep;
    auto s = std::make_unique<Session>(c, &EventLogger::global(), &workers);
    ASSERT_TRUE(s->start());
    if (c.mode == SessionMode::kLockstep) {
      s->requestSteps(5);
      EXPECT_TRUE(s->waitForCycle(5, kSecond));
      EXPECT_EQ(s->stats().cycles, 5u);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(s->pause());
    const std::uint64_t paused_at = s->publishedCycle();
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    // the cycle the worker was in when pause() came may end; none starts after it
    const std::uint64_t settled = s->publishedCycle();
    EXPECT_LE(settled, paused_at + 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    EXPECT_EQ(s->publishedCycle(), settled) << "a paused session runs no cycle";
    ASSERT_TRUE(s->resume());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s->reset();
    EXPECT_EQ(s->state(), SessionState::kCreated);
    EXPECT_EQ(s->publishedCycle(), 0u);
    ASSERT_TRUE(s->start());
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (round % 2 == 0) {
      ASSERT_TRUE(s->stop());
    }
    // destroyed running or stopped: it leaves the worker either way
  }
  EXPECT_GT(round, 20);
  EXPECT_EQ(workers.stats()[0].sessions, 4);
  for (auto& s : steady) {
    const SessionStats stats = s->stats();
    EXPECT_EQ(s->state(), SessionState::kRunning);
    // every period run or dropped and counted, while sessions came and went beside them
    EXPECT_NEAR(static_cast<double>(stats.timing.cycles + stats.timing.skipped_cycles),
                1000.0 * stats.wall_time_running, 0.01 * 1000.0 * stats.wall_time_running + 2.0);
  }
}

// Where a session runs does not change what it computes: lockstep on a shared worker (whose
// admission ran 15 cycles of the model to measure it) and on a thread of its own, the same
// commands, the same states bit for bit.
TEST(Worker, LockstepOnAWorkerEqualsLockstepOnItsOwnThreadBitForBit) {
  WorkerSet workers(oneWorker());
  SessionConfig c = config(1000.0, "lockstep", arm());
  c.mode = SessionMode::kLockstep;
  Session shared(c, &EventLogger::global(), &workers);
  Session own(c);
  ASSERT_EQ(shared.stats().worker, 0);
  ASSERT_EQ(own.stats().worker, -1);
  ASSERT_TRUE(shared.start());
  ASSERT_TRUE(own.start());
  for (std::uint64_t k = 1; k <= 300; ++k) {
    Command command;
    command.sequence = k;
    command.nv = shared.model().nv;
    for (int j = 0; j < command.nv; ++j) command.tau[j] = 5.0 * std::sin(0.01 * k + j);
    ASSERT_TRUE(shared.pushCommand(command));
    ASSERT_TRUE(own.pushCommand(command));
    ASSERT_TRUE(shared.waitForCycle(k, kSecond));
    ASSERT_TRUE(own.waitForCycle(k, kSecond));
  }
  const StateSnapshot a = shared.latestState(), b = own.latestState();
  ASSERT_EQ(a.cycle, 300u);
  ASSERT_EQ(b.cycle, 300u);
  EXPECT_EQ(std::memcmp(a.q.data(), b.q.data(), sizeof(double) * a.nq), 0);
  EXPECT_EQ(std::memcmp(a.v.data(), b.v.data(), sizeof(double) * a.nv), 0);
}

TEST(Worker, SessionsGoToTheLeastLoadedWorkerAndAreRefusedPastTheBound) {
  WorkersConfig w = oneWorker();
  w.count = 2;
  WorkerSet workers(w);
  // the arm at 4 kHz costs more than the pendulum at 100 Hz: the second goes to the other worker
  Session heavy(config(4000.0, "heavy", arm()), &EventLogger::global(), &workers);
  Session light(config(100.0, "light"), &EventLogger::global(), &workers);
  Session third(config(100.0, "third"), &EventLogger::global(), &workers);
  EXPECT_GT(heavy.load(), light.load());
  EXPECT_NE(heavy.stats().worker, light.stats().worker);
  EXPECT_EQ(third.stats().worker, light.stats().worker);
  const std::vector<WorkerStats> stats = workers.stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].sessions + stats[1].sessions, 3);
  EXPECT_NEAR(stats[heavy.stats().worker].load, heavy.load(), 1e-12);

  // a bound of 1 % of a core: a pendulum at 100 Hz (about 0.005 %) is taken, an arm at 4 kHz
  // with 20 substeps (about 40 %; several times that under a sanitizer) is refused, with the
  // loads in the message
  WorkersConfig tight = oneWorker();
  tight.max_utilisation = 0.01;
  WorkerSet bounded(tight);
  Session first(config(100.0, "first"), &EventLogger::global(), &bounded);
  SessionConfig heavier = config(4000.0, "second", arm());
  heavier.substeps = 20;
  try {
    Session second(heavier, &EventLogger::global(), &bounded);
    ADD_FAILURE() << "an arm at 4 kHz and 20 substeps passes a bound of 1 %";
  } catch (const AdmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("worker 0 at"), std::string::npos) << e.what();
  }
  // a dedicated session is not counted against the workers
  SessionConfig dedicated = config(4000.0, "dedicated", arm());
  dedicated.dedicated_thread = true;
  Session own(dedicated, &EventLogger::global(), &bounded);
  EXPECT_EQ(own.stats().worker, -1);
  ASSERT_TRUE(own.start());
  ASSERT_TRUE(own.waitForCycle(10, kSecond));
  EXPECT_EQ(bounded.stats()[0].sessions, 1);
  // nor is a parallel formulation's session: its pool's helpers spin between passes
  SessionConfig parallel = config(100.0, "parallel", arm());
  parallel.formulation = Formulation::kHdca;
  parallel.threads = 2;
  Session pooled(parallel, &EventLogger::global(), &bounded);
  EXPECT_EQ(pooled.stats().worker, -1);
  EXPECT_EQ(bounded.stats()[0].sessions, 1);
}

// A parallel session's own thread runs on the workers' CPUs as its helpers do, on the one after
// theirs; a CPU the session names itself wins.
TEST(ParallelSession, OwnThreadRunsOnTheWorkersCpus) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (!CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed)) GTEST_SKIP() << "CPUs 0 and 1 not ours";
  // {CPUs, the CPU the session names, where its thread must run}: the helper on the first CPU,
  // the session's own thread on the second
  const std::array<std::tuple<std::vector<int>, int, int>, 4> cases{
      {{{1, 0}, -1, 0}, {{0, 1}, -1, 1}, {{1, 0}, 1, 1}, {{0, 1}, 0, 0}}};
  for (const auto& [cpus, named, expected] : cases) {
    SessionConfig parallel = config(100.0, "parallel", arm());
    parallel.formulation = Formulation::kHdca;
    parallel.threads = 2;
    parallel.pool_cpus = cpus;
    parallel.thread.cpu = named;
    std::atomic<int> ran_on{-1};
    parallel.on_rt_thread_start = [&ran_on] { ran_on.store(sched_getcpu()); };
    Session pooled(parallel, &EventLogger::global());
    ASSERT_TRUE(pooled.start());
    ASSERT_TRUE(pooled.waitForCycle(5, kSecond));
    EXPECT_EQ(ran_on.load(), expected)
        << "CPUs " << cpus[0] << ", " << cpus[1] << "; named " << named;
    EXPECT_TRUE(pooled.stop());
  }
}

}  // namespace
}  // namespace hilsim::rt
