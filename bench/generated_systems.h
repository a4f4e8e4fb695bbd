// The generated chains and trees the scaling benchmarks share (bench/riccati_bench.cc,
// bench/scaling_bench.cc): a system of rods from engine/builder/system_generator.h at a
// reproducible random state, and the per-body counters of one call.
#pragma once

#include <benchmark/benchmark.h>

#include <random>

#include "engine/builder/system_generator.h"

namespace hilsim::bench {

struct GeneratedState {
  Model model;
  Eigen::VectorXd q, v, tau;
};

/// `bodies` rods of a tenth of their length in radius (well conditioned for every formulation,
/// docs/RICCATI.md) on `joint` joints, q 0.1 rad about the initial configuration, v and τ in
/// [−1, 1], from a fixed seed.
inline GeneratedState generatedState(GeneratedShape shape, JointType joint, int bodies) {
  SystemSpec spec;
  spec.shape = shape;
  spec.joint = joint;
  spec.bodies = bodies;
  spec.link_radius = 0.1;
  GeneratedState s{generateSystem(spec, "generated"), {}, {}, {}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  s.q = s.model.initialConfiguration();
  for (Eigen::Index k = 0; k < s.q.size(); ++k) s.q(k) += 0.1 * unit(rng);
  for (int i = 1; i < s.model.nbodies; ++i)
    if (s.model.joints[i].type == JointType::kSpherical)
      s.q.segment<4>(s.model.idx_q[i]).normalize();
  s.v.resize(s.model.nv);
  s.tau.resize(s.model.nv);
  for (Eigen::Index k = 0; k < s.v.size(); ++k) s.v(k) = unit(rng), s.tau(k) = unit(rng);
  return s;
}

/// The bodies and the ns per body of one call (the iteration rate inverted), for the
/// flat-cost comparison.
inline void setBodyCounters(benchmark::State& state, const Model& model) {
  const double bodies = model.nbodies - 1;
  state.counters["bodies"] = bodies;
  state.counters["ns_per_body"] = benchmark::Counter(
      bodies, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}

}  // namespace hilsim::bench
