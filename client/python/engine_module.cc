// hilsim.engine: the dynamics engine in process from Python (docs/PYTHON.md, "Engine"). A Model
// object owns the loaded Model and its workspaces (Data, sized on first use per workspace and
// reused by every later call); the functions check their numpy inputs at this boundary (size,
// finiteness, unit quaternions) and call the engine's own algorithms, so that their results are
// the engine's to the bit (tests/client/python/test_engine.py).
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/frame_jacobian.h"
#include "engine/algorithms/rnea.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"

namespace py = pybind11;

namespace hilsim {
namespace {

// How far a quaternion of q may be from unit norm: the bound `hilsim eval` reads its CSV rows
// with (client/cli/text.h). Unlike eval, the module does not renormalise: it computes at the q it
// was given, as the C++ functions do.
constexpr double kQuaternionNormTol = 1e-6;

// A loaded model and the engine's workspaces for it. Python holds it as hilsim.engine.Model.
class EngineModel {
 public:
  explicit EngineModel(Model model)
      : shared_(std::make_shared<const Model>(std::move(model))),
        model_(*shared_),
        q_(model_.nq),
        v_(model_.nv),
        x_(model_.nv),
        jacobian_(6, model_.nv) {}

  const Model& model() const { return model_; }
  std::shared_ptr<const Model> shared() const { return shared_; }

  // The Data holding `workspace`: made on the first call that needs it, reused after.
  Data& data(DataWorkspace workspace) {
    for (auto& [held, data] : data_)
      if (held == workspace) return *data;
    data_.emplace_back(workspace, std::make_unique<Data>(model_, workspace));
    return *data_.back().second;
  }

  // The constraint stage of `formulation` as just built: every evaluation starts from it, so that
  // a call's q̈ does not depend on the calls before it (no warm start, no friction anchors kept).
  ConstraintRowStage& freshStage(Formulation formulation) {
    const int k = static_cast<int>(formulation);
    if (stages_.size() <= static_cast<std::size_t>(k)) stages_.resize(k + 1);
    auto& [pristine, working] = stages_[k];
    if (!pristine) {
      pristine = std::make_unique<ConstraintRowStage>(model_, formulationInfo(formulation));
      working = std::make_unique<ConstraintRowStage>(*pristine);
    } else {
      *working = *pristine;  // same sizes: the buffers are copied, not reallocated
    }
    return *working;
  }

  // Input buffers, sized once: the engine's functions take Eigen::VectorXd.
  Eigen::VectorXd& q() { return q_; }
  Eigen::VectorXd& v() { return v_; }
  Eigen::VectorXd& x() { return x_; }
  Matrix6N& jacobian() { return jacobian_; }

 private:
  std::shared_ptr<const Model> shared_;  // a Simulator shares it
  const Model& model_;
  std::vector<std::pair<DataWorkspace, std::unique_ptr<Data>>> data_;
  std::vector<std::pair<std::unique_ptr<ConstraintRowStage>, std::unique_ptr<ConstraintRowStage>>>
      stages_;
  Eigen::VectorXd q_, v_, x_;
  Matrix6N jacobian_;
};

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

std::string shapeText(const Array& a) {
  std::string text = "(";
  for (py::ssize_t k = 0; k < a.ndim(); ++k)
    text += (k > 0 ? ", " : "") + std::to_string(a.shape(k));
  return text + (a.ndim() == 1 ? ",)" : ")");
}

// Copies a 1-D array of `size` finite values into `out`, or raises ValueError naming `name`.
void readVector(const Array& a, int size, const char* name, const char* size_name,
                Eigen::VectorXd& out) {
  if (a.ndim() != 1 || a.shape(0) != size) {
    throw py::value_error(std::string(name) + ": expected a 1-D array of " +
                          std::to_string(size) + " values (" + size_name + "), got shape " +
                          shapeText(a));
  }
  const double* values = a.data();
  for (int k = 0; k < size; ++k) {
    if (!std::isfinite(values[k])) {
      throw py::value_error(std::string(name) + "[" + std::to_string(k) + "] is not finite (" +
                            std::to_string(values[k]) + ")");
    }
  }
  out = Eigen::Map<const Eigen::VectorXd>(values, size);
}

// q (nq) into the model's buffer: finite, and the quaternions of spherical and free joints unit.
const Eigen::VectorXd& readConfiguration(EngineModel& m, const Array& q) {
  const Model& model = m.model();
  readVector(q, model.nq, "q", "nq", m.q());
  for (int i = 1; i < model.nbodies; ++i) {
    const JointType type = model.joints[i].type;
    if (type != JointType::kSpherical && type != JointType::kFreeFlyer) continue;
    const int offset = model.idx_q[i] + (type == JointType::kFreeFlyer ? 3 : 0);
    const double norm = m.q().segment<4>(offset).norm();
    if (!(std::abs(norm - 1.0) <= kQuaternionNormTol)) {
      throw py::value_error("q[" + std::to_string(offset) + ":" + std::to_string(offset + 4) +
                            "]: the quaternion of joint '" + model.joint_names[i] +
                            "' has norm " + std::to_string(norm) + ", expected 1");
    }
  }
  return m.q();
}

const Eigen::VectorXd& readVelocity(EngineModel& m, const Array& v, const char* name,
                                    Eigen::VectorXd& out) {
  readVector(v, m.model().nv, name, "nv", out);
  return out;
}

int frameOrThrow(const Model& model, const std::string& name) {
  const int frame = model.frameIndex(name);
  if (frame >= 0) return frame;
  std::string names;
  for (const Frame& f : model.frames) names += (names.empty() ? "" : ", ") + f.name;
  throw py::value_error("unknown frame '" + name + "' in model '" + model.name + "' (frames: " +
                        names + ")");
}

JacobianReference referenceOrThrow(const std::string& name) {
  if (name == "world") return JacobianReference::kWorld;
  if (name == "local") return JacobianReference::kLocal;
  if (name == "local_world_aligned") return JacobianReference::kLocalWorldAligned;
  throw py::value_error("unknown reference '" + name +
                        "' (expected world, local or local_world_aligned)");
}

Formulation formulationOrThrow(const Model& model, const std::string& name) {
  const std::optional<Formulation> formulation = parseFormulation(name);
  if (!formulation) {
    throw py::value_error("unknown formulation '" + name + "' (expected " +
                          formulationNames(", ", " or ") + ")");
  }
  if (const std::string why = checkFormulation(model, *formulation); !why.empty())
    throw py::value_error(why);
  return *formulation;
}

// The options in their text forms, those of the CLI and the YAML wrapper (model_loader.h).
UrdfOptions urdfOptionsOrThrow(bool floating_base, const std::string& inertia,
                               const std::string& massless) {
  UrdfOptions options;
  options.floating_base = floating_base;
  if (const std::string why = parseInertiaPolicy(inertia, options); !why.empty())
    throw py::value_error("inertia: " + why);
  if (const std::string why = parseMasslessPolicy(massless, options); !why.empty())
    throw py::value_error("massless: " + why);
  return options;
}

// A homogeneous 4 × 4 transform [R p; 0 1].
Eigen::Matrix4d homogeneous(const Transform& X) {
  Eigen::Matrix4d T = Eigen::Matrix4d::Identity();
  T.topLeftCorner<3, 3>() = X.rotation;
  T.topRightCorner<3, 1>() = X.translation;
  return T;
}

Transform framePose(const Model& model, const Data& data, int frame) {
  return data.X_WB[model.frames[frame].body] * model.frames[frame].placement;
}

std::shared_ptr<EngineModel> loadModelFrom(const std::string& path_or_name, bool floating_base,
                                           const std::string& inertia,
                                           const std::string& massless) {
  return std::make_shared<EngineModel>(
      loadModel(path_or_name, urdfOptionsOrThrow(floating_base, inertia, massless)));
}

std::shared_ptr<EngineModel> loadModelString(const std::string& text, const std::string& format,
                                             bool floating_base, const std::string& inertia,
                                             const std::string& massless,
                                             const std::string& base_directory) {
  const UrdfOptions options = urdfOptionsOrThrow(floating_base, inertia, massless);
  if (format == "urdf")
    return std::make_shared<EngineModel>(loadUrdfString(text, options, "<string>"));
  if (format == "sdf")
    return std::make_shared<EngineModel>(loadSdfString(text, options, "<string>"));
  if (format != "yaml" && format != "mjcf")
    throw py::value_error("unknown format '" + format + "' (urdf, sdf, mjcf or yaml)");
  if (options.any()) {
    throw py::value_error("floating_base, inertia and massless apply to URDF and SDFormat; a YAML "
                          "model sets them in its urdf wrapper, an MJCF model in its joints");
  }
  if (format == "mjcf") return std::make_shared<EngineModel>(loadMjcfString(text, "<string>"));
  return std::make_shared<EngineModel>(loadYamlString(text, base_directory, "<string>"));
}

// --- the functions -------------------------------------------------------------------------------

Eigen::VectorXd rneaOf(EngineModel& m, const Array& q, const Array& v, const Array& a) {
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  readVelocity(m, v, "v", m.v());
  readVelocity(m, a, "a", m.x());
  return rnea(m.model(), m.data(DataWorkspace::kPerBody), q_in, m.v(), m.x());
}

Eigen::VectorXd gravityOf(EngineModel& m, const Array& q) {
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  m.v().setZero();
  m.x().setZero();
  return rnea(m.model(), m.data(DataWorkspace::kPerBody), q_in, m.v(), m.x());
}

Eigen::MatrixXd crbaOf(EngineModel& m, const Array& q) {
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  return crba(m.model(), m.data(DataWorkspace::kJointSpaceInertia), q_in);
}

Eigen::VectorXd forwardDynamicsOf(EngineModel& m, const Array& q, const Array& v,
                                  const Array& tau, const std::string& formulation_name,
                                  bool constraints) {
  const Model& model = m.model();
  const Formulation formulation = formulationOrThrow(model, formulation_name);
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  readVelocity(m, v, "v", m.v());
  readVelocity(m, tau, "tau", m.x());
  Data& data = m.data(formulationInfo(formulation).workspace);
  forwardDynamics(formulation, model, data, q_in, m.v(), m.x());
  // loops, force elements, limits, friction, contact: the constraint stage after the tree's q̈,
  // as the Simulator and `hilsim eval` do
  if (constraints && model.needsConstraintStage())
    m.freshStage(formulation).accelerations(model, data, q_in, m.v(), m.x(), data.qdd);
  return data.qdd;
}

py::dict forwardKinematicsOf(EngineModel& m, const Array& q) {
  const Model& model = m.model();
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  Data& data = m.data(DataWorkspace::kPerBody);
  forwardKinematics(model, data, q_in);
  py::dict poses;
  for (int f = 0; f < static_cast<int>(model.frames.size()); ++f)
    poses[py::str(model.frames[f].name)] = homogeneous(framePose(model, data, f));
  return poses;
}

Eigen::Matrix4d framePlacementOf(EngineModel& m, const Array& q, const std::string& frame_name) {
  const Model& model = m.model();
  const int frame = frameOrThrow(model, frame_name);
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  Data& data = m.data(DataWorkspace::kPerBody);
  forwardKinematics(model, data, q_in);
  return homogeneous(framePose(model, data, frame));
}

Eigen::MatrixXd frameJacobianOf(EngineModel& m, const Array& q, const std::string& frame_name,
                                const std::string& reference_name) {
  const Model& model = m.model();
  const int frame = frameOrThrow(model, frame_name);
  const JacobianReference reference = referenceOrThrow(reference_name);
  const Eigen::VectorXd& q_in = readConfiguration(m, q);
  Data& data = m.data(DataWorkspace::kPerBody);
  forwardKinematics(model, data, q_in);
  frameJacobian(model, data, frame, reference, m.jacobian());
  return m.jacobian();
}

// A Simulator on a Model: fixed steps of the engine's integrators, the constraint stage included.
class EngineSimulator {
 public:
  EngineSimulator(const std::shared_ptr<EngineModel>& model, const std::string& formulation,
                  const std::string& integrator, double dt)
      : model_(model),
        simulator_(model->shared(), formulationOrThrow(model->model(), formulation),
                   integratorOrThrow(integrator), dtOrThrow(dt)),
        tau_(model->model().nv) {}

  void step(const Array& tau, int steps) {
    if (steps < 0) throw py::value_error("steps must be >= 0, got " + std::to_string(steps));
    readVector(tau, model_->model().nv, "tau", "nv", tau_);
    for (int k = 0; k < steps; ++k) simulator_.step(tau_);
  }

  void setState(const Array& q, const Array& v, double time) {
    if (!std::isfinite(time)) throw py::value_error("time is not finite");
    simulator_.setState(readConfiguration(*model_, q), readVelocity(*model_, v, "v", model_->v()),
                        time);
  }

  const Simulator& simulator() const { return simulator_; }
  Simulator& simulator() { return simulator_; }

 private:
  static Integrator integratorOrThrow(const std::string& name) {
    if (const std::optional<Integrator> integrator = parseIntegrator(name)) return *integrator;
    throw py::value_error("unknown integrator '" + name + "' (expected euler, rk4 or imex_euler)");
  }
  static double dtOrThrow(double dt) {
    if (std::isfinite(dt) && dt > 0.0) return dt;
    throw py::value_error("dt must be a finite number > 0, got " + std::to_string(dt));
  }

  std::shared_ptr<EngineModel> model_;  // keeps the Model the Simulator reads alive
  Simulator simulator_;
  Eigen::VectorXd tau_;
};

std::vector<std::string> formulationList() {
  std::vector<std::string> names;
  for (const FormulationInfo& f : formulations()) names.emplace_back(f.name);
  return names;
}

// The entries of body 1 … nbodies−1 (entry 0 is the world's placeholder).
std::vector<std::string> jointNames(const Model& model) {
  return {model.joint_names.begin() + 1, model.joint_names.end()};
}

std::vector<std::string> frameNames(const Model& model) {
  std::vector<std::string> names;
  for (const Frame& f : model.frames) names.push_back(f.name);
  return names;
}

}  // namespace
}  // namespace hilsim

PYBIND11_MODULE(_engine, module) {
  using namespace hilsim;
  module.doc() = "The hilsim dynamics engine in process: models, kinematics, Jacobians, "
                 "inverse and forward dynamics (docs/PYTHON.md, \"Engine\").";
  py::register_exception<ModelError>(module, "ModelError", PyExc_ValueError);

  py::class_<EngineModel, std::shared_ptr<EngineModel>>(
      module, "Model",
      "A loaded model with its workspaces. Made by load_model or load_model_string; the "
      "functions of this module take it first.")
      .def_property_readonly("name", [](const EngineModel& m) { return m.model().name; })
      .def_property_readonly("nq", [](const EngineModel& m) { return m.model().nq; },
                             "configuration size")
      .def_property_readonly("nv", [](const EngineModel& m) { return m.model().nv; },
                             "velocity size (degrees of freedom)")
      .def_property_readonly("nbodies", [](const EngineModel& m) { return m.model().nbodies; },
                             "bodies, the world (body 0) included")
      .def_property_readonly("body_names",
                             [](const EngineModel& m) { return m.model().body_names; },
                             "nbodies names, 'world' first")
      .def_property_readonly("joint_names",
                             [](const EngineModel& m) { return jointNames(m.model()); },
                             "the joint of each body 1 … nbodies−1")
      .def_property_readonly("frame_names",
                             [](const EngineModel& m) { return frameNames(m.model()); },
                             "every frame: the world, each body, each welded link")
      .def_property_readonly(
          "q_names", [](const EngineModel& m) { return coordinateLabels(m.model(), false); },
          "a label for each entry of q (nq)")
      .def_property_readonly(
          "v_names", [](const EngineModel& m) { return coordinateLabels(m.model(), true); },
          "a label for each entry of v, a and tau (nv)")
      .def_property_readonly("gravity",
                             [](const EngineModel& m) -> Eigen::Vector3d { return m.model().gravity; },
                             "in the world frame [m/s²]")
      .def_property_readonly(
          "neutral_configuration",
          [](const EngineModel& m) { return m.model().neutralConfiguration(); },
          "zero joint values, identity quaternions (nq)")
      .def_property_readonly(
          "initial_configuration",
          [](const EngineModel& m) { return m.model().initialConfiguration(); },
          "where a simulation starts: the neutral configuration with the model file's initial "
          "values (nq)")
      .def_property_readonly("lower_limit",
                             [](const EngineModel& m) -> Eigen::VectorXd { return m.model().lower_limit; },
                             "position limits of 1-DoF joints, -inf elsewhere (nv) [rad or m]")
      .def_property_readonly("upper_limit",
                             [](const EngineModel& m) -> Eigen::VectorXd { return m.model().upper_limit; },
                             "position limits of 1-DoF joints, +inf elsewhere (nv) [rad or m]")
      .def_property_readonly(
          "velocity_limit",
          [](const EngineModel& m) -> Eigen::VectorXd { return m.model().velocity_limit; },
          "+inf when unknown (nv) [rad/s or m/s]")
      .def_property_readonly(
          "effort_limit",
          [](const EngineModel& m) -> Eigen::VectorXd { return m.model().effort_limit; },
          "+inf when unknown (nv) [N·m or N]")
      .def_property_readonly("nconstraints",
                             [](const EngineModel& m) { return m.model().nconstraints; },
                             "rows of the loop closures")
      .def_property_readonly("total_mass",
                             [](const EngineModel& m) { return m.model().totalMass(); }, "[kg]")
      .def_property_readonly("load_warnings",
                             [](const EngineModel& m) { return m.model().load_warnings; },
                             "what the loader accepted or changed, one line each")
      .def("__repr__", [](const EngineModel& m) {
        return "<hilsim.engine.Model '" + m.model().name + "': nq " +
               std::to_string(m.model().nq) + ", nv " + std::to_string(m.model().nv) + ", " +
               std::to_string(m.model().nbodies - 1) + " moving bodies>";
      });

  py::class_<EngineSimulator>(
      module, "Simulator",
      "Fixed-step simulation of a Model (engine/integrators/simulator.h): the formulation's "
      "forward dynamics, the constraint stage, the integrator. Starts at the model's initial "
      "configuration at rest.")
      .def(py::init<const std::shared_ptr<EngineModel>&, const std::string&, const std::string&,
                    double>(),
           py::arg("model"), py::kw_only(), py::arg("formulation") = "aba",
           py::arg("integrator") = "rk4", py::arg("dt") = 1e-3,
           "integrator: euler, rk4 or imex_euler; dt [s] > 0.")
      .def("step", &EngineSimulator::step, py::arg("tau"), py::arg("steps") = 1,
           "Advances `steps` steps of dt with joint forces tau (nv) held.")
      .def("set_state", &EngineSimulator::setState, py::arg("q"), py::arg("v"),
           py::arg("time") = 0.0,
           "Sets (q, v, t); quaternions renormalised, loops assembled (docs/LOOPS.md).")
      .def_property_readonly("q", [](const EngineSimulator& s) -> Eigen::VectorXd {
        return s.simulator().q();
      })
      .def_property_readonly("v", [](const EngineSimulator& s) -> Eigen::VectorXd {
        return s.simulator().v();
      })
      .def_property_readonly(
          "qdd", [](const EngineSimulator& s) -> Eigen::VectorXd { return s.simulator().qdd(); },
          "q̈ at the start of the last step")
      .def_property_readonly(
          "applied_tau",
          [](const EngineSimulator& s) -> Eigen::VectorXd { return s.simulator().appliedTau(); },
          "the joint forces the last step applied, within the actuator limits")
      .def_property_readonly("time", [](const EngineSimulator& s) { return s.simulator().time(); })
      .def_property_readonly("dt", [](const EngineSimulator& s) { return s.simulator().dt(); })
      .def("energy", [](EngineSimulator& s) { return s.simulator().energy(); },
           "kinetic + potential energy now [J]");

  module.def("load_model", &loadModelFrom, py::arg("path_or_name"), py::kw_only(),
             py::arg("floating_base") = false, py::arg("inertia") = "as_given",
             py::arg("massless") = "refuse",
             "A .urdf, .sdf, .xml/.mjcf (MJCF) or .yaml/.yml file, or a bundled model's name "
             "('iiwa14'). URDF and SDFormat: floating_base puts a free joint at the root; "
             "inertia is as_given, balance or strict; massless is refuse, weld or "
             "armature=<kg·m²>. Raises ModelError with the loader's message.");
  module.def("load_model_string", &loadModelString, py::arg("text"), py::kw_only(),
             py::arg("format") = "urdf", py::arg("floating_base") = false,
             py::arg("inertia") = "as_given", py::arg("massless") = "refuse",
             py::arg("base_directory") = ".",
             "A model from its text: format 'urdf', 'sdf', 'mjcf' or 'yaml' (relative paths "
             "inside a YAML text resolve against base_directory; SDFormat and MJCF texts read "
             "no file).");
  module.def("formulations", &formulationList,
             "The forward-dynamics formulations' names, the default (aba) first.");
  module.def("forward_kinematics", &forwardKinematicsOf, py::arg("model"), py::arg("q"),
             "{frame name: 4x4 pose of the frame in the world} at q.");
  module.def("frame_placement", &framePlacementOf, py::arg("model"), py::arg("q"),
             py::arg("frame"), "4x4 pose of the frame in the world at q.");
  module.def("frame_jacobian", &frameJacobianOf, py::arg("model"), py::arg("q"), py::arg("frame"),
             py::arg("reference") = "local_world_aligned",
             "6 x nv Jacobian J of the frame, rows [angular; linear]: J v is the frame's spatial "
             "velocity in 'world' (W axes, about W's origin), 'local' (the frame's axes, about "
             "its origin) or 'local_world_aligned' (W axes, about the frame's origin).");
  module.def("rnea", &rneaOf, py::arg("model"), py::arg("q"), py::arg("v"), py::arg("a"),
             "Inverse dynamics of the tree: the joint forces tau (nv) that give joint "
             "accelerations a at (q, v), damping and armature included.");
  module.def("gravity", &gravityOf, py::arg("model"), py::arg("q"),
             "The joint forces that hold the tree still against gravity at q: rnea(q, 0, 0).");
  module.def("crba", &crbaOf, py::arg("model"), py::arg("q"),
             "The joint-space inertia M(q) (nv x nv, symmetric), armature included.");
  module.def("forward_dynamics", &forwardDynamicsOf, py::arg("model"), py::arg("q"), py::arg("v"),
             py::arg("tau"), py::kw_only(), py::arg("formulation") = "aba",
             py::arg("constraints") = true,
             "Joint accelerations (nv) at (q, v) under joint forces tau with a formulation of "
             "formulations(). constraints: through the constraint stage (loops, force elements, "
             "limits, friction, contact) as the simulator; False: the tree alone.");
}
