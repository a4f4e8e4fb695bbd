// Dynamics benchmarks on the bundled models: hilsim RNEA, CRBA (the mass matrix), the forward
// dynamics of every formulation of the registry (engine/formulations/formulations.h) and one RK4
// Simulator step, and MuJoCo's mj_forward (contacts, limits and other constraints disabled) on
// the same URDF, at the same random states, in the same run.
//
// Each benchmark is named <algorithm>/<model> (fd_<formulation>/<model> for forward dynamics, on
// a Data holding only that formulation's workspace) and reports the time per call and two counters: nv,
// and per_dof (time per call / nv, displayed in seconds with an SI prefix: "120n" = 120 ns).
// Every iteration takes the next of kStates precomputed states, so no call sees the previous
// call's output. scripts/bench runs this with repetitions and turns the medians into a table.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/rnea.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "tests/support/random_model.h"

#ifdef HILSIM_BENCH_MUJOCO
#include "tests/support/mujoco_model.h"
#endif

namespace hilsim::bench {
namespace {

/// The benchmarked models: arms fixed, legged robots and humanoids on a free joint.
struct ModelSpec {
  const char* name;  ///< as reported
  const char* file;  ///< in config/models
  bool floating_base;
};

constexpr ModelSpec kModels[] = {
    {"iiwa14", "iiwa14.urdf", false},
    {"panda", "panda.urdf", false},
    {"ur5", "ur5.urdf", false},
    {"solo12", "solo12.urdf", true},
    {"anymal_b", "anymal_b.urdf", true},
    {"humanoid", "simple_humanoid.urdf", true},
    {"talos", "talos_full_v2.urdf", true},
};

constexpr int kStates = 16;  // a power of two

/// A model, its workspace and kStates random states (q, v, a, τ) in hilsim's order; with MuJoCo,
/// the same model loaded there and the same states in MuJoCo's order.
struct Setup {
  std::shared_ptr<const Model> model;
  std::unique_ptr<Data> data;
  std::vector<std::unique_ptr<Data>> formulation_data;  ///< per registry row, its workspace only
  std::vector<Eigen::VectorXd> q, v, a, tau;
  std::unique_ptr<Simulator> simulator;
#ifdef HILSIM_BENCH_MUJOCO
  std::unique_ptr<test::MujocoModel> mujoco;
  std::vector<std::vector<mjtNum>> qpos, qvel, qfrc;
#endif
};

Setup makeSetup(const ModelSpec& spec) {
  const std::string path = std::string(HILSIM_MODEL_DIR) + "/" + spec.file;
  Setup s;
  s.model = std::make_shared<const Model>(loadUrdf(path, spec.floating_base));
  const Model& model = *s.model;
  s.data = std::make_unique<Data>(model);
  for (const FormulationInfo& f : formulations())
    s.formulation_data.push_back(std::make_unique<Data>(model, f.workspace));
  s.simulator =
      std::make_unique<Simulator>(s.model, Formulation::kAba, Integrator::kRk4, 1e-3);
  std::mt19937 rng(20261121);
  for (int k = 0; k < kStates; ++k) {
    s.q.push_back(test::randomConfiguration(model, rng));
    s.v.push_back(test::randomVector(model.nv, rng, 1.0));
    s.a.push_back(test::randomVector(model.nv, rng, 1.0));
    s.tau.push_back(test::randomVector(model.nv, rng, 10.0));
  }
#ifdef HILSIM_BENCH_MUJOCO
  s.mujoco = std::make_unique<test::MujocoModel>(path, spec.floating_base);
  mjModel* m = s.mujoco->model();
  for (int k = 0; k < 3; ++k) m->opt.gravity[k] = model.gravity(k);
  const test::CoordinateMap map = test::mapCoordinates(model, m);
  for (int k = 0; k < kStates; ++k) {
    map.setMujocoState(m, s.mujoco->data(), s.q[k], s.v[k], s.tau[k]);
    s.qpos.emplace_back(s.mujoco->data()->qpos, s.mujoco->data()->qpos + m->nq);
    s.qvel.emplace_back(s.mujoco->data()->qvel, s.mujoco->data()->qvel + m->nv);
    s.qfrc.emplace_back(s.mujoco->data()->qfrc_applied, s.mujoco->data()->qfrc_applied + m->nv);
  }
#endif
  return s;
}

void setCounters(benchmark::State& state, int nv) {
  state.counters["nv"] = nv;
  state.counters["per_dof"] = benchmark::Counter(
      nv, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void benchRnea(benchmark::State& state, Setup* s) {
  int k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rnea(*s->model, *s->data, s->q[k], s->v[k], s->a[k]).data());
    benchmark::ClobberMemory();
    k = (k + 1) & (kStates - 1);
  }
  setCounters(state, s->model->nv);
}

void benchCrba(benchmark::State& state, Setup* s) {
  int k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(crba(*s->model, *s->data, s->q[k]).data());
    benchmark::ClobberMemory();
    k = (k + 1) & (kStates - 1);
  }
  setCounters(state, s->model->nv);
}

void benchForwardDynamics(benchmark::State& state, Setup* s, const FormulationInfo* f) {
  Data& data = *s->formulation_data[static_cast<std::size_t>(f->id)];
  int k = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(f->forward_dynamics(*s->model, data, s->q[k], s->v[k], s->tau[k]).data());
    benchmark::ClobberMemory();
    k = (k + 1) & (kStates - 1);
  }
  setCounters(state, s->model->nv);
}

/// One RK4 step (four ABA evaluations + configuration updates); the timed call includes
/// setState (copying q, v and renormalising quaternions) so every step starts from a fresh state.
void benchRk4Step(benchmark::State& state, Setup* s) {
  int k = 0;
  for (auto _ : state) {
    s->simulator->setState(s->q[k], s->v[k]);
    s->simulator->step(s->tau[k]);
    benchmark::DoNotOptimize(s->simulator->q().data());
    benchmark::ClobberMemory();
    k = (k + 1) & (kStates - 1);
  }
  setCounters(state, s->model->nv);
}

#ifdef HILSIM_BENCH_MUJOCO
/// mj_forward at the same states; the timed call includes copying qpos, qvel and qfrc_applied in.
void benchMjForward(benchmark::State& state, Setup* s) {
  const mjModel* m = s->mujoco->model();
  mjData* d = s->mujoco->data();
  int k = 0;
  for (auto _ : state) {
    mju_copy(d->qpos, s->qpos[k].data(), m->nq);
    mju_copy(d->qvel, s->qvel[k].data(), m->nv);
    mju_copy(d->qfrc_applied, s->qfrc[k].data(), m->nv);
    mj_forward(m, d);
    benchmark::DoNotOptimize(d->qacc);
    benchmark::ClobberMemory();
    k = (k + 1) & (kStates - 1);
  }
  setCounters(state, m->nv);
}
#endif

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  using namespace hilsim::bench;
  using hilsim::FormulationInfo;
  using hilsim::formulations;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  std::vector<std::unique_ptr<Setup>> setups;
  for (const ModelSpec& spec : kModels) {
    try {
      setups.push_back(std::make_unique<Setup>(makeSetup(spec)));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hilsim_bench: skipping %s: %s\n", spec.name, e.what());
      continue;
    }
    Setup* s = setups.back().get();
    const std::string n = spec.name;
    benchmark::RegisterBenchmark(("rnea/" + n).c_str(), benchRnea, s);
    benchmark::RegisterBenchmark(("crba/" + n).c_str(), benchCrba, s);
    for (const FormulationInfo& f : formulations()) {
      benchmark::RegisterBenchmark(("fd_" + std::string(f.name) + "/" + n).c_str(),
                                   benchForwardDynamics, s, &f);
    }
    benchmark::RegisterBenchmark(("rk4_step/" + n).c_str(), benchRk4Step, s);
#ifdef HILSIM_BENCH_MUJOCO
    benchmark::RegisterBenchmark(("mj_forward/" + n).c_str(), benchMjForward, s);
#endif
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
