// What one viewer frame costs the feed thread (server/viewer_scene.h, docs/VIEWER.md): forward
// kinematics of a published state and every body's pose, then the frame as JSON, per model;
// beside it the forward kinematics alone, measured in the same run.
#include <benchmark/benchmark.h>

#include <google/protobuf/util/json_util.h>

#include <random>
#include <string>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/io/model_loader.h"
#include "engine/model/configuration.h"
#include "engine/model/data.h"
#include "hilsim/v1/viewer.pb.h"
#include "server/viewer_scene.h"

namespace hilsim {
namespace {

// A configuration away from the neutral one (every joint moved), so that no pose is trivial.
Eigen::VectorXd movedConfiguration(const Model& model) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> step(-0.5, 0.5);
  Eigen::VectorXd v(model.nv);
  for (int k = 0; k < model.nv; ++k) v[k] = step(rng);
  Eigen::VectorXd q(model.nq);
  integrateConfiguration(model, model.initialConfiguration(), v, 1.0, q);
  return q;
}

void BM_ViewerFrame(benchmark::State& state, const std::string& name) {
  const Model model = loadModel(name);
  const Eigen::VectorXd q = movedConfiguration(model);
  google::protobuf::RepeatedField<double> published(q.data(), q.data() + q.size());
  server::ViewerPoser poser(model);
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::size_t bytes = 0;
  for (auto _ : state) {
    v1::ViewerFrame frame;
    *frame.mutable_q() = published;
    poser.pose(published, &frame);
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(frame, &json, options);
    bytes = json.size();
    benchmark::DoNotOptimize(json.data());
  }
  state.counters["bodies"] = model.nbodies;
  state.counters["json_bytes"] = static_cast<double>(bytes);
}

void BM_ForwardKinematics(benchmark::State& state, const std::string& name) {
  const Model model = loadModel(name);
  const Eigen::VectorXd q = movedConfiguration(model);
  Data data(model, DataWorkspace::kPerBody);
  for (auto _ : state) {
    forwardKinematics(model, data, q);
    benchmark::DoNotOptimize(data.X_WB.data());
  }
}

}  // namespace

#define HILSIM_VIEWER_BENCH(model)                                         \
  BENCHMARK_CAPTURE(BM_ViewerFrame, model, #model)->Unit(benchmark::kMicrosecond); \
  BENCHMARK_CAPTURE(BM_ForwardKinematics, model, #model)->Unit(benchmark::kMicrosecond)

HILSIM_VIEWER_BENCH(iiwa14);
HILSIM_VIEWER_BENCH(four_bar);
HILSIM_VIEWER_BENCH(flexible_arm);
HILSIM_VIEWER_BENCH(talos_full_v2);

}  // namespace hilsim

BENCHMARK_MAIN();
