// Flexible-body benchmarks (seed 004 §8): articulated-body against composite-body forward dynamics
// as the number of flexible bodies and of modes per body grows, and the bundled flexible arm's
// step at 1 kHz. Each benchmark cycles through 16 precomputed random states.
//
//   flexible_fd/<formulation>/<bodies>/<modes>   one forward-dynamics call on a chain of beams
//   flexible_arm/<formulation|rk4_step>          the bundled flexible_arm (7 coordinates)
// (every formulation of the registry, engine/formulations/formulations.h)
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/model/beam_modes.h"
#include "engine/builder/model_builder.h"
#include "tests/support/random_model.h"

namespace hilsim::bench {
namespace {

constexpr int kStates = 16;

// A serial chain of `bodies` aluminium beams (1 m, 20 mm square), each with `modes` bending modes
// in both planes, on revolute joints alternating between z and y, each joint at its parent's tip.
Model beamChain(int bodies, int modes) {
  BeamSpec spec;
  spec.youngs_modulus = 70e9;
  spec.density = 2700.0;
  spec.area = 4e-4;
  spec.area_moment = 1.3333e-8;
  spec.length = 1.0;
  spec.modes = modes;
  spec.elements = std::max(20, 4 * modes);
  spec.bending = BeamSpec::Bending::kBoth;
  const FlexibleBody beam = eulerBernoulliBeam(spec);
  ModelBuilder builder("beam_chain");
  for (int k = 0; k < bodies; ++k) {
    BodySpec body;
    body.name = "link" + std::to_string(k);
    body.parent = k == 0 ? "world" : "link" + std::to_string(k - 1);
    body.parent_node = k == 0 ? "" : "tip";
    body.joint = Joint::revolute(k % 2 == 0 ? Vector3::UnitZ() : Vector3::UnitY());
    body.properties.armature = 0.1;
    body.flexible = beam;
    builder.addBody(body);
  }
  return builder.build();
}

struct States {
  std::vector<Eigen::VectorXd> q, v, tau;
  explicit States(const Model& model) {
    std::mt19937 rng(99);
    for (int k = 0; k < kStates; ++k) {
      Eigen::VectorXd q_k = test::randomConfiguration(model, rng);
      for (int i = 1; i < model.nbodies; ++i)  // deformations of a few mm
        q_k.segment(model.idxModesQ(i), model.nmodes[i]) *= 0.01;
      q.push_back(q_k);
      v.push_back(test::randomVector(model.nv, rng));
      tau.push_back(test::randomVector(model.nv, rng));
    }
  }
};

void flexibleForwardDynamics(benchmark::State& state, const FormulationInfo* f) {
  const int bodies = static_cast<int>(state.range(0));
  const int modes = static_cast<int>(state.range(1));
  const Model model = beamChain(bodies, modes);
  Data data(model, f->workspace);
  const States s(model);
  int k = 0;
  for (auto _ : state) {
    const Eigen::VectorXd& qdd = f->forward_dynamics(model, data, s.q[k], s.v[k], s.tau[k]);
    benchmark::DoNotOptimize(qdd.data());
    k = (k + 1) % kStates;
  }
  state.counters["nv"] = model.nv;
}

void chainArguments(benchmark::internal::Benchmark* b) {
  for (int bodies : {1, 2, 4, 8, 16})
    for (int modes : {1, 2, 4, 8}) b->Args({bodies, modes});
}

void flexibleArm(benchmark::State& state, const FormulationInfo* f) {
  const auto model = std::make_shared<const Model>(loadModel("flexible_arm"));
  Data data(*model);
  const States s(*model);
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  sim.setState(s.q[0], s.v[0]);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model->nv);
  int k = 0;
  for (auto _ : state) {
    if (f != nullptr) {
      benchmark::DoNotOptimize(f->forward_dynamics(*model, data, s.q[k], s.v[k], s.tau[k]).data());
    } else {
      if (k == 0) sim.setState(s.q[0], s.v[0]);  // keep the state bounded
      sim.step(zero);
      benchmark::DoNotOptimize(sim.q().data());
    }
    k = (k + 1) % kStates;
  }
  state.counters["nv"] = model->nv;
}

// One benchmark per formulation of the registry, named by it.
[[maybe_unused]] const bool kRegistered = [] {
  for (const FormulationInfo& f : formulations()) {
    benchmark::RegisterBenchmark(("flexible_fd/" + std::string(f.name)).c_str(),
                                 flexibleForwardDynamics, &f)
        ->Apply(chainArguments);
    benchmark::RegisterBenchmark(("flexible_arm/" + std::string(f.name)).c_str(), flexibleArm, &f);
  }
  benchmark::RegisterBenchmark("flexible_arm/rk4_step", flexibleArm, nullptr);
  return true;
}();

}  // namespace
}  // namespace hilsim::bench

BENCHMARK_MAIN();
