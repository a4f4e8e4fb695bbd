// SDFormat loading: bundled URDF robots written as SDFormat give the same Model as their URDF,
// a four-bar in SDFormat the same q̈ as the native YAML model with `loops:`, nested models, worlds,
// includes, and one clear error for each class of refused file.
#include <gtest/gtest.h>
#include <tinyxml2.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/rnea.h"
#include "engine/builder/model_builder.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::relativeDifference;

// --- a URDF written as SDFormat 1.9 ---

std::string attribute(const tinyxml2::XMLElement* e, const char* name, const char* fallback) {
  const char* value = e ? e->Attribute(name) : nullptr;
  return value ? value : fallback;
}

// The URDF's links and joints as an SDFormat model, element by element: each link's pose is its
// parent joint's frame (pose relative_to the joint), each joint's pose is its <origin> relative to
// the parent link, as URDF says; a link without <inertial> gets an explicit zero one (SDFormat's
// default is 1 kg). `fixed_base`: the root link is welded to the world by a fixed joint;
// otherwise the model has no joint to the world and floats.
std::string urdfToSdf(const std::string& urdf, bool fixed_base) {
  tinyxml2::XMLDocument document;
  EXPECT_EQ(document.Parse(urdf.c_str()), tinyxml2::XML_SUCCESS);
  const tinyxml2::XMLElement* robot = document.RootElement();
  std::map<std::string, std::string> parent_joint;  // by child link
  for (auto* j = robot->FirstChildElement("joint"); j; j = j->NextSiblingElement("joint"))
    parent_joint[attribute(j->FirstChildElement("child"), "link", "")] = attribute(j, "name", "");
  std::ostringstream s;
  s << "<?xml version='1.0'?>\n<sdf version='1.9'><model name='" << attribute(robot, "name", "r")
    << "'>\n";
  std::string root;
  for (auto* l = robot->FirstChildElement("link"); l; l = l->NextSiblingElement("link")) {
    const std::string name = attribute(l, "name", "");
    s << "<link name='" << name << "'>";
    if (const auto joint = parent_joint.find(name); joint != parent_joint.end())
      s << "<pose relative_to='" << joint->second << "'>0 0 0 0 0 0</pose>";
    else
      root = name;
    const tinyxml2::XMLElement* inertial = l->FirstChildElement("inertial");
    s << "<inertial>";
    if (inertial != nullptr) {
      const tinyxml2::XMLElement* origin = inertial->FirstChildElement("origin");
      const tinyxml2::XMLElement* moments = inertial->FirstChildElement("inertia");
      s << "<pose>" << attribute(origin, "xyz", "0 0 0") << " " << attribute(origin, "rpy", "0 0 0")
        << "</pose><mass>" << attribute(inertial->FirstChildElement("mass"), "value", "0")
        << "</mass><inertia>";
      for (const char* k : {"ixx", "ixy", "ixz", "iyy", "iyz", "izz"})
        s << "<" << k << ">" << attribute(moments, k, "0") << "</" << k << ">";
      s << "</inertia>";
    } else {
      s << "<mass>0</mass><inertia><ixx>0</ixx><iyy>0</iyy><izz>0</izz></inertia>";
    }
    s << "</inertial></link>\n";
  }
  for (auto* j = robot->FirstChildElement("joint"); j; j = j->NextSiblingElement("joint")) {
    const std::string type = attribute(j, "type", "");
    EXPECT_TRUE(type == "revolute" || type == "continuous" || type == "prismatic" ||
                type == "fixed")
        << type;
    const tinyxml2::XMLElement* origin = j->FirstChildElement("origin");
    const std::string parent = attribute(j->FirstChildElement("parent"), "link", "");
    s << "<joint name='" << attribute(j, "name", "") << "' type='" << type
      << "'><pose relative_to='" << parent << "'>" << attribute(origin, "xyz", "0 0 0") << " "
      << attribute(origin, "rpy", "0 0 0") << "</pose><parent>" << parent << "</parent><child>"
      << attribute(j->FirstChildElement("child"), "link", "") << "</child>";
    if (type != "fixed") {
      s << "<axis><xyz>" << attribute(j->FirstChildElement("axis"), "xyz", "1 0 0") << "</xyz>";
      if (const tinyxml2::XMLElement* limit = j->FirstChildElement("limit")) {
        s << "<limit>";
        if (type != "continuous")
          s << "<lower>" << attribute(limit, "lower", "0") << "</lower><upper>"
            << attribute(limit, "upper", "0") << "</upper>";
        s << "<effort>" << attribute(limit, "effort", "0") << "</effort><velocity>"
          << attribute(limit, "velocity", "0") << "</velocity></limit>";
      }
      if (const tinyxml2::XMLElement* dynamics = j->FirstChildElement("dynamics"))
        s << "<dynamics><damping>" << attribute(dynamics, "damping", "0")
          << "</damping><friction>" << attribute(dynamics, "friction", "0")
          << "</friction></dynamics>";
      s << "</axis>";
    }
    s << "</joint>\n";
  }
  if (fixed_base)
    s << "<joint name='world_weld' type='fixed'><parent>world</parent><child>" << root
      << "</child></joint>\n";
  s << "</model></sdf>\n";
  return s.str();
}

// Two models that must be one: the same bodies, joints, parameters and frames, and the same mass
// matrix, inverse and forward dynamics at random states. They differ only by rounding (SDFormat's
// poses pass through quaternions and libsdformat's pose graph): 1e-12 relative bounds that
// with room for the mass matrix's condition number on the way to q̈.
void expectSameModel(const Model& sdf, const Model& urdf) {
  ASSERT_EQ(sdf.nbodies, urdf.nbodies);
  ASSERT_EQ(sdf.nq, urdf.nq);
  ASSERT_EQ(sdf.nv, urdf.nv);
  EXPECT_EQ(sdf.body_names, urdf.body_names);
  EXPECT_EQ(sdf.parent, urdf.parent);
  for (int i = 1; i < sdf.nbodies; ++i) {
    SCOPED_TRACE("body " + sdf.body_names[i]);
    EXPECT_EQ(sdf.joints[i].type, urdf.joints[i].type);
    if (sdf.nv_joint[i] > 0) {
      EXPECT_EQ(sdf.joint_names[i], urdf.joint_names[i]);
    }
    EXPECT_TRUE(sdf.joint_placement[i].isApprox(urdf.joint_placement[i], 1e-12));
    EXPECT_NEAR(sdf.inertias[i].mass, urdf.inertias[i].mass, 1e-12);
    EXPECT_LT((sdf.inertias[i].com - urdf.inertias[i].com).norm(), 1e-12);
    EXPECT_LT((sdf.inertias[i].inertia_com - urdf.inertias[i].inertia_com).norm(), 1e-12);
  }
  for (const auto& [a, b] : {std::pair{&sdf.damping, &urdf.damping},
                             {&sdf.friction, &urdf.friction},
                             {&sdf.lower_limit, &urdf.lower_limit},
                             {&sdf.upper_limit, &urdf.upper_limit},
                             {&sdf.effort_limit, &urdf.effort_limit},
                             {&sdf.velocity_limit, &urdf.velocity_limit}})
    EXPECT_EQ(*a, *b);
  for (const Frame& f : urdf.frames) {
    const int k = sdf.frameIndex(f.name);
    ASSERT_GE(k, 0) << f.name;
    EXPECT_EQ(sdf.frames[k].body, f.body) << f.name;
    EXPECT_TRUE(sdf.frames[k].placement.isApprox(f.placement, 1e-12)) << f.name;
  }
  Data data_sdf(sdf), data_urdf(urdf);
  std::mt19937 rng(48);
  for (int trial = 0; trial < 10; ++trial) {
    const Eigen::VectorXd q = test::randomConfiguration(urdf, rng);
    const Eigen::VectorXd v = test::randomVector(urdf.nv, rng);
    const Eigen::VectorXd a = test::randomVector(urdf.nv, rng);
    const Eigen::VectorXd tau = test::randomVector(urdf.nv, rng, 10.0);
    const Eigen::MatrixXd m_sdf = crba(sdf, data_sdf, q);
    EXPECT_LT(relativeDifference(m_sdf, crba(urdf, data_urdf, q)), 1e-12) << "trial " << trial;
    const Eigen::VectorXd tau_sdf = rnea(sdf, data_sdf, q, v, a);
    EXPECT_LT(relativeDifference(tau_sdf, rnea(urdf, data_urdf, q, v, a)), 1e-12);
    const Eigen::VectorXd qdd_sdf = aba(sdf, data_sdf, q, v, tau);
    EXPECT_LT(relativeDifference(qdd_sdf, aba(urdf, data_urdf, q, v, tau)), 1e-12);
  }
}

std::string bundledText(const std::string& file) {
  return io_detail::readTextFile(HILSIM_MODEL_DIR "/" + file, std::size_t{1} << 24);
}

TEST(SdfLoader, ArmWrittenAsSdformatIsTheUrdfModel) {
  // panda: seven revolute joints, two prismatic fingers, welded hand frames, a fixed base
  const std::string urdf = bundledText("panda.urdf");
  const Model from_urdf = loadUrdfString(urdf, false, "panda.urdf");
  const Model from_sdf = loadSdfString(urdfToSdf(urdf, true), {}, "panda.sdf");
  EXPECT_EQ(from_sdf.nv, 9);
  expectSameModel(from_sdf, from_urdf);
}

TEST(SdfLoader, FreeModelIsTheUrdfWithAFloatingBase) {
  // solo12: no joint to the world in SDFormat is the URDF's floating_base
  const std::string urdf = bundledText("solo12.urdf");
  const Model from_urdf = loadUrdfString(urdf, true, "solo12.urdf");
  const Model from_sdf = loadSdfString(urdfToSdf(urdf, false), {}, "solo12.sdf");
  EXPECT_EQ(from_sdf.nv, 18);
  EXPECT_EQ(from_sdf.joint_names[1], "root_joint");
  expectSameModel(from_sdf, from_urdf);
  // floating_base turns the weld to the world into a free joint, as for URDF
  UrdfOptions floating;
  floating.floating_base = true;
  const Model welded_then_floated = loadSdfString(urdfToSdf(urdf, true), floating, "solo12.sdf");
  EXPECT_EQ(welded_then_floated.nv, 18);
  EXPECT_EQ(welded_then_floated.joints[1].type, JointType::kFreeFlyer);
}

// --- hand-written models ---

std::string sdfModel(const std::string& body, const std::string& attributes = "") {
  return "<?xml version='1.0'?>\n<sdf version='1.9'>\n<model name='m'" + attributes + ">\n" +
         body + "</model>\n</sdf>\n";
}

std::string inertialXml(double mass, double ixx, double iyy, double izz,
                        const std::string& pose = "0 0 0 0 0 0") {
  std::ostringstream s;
  s.precision(17);
  s << "<inertial><pose>" << pose << "</pose><mass>" << mass << "</mass><inertia><ixx>" << ixx
    << "</ixx><iyy>" << iyy << "</iyy><izz>" << izz << "</izz></inertia></inertial>";
  return s.str();
}

const std::string kBar = inertialXml(1.0, 0.01, 0.02, 0.02, "0.1 0 0 0 0 0");

std::string linkXml(const std::string& name, const std::string& inner = kBar) {
  return "<link name='" + name + "'>" + inner + "</link>\n";
}

std::string jointXml(const std::string& name, const std::string& type, const std::string& parent,
                     const std::string& child, const std::string& inner = "") {
  return "<joint name='" + name + "' type='" + type + "'><parent>" + parent + "</parent><child>" +
         child + "</child>" + inner + "</joint>\n";
}

std::string message(const std::function<void()>& load) {
  try {
    load();
  } catch (const ModelError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ModelError";
  return {};
}

// A Grashof crank–rocker (config/models/four_bar.yaml's dimensions) posed assembled in the x–y
// plane: crank at θ, and the coupler's and rocker's angles φ, ψ that close it, as world angles.
struct FourBarPose {
  double theta = std::numbers::pi / 2, phi = 0.0, psi = 0.0;
};

FourBarPose assembledFourBar() {
  FourBarPose p;
  // crank tip A, rocker pivot D; the coupler (0.35) and rocker (0.3) meet at the upper
  // intersection of the circles about A and D
  const Eigen::Vector2d a(0.1 * std::cos(p.theta), 0.1 * std::sin(p.theta)), d(0.4, 0.0);
  const double r1 = 0.35, r2 = 0.3, dist = (d - a).norm();
  const double along = (r1 * r1 - r2 * r2 + dist * dist) / (2 * dist);
  const double across = std::sqrt(r1 * r1 - along * along);
  const Eigen::Vector2d u = (d - a) / dist, n(-u.y(), u.x());
  const Eigen::Vector2d pin = a + along * u + across * n;
  p.phi = std::atan2(pin.y() - a.y(), pin.x() - a.x());
  p.psi = std::atan2(pin.y() - d.y(), pin.x() - d.x());
  return p;
}

std::string number(double x) {
  std::ostringstream s;
  s.precision(17);
  s << x;
  return s.str();
}

TEST(SdfLoader, FourBarClosesItsLoopLikeTheNativeModel) {
  const FourBarPose p = assembledFourBar();
  const std::string axis = "<axis><xyz>0 0 1</xyz></axis>";
  // link poses in the model frame; every joint at its child link's origin (SDFormat's default)
  // but the pin, at the rocker's tip; the rocker has two parent joints
  const std::string sdf = sdfModel(
      "<link name='crank'><pose>0 0 0 0 0 " + number(p.theta) + "</pose>" +
      inertialXml(0.3, 1e-6, 2.5e-4, 2.5e-4, "0.05 0 0 0 0 0") + "</link>\n" +
      "<link name='coupler'><pose>" + number(0.1 * std::cos(p.theta)) + " " +
      number(0.1 * std::sin(p.theta)) + " 0 0 0 " + number(p.phi) + "</pose>" +
      inertialXml(0.6, 1e-6, 6.125e-3, 6.125e-3, "0.175 0 0 0 0 0") + "</link>\n" +
      "<link name='rocker'><pose>0.4 0 0 0 0 " + number(p.psi) + "</pose>" +
      inertialXml(0.5, 1e-6, 3.75e-3, 3.75e-3, "0.15 0 0 0 0 0") + "</link>\n" +
      jointXml("crank_joint", "revolute", "world", "crank",
               "<axis><xyz>0 0 1</xyz><dynamics><damping>0.001</damping></dynamics></axis>") +
      jointXml("coupler_joint", "revolute", "crank", "coupler", axis) +
      jointXml("rocker_joint", "revolute", "world", "rocker", axis) +
      jointXml("coupler_rocker_pin", "revolute", "coupler", "rocker",
               "<pose>0.3 0 0 0 0 0</pose>" + axis));
  const std::size_t model_start = sdf.find("<model");
  const std::string world = "<?xml version='1.0'?><sdf version='1.9'><world name='w'>"
                            "<gravity>0 -9.81 0</gravity>" +
                            sdf.substr(model_start, sdf.find("</sdf>") - model_start) +
                            "</world></sdf>";
  const Model from_sdf = loadSdfString(world, {}, "four_bar.sdf");
  // the same mechanism in the native format: the placements and loop frames the SDFormat poses
  // give (joint angles measured from that posture)
  const std::string yaml =
      "version: 1\nname: four_bar\ngravity: [0, -9.81, 0]\nbodies:\n"
      "  - name: crank\n    placement: {rpy: [0, 0, " + number(p.theta) + "]}\n"
      "    joint: {type: revolute, name: crank_joint, axis: [0, 0, 1], damping: 0.001}\n"
      "    inertia: {mass: 0.3, com: [0.05, 0, 0], inertia: [1.0e-6, 2.5e-4, 2.5e-4, 0, 0, 0]}\n"
      "  - name: coupler\n    parent: crank\n    placement: {xyz: [0.1, 0, 0], rpy: [0, 0, " +
      number(p.phi - p.theta) + "]}\n"
      "    joint: {type: revolute, name: coupler_joint, axis: [0, 0, 1]}\n"
      "    inertia: {mass: 0.6, com: [0.175, 0, 0],\n"
      "              inertia: [1.0e-6, 6.125e-3, 6.125e-3, 0, 0, 0]}\n"
      "  - name: rocker\n    placement: {xyz: [0.4, 0, 0], rpy: [0, 0, " + number(p.psi) + "]}\n"
      "    joint: {type: revolute, name: rocker_joint, axis: [0, 0, 1]}\n"
      "    inertia: {mass: 0.5, com: [0.15, 0, 0], inertia: [1.0e-6, 3.75e-3, 3.75e-3, 0, 0, 0]}\n"
      "loops:\n  - name: coupler_rocker_pin\n    type: revolute\n    body_a: coupler\n"
      "    frame_a: {xyz: [0.35, 0, 0], rpy: [0, 0, " + number(p.psi - p.phi) + "]}\n"
      "    body_b: rocker\n    frame_b: {xyz: [0.3, 0, 0]}\n    axis: [0, 0, 1]\n";
  const Model from_yaml = loadYamlString(yaml, ".", "four_bar.yaml");
  ASSERT_EQ(from_sdf.loops.size(), 1u);
  EXPECT_EQ(from_sdf.loops[0].type, ClosureType::kRevolute);
  EXPECT_EQ(from_sdf.body_names, from_yaml.body_names);
  EXPECT_EQ(from_sdf.nconstraints, 5);
  // q̈ of the tree and its closure stage at random states, assembled or not: the models differ
  // only by the rounding of the poses, so 1e-10 leaves the constraint solve's amplification room
  std::mt19937 rng(4);
  for (int trial = 0; trial < 20; ++trial) {
    const Eigen::VectorXd q = test::randomVector(3, rng, 0.3);
    const Eigen::VectorXd v = test::randomVector(3, rng);
    const Eigen::VectorXd tau = test::randomVector(3, rng, 0.1);
    Eigen::VectorXd qdd[2];
    const Model* models[2] = {&from_sdf, &from_yaml};
    for (int k = 0; k < 2; ++k) {
      Data data(*models[k]);
      ConstraintRowStage stage(*models[k], formulationInfo(Formulation::kAba));
      qdd[k] = forwardDynamics(Formulation::kAba, *models[k], data, q, v, tau);
      stage.accelerations(*models[k], data, q, v, tau, qdd[k]);
    }
    EXPECT_LT((qdd[0] - qdd[1]).norm(), 1e-10 * std::max(1.0, qdd[1].norm()))
        << "trial " << trial << ": " << qdd[0].transpose() << " vs " << qdd[1].transpose();
  }
}

TEST(SdfLoader, NestedModelsAreScopedAndPosedInTheTopModel) {
  // a nested model turned a quarter turn about z and lifted: its link poses, its joint and its
  // axis (expressed in the nested model's frame) all pass through that pose
  const std::string text = sdfModel(
      linkXml("base") + jointXml("base_joint", "fixed", "world", "base") +
      "<model name='arm'><pose>0 0 1 0 0 1.5707963267948966</pose>\n" +
      "<link name='upper'><pose>0.5 0 0 0 0 0</pose>" + kBar + "</link>\n" +
      jointXml("shoulder", "revolute", "upper", "lower",
               "<axis><xyz expressed_in='__model__'>1 0 0</xyz></axis>") +
      "<link name='lower'><pose>1 0 0 0 0 0</pose>" + kBar + "</link>\n</model>\n" +
      jointXml("mount", "revolute", "base", "arm::upper", "<axis><xyz>0 0 1</xyz></axis>"));
  const Model model = loadSdfString(text, {}, "nested.sdf");
  ASSERT_EQ(model.nv, 2);
  // base is welded to the world: a frame of the world, not a body
  EXPECT_EQ(model.body_names, (std::vector<std::string>{"world", "arm::upper", "arm::lower"}));
  ASSERT_GE(model.frameIndex("base"), 0);
  EXPECT_EQ(model.frames[model.frameIndex("base")].body, 0);
  const int upper = model.bodyIndex("arm::upper"), lower = model.bodyIndex("arm::lower");
  EXPECT_EQ(model.joint_names[lower], "arm::shoulder");
  // arm::upper sits at (0, 0.5, 1) turned by π/2, arm::lower 0.5 further along the arm's x
  const Matrix3 quarter =
      Eigen::AngleAxisd(std::numbers::pi / 2, Vector3::UnitZ()).toRotationMatrix();
  EXPECT_TRUE(model.joint_placement[upper].isApprox(Transform(quarter, Vector3(0, 0.5, 1)), 1e-12));
  EXPECT_TRUE(model.joint_placement[lower].isApprox(Transform(Matrix3::Identity(),
                                                              Vector3(0.5, 0, 0)), 1e-12));
  // the arm's x in the joint frame (which is turned like the arm) is x
  EXPECT_LT((model.joints[lower].axis - Vector3::UnitX()).norm(), 1e-12);
}

TEST(SdfLoader, FreeStaticAndWorldAttachedModels) {
  const std::string links = linkXml("a") + linkXml("b") +
                            jointXml("j", "prismatic", "a", "b",
                                     "<axis><xyz>0 1 0</xyz><limit><lower>-0.5</lower>"
                                     "<upper>0.5</upper><effort>20</effort><velocity>2</velocity>"
                                     "</limit><dynamics><damping>0.3</damping><friction>0.1"
                                     "</friction></dynamics></axis>");
  // no joint to the world: a free joint at the canonical link, placed at the model's pose
  const Model free = loadSdfString(
      "<sdf version='1.9'><model name='m'><pose>1 2 3 0 0 0</pose>" + links + "</model></sdf>");
  EXPECT_EQ(free.nv, 7);
  EXPECT_EQ(free.joints[1].type, JointType::kFreeFlyer);
  EXPECT_TRUE(free.joint_placement[1].translation.isApprox(Vector3(1, 2, 3)));
  const int j = free.idx_v[free.jointIndex("j")];
  EXPECT_EQ(free.lower_limit[j], -0.5);
  EXPECT_EQ(free.upper_limit[j], 0.5);
  EXPECT_EQ(free.effort_limit[j], 20.0);
  EXPECT_EQ(free.velocity_limit[j], 2.0);
  EXPECT_EQ(free.damping[j], 0.3);
  EXPECT_EQ(free.friction[j], 0.1);
  // <static>: the base is welded where the model stands
  const Model fixed = loadSdfString(sdfModel("<static>true</static>" + links));
  EXPECT_EQ(fixed.nv, 1);
  // a ball joint to the world: a spherical joint; continuous: no position limits
  const Model ball = loadSdfString(sdfModel(
      linkXml("a") + linkXml("b") + jointXml("socket", "ball", "world", "a") +
      jointXml("spin", "continuous", "a", "b", "<axis><xyz>0 0 1</xyz></axis>")));
  EXPECT_EQ(ball.joints[1].type, JointType::kSpherical);
  EXPECT_EQ(ball.nv, 4);
  EXPECT_TRUE(std::isinf(ball.lower_limit[3]));
  // floating_base cannot float a model that a moving joint attaches to the world
  UrdfOptions floating;
  floating.floating_base = true;
  const std::string hung = sdfModel(linkXml("a") + jointXml("socket", "ball", "world", "a"));
  EXPECT_NE(message([&] { loadSdfString(hung, floating); })
                .find("floating_base needs a model that is free or welded"),
            std::string::npos);
}

TEST(SdfLoader, SecondParentsBecomeLoopClosuresOfTheirType) {
  // a link hung from the world by a revolute joint and held by a ball, a prismatic and a fixed
  // joint from three others: the tree keeps the first joint that reaches each link
  const std::string text = sdfModel(
      linkXml("a") + linkXml("b") + linkXml("c") + linkXml("d") +
      jointXml("ja", "revolute", "world", "a", "<axis><xyz>0 0 1</xyz></axis>") +
      jointXml("jb", "revolute", "world", "b", "<axis><xyz>0 0 1</xyz></axis>") +
      jointXml("jc", "revolute", "world", "c", "<axis><xyz>0 0 1</xyz></axis>") +
      jointXml("jd", "revolute", "world", "d", "<axis><xyz>0 0 1</xyz></axis>") +
      jointXml("ball", "ball", "a", "b") +
      jointXml("slide", "prismatic", "b", "c", "<axis><xyz>1 0 0</xyz></axis>") +
      jointXml("weld", "fixed", "c", "d"));
  const Model model = loadSdfString(text);
  EXPECT_EQ(model.nv, 4);
  ASSERT_EQ(model.loops.size(), 3u);
  EXPECT_EQ(model.loops[0].type, ClosureType::kBall);
  EXPECT_EQ(model.loops[1].type, ClosureType::kPrismatic);
  EXPECT_EQ(model.loops[2].type, ClosureType::kWeld);
  EXPECT_EQ(model.nconstraints, 3 + 5 + 6);
  // a limit on the rows is checked before the loops are added
  ModelLimits limits;
  limits.max_constraint_rows = 10;
  EXPECT_NE(message([&] { loadSdfString(text, {}, "loops.sdf", limits); })
                .find("loops.sdf:14: joint 'weld': closing a loop"),
            std::string::npos);
}

TEST(SdfLoader, WorldGivesGravityGroundAndItsOneRobot) {
  const std::string ground =
      "<model name='ground_plane'><static>true</static><pose>0 0 -0.25 0 0 0</pose>"
      "<link name='link'><collision name='c'><geometry><plane><normal>0 0 1</normal>"
      "<size>10 10</size></plane></geometry><surface><friction><ode><mu>0.6</mu></ode>"
      "</friction></surface></collision></link></model>";
  const std::string robot =
      "<model name='ball'><pose>0 0 1 0 0 0</pose><link name='body'>" + kBar +
      "<collision name='foot'><pose>0 0 -0.1 0 0 0</pose><geometry><sphere><radius>0.05</radius>"
      "</sphere></geometry></collision></link></model>";
  const Model model = loadSdfString(
      "<sdf version='1.9'><world name='w'><gravity>0 0 -3.7</gravity>" + ground + robot +
      "</world></sdf>");
  EXPECT_EQ(model.name, "ball");
  EXPECT_EQ(model.gravity, Vector3(0, 0, -3.7));
  EXPECT_TRUE(model.ground.enabled);
  EXPECT_DOUBLE_EQ(model.ground.height, -0.25);
  EXPECT_DOUBLE_EQ(model.ground.friction, 0.6);
  ASSERT_EQ(model.contact_spheres.size(), 1u);
  EXPECT_EQ(model.contact_spheres[0].name, "body::foot");
  EXPECT_TRUE(model.contact_spheres[0].center.isApprox(Vector3(0, 0, -0.1)));
  // two models that move: which one is the robot is not for the loader to guess
  const std::string two = "<sdf version='1.9'><world name='w'>" + robot +
                          "<model name='other'>" + linkXml("x") + "</model></world></sdf>";
  EXPECT_NE(message([&] { loadSdfString(two, {}, "two.sdf"); })
                .find("has 2 models that move ('ball', 'other')"),
            std::string::npos);
}

TEST(SdfLoader, InertiaPolicyAppliesAsForUrdf) {
  // principal moments 1, 1, 3 break the triangle inequality (libsdformat itself refuses them)
  const std::string text = sdfModel(linkXml("a", inertialXml(1.0, 1.0, 1.0, 3.0)));
  const Model as_given = loadSdfString(text, {}, "t.sdf");
  ASSERT_EQ(as_given.load_warnings.size(), 1u);
  EXPECT_NE(as_given.load_warnings[0].find("link 'a': principal moments break the triangle"),
            std::string::npos);
  UrdfOptions strict;
  strict.inertia = InertiaPolicy::kStrict;
  EXPECT_NE(message([&] { loadSdfString(text, strict, "t.sdf"); }).find("t.sdf:4: link 'a'"),
            std::string::npos);
}

TEST(SdfLoader, IncludesResolveBesideTheFileOnly) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("hilsim_sdf_include_" + std::to_string(::getpid()));
  fs::create_directories(dir / "parts");
  std::ofstream(dir / "parts" / "arm.sdf") << sdfModel(linkXml("l"));
  const std::string top =
      sdfModel(linkXml("base") + jointXml("fix", "fixed", "world", "base") +
               "<include><uri>parts/arm.sdf</uri><name>arm</name></include>" +
               jointXml("mount", "revolute", "base", "arm::l", "<axis><xyz>0 0 1</xyz></axis>"));
  std::ofstream(dir / "top.sdf") << top;
  const Model model = loadModel((dir / "top.sdf").string());
  EXPECT_EQ(model.nv, 1);
  EXPECT_GE(model.bodyIndex("arm::l"), 0);
  // outside the directory: refused before libsdformat looks
  std::ofstream(dir / "escape.sdf")
      << sdfModel(linkXml("base") + "<include><uri>../x.sdf</uri></include>");
  EXPECT_NE(message([&] { loadSdf((dir / "escape.sdf").string()); })
                .find("only a relative path inside the file's directory"),
            std::string::npos);
  // a text never reads a file
  EXPECT_NE(message([&] { loadSdfString(top, {}, "client"); })
                .find("client:6: <include>: a model sent as text cannot include files"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(SdfLoaderErrors, EachNamesTheSourceAndTheElement) {
  const auto expect = [](const std::string& text, const std::string& part) {
    const std::string what = message([&] { loadSdfString(text, {}, "bad.sdf"); });
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  };
  expect("<sdf version='1.9'><model name='m'>", "bad.sdf:1: malformed XML");
  expect("<robot name='r'><link name='a'/></robot>", "bad.sdf:1: a <robot> element");
  expect("<sdf version='1.9'/><x/>", "the document must be one <sdf> element");
  // libsdformat would print this one to stderr itself: refused before it parses
  expect("<sdf version='1.9'><model name='m'><link name='a::b'/></model></sdf>",
         "bad.sdf:1: <link name='a::b'>: '::' is SDFormat's scope delimiter");
  expect(sdfModel(linkXml("a") + linkXml("b") +
                  jointXml("s", "screw", "a", "b", "<axis><xyz>0 0 1</xyz></axis>")),
         "bad.sdf:6: joint 's': unsupported joint type 'screw'");
  expect(sdfModel(linkXml("a") + linkXml("b") +
                  jointXml("u", "universal", "a", "b",
                           "<axis><xyz>1 0 0</xyz></axis><axis2><xyz>0 1 0</xyz></axis2>")),
         "joint type 'universal' is not supported: write it as two revolute joints");
  // libsdformat's own errors: the first names its line and element
  expect(sdfModel("<link name='a'><pose>nan 0 0 0 0 0</pose></link>"),
         "bad.sdf:4: /sdf/model[@name=\"m\"]/link[@name=\"a\"]/pose: ");
  expect(sdfModel(linkXml("a") + jointXml("j", "revolute", "a", "nowhere",
                                          "<axis><xyz>0 0 1</xyz></axis>")),
         "bad.sdf");
  const std::string missing = message([] { loadSdf("/nonexistent/robot.sdf"); });
  EXPECT_NE(missing.find("cannot open '/nonexistent/robot.sdf'"), std::string::npos) << missing;
}

}  // namespace
}  // namespace hilsim
