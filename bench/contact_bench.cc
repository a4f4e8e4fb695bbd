// Ground contact (docs/CONTACT.md, docs/PERFORMANCE.md "Contact"): one step of the bundled
// quadruped standing on its four feet under the PD stance law of examples/quadruped_stance, in
// hilsim (semi-implicit Euler and RK4, aba, 1 ms) and in MuJoCo (mj_step, its Euler, 1 ms, the same
// model as MJCF with foot spheres, a plane and elliptic cones: test::mjcfWithContacts), in the
// same run. Both start from the model's crouch and stand for 2 s before timing, so each is timed
// at its own standing state (the same stance to a fraction of a millimetre); a timed iteration
// is the law's torques and one step, which keeps the robot standing. Counters: the active rows
// and solver sweeps of hilsim's last step; MuJoCo's contacts and its solver's iterations.
#include <benchmark/benchmark.h>

#include <memory>
#include <span>
#include <string>

#include "engine/constraints/constraint_row_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "examples/quadruped_stance/stance_law.h"

#ifdef HILSIM_BENCH_MUJOCO
#include "tests/support/mujoco_model.h"
#endif

namespace hilsim::bench {
namespace {

constexpr double kStep = 1e-3;
constexpr int kSettleSteps = 2000;

std::shared_ptr<const Model> quadruped() {
  Model model = loadModel("quadruped");
  model.limits_enforced = false;  // ±10 rad, never reached; MuJoCo's limits stay off too
  return std::make_shared<const Model>(std::move(model));
}

std::span<const double> view(const Eigen::VectorXd& x) {
  return {x.data(), static_cast<std::size_t>(x.size())};
}

void benchHilsimStep(benchmark::State& state, Integrator integrator) {
  const auto model = quadruped();
  const examples::StanceLaw law(*model, 3.0, 0.05);
  Simulator sim(model, Formulation::kAba, integrator, kStep);
  Eigen::VectorXd tau(model->nv);
  const auto step = [&] {
    law.torques(view(sim.q()), view(sim.v()), {tau.data(), static_cast<std::size_t>(tau.size())});
    sim.step(tau);
  };
  for (int k = 0; k < kSettleSteps; ++k) step();
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(sim.q().data());
  }
  const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
  state.counters["rows"] = stage->activeUnilateralRows();
  state.counters["sweeps"] = stage->lastSolve().iterations;
  state.counters["base_z_mm"] = sim.q()[2] * 1e3;
}

#ifdef HILSIM_BENCH_MUJOCO
void benchMjStep(benchmark::State& state) {
  const auto model = quadruped();
  const examples::StanceLaw law(*model, 3.0, 0.05);
  test::MujocoModel mujoco(
      test::MujocoModel::Mjcf{test::mjcfWithContacts(*model, kStep, "Euler"), /*contacts=*/true});
  mjModel* m = mujoco.model();
  mjData* d = mujoco.data();
  const test::CoordinateMap map = test::mapCoordinates(*model, m);
  map.setMujocoState(m, d, model->initialConfiguration(), Eigen::VectorXd::Zero(model->nv),
                     Eigen::VectorXd::Zero(model->nv));
  Eigen::VectorXd q(model->nq), v(model->nv), tau(model->nv);
  const auto step = [&] {
    for (int j = 0; j < model->nq; ++j) q[j] = d->qpos[map.q[j]];
    for (int j = 0; j < model->nv; ++j) v[j] = d->qvel[map.v[j]];
    law.torques(view(q), view(v), {tau.data(), static_cast<std::size_t>(tau.size())});
    for (int j = 0; j < model->nv; ++j) d->qfrc_applied[map.v[j]] = tau[j];
    mj_step(m, d);
  };
  for (int k = 0; k < kSettleSteps; ++k) step();
  for (auto _ : state) {
    step();
    benchmark::DoNotOptimize(d->qpos);
  }
  state.counters["contacts"] = d->ncon;
  state.counters["sweeps"] = d->solver_iter;
  state.counters["base_z_mm"] = d->qpos[map.q[2]] * 1e3;
}
#endif

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  using namespace hilsim;
  benchmark::RegisterBenchmark("stance_step/hilsim_euler", bench::benchHilsimStep,
                               Integrator::kSemiImplicitEuler);
  benchmark::RegisterBenchmark("stance_step/hilsim_rk4", bench::benchHilsimStep,
                               Integrator::kRk4);
#ifdef HILSIM_BENCH_MUJOCO
  benchmark::RegisterBenchmark("stance_step/mj_step", bench::benchMjStep);
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
