// The C++ side of test_engine.py: the engine's functions called directly, their results printed
// exactly (%a), so that the test can require hilsim.engine's to be the same to the bit.
//
//   engine_reference MODEL [floating]    then one request a line on stdin:
//     rnea Q V A | gravity Q | crba Q | fd FORMULATION Q V TAU | placement FRAME Q
//     | jacobian FRAME REFERENCE Q | simulate FORMULATION INTEGRATOR DT STEPS Q V TAU (the final
//     q then v of a Simulator set to (Q, V) after STEPS steps under TAU)
// Vectors are comma-separated numbers (strtod: hex floats as float.hex() writes them). Each
// answer is one line of %a numbers, matrices row by row; a request the engine refuses is answered
// "error: <message>". Every request gets a Data (and a constraint stage) of its own.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/frame_jacobian.h"
#include "engine/algorithms/rnea.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"

namespace hilsim {
namespace {

Eigen::VectorXd parseVector(const std::string& text) {
  std::vector<double> values;
  std::stringstream stream(text);
  std::string field;
  while (std::getline(stream, field, ',')) values.push_back(std::strtod(field.c_str(), nullptr));
  return Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<int>(values.size()));
}

template <typename Matrix>
void print(const Matrix& m) {
  const char* separator = "";
  for (int r = 0; r < m.rows(); ++r) {
    for (int c = 0; c < m.cols(); ++c) {
      std::printf("%s%a", separator, m(r, c));
      separator = " ";
    }
  }
  std::printf("\n");
}

JacobianReference parseReference(const std::string& name) {
  if (name == "world") return JacobianReference::kWorld;
  if (name == "local") return JacobianReference::kLocal;
  if (name == "local_world_aligned") return JacobianReference::kLocalWorldAligned;
  throw std::invalid_argument("unknown reference " + name);
}

void answer(const std::shared_ptr<const Model>& shared, const std::string& line) {
  const Model& model = *shared;
  std::stringstream request(line);
  std::string function;
  request >> function;
  Data data(model);
  if (function == "rnea" || function == "gravity") {
    std::string q, v, a;
    request >> q >> v >> a;
    const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nv);
    if (function == "gravity") print(rnea(model, data, parseVector(q), zero, zero));
    else print(rnea(model, data, parseVector(q), parseVector(v), parseVector(a)));
  } else if (function == "crba") {
    std::string q;
    request >> q;
    print(crba(model, data, parseVector(q)));
  } else if (function == "fd") {
    std::string name, q_text, v_text, tau_text;
    request >> name >> q_text >> v_text >> tau_text;
    const Formulation formulation = *parseFormulation(name);
    if (const std::string why = checkFormulation(model, formulation); !why.empty())
      throw std::invalid_argument(why);
    const Eigen::VectorXd q = parseVector(q_text), v = parseVector(v_text),
                          tau = parseVector(tau_text);
    forwardDynamics(formulation, model, data, q, v, tau);
    if (model.needsConstraintStage()) {
      ConstraintRowStage stage(model, formulationInfo(formulation));
      stage.accelerations(model, data, q, v, tau, data.qdd);
    }
    print(data.qdd);
  } else if (function == "placement" || function == "jacobian") {
    std::string frame_name, reference = "world", q;
    request >> frame_name;
    if (function == "jacobian") request >> reference;
    request >> q;
    const int frame = model.frameIndex(frame_name);
    if (frame < 0) throw std::invalid_argument("unknown frame " + frame_name);
    forwardKinematics(model, data, parseVector(q));
    if (function == "jacobian") {
      Matrix6N J(6, model.nv);
      frameJacobian(model, data, frame, parseReference(reference), J);
      print(J);
    } else {
      const Transform X = data.X_WB[model.frames[frame].body] * model.frames[frame].placement;
      Eigen::Matrix4d T = Eigen::Matrix4d::Identity();
      T.topLeftCorner<3, 3>() = X.rotation;
      T.topRightCorner<3, 1>() = X.translation;
      print(T);
    }
  } else if (function == "simulate") {
    std::string formulation, integrator, q, v, tau;
    double dt = 0.0;
    int steps = 0;
    request >> formulation >> integrator >> dt >> steps >> q >> v >> tau;
    Simulator simulator(shared, *parseFormulation(formulation), *parseIntegrator(integrator), dt);
    simulator.setState(parseVector(q), parseVector(v));
    const Eigen::VectorXd tau_values = parseVector(tau);
    for (int k = 0; k < steps; ++k) simulator.step(tau_values);
    Eigen::VectorXd state(model.nq + model.nv);
    state << simulator.q(), simulator.v();
    print(state);
  } else {
    throw std::invalid_argument("unknown request " + function);
  }
}

}  // namespace
}  // namespace hilsim

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: engine_reference MODEL [floating]\n");
    return 2;
  }
  hilsim::UrdfOptions options;
  options.floating_base = argc > 2 && std::string(argv[2]) == "floating";
  const auto model = std::make_shared<const hilsim::Model>(hilsim::loadModel(argv[1], options));
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    try {
      hilsim::answer(model, line);
    } catch (const std::exception& e) {
      std::printf("error: %s\n", e.what());
    }
    std::fflush(stdout);
  }
  return 0;
}
