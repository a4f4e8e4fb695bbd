// The worker pool the parallel formulations run on (rt/worker_pool.h): every item once, on every
// thread count; hdca's steps (trees, and closed loops in (q, P)) bit for bit the same on 1, 2 and
// 4 threads; no allocation in a parallel step on any of the pool's threads. Under
// ThreadSanitizer in CI (label rt).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

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

std::vector<std::shared_ptr<Model>> parallelModels() {
  std::vector<std::shared_ptr<Model>> out;
  for (GeneratedShape shape : {GeneratedShape::kTree, GeneratedShape::kChain}) {
    SystemSpec spec;
    spec.shape = shape;
    spec.bodies = shape == GeneratedShape::kTree ? 127 : 64;
    out.push_back(std::make_shared<Model>(generateSystem(spec, generatedShapeName(shape).data())));
  }
  out.push_back(std::make_shared<Model>(test::pinnedArc(64)));
  return out;
}

// A 127-body binary tree, a 64-body chain and the 64-body chain pinned into a loop under hdca's
// RK4 (q, p), levels of 8 and more nodes on the workers: the same q and v, bit for bit, on 1, 2
// and 4 threads
TEST(WorkerPool, HdcaStepsAreBitIdenticalOnEveryThreadCount) {
  for (const auto& model : parallelModels()) {
    std::vector<Eigen::VectorXd> q, v;
    for (int threads : {1, 2, 4}) {
      WorkerPool pool(threads);
      Simulator sim(model, Formulation::kHdca, Integrator::kRk4, 1e-3);
      sim.setExecutor(&pool);
      ASSERT_TRUE(sim.momentumState());
      const Eigen::VectorXd tau = Eigen::VectorXd::Constant(model->nv, 0.1);
      for (int k = 0; k < 10; ++k) sim.step(tau);
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

// Runs fn once on each of the pool's threads (its static shares: item k on thread k), and
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
  parallelFor(&pool, pool.concurrency(), body);
  for (int a = 0; a < pool.concurrency(); ++a)
    for (int b = 0; b < a; ++b) EXPECT_NE(ran_on[a], ran_on[b]);
}

TEST(WorkerPool, ParallelHdcaStepsAllocateNothingOnAnyThread) {
  // 1000 steps of a tree and of a closed loop with counting on in the caller and the worker
  if (!test::kAllocationHooks) GTEST_SKIP() << "allocation hooks are off in this build";
  SystemSpec spec;
  spec.shape = GeneratedShape::kTree;
  spec.bodies = 31;
  for (const auto& model : {std::make_shared<Model>(generateSystem(spec, "tree")),
                            std::make_shared<Model>(test::pinnedArc(32))}) {
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
