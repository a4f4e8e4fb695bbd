// The worker pool the parallel formulations run on (rt/worker_pool.h): every item once, on every
// thread count; hdca's steps (trees, and closed loops in (q, P)) bit for bit the same on 1, 2 and
// 4 threads; no allocation in a parallel step on any of the pool's threads. Under
// ThreadSanitizer in CI (label rt).
#include <gtest/gtest.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "engine/algorithms/hdca.h"
#include "engine/builder/system_generator.h"
#include "engine/integrators/simulator.h"
#include "rt/worker_pool.h"
#include "tests/support/allocation_hooks.h"
#include "tests/support/random_model.h"

namespace hilsim::rt {
namespace {

TEST(WorkerPool, RunsEveryItemOnceForEveryCount) {
  for (int threads : {1, 2, 3, 4}) {
    WorkerPool pool(threads);
    EXPECT_EQ(pool.concurrency(), threads);
    for (int count : {0, 1, 2, 3, 7, 64, 1000}) {
      std::vector<std::atomic<int>> seen(count);
      auto body = [&](int begin, int end) {
        for (int k = begin; k < end; ++k) seen[k].fetch_add(1, std::memory_order_relaxed);
      };
      for (int round = 0; round < 20; ++round) parallelFor(&pool, count, body);
      for (int k = 0; k < count; ++k) ASSERT_EQ(seen[k].load(), 20) << threads << " " << count;
    }
  }
}

TEST(WorkerPool, SleepingWorkersAreWokenForTheNextCall) {
  WorkerPool pool(2, /*spin=*/0);  // workers sleep at once
  std::atomic<int> sum{0};
  auto body = [&](int begin, int end) { sum.fetch_add(end - begin); };
  for (int round = 0; round < 50; ++round) parallelFor(&pool, 10, body);
  EXPECT_EQ(sum.load(), 500);
  EXPECT_EQ(pool.calls(), 50u);
}

TEST(WorkerPool, RunOnEveryThreadRunsItsItemsAtTheSameTime) {
  // each item waits until every item has started: it returns only if they all run at once
  for (int threads : {1, 2, 3, 4}) {
    WorkerPool pool(threads);
    std::atomic<int> started{0};
    std::vector<std::atomic<int>> seen(threads);
    std::atomic<bool> all_met{true};
    auto body = [&](int begin, int end) {
      for (int k = begin; k < end; ++k) {
        seen[k].fetch_add(1, std::memory_order_relaxed);
        started.fetch_add(1, std::memory_order_acq_rel);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load(std::memory_order_acquire) < threads)
          if (std::chrono::steady_clock::now() > deadline) {
            all_met.store(false);
            break;
          }
      }
    };
    runOnEveryThread(&pool, body);
    EXPECT_TRUE(all_met.load()) << threads;
    for (int t = 0; t < threads; ++t) EXPECT_EQ(seen[t].load(), 1) << threads;
  }
}

std::vector<std::shared_ptr<Model>> parallelModels() {
  std::vector<std::shared_ptr<Model>> out;
  for (GeneratedShape shape : {GeneratedShape::kTree, GeneratedShape::kChain}) {
    SystemSpec spec;
    spec.shape = shape;
    // every pass split among the threads (hdcaSplitsPasses, asserted by the tests)
    spec.bodies = 520;
    out.push_back(std::make_shared<Model>(generateSystem(spec, generatedShapeName(shape).data())));
  }
  out.push_back(std::make_shared<Model>(test::pinnedArc(520)));
  return out;
}

// A 520-body binary tree, a 520-body chain and a 520-body arc pinned into a loop under hdca's
// RK4 (q, p), every pass of the assembly tree split among the threads: the same q and v, bit for
// bit, on 1, 2 and 4 threads
// The helpers run on the CPUs given (the server's rt.workers.cpus), each on its own in turn.
TEST(WorkerPool, HelpersArePinnedToTheCpusGiven) {
  const int cpus = static_cast<int>(std::thread::hardware_concurrency());
  if (cpus < 2) GTEST_SKIP() << "one CPU";
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  if (!CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed)) GTEST_SKIP() << "CPUs 0 and 1 not ours";
  WorkerPool pool(3, 0, {1, 0});
  std::array<std::atomic<int>, 3> ran_on{};
  struct Context {
    std::array<std::atomic<int>, 3>* ran_on;
  } context{&ran_on};
  for (int repeat = 0; repeat < 20; ++repeat) {  // a migration would show in one of them
    pool.runOnEveryThread(
        [](void* c, int begin, int) {
          (*static_cast<Context*>(c)->ran_on)[static_cast<std::size_t>(begin)].store(sched_getcpu());
        },
        &context);
    EXPECT_EQ(ran_on[1].load(), 1);
    EXPECT_EQ(ran_on[2].load(), 0);
  }
}

TEST(WorkerPool, HdcaStepsAreBitIdenticalOnEveryThreadCount) {
  for (const auto& model : parallelModels()) {
    ASSERT_TRUE(hdcaSplitsPasses(buildAssemblyTree(*model))) << model->name;
    std::vector<Eigen::VectorXd> q, v;
    for (int threads : {1, 2, 4}) {
      WorkerPool pool(threads);
      Simulator sim(model, Formulation::kHdca, Integrator::kRk4, 1e-3);
      sim.setExecutor(&pool);
      ASSERT_TRUE(sim.momentumState());
      const Eigen::VectorXd tau = Eigen::VectorXd::Constant(model->nv, 0.1);
      for (int k = 0; k < 4; ++k) sim.step(tau);
      q.push_back(sim.q());
      v.push_back(sim.v());
    }
    for (std::size_t k = 1; k < q.size(); ++k) {
      EXPECT_TRUE(q[k] == q[0]) << model->name << " threads #" << k;
      EXPECT_TRUE(v[k] == v[0]) << model->name << " threads #" << k;
    }
    EXPECT_GT(v[0].norm(), 0.0);
  }
}

// Runs fn once on each of the pool's threads (runOnEveryThread: item k on thread k), and
// checks that they were distinct threads; allocates nothing (it turns the counting on and off)
template <typename Fn>
void onEveryThread(WorkerPool& pool, Fn fn) {
  std::array<std::thread::id, 8> ran_on{};
  ASSERT_LE(pool.concurrency(), static_cast<int>(ran_on.size()));
  auto body = [&](int begin, int end) {
    for (int k = begin; k < end; ++k) {
      fn();
      ran_on[k] = std::this_thread::get_id();
    }
  };
  runOnEveryThread(&pool, body);
  for (int a = 0; a < pool.concurrency(); ++a)
    for (int b = 0; b < a; ++b) EXPECT_NE(ran_on[a], ran_on[b]);
}

TEST(WorkerPool, ParallelHdcaStepsAllocateNothingOnAnyThread) {
  // 1000 steps of a tree and of a closed loop with counting on in the caller and the worker
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocation hooks are off in this build";
  SystemSpec spec;
  spec.shape = GeneratedShape::kTree;
  spec.bodies = 520;
  for (const auto& model : {std::make_shared<Model>(generateSystem(spec, "tree")),
                            std::make_shared<Model>(test::pinnedArc(520))}) {
    ASSERT_TRUE(hdcaSplitsPasses(buildAssemblyTree(*model))) << model->name;  // every pass
    WorkerPool pool(2);
    Simulator sim(model, Formulation::kHdca, Integrator::kRk4, 1e-3);
    sim.setExecutor(&pool);
    ASSERT_TRUE(sim.momentumState());
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    sim.step(tau);
    const test::HeapCounts before = test::allThreadsHeapCounts();
    onEveryThread(pool, [] { test::beginHeapCounting(); });
    for (int k = 0; k < 1000; ++k) sim.step(tau);
    onEveryThread(pool, [] { test::endHeapCounting(); });
    const test::HeapCounts after = test::allThreadsHeapCounts();
    EXPECT_EQ(after.allocations - before.allocations, 0) << model->name;
    EXPECT_EQ(after.deallocations - before.deallocations, 0) << model->name;
  }
}

}  // namespace
}  // namespace hilsim::rt
