// The Riccati transfer matrix method against the articulated-body algorithm as systems grow
// (docs/RICCATI.md, docs/PERFORMANCE.md "Riccati"): forward dynamics of generated chains and
// binary trees of 10 to 10⁵ rods (engine/builder/system_generator.h) on revolute and spherical
// joints, both formulations in the same run at the same states, with the time per body.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>

#include "engine/builder/system_generator.h"
#include "engine/formulations/formulations.h"

namespace hilsim::bench {
namespace {

struct Setup {
  Model model;
  Eigen::VectorXd q, v, tau;
  std::unique_ptr<Data> data;
};

Setup* makeSetup(GeneratedShape shape, JointType joint, int bodies) {
  SystemSpec spec;
  spec.shape = shape;
  spec.joint = joint;
  spec.bodies = bodies;
  spec.link_radius = 0.1;  // a tenth of the length: well conditioned for both (docs/RICCATI.md)
  auto* s = new Setup{generateSystem(spec, "generated"), {}, {}, {}, nullptr};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  s->q = s->model.initialConfiguration();
  for (Eigen::Index k = 0; k < s->q.size(); ++k) s->q(k) += 0.1 * unit(rng);
  for (int i = 1; i < s->model.nbodies; ++i)
    if (s->model.joints[i].type == JointType::kSpherical) s->q.segment<4>(s->model.idx_q[i]).normalize();
  s->v.resize(s->model.nv);
  s->tau.resize(s->model.nv);
  for (Eigen::Index k = 0; k < s->v.size(); ++k) s->v(k) = unit(rng), s->tau(k) = unit(rng);
  s->data = std::make_unique<Data>(s->model, DataWorkspace::kPerBody);
  return s;
}

void benchFd(benchmark::State& state, Setup* s, Formulation formulation) {
  const FormulationInfo& f = formulationInfo(formulation);
  for (auto _ : state)
    benchmark::DoNotOptimize(f.forward_dynamics(s->model, *s->data, s->q, s->v, s->tau).data());
  const double bodies = s->model.nbodies - 1;
  state.counters["bodies"] = bodies;
  // ns per body of one call (the iteration rate inverted), for the flat-cost comparison
  state.counters["ns_per_body"] = benchmark::Counter(
      bodies, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
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
