// Every formulation of the registry as systems grow (docs/PERFORMANCE.md, "Scaling"): forward
// dynamics of generated chains and binary trees of 10 to 1000 rods (engine/builder/
// system_generator.h) on revolute and spherical joints, each formulation with exactly the Data
// its registry row asks for, at the same states in the same run: how each cost grows with n
// (O(n) recursions, O(n d²) mass-matrix ones, d the depth: n on a chain, log n on a tree).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/generated_systems.h"
#include "engine/formulations/formulations.h"

namespace hilsim::bench {
namespace {

struct Setup : GeneratedState {
  std::vector<std::unique_ptr<Data>> data;  // one per formulation, its row's workspace
};

Setup* makeSetup(GeneratedShape shape, JointType joint, int bodies) {
  auto* s = new Setup{generatedState(shape, joint, bodies), {}};
  for (const FormulationInfo& f : formulations())
    s->data.push_back(std::make_unique<Data>(s->model, f.workspace));
  return s;
}

void benchFd(benchmark::State& state, Setup* s, Formulation formulation) {
  const FormulationInfo& f = formulationInfo(formulation);
  Data& data = *s->data[static_cast<std::size_t>(formulation)];
  for (auto _ : state)
    benchmark::DoNotOptimize(f.forward_dynamics(s->model, data, s->q, s->v, s->tau).data());
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
      for (const int bodies : {10, 30, 100, 300, 1000}) {
        bench::Setup* s = bench::makeSetup(shape, joint, bodies);  // lives for the whole run
        const std::string suffix = std::string("/") + shape_name + "_" + joint_name + "/" +
                                   std::to_string(bodies);
        for (const FormulationInfo& f : formulations()) {
          if (!checkFormulation(s->model, f.id).empty()) continue;
          // a 3000-dof chain of ball joints: the LᵀDL of a 3000-deep dof tree is dense, 9e9
          // flops a call; the O(n) formulations only
          if (holds(f.workspace, DataWorkspace::kJointSpaceInertia) && s->model.nv > 2000 &&
              shape == GeneratedShape::kChain)
            continue;
          benchmark::RegisterBenchmark(("fd_" + std::string(f.name) + suffix).c_str(),
                                       bench::benchFd, s, f.id);
        }
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
