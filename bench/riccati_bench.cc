// The Riccati transfer matrix method against the articulated-body algorithm as systems grow
// (docs/RICCATI.md, docs/PERFORMANCE.md "Riccati"): forward dynamics of generated chains and
// binary trees of 10 to 10⁵ rods (engine/builder/system_generator.h) on revolute and spherical
// joints, both formulations in the same run at the same states, with the time per body.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "bench/generated_systems.h"
#include "engine/formulations/formulations.h"

namespace hilsim::bench {
namespace {

struct Setup : GeneratedState {
  std::unique_ptr<Data> data;
};

Setup* makeSetup(GeneratedShape shape, JointType joint, int bodies) {
  auto* s = new Setup{generatedState(shape, joint, bodies), nullptr};
  s->data = std::make_unique<Data>(s->model, DataWorkspace::kPerBody);
  return s;
}

void benchFd(benchmark::State& state, Setup* s, Formulation formulation) {
  const FormulationInfo& f = formulationInfo(formulation);
  for (auto _ : state)
    benchmark::DoNotOptimize(f.forward_dynamics(s->model, *s->data, s->q, s->v, s->tau).data());
  setBodyCounters(state, s->model);
}

}  // namespace
}  // namespace hilsim::bench

int main(int argc, char** argv) {
  using namespace hilsim;
  for (const auto& [shape, shape_name] :
       {std::pair{GeneratedShape::kChain, "chain"}, std::pair{GeneratedShape::kTree, "tree"}}) {
    for (const auto& [joint, joint_name] : {std::pair{JointType::kRevolute, "revolute"},
                                            std::pair{JointType::kSpherical, "spherical"}}) {
      for (const int bodies : {10, 100, 1000, 10000, 100000}) {
        bench::Setup* s = bench::makeSetup(shape, joint, bodies);  // lives for the whole run
        const std::string suffix = std::string("/") + shape_name + "_" + joint_name + "/" +
                                   std::to_string(bodies);
        for (const Formulation f : {Formulation::kAba, Formulation::kRtmm})
          benchmark::RegisterBenchmark(("fd_" + std::string(formulationName(f)) + suffix).c_str(),
                                       bench::benchFd, s, f);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
