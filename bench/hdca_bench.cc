// The Hamiltonian divide-and-conquer formulation (docs/HDCA.md, docs/PERFORMANCE.md "Hamiltonian
// divide-and-conquer"): one evaluation of Hamilton's equations (v and ṗ at (q, p), the assembly
// included) on generated chains and binary trees of 8 to 4096 rods, on 1 and 2 threads of one
// WorkerPool, beside aba's forward dynamics at the same state in the same run; and on the chains
// pinned into one loop (tests/support/random_model.h, pinnedArc): hdca's (q, P) evaluation with
// the loop at velocity level (engine/algorithms/hdca_loops.h) beside aba with the constraint
// stage's closure at acceleration level. Counters: the
// assembly's levels (its span in node steps) and the speed-up the level structure allows on P
// threads, Σ items / Σ ⌈items_l / P⌉ over the up and down levels (equal cost per node; the
// sequential sweeps excluded). And the round trip of a cache line between two cores.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/generated_systems.h"
#include "engine/algorithms/aba.h"
#include "engine/algorithms/hdca.h"
#include "engine/algorithms/hdca_loops.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "rt/worker_pool.h"
#include "tests/support/random_model.h"

namespace hilsim::bench {
namespace {

struct Setup : GeneratedState {
  std::unique_ptr<Data> data;
  Eigen::VectorXd p, v_out, p_dot;
};

Setup* makeSetup(GeneratedShape shape, int bodies) {
  auto* s = new Setup{generatedState(shape, JointType::kRevolute, bodies), {}, {}, {}, {}};
  s->data = std::make_unique<Data>(s->model, DataWorkspace::kDivideAndConquer);
  s->p.resize(s->model.nv);
  s->v_out.resize(s->model.nv);
  s->p_dot.resize(s->model.nv);
  hdcaMomenta(s->model, *s->data, s->q, s->v, s->p);
  return s;
}

// Σ items / Σ ⌈items / threads⌉ over the levels of `begin`
double levelBound(const std::vector<int>& begin, int threads) {
  double items = 0.0, rounds = 0.0;
  for (std::size_t l = 0; l + 1 < begin.size(); ++l) {
    const int n = begin[l + 1] - begin[l];
    items += n;
    rounds += (n + threads - 1) / threads;
  }
  return items / rounds;
}

void benchRates(benchmark::State& state, Setup* s, rt::WorkerPool* pool) {
  Data& data = *s->data;
  data.executor = pool;
  const std::uint64_t calls = pool ? pool->calls() : 0, wakes = pool ? pool->wakes() : 0;
  for (auto _ : state) {
    hdcaMomentumRates(s->model, data, s->q, s->p, s->tau, s->v_out, s->p_dot);
    benchmark::DoNotOptimize(s->p_dot.data());
  }
  data.executor = nullptr;
  if (pool != nullptr) {  // hand-overs to the workers per evaluation, and futex wakes among them
    const double n = static_cast<double>(state.iterations());
    state.counters["handovers"] = static_cast<double>(pool->calls() - calls) / n;
    state.counters["wakes"] = static_cast<double>(pool->wakes() - wakes) / n;
  }
  const AssemblyTree& tree = data.hdca.tree;
  state.counters["bodies"] = s->model.nbodies - 1;
  state.counters["levels"] = tree.upLevels() + tree.downLevels();
  state.counters["corrections"] = data.hdca.corrections;
  for (int p : {2, 4, 16, 64}) {
    std::vector<int> all = tree.up_begin;  // the up and down levels one after the other
    const int offset = all.back();
    for (std::size_t l = 1; l < tree.down_begin.size(); ++l) all.push_back(offset + tree.down_begin[l]);
    state.counters["bound_" + std::to_string(p)] = levelBound(all, p);
  }
}

void benchAba(benchmark::State& state, Setup* s) {
  for (auto _ : state) benchmark::DoNotOptimize(aba(s->model, *s->data, s->q, s->v, s->tau).data());
  state.counters["bodies"] = s->model.nbodies - 1;
}

// A chain pinned into a loop at its initial configuration, v on the closure (the stage's
// assembly projects a ramp of joint rates), P = M v
struct LoopSetup {
  Model model;
  std::unique_ptr<Data> data;
  std::unique_ptr<HdcaLoops> loops;
  std::unique_ptr<ConstraintRowStage> stage;
  Eigen::VectorXd q, v, tau, P, v_out, P_dot;
};

LoopSetup* makeLoopSetup(int bodies) {
  auto* s = new LoopSetup{test::pinnedArc(bodies), {}, {}, {}, {}, {}, {}, {}, {}, {}};
  const Model& model = s->model;
  s->data = std::make_unique<Data>(model);
  s->loops = std::make_unique<HdcaLoops>(model);
  s->stage = std::make_unique<ConstraintRowStage>(model, formulationInfo(Formulation::kAba));
  s->q = model.initialConfiguration();
  s->v = Eigen::VectorXd::LinSpaced(model.nv, -1.0, 1.0);
  s->stage->assemble(model, *s->data, s->q, s->v);
  s->tau = Eigen::VectorXd::Constant(model.nv, 0.1);
  s->P.resize(model.nv);
  s->v_out.resize(model.nv);
  s->P_dot.resize(model.nv);
  hdcaMomenta(model, *s->data, s->q, s->v, s->P);
  return s;
}

void benchLoopRates(benchmark::State& state, LoopSetup* s, rt::WorkerPool* pool) {
  Data& data = *s->data;
  data.executor = pool;
  for (auto _ : state) {
    s->loops->momentumRates(s->model, data, s->q, s->P, s->tau, s->v_out, s->P_dot);
    benchmark::DoNotOptimize(s->P_dot.data());
  }
  data.executor = nullptr;
  state.counters["bodies"] = s->model.nbodies - 1;
  state.counters["rows"] = s->loops->rowsSolved();
}

void benchLoopAba(benchmark::State& state, LoopSetup* s) {
  Data& data = *s->data;
  for (auto _ : state) {
    aba(s->model, data, s->q, s->v, s->tau);
    s->stage->accelerations(s->model, data, s->q, s->v, s->tau, data.qdd);
    benchmark::DoNotOptimize(data.qdd.data());
  }
  state.counters["bodies"] = s->model.nbodies - 1;
}

// What a cache line takes to go to the other core and back: one thread stores, the other answers.
// Two threads share every body at the boundary of their ranges and every stamp they wait for, so
// their speed-up follows this figure, which on a virtual machine changes with where the host puts
// its CPUs (docs/PERFORMANCE.md, "Hamiltonian divide-and-conquer")
void benchCoreRoundTrip(benchmark::State& state) {
  alignas(64) std::atomic<int> turn{0};
  std::thread other([&] {
    for (;;) {
      int seen;
      while ((seen = turn.load(std::memory_order_acquire)) == 0) spinPause();
      if (seen < 0) return;
      turn.store(0, std::memory_order_release);
    }
  });
  for (auto _ : state) {
    turn.store(1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 0) spinPause();
  }
  turn.store(-1, std::memory_order_release);
  other.join();
}

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  using namespace hilsim;
  static rt::WorkerPool two(2);  // created once for the run, as a session creates its pool
  for (const auto& [shape, shape_name] :
       {std::pair{GeneratedShape::kChain, "chain"}, std::pair{GeneratedShape::kTree, "tree"}}) {
    for (const int bodies : {8, 64, 256, 1024, 4096}) {
      bench::Setup* s = bench::makeSetup(shape, bodies);  // lives for the whole run
      const std::string suffix = std::string("/") + shape_name + "/" + std::to_string(bodies);
      benchmark::RegisterBenchmark(("aba" + suffix).c_str(), bench::benchAba, s);
      benchmark::RegisterBenchmark(("hdca_1thread" + suffix).c_str(), bench::benchRates, s,
                                   nullptr);
      benchmark::RegisterBenchmark(("hdca_2threads" + suffix).c_str(), bench::benchRates, s,
                                   &two);
    }
  }
  for (const int bodies : {8, 64, 256, 1024, 4096}) {
    bench::LoopSetup* s = bench::makeLoopSetup(bodies);  // lives for the whole run
    const std::string suffix = "/pinned_chain/" + std::to_string(bodies);
    benchmark::RegisterBenchmark(("aba_stage" + suffix).c_str(), bench::benchLoopAba, s);
    benchmark::RegisterBenchmark(("hdca_1thread" + suffix).c_str(), bench::benchLoopRates, s,
                                 nullptr);
    benchmark::RegisterBenchmark(("hdca_2threads" + suffix).c_str(), bench::benchLoopRates, s,
                                 &two);
  }
  benchmark::RegisterBenchmark("core_round_trip", bench::benchCoreRoundTrip);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
