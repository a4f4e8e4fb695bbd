// Closed-loop dynamics (docs/LOOPS.md, docs/PERFORMANCE.md "Loops"): on each loop model, the
// forward dynamics of every formulation with the constraint stage (fd_<formulation>_loops) beside
// the same tree without its closures (fd_<formulation>_tree), one RK4 step of each
// (rk4_step_loops, rk4_step_tree), and MuJoCo's mj_forward on the same mechanism with its loop as
// an equality constraint (mj_forward_eq, the four-bar), at the same states, in the same run; and
// the stage's factorisation and solve alone (pivoted_cholesky/n).
//
// Models: the bundled four_bar (3 joints, 5 rows) and delta (9 coordinates, 6 rows), and
// random24: a random spatial tree of 24 revolute and prismatic joints closed by three ball joints
// and one weld, drawn until its 15 rows are independent: the mechanism of the peer figure in
// PEERS-PERFORMANCE §1.7.
// Every iteration takes the next of kStates assembled states (the trajectory of a simulation).
#include <benchmark/benchmark.h>

#include <cassert>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <Eigen/LU>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/builder/closure_builder.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/constraints/pivoted_cholesky.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "tests/support/random_model.h"

#ifdef HILSIM_BENCH_MUJOCO
#include "tests/support/mujoco_model.h"
#endif

namespace hilsim::bench {
namespace {

constexpr int kStates = 16;  // a power of two

bool swing(const std::shared_ptr<const Model>& model, std::vector<Eigen::VectorXd>& q,
           std::vector<Eigen::VectorXd>& v, std::vector<Eigen::VectorXd>& tau);

// Whether the closure rows of `model` are independent at q (J of full row rank).
bool independentRows(const Model& model, const Eigen::VectorXd& q) {
  Data data(model, DataWorkspace::kPerBody);
  Eigen::MatrixXd J(model.nconstraints, model.nv);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {nullptr, &J, nullptr, nullptr});
  return Eigen::FullPivLU<Eigen::MatrixXd>(J).rank() == model.nconstraints;
}

Model random24() {
  std::mt19937 rng(24);
  const ClosureType types[] = {ClosureType::kBall, ClosureType::kBall, ClosureType::kBall,
                               ClosureType::kWeld};
  test::RandomTreeOptions options;
  options.bodies = 24;
  options.free_flyer_root = false;
  options.all_joint_types = false;  // 1-DoF joints, as the peer's mechanism
  options.fixed_fraction = 0.0;
  // the first draw whose 15 rows are independent, as the peer's (a closure between bodies
  // joined by fewer joints than its rows has redundant ones)
  for (;;) {
    Model model = test::randomTree(rng, options);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    test::addRandomClosures(model, q, types, rng);
    if (!independentRows(model, q)) continue;
    std::vector<Eigen::VectorXd> qs, vs, taus;
    auto shared = std::make_shared<const Model>(model);
    if (swing(shared, qs, vs, taus)) return model;
  }
}

/// A loop model, the same tree without its closures, and kStates assembled states with joint
/// forces.
struct Setup {
  std::shared_ptr<const Model> loops, tree;
  std::vector<std::unique_ptr<Data>> data;  ///< per registry row, its workspace only
  std::vector<std::unique_ptr<ConstraintRowStage>> stages;
  std::vector<Eigen::VectorXd> q, v, tau;
  std::unique_ptr<Simulator> loop_sim, tree_sim;
#ifdef HILSIM_BENCH_MUJOCO
  std::unique_ptr<test::MujocoModel> mujoco;
#endif
};

// The states: a swing of the mechanism under gravity and random joint forces, kStates of them
// 37 steps apart. False when the mechanism runs into a singular position on the way (a random
// one may: its rows lose rank and the closure forces grow without bound).
bool swing(const std::shared_ptr<const Model>& model, std::vector<Eigen::VectorXd>& q,
           std::vector<Eigen::VectorXd>& v, std::vector<Eigen::VectorXd>& tau) {
  std::mt19937 rng(20261125);
  Simulator sim(model, formulations().front().id, Integrator::kRk4, 1e-3);
  ConstraintRowStage stage(*model, formulations().front());
  Data data(*model);
  int first_rank = 0;
  for (int k = 0; k < kStates; ++k) {
    tau.push_back(test::randomVector(model->nv, rng, 0.5));
    for (int step = 0; step < 37; ++step) sim.step(tau.back());
    q.push_back(sim.q());
    v.push_back(sim.v());
    if (!sim.v().allFinite() || sim.v().norm() > 100.0) return false;
    Eigen::VectorXd qdd = formulations().front().forward_dynamics(*model, data, q.back(), v.back(),
                                                                   tau.back());
    stage.accelerations(*model, data, q.back(), v.back(), tau.back(), qdd);
    if (k == 0) first_rank = stage.rank();
    if (stage.rank() < first_rank) return false;
  }
  return true;
}

Setup makeSetup(Model model) {
  Setup s;
  Model tree = model;
  tree.loops.clear();
  tree.nconstraints = 0;
  tree.force_elements.clear();
  s.loops = std::make_shared<const Model>(std::move(model));
  s.tree = std::make_shared<const Model>(std::move(tree));
  for (const FormulationInfo& f : formulations()) {
    s.data.push_back(std::make_unique<Data>(*s.loops, f.workspace));
    s.stages.push_back(f.capabilities.closed_loops
                           ? std::make_unique<ConstraintRowStage>(*s.loops, f)
                           : nullptr);  // refused by the Simulator (rtmm)
  }
  const bool swung = swing(s.loops, s.q, s.v, s.tau);
  assert(swung);
  (void)swung;
  const Formulation standard = formulations().front().id;  // the default
  s.loop_sim = std::make_unique<Simulator>(s.loops, standard, Integrator::kRk4, 1e-3);
  s.tree_sim = std::make_unique<Simulator>(s.tree, standard, Integrator::kRk4, 1e-3);
  return s;
}

void setCounters(benchmark::State& state, const Model& model) {
  state.counters["nv"] = model.nv;
  state.counters["rows"] = model.nconstraints;
}

void benchFdLoops(benchmark::State& state, Setup* s, std::size_t row) {
  const FormulationInfo& f = formulations()[row];
  Data& data = *s->data[row];
  ConstraintRowStage& stage = *s->stages[row];
  int k = 0;
  for (auto _ : state) {
    const int i = k++ & (kStates - 1);
    Eigen::VectorXd& qdd = data.qdd;
    f.forward_dynamics(*s->loops, data, s->q[i], s->v[i], s->tau[i]);
    stage.accelerations(*s->loops, data, s->q[i], s->v[i], s->tau[i], qdd);
    benchmark::DoNotOptimize(qdd.data());
  }
  setCounters(state, *s->loops);
  state.counters["rank"] = stage.rank();
}

void benchFdTree(benchmark::State& state, Setup* s, std::size_t row) {
  const FormulationInfo& f = formulations()[row];
  Data& data = *s->data[row];
  int k = 0;
  for (auto _ : state) {
    const int i = k++ & (kStates - 1);
    benchmark::DoNotOptimize(f.forward_dynamics(*s->tree, data, s->q[i], s->v[i], s->tau[i]).data());
  }
  setCounters(state, *s->tree);
}

void benchStep(benchmark::State& state, Simulator* sim, Setup* s, const Model* model) {
  int k = 0;
  for (auto _ : state) {
    const int i = k++ & (kStates - 1);
    if (i == 0) {
      state.PauseTiming();  // a fresh assembled state now and then: the run stays bounded
      sim->setState(s->q[0], s->v[0]);
      state.ResumeTiming();
    }
    sim->step(s->tau[i]);
    benchmark::DoNotOptimize(sim->q().data());
  }
  setCounters(state, *model);
}

// The stage's factorisation and solve alone, on a random SPD n × n system of full rank (the
// rows of a mechanism: the four-bar's 2, the delta's 6, random24's 15).
void benchPivotedCholesky(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::mt19937 rng(7);
  Eigen::MatrixXd B(n, n + 3);
  for (int c = 0; c < n + 3; ++c) B.col(c) = test::randomVector(n, rng);
  const Eigen::MatrixXd A = B * B.transpose();
  const Eigen::VectorXd b = test::randomVector(n, rng, 1.0);
  Eigen::VectorXd x(n);
  PivotedCholesky solver(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(solver.compute(A, n));
    solver.solve(b, x);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(benchPivotedCholesky)->Name("pivoted_cholesky")->Arg(2)->Arg(6)->Arg(15);

#ifdef HILSIM_BENCH_MUJOCO
void benchMjForwardEq(benchmark::State& state, Setup* s) {
  mjModel* m = s->mujoco->model();
  mjData* d = s->mujoco->data();
  int k = 0;
  for (auto _ : state) {
    const int i = k++ & (kStates - 1);
    for (int j = 0; j < m->nq; ++j) d->qpos[j] = s->q[i][j];
    for (int j = 0; j < m->nv; ++j) {
      d->qvel[j] = s->v[i][j];
      d->qfrc_applied[j] = s->tau[i][j];
    }
    mj_forward(m, d);
    benchmark::DoNotOptimize(d->qacc);
  }
  setCounters(state, *s->loops);
}
#endif

void registerModel(const std::string& name, Model model, bool with_mujoco) {
  auto* s = new Setup(makeSetup(std::move(model)));  // lives for the whole run
  for (std::size_t row = 0; row < formulations().size(); ++row) {
    if (!s->stages[row]) continue;
    const std::string f(formulations()[row].name);
    benchmark::RegisterBenchmark(("fd_" + f + "_loops/" + name).c_str(), benchFdLoops, s, row);
    benchmark::RegisterBenchmark(("fd_" + f + "_tree/" + name).c_str(), benchFdTree, s, row);
  }
  benchmark::RegisterBenchmark(("rk4_step_loops/" + name).c_str(), benchStep, s->loop_sim.get(), s,
                               s->loops.get());
  benchmark::RegisterBenchmark(("rk4_step_tree/" + name).c_str(), benchStep, s->tree_sim.get(), s,
                               s->tree.get());
#ifdef HILSIM_BENCH_MUJOCO
  if (with_mujoco) {
    s->mujoco = std::make_unique<test::MujocoModel>(
        test::MujocoModel::Mjcf{test::mjcfWithLoops(*s->loops, s->loop_sim->q(), 1e-3, "0.002 1")});
    benchmark::RegisterBenchmark(("mj_forward_eq/" + name).c_str(), benchMjForwardEq, s);
  }
#else
  (void)with_mujoco;
#endif
}

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  using namespace hilsim;
  bench::registerModel("four_bar", loadModel("four_bar"), /*with_mujoco=*/true);
  bench::registerModel("delta", loadModel("delta"), false);
  bench::registerModel("random24", bench::random24(), false);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
