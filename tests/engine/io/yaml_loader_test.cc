// Native YAML models: every key maps onto the Model, YAML and URDF descriptions of one robot give
// the same dynamics, the URDF wrapper works, and every class of bad file has its own error naming
// file, line and element.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/io/loader_util.h"
#include "engine/builder/system_generator.h"
#include "engine/io/model_loader.h"
#include "engine/model/beam_modes.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::relativeDifference;

// Same model, two file formats: only the rounding of rpy → rotation may differ.
constexpr double kSameModelTol = 1e-13;

// Loading `yaml` must throw a one-line ModelError starting with "bad.yaml" and containing every
// `part`.
void expectYamlError(const std::string& yaml, std::initializer_list<std::string> parts,
                     const std::string& base_directory = ".") {
  try {
    loadYamlString(yaml, base_directory, "bad.yaml");
    ADD_FAILURE() << "no error for:\n" << yaml;
  } catch (const ModelError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("bad.yaml", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

// One body on a revolute joint, with `extra` lines appended to the body and the joint/inertia
// replaced when given.
std::string oneBody(const std::string& joint = "{type: revolute, axis: [0, 0, 1]}",
                    const std::string& inertia = "{mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}") {
  return "bodies:\n"
         "  - name: a\n"
         "    joint: " +
         joint +
         "\n"
         "    inertia: " +
         inertia + "\n";
}

const char* const kEverything = R"(version: 1
name: everything
gravity: [0, 0, -1.62]
bodies:
  - name: cart
    parent: world
    joint: {type: prismatic, name: rail, axis: [2, 0, 0], damping: 0.3, armature: 0.01,
            limits: {lower: -1, upper: 1, velocity: 2, effort: 30}}
    placement: {xyz: [0, 0, 0.5], quaternion: [0.7071067811865476, 0, 0, 0.7071067811865476]}
    inertia: {mass: 2, com: [0.1, 0, 0], inertia: [0.02, 0.03, 0.04, 0.001, 0.002, 0.003]}
  - name: ball
    parent: cart
    joint: {type: spherical, damping: 0.1}
    placement: {xyz: [0, 0, 0.1], rpy: [0, 0, 1.5707963267948966]}
    inertia: {mass: 0.5, inertia: [1.0e-3, 1.0e-3, 1.0e-3, 0, 0, 0]}
  - name: puck
    parent: ball
    joint: {type: planar, axis: [0, 0, 1], limits: {velocity: 3}}
    inertia: {mass: 0.2, inertia: [1.0e-3, 1.0e-3, 2.0e-3, 0, 0, 0]}
  - name: sensor
    parent: puck
    joint: {type: fixed}
    placement: {xyz: [0.05, 0, 0]}
  - name: drone
    joint: {type: free}
    inertia: {mass: 1.5, inertia: [0.01, 0.01, 0.02, 0, 0, 0]}
)";

// --- mapping ---

TEST(YamlLoader, EveryKeyReachesTheModel) {
  const Model m = loadYamlString(kEverything);
  EXPECT_EQ(m.name, "everything");
  EXPECT_EQ(m.gravity, Vector3(0, 0, -1.62));
  EXPECT_EQ(m.nbodies, 5);  // sensor is welded
  EXPECT_EQ(m.nq, 1 + 4 + 3 + 7);
  EXPECT_EQ(m.nv, 1 + 3 + 3 + 6);

  const int cart = m.bodyIndex("cart");
  EXPECT_EQ(m.jointIndex("rail"), cart);
  EXPECT_EQ(m.joints[cart].type, JointType::kPrismatic);
  EXPECT_LT((m.joints[cart].axis - Vector3::UnitX()).norm(), 1e-15);
  const int rail = m.idx_v[cart];
  EXPECT_EQ(m.damping[rail], 0.3);
  EXPECT_EQ(m.armature[rail], 0.01);
  EXPECT_EQ(m.lower_limit[rail], -1.0);
  EXPECT_EQ(m.upper_limit[rail], 1.0);
  EXPECT_EQ(m.velocity_limit[rail], 2.0);
  EXPECT_EQ(m.effort_limit[rail], 30.0);
  EXPECT_EQ(m.joint_placement[cart].translation, Vector3(0, 0, 0.5));
  // the quaternion and the rpy both say 90° about z
  const Matrix3 rz = Eigen::AngleAxisd(M_PI / 2, Vector3::UnitZ()).toRotationMatrix();
  EXPECT_LT((m.joint_placement[cart].rotation - rz).norm(), 1e-15);
  EXPECT_LT((m.joint_placement[m.bodyIndex("ball")].rotation - rz).norm(), 1e-15);
  const Inertia& i = m.inertias[cart];
  EXPECT_EQ(i.mass, 2.0);
  EXPECT_EQ(i.com, Vector3(0.1, 0, 0));
  EXPECT_EQ(i.inertia_com(0, 1), 0.001);
  EXPECT_EQ(i.inertia_com(2, 0), 0.002);
  EXPECT_EQ(i.inertia_com(1, 2), 0.003);
  EXPECT_EQ(i.inertia_com(2, 2), 0.04);

  const int ball = m.bodyIndex("ball");
  EXPECT_EQ(m.joints[ball].type, JointType::kSpherical);
  EXPECT_EQ(m.jointIndex("ball"), ball);  // joint name defaults to the body name
  for (int k = 0; k < 3; ++k) EXPECT_EQ(m.damping[m.idx_v[ball] + k], 0.1);
  const int puck = m.bodyIndex("puck");
  EXPECT_EQ(m.joints[puck].type, JointType::kPlanar);
  EXPECT_EQ(m.velocity_limit[m.idx_v[puck]], 3.0);
  EXPECT_TRUE(std::isinf(m.effort_limit[m.idx_v[puck]]));
  ASSERT_GE(m.frameIndex("sensor"), 0);
  EXPECT_EQ(m.frames[m.frameIndex("sensor")].body, puck);
  const int drone = m.bodyIndex("drone");
  EXPECT_EQ(m.parent[drone], 0);  // parent defaults to the world
  EXPECT_EQ(m.joints[drone].type, JointType::kFreeFlyer);
}

TEST(YamlLoader, PendulumHasTheDocumentedSmallAnglePeriod) {
  const Model m = loadYaml(HILSIM_MODEL_DIR "/pendulum.yaml");
  ASSERT_EQ(m.nq, 1);
  EXPECT_EQ(m.name, "pendulum");
  EXPECT_EQ(m.inertias[1].mass, 1.0);
  Data data(m);
  Eigen::VectorXd q(1), v = Eigen::VectorXd::Zero(1), tau = Eigen::VectorXd::Zero(1);
  q << 1e-6;
  const double omega2 = -aba(m, data, q, v, tau)(0) / q(0);
  const double period = 2 * M_PI / std::sqrt(omega2);
  const double ideal = 2 * M_PI * std::sqrt(1.0 / 9.81);
  EXPECT_NEAR(period, 2 * M_PI * std::sqrt((1.0 + 1e-6) / 9.81), 1e-9);
  EXPECT_LT(std::abs(period - ideal) / ideal, 1e-6);
}

const char* const kSmallRobotUrdf = R"(<robot name="small">
  <link name="base">
    <inertial><origin xyz="0 0 0.05"/><mass value="2.0"/>
      <inertia ixx="0.02" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.2" rpy="0.1 0 0.2"/><axis xyz="0 0 1"/>
    <limit lower="-2" upper="2" effort="10" velocity="5"/><dynamics damping="0.1"/>
  </joint>
  <link name="l1">
    <inertial><origin xyz="0.05 0 0.1"/><mass value="1.2"/>
      <inertia ixx="0.01" iyy="0.012" izz="0.008" ixy="0.001" ixz="0" iyz="-0.0005"/></inertial>
  </link>
  <joint name="tool_mount" type="fixed">
    <parent link="l1"/><child link="tool"/><origin xyz="0.3 0 0" rpy="0 0.5 0"/>
  </joint>
  <link name="tool">
    <inertial><origin xyz="0.02 0 0"/><mass value="0.3"/>
      <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j2" type="continuous">
    <parent link="tool"/><child link="l2"/>
    <origin xyz="0 0 0.1" rpy="0 0 0.3"/><axis xyz="1 0 0"/><dynamics damping="0.05"/>
  </joint>
  <link name="l2">
    <inertial><origin xyz="0 0 0.15"/><mass value="0.8"/>
      <inertia ixx="0.006" iyy="0.006" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j3" type="prismatic">
    <parent link="l2"/><child link="l3"/><origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <limit lower="-0.1" upper="0.1" effort="20" velocity="1"/>
  </joint>
  <link name="l3">
    <inertial><mass value="0.2"/>
      <inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
</robot>)";

const char* const kSmallRobotYaml = R"(name: small
bodies:
  - name: base
    joint: {type: fixed}
    inertia: {mass: 2.0, com: [0, 0, 0.05], inertia: [0.02, 0.02, 0.03, 0, 0, 0]}
  - name: l1
    parent: base
    joint: {type: revolute, name: j1, axis: [0, 0, 1], damping: 0.1,
            limits: {lower: -2, upper: 2, effort: 10, velocity: 5}}
    placement: {xyz: [0, 0, 0.2], rpy: [0.1, 0, 0.2]}
    inertia: {mass: 1.2, com: [0.05, 0, 0.1], inertia: [0.01, 0.012, 0.008, 0.001, 0, -0.0005]}
  - name: tool
    parent: l1
    joint: {type: fixed}
    placement: {xyz: [0.3, 0, 0], rpy: [0, 0.5, 0]}
    inertia: {mass: 0.3, com: [0.02, 0, 0], inertia: [0.001, 0.001, 0.001, 0, 0, 0]}
  - name: l2
    parent: tool
    joint: {type: revolute, name: j2, axis: [1, 0, 0], damping: 0.05}
    placement: {xyz: [0, 0, 0.1], rpy: [0, 0, 0.3]}
    inertia: {mass: 0.8, com: [0, 0, 0.15], inertia: [0.006, 0.006, 0.001, 0, 0, 0]}
  - name: l3
    parent: l2
    joint: {type: prismatic, name: j3, axis: [0, 0, 1],
            limits: {lower: -0.1, upper: 0.1, effort: 20, velocity: 1}}
    placement: {xyz: [0, 0, 0.3]}
    inertia: {mass: 0.2, inertia: [1.0e-4, 1.0e-4, 1.0e-4, 0, 0, 0]}
)";

TEST(YamlLoader, YamlAndUrdfOfTheSameRobotHaveTheSameDynamics) {
  for (bool floating : {false, true}) {
    const Model from_urdf = loadUrdfString(kSmallRobotUrdf, floating, "small.urdf");
    std::string yaml = kSmallRobotYaml;
    if (floating) yaml.replace(yaml.find("{type: fixed}"), 13, "{type: free, name: root_joint}");
    const Model from_yaml = loadYamlString(yaml, ".", "small.yaml");
    ASSERT_EQ(from_urdf.nv, from_yaml.nv);
    ASSERT_EQ(from_urdf.nq, from_yaml.nq);
    EXPECT_EQ(from_urdf.body_names, from_yaml.body_names);
    EXPECT_EQ(from_urdf.joint_names, from_yaml.joint_names);
    EXPECT_EQ(from_urdf.damping, from_yaml.damping);
    EXPECT_EQ(from_urdf.lower_limit, from_yaml.lower_limit);
    EXPECT_EQ(from_urdf.upper_limit, from_yaml.upper_limit);
    EXPECT_EQ(from_urdf.effort_limit, from_yaml.effort_limit);
    EXPECT_EQ(from_urdf.velocity_limit, from_yaml.velocity_limit);
    Data d_urdf(from_urdf), d_yaml(from_yaml);
    std::mt19937 rng(11);
    for (int trial = 0; trial < 5; ++trial) {
      const Eigen::VectorXd q = test::randomConfiguration(from_urdf, rng);
      const Eigen::VectorXd v = test::randomVector(from_urdf.nv, rng);
      const Eigen::VectorXd tau = test::randomVector(from_urdf.nv, rng, 5.0);
      EXPECT_LT(relativeDifference(crba(from_urdf, d_urdf, q), crba(from_yaml, d_yaml, q)),
                kSameModelTol);
      EXPECT_LT(
          relativeDifference(aba(from_urdf, d_urdf, q, v, tau), aba(from_yaml, d_yaml, q, v, tau)),
          kSameModelTol);
    }
  }
}

// The wrapper names the URDF inertia policy (docs/MODEL_FORMAT.md): a vendor link whose moments
// break the triangle inequality loads as given by default, balanced or refused on request.
TEST(YamlLoader, UrdfWrapperTakesTheInertiaPolicy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "hilsim_yaml_inertia_policy";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "vendor.urdf")
      << "<robot name='vendor'><link name='a'/><joint name='j' type='continuous'><parent "
         "link='a'/><child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial><mass "
         "value='1'/><inertia ixx='1' iyy='1' izz='3' ixy='0' ixz='0' iyz='0'/></inertial>"
         "</link></robot>\n";
  const Model given = loadYamlString("urdf: vendor.urdf\n", dir.string());
  ASSERT_EQ(given.load_warnings.size(), 1u);
  EXPECT_EQ(given.inertias[1].inertia_com(0, 0), 1.0);
  const Model balanced = loadYamlString("urdf: vendor.urdf\ninertia: balance\n", dir.string());
  EXPECT_EQ(balanced.inertias[1].inertia_com(0, 0), 1.5);
  expectYamlError("urdf: vendor.urdf\ninertia: strict\n", {"urdf: ", "triangle"}, dir.string());
  expectYamlError("urdf: vendor.urdf\ninertia: loose\n",
                  {"inertia: 'loose': as_given, balance or strict"}, dir.string());
  expectYamlError(oneBody() + "inertia: balance\n", {"inertia: only applies to a 'urdf' wrapper"});
}

// ... and the massless policy: a finger without <inertial> is refused, welded, or geared.
TEST(YamlLoader, UrdfWrapperTakesTheMasslessPolicy) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "hilsim_yaml_massless_policy";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "finger.urdf")
      << "<robot name='finger'><link name='a'/><joint name='j' type='continuous'><parent "
         "link='a'/><child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial><mass "
         "value='1'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial>"
         "</link><joint name='f' type='continuous'><parent link='b'/><child link='c'/></joint>"
         "<link name='c'/></robot>\n";
  expectYamlError("urdf: finger.urdf\n", {"urdf: ", "joint 'f'", "massless: weld"}, dir.string());
  EXPECT_EQ(loadYamlString("urdf: finger.urdf\nmassless: weld\n", dir.string()).nv, 1);
  const Model geared = loadYamlString("urdf: finger.urdf\nmassless: armature=0.5\n", dir.string());
  ASSERT_EQ(geared.nv, 2);
  EXPECT_EQ(geared.armature[1], 0.5);
  expectYamlError("urdf: finger.urdf\nmassless: armature=-1\n",
                  {"massless: 'armature=-1': refuse, weld, or armature=<value>"}, dir.string());
  expectYamlError(oneBody() + "massless: weld\n", {"massless: only applies to a 'urdf' wrapper"});
}

TEST(YamlLoader, UrdfWrapper) {
  const Model arm = loadYamlString(
      "urdf: iiwa14.urdf\nfloating_base: true\ngravity: [0, 0, -1.62]\nname: moon_arm\n",
      HILSIM_MODEL_DIR, "moon_arm.yaml");
  EXPECT_EQ(arm.name, "moon_arm");
  EXPECT_EQ(arm.nv, 13);
  EXPECT_EQ(arm.nq, 14);
  EXPECT_EQ(arm.gravity, Vector3(0, 0, -1.62));
  EXPECT_EQ(loadYamlString("urdf: iiwa14.urdf", HILSIM_MODEL_DIR).nv, 7);  // fixed by default
  // a path relative to the YAML file
  const Model two = loadYaml(HILSIM_TEST_DATA_DIR "/io/two_link_floating.yaml");
  EXPECT_EQ(two.name, "two_link_floating");
  EXPECT_EQ(two.nv, 8);
  EXPECT_EQ(two.gravity, Vector3(0, 0, -1.62));
}

// The examples in docs/MODEL_FORMAT.md load as described.
TEST(YamlLoader, DocumentationExamplesLoad) {
  const std::string doc = io_detail::readTextFile(HILSIM_MODEL_DIR "/../../docs/MODEL_FORMAT.md", ModelLimits{}.max_text_bytes);
  std::vector<std::string> examples;
  for (std::size_t at = doc.find("```yaml\n"); at != std::string::npos;
       at = doc.find("```yaml\n", at + 1)) {
    const std::size_t start = at + 8;
    examples.push_back(doc.substr(start, doc.find("```", start) - start));
  }
  ASSERT_EQ(examples.size(), 6u);
  const Model arm = loadYamlString(examples[0], ".", "two_link_arm.yaml");
  EXPECT_EQ(arm.name, "two_link_arm");
  EXPECT_EQ(arm.nv, 2);
  EXPECT_EQ(arm.jointIndex("shoulder"), 1);
  EXPECT_EQ(arm.jointIndex("elbow"), 2);
  EXPECT_EQ(arm.frames[arm.frameIndex("tool")].body, 2);
  const Model flexible = loadYamlString(examples[1], ".", "flexible_link.yaml");
  EXPECT_EQ(flexible.nmodes[1], 2);
  EXPECT_EQ(flexible.nv, 4);
  EXPECT_EQ(flexible.parent_node[2], flexible.flexible[1].nodeIndex("tip"));
  const Model wrapped = loadYamlString(examples[2], HILSIM_MODEL_DIR, "quadruped.yaml");
  EXPECT_EQ(wrapped.nq, 19);
  EXPECT_EQ(wrapped.nv, 18);
  const Model contacts = loadYamlString(examples[3], HILSIM_MODEL_DIR, "quadruped_on_ground.yaml");
  EXPECT_TRUE(contacts.ground.enabled);
  EXPECT_EQ(contacts.ground.friction, 0.8);
  ASSERT_EQ(contacts.contact_spheres.size(), 1u);
  EXPECT_EQ(contacts.contact_spheres[0].body, contacts.bodyIndex("FL_LOWER_LEG"));
  EXPECT_EQ(contacts.constraintRowCapacity(), 12 + 3);  // the limits of 12 joints, one sphere
  const Model loop = loadYamlString(examples[4], ".", "slider_crank.yaml");
  EXPECT_EQ(loop.loops.size(), 1u);
  EXPECT_EQ(loop.nconstraints, 5);
  EXPECT_EQ(loop.force_elements.size(), 1u);
  EXPECT_EQ(loop.initial_configuration, Eigen::Vector3d(0.5, -0.7, 0.37));
  const Model rope = loadYamlString(examples[5], ".", "rope.yaml");
  EXPECT_EQ(rope.nv, 100000);
  EXPECT_EQ(rope.inertias[1].mass, 0.001);
}

TEST(YamlLoader, ModelNameDefaultsToTheFileStem) {
  EXPECT_EQ(loadYamlString(oneBody(), ".", "dir/arm_model.yaml").name, "arm_model");
  EXPECT_EQ(loadYamlString(oneBody()).name, "model");
}

// --- errors: one distinct message per class ---

TEST(YamlLoader, GenerateBuildsTheSystemItNames) {
  // engine/builder/system_generator.h through the file format: the same model as the builder's
  const Model chain = loadYamlString(
      "generate: {shape: chain, bodies: 30, joint: spherical, link_length: 0.5, link_mass: 2, "
      "link_radius: 0.02}\n",
      ".", "rope.yaml");
  EXPECT_EQ(chain.name, "rope");
  EXPECT_EQ(chain.nbodies, 31);
  EXPECT_EQ(chain.nv, 90);
  SystemSpec spec;
  spec.bodies = 30;
  spec.joint = JointType::kSpherical;
  spec.link_length = 0.5;
  spec.link_mass = 2.0;
  spec.link_radius = 0.02;
  const Model built = generateSystem(spec, "rope");
  for (int i = 1; i < chain.nbodies; ++i) {
    EXPECT_EQ(chain.parent[i], built.parent[i]);
    EXPECT_EQ(chain.inertias[i].mass, 2.0);
    EXPECT_EQ(chain.joint_placement[i].translation, built.joint_placement[i].translation);
  }
  const Model branch = loadYamlString("generate: {shape: branch, bodies: 500}\n");
  EXPECT_EQ(branch.nbodies, 501);
  EXPECT_EQ(branch.nv, 500);  // revolute by default
  EXPECT_EQ(branch.body_names[branch.parent[branch.nbodies - 1]], "right2");
  const Model tree = loadYamlString("generate: {shape: tree, bodies: 15}\n");
  for (int i = 1; i < tree.nbodies; ++i) {  // link k hangs from link k / 2
    const int k = std::stoi(tree.body_names[i].substr(4));
    EXPECT_EQ(tree.body_names[tree.parent[i]], k == 1 ? "world" : "link" + std::to_string(k / 2));
  }
}

TEST(YamlLoaderErrors, GenerateWithWhatItCannotMake) {
  expectYamlError("generate: {shape: star, bodies: 3}\n", {"bad.yaml:1: generate.shape: unknown shape 'star'"});
  expectYamlError("generate: {shape: branch, bodies: 5}\n", {"bad.yaml:1: generate: bodies: 5 is too few for a branch (at least 6)"});
  expectYamlError("generate: {shape: chain, bodies: 0}\n", {"generate.bodies: expected an integer >= 1"});
  expectYamlError("generate: {shape: chain, bodies: 10, joint: free}\n", {"generate.joint: unknown joint 'free'"});
  expectYamlError("generate: {shape: chain, bodies: 10, link_mass: -1}\n", {"generate: link_mass: must be a positive"});
  expectYamlError("generate: {bodies: 10}\n", {"generate: needs 'shape'"});
  expectYamlError("generate: {shape: chain, bodies: 2, colour: red}\n", {"unknown key 'colour'"});
  expectYamlError("generate: {shape: chain, bodies: 2}\nbodies: []\n", {"generate: cannot be combined with 'bodies' or 'urdf'"});
  expectYamlError("generate: {shape: chain, bodies: 300000}\n", {"above the limit of 200000 bodies"});
}

TEST(YamlLoaderErrors, MalformedYaml) {
  expectYamlError("bodies: [\n", {"malformed YAML"});
  expectYamlError("name: x\nbodies: a: b\n", {"bad.yaml:2: malformed YAML"});
  expectYamlError("", {"empty"});
  expectYamlError("- 1\n- 2\n", {"expected a mapping"});
}

TEST(YamlLoaderErrors, MissingMass) {
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{com: [0, 0, 0]}"),
                  {"bad.yaml:4: body 'a': inertia: missing required key 'mass'"});
}

TEST(YamlLoaderErrors, NegativeMass) {
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: -1}"),
                  {"bad.yaml:4: body 'a': inertia.mass: -1 kg is negative"});
}

TEST(YamlLoaderErrors, NonPsdInertia) {
  expectYamlError(
      oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: 1, inertia: [1, 1, 1, 2, 0, 0]}"),
      {"bad.yaml:4: body 'a': inertia: ", "positive semi-definite"});
}

TEST(YamlLoaderErrors, TriangleInequalityViolation) {
  expectYamlError(
      oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: 1, inertia: [1, 1, 3, 0, 0, 0]}"),
      {"bad.yaml:4: body 'a': inertia: ", "triangle"});
}

TEST(YamlLoaderErrors, UnknownParent) {
  expectYamlError(oneBody() + "    parent: zz\n",
                  {"bad.yaml:5: body 'a': parent: parent 'zz' does not exist"});
}

TEST(YamlLoaderErrors, Cycle) {
  expectYamlError(R"(bodies:
  - {name: a, parent: b, joint: {type: spherical}, inertia: {mass: 1}}
  - {name: b, parent: a, joint: {type: spherical}, inertia: {mass: 1}}
  - {name: c, joint: {type: spherical}, inertia: {mass: 1}}
)",
                  {"bad.yaml:", "body '", "cycle"});
}

TEST(YamlLoaderErrors, DuplicateNames) {
  expectYamlError(R"(bodies:
  - {name: a, joint: {type: spherical}, inertia: {mass: 1}}
  - {name: a, joint: {type: spherical}, inertia: {mass: 1}}
)",
                  {"bad.yaml:3: body 'a': duplicate body name (first defined at bad.yaml:2)"});
  expectYamlError(R"(bodies:
  - {name: a, joint: {type: spherical, name: j}, inertia: {mass: 1}}
  - {name: b, joint: {type: spherical, name: j}, inertia: {mass: 1}}
)",
                  {"bad.yaml:3: body 'b': duplicate joint name 'j'"});
  expectYamlError("name: a\nname: b\n" + oneBody(), {"bad.yaml:2: duplicate key 'name'"});
  expectYamlError("bodies:\n  - {name: world, joint: {type: free}}\n",
                  {"body 'world'", "reserved"});
}

TEST(YamlLoaderErrors, NanAndInf) {
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: 1, com: [0, .nan, 0]}"),
                  {"bad.yaml:4: body 'a': inertia.com[1]: must be a finite number, got '.nan'"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: nan}"),
                  {"inertia.mass: must be a finite number, got 'nan'"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, .inf]}"),
                  {"bad.yaml:3: body 'a': joint.axis[2]: must be a finite number"});
  expectYamlError("gravity: [0, 0, -.Inf]\n" + oneBody(), {"bad.yaml:1: gravity[2]"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1], damping: 1e999}"),
                  {"joint.damping: expected a finite number, got '1e999'"});
}

TEST(YamlLoaderErrors, UnsupportedJointType) {
  expectYamlError(oneBody("{type: ball}"),
                  {"bad.yaml:3: body 'a': joint.type: unsupported joint type 'ball'"});
  const std::string path = HILSIM_TEST_DATA_DIR "/io/bad_joint_type.yaml";
  try {
    loadYaml(path);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":8: body 'arm': joint.type: ", 0), 0u)
        << e.what();
  }
}

TEST(YamlLoaderErrors, WrongTypes) {
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{mass: heavy}"),
                  {"inertia.mass: expected a finite number, got 'heavy'"});
  expectYamlError(oneBody("{type: revolute, axis: 1}"),
                  {"joint.axis: expected a list of 3 numbers"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 1]}"),
                  {"joint.axis: expected a list of 3 numbers"});
  expectYamlError(oneBody("revolute"), {"body 'a': joint: expected a mapping"});
  expectYamlError("bodies: {a: 1}\n", {"bad.yaml:1: bodies: expected a list of bodies"});
  expectYamlError("bodies: []\n", {"bodies: must list at least one body"});
  expectYamlError("bodies:\n  - name: [a]\n", {"bodies[0].name: expected a non-empty string"});
  expectYamlError("urdf: x.urdf\nfloating_base: maybe\n", {"floating_base: expected true"});
  expectYamlError(oneBody() + "    placement: [1, 2, 3]\n", {"placement: expected a mapping"});
}

TEST(YamlLoaderErrors, MissingRequiredKeys) {
  expectYamlError("bodies:\n  - name: a\n", {"bad.yaml:2: body 'a': missing required key 'joint'"});
  expectYamlError("bodies:\n  - joint: {type: free}\n",
                  {"bad.yaml:2: bodies[0]: missing required key 'name'"});
  expectYamlError(oneBody("{axis: [0, 0, 1]}"), {"joint: missing required key 'type'"});
  expectYamlError(oneBody("{type: prismatic}"), {"joint: missing required key 'axis'"});
  expectYamlError("name: x\n", {"expected 'bodies'", "'urdf'"});
}

TEST(YamlLoaderErrors, UnknownAndReservedKeys) {
  expectYamlError("bodys: []\n", {"bad.yaml:1: unknown top-level key 'bodys' (expected one of:"});
  expectYamlError(oneBody() + "loop_closures: []\n",
                  {"bad.yaml:5: unknown top-level key 'loop_closures'", "loops, forces"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1]}", "{mas: 1}"),
                  {"body 'a': inertia: unknown key 'mas' (expected one of: mass, com, inertia)"});
  expectYamlError("version: 2\n" + oneBody(), {"bad.yaml:1: version: format version 2 is newer"});
}

// --- loops, force elements, initial positions (docs/MODEL_FORMAT.md "Loops and force elements") ---

// Two bars on hinges about z at x = 0 and x = 0.4, closable by a pin between their tips.
std::string twoBars(const std::string& extra) {
  return "bodies:\n"
         "  - name: left\n"
         "    joint: {type: revolute, name: left_hinge, axis: [0, 0, 1]}\n"
         "    inertia: {mass: 1.0, com: [0.2, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}\n"
         "  - name: right\n"
         "    placement: {xyz: [0.4, 0, 0]}\n"
         "    joint: {type: revolute, name: right_hinge, axis: [0, 0, 1]}\n"
         "    inertia: {mass: 1.0, com: [0.2, 0, 0], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}\n"
         "  - name: tip\n"
         "    parent: right\n"
         "    joint: {type: fixed}\n"
         "    placement: {xyz: [0.3, 0, 0]}\n" +
         extra;
}

TEST(YamlLoops, EveryKeyReachesTheModel) {
  const Model m = loadYamlString(twoBars(R"(loops:
  - name: pin
    type: revolute
    body_a: left
    frame_a: {xyz: [0.3, 0, 0], rpy: [0, 0, 0.5]}
    body_b: tip
    frame_b: {xyz: [0.01, 0, 0]}
    axis: [0, 0, 2]
  - name: rod
    type: distance
    body_a: world
    frame_a: {xyz: [0, 1, 0]}
    body_b: left
    length: 1.2
forces:
  - name: spring
    type: spring_damper
    body_a: tip
    point_a: [0.1, 0, 0]
    body_b: world
    point_b: [0.2, 0.5, 0]
    stiffness: 4530
    damping: 2
    rest_length: 0.07785
initial: {left_hinge: 0.5, right_hinge: [1.0]}
stabilisation: {baumgarte_alpha: 5, baumgarte_beta: 7, projection_iterations: 3}
)"));
  ASSERT_EQ(m.loops.size(), 2u);
  EXPECT_EQ(m.nconstraints, 5 + 1);
  const LoopClosure& pin = m.loops[0];
  EXPECT_EQ(pin.type, ClosureType::kRevolute);
  EXPECT_EQ(pin.body_a, m.bodyIndex("left"));
  EXPECT_EQ(pin.body_b, m.bodyIndex("right"));  // the welded tip moves with its parent
  EXPECT_TRUE(pin.frame_b.translation.isApprox(Vector3(0.31, 0, 0)));
  EXPECT_NEAR(pin.frame_a.rotation(1, 0), std::sin(0.5), 1e-15);
  EXPECT_TRUE(pin.axis.isApprox(Vector3::UnitZ()));
  EXPECT_NEAR(pin.axis.dot(pin.normal_1), 0.0, 1e-15);
  EXPECT_TRUE(pin.axis.cross(pin.normal_1).isApprox(pin.normal_2));
  EXPECT_EQ(m.loops[1].body_a, 0);
  EXPECT_EQ(m.loops[1].length, 1.2);
  ASSERT_EQ(m.force_elements.size(), 1u);
  const SpringDamper& spring = m.force_elements[0];
  EXPECT_EQ(spring.body_a, m.bodyIndex("right"));
  EXPECT_TRUE(spring.point_a.isApprox(Vector3(0.4, 0, 0)));
  EXPECT_EQ(spring.stiffness, 4530);
  EXPECT_EQ(spring.damping, 2);
  EXPECT_EQ(spring.rest_length, 0.07785);
  EXPECT_EQ(m.initial_configuration, Eigen::Vector2d(0.5, 1.0));
  EXPECT_EQ(m.stabilisation.baumgarte_alpha, 5);
  EXPECT_EQ(m.stabilisation.baumgarte_beta, 7);
  EXPECT_EQ(m.stabilisation.projection_iterations, 3);
}

TEST(YamlLoops, LoopsAndForcesCanBeAddedToAUrdf) {
  const Model arm = loadYamlString(R"(urdf: iiwa14.urdf
forces:
  - {name: cable, type: spring_damper, body_a: world, point_a: [0, 0, 1.5], body_b: iiwa_link_7,
     stiffness: 50, rest_length: 0.2}
initial: {iiwa_joint_2: 0.3}
)", HILSIM_MODEL_DIR, "arm.yaml");
  EXPECT_EQ(arm.force_elements.size(), 1u);
  EXPECT_EQ(arm.initial_configuration(1), 0.3);
}

TEST(YamlLoopsErrors, EveryBadClosureNamesFileLineAndElement) {
  const std::string pin = "loops:\n  - {name: pin, type: ball, body_a: left, body_b: ";
  expectYamlError(twoBars(pin + "nowhere}\n"),
                  {"bad.yaml:14: loop 'pin': body_b: no body or frame named 'nowhere'"});
  expectYamlError(twoBars(pin + "left}\n"),
                  {"bad.yaml:14: loop 'pin': body_a 'left' and body_b 'left' move as one body"});
  expectYamlError(twoBars(pin + "tip, axis: [0, 0, 1]}\n"),
                  {"bad.yaml:14: loop 'pin': axis: not used by a 'ball' loop"});
  expectYamlError(twoBars("loops:\n  - {name: h, type: revolute, body_a: left, body_b: right,\n"
                          "     axis: [0, 0, 0]}\n"),
                  {"bad.yaml:15: loop 'h': axis: must be a non-zero vector"});
  expectYamlError(twoBars("loops:\n  - {name: h, type: prismatic, body_a: left, body_b: right}\n"),
                  {"bad.yaml:14: loop 'h': missing required key 'axis'"});
  expectYamlError(twoBars("loops:\n  - {name: r, type: distance, body_a: left, body_b: right,\n"
                          "     length: -0.1}\n"),
                  {"bad.yaml:15: loop 'r': length: must be > 0 [m], got -0.1"});
  expectYamlError(twoBars("loops:\n  - {name: r, type: hinge, body_a: left, body_b: right}\n"),
                  {"bad.yaml:14: loop 'r': type: unknown loop type 'hinge'"});
  expectYamlError(twoBars("loops:\n  - {name: p, type: ball, body_a: left, body_b: right}\n"
                          "  - {name: p, type: ball, body_a: left, body_b: tip}\n"),
                  {"bad.yaml:15: loop 'p': duplicate loop name"});
  expectYamlError(twoBars("forces:\n  - {name: s, type: spring_damper, body_a: left, body_b: right,\n"
                          "     stiffness: -1}\n"),
                  {"bad.yaml:15: force 's': stiffness: must be >= 0, got -1"});
  expectYamlError(twoBars("forces:\n  - {name: s, type: spring_damper, body_a: right, body_b: tip}\n"),
                  {"bad.yaml:14: force 's': body_a 'right' and body_b 'tip' move as one body"});
  expectYamlError(twoBars("forces:\n  - {name: s, type: bushing, body_a: left, body_b: right}\n"),
                  {"bad.yaml:14: force 's': type: unknown force element type 'bushing'"});
  expectYamlError(twoBars("initial: {elbow: 0.1}\n"),
                  {"bad.yaml:13: initial: no moving joint named 'elbow'"});
  expectYamlError(twoBars("initial: {left_hinge: [0.1, 0.2]}\n"),
                  {"bad.yaml:13: initial: joint 'left_hinge' has 1 coordinate, got 2"});
  ModelLimits few_rows;
  few_rows.max_constraint_rows = 8;
  try {
    loadYamlString(twoBars("loops:\n  - {name: a, type: weld, body_a: left, body_b: right}\n"
                           "  - {name: b, type: ball, body_a: left, body_b: world}\n"),
                   ".", "bad.yaml", few_rows);
    ADD_FAILURE() << "no error for 9 rows over a limit of 8";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "bad.yaml:15: loop 'b': the loops take the model beyond the limit of 8 "
                  "constraint rows"),
              std::string::npos)
        << e.what();
  }
  expectYamlError(twoBars("stabilisation: {projection_iterations: 1.5}\n"),
                  {"bad.yaml:13: stabilisation: projection_iterations: expected an integer"});
}

// --- flexible bodies ---

// A body "a" on a revolute joint whose `flexible:` block is `flexible` (indented by six spaces),
// and a child "b" at `child_node` when given.
std::string flexibleBody(const std::string& flexible, const std::string& child_node = "") {
  std::string yaml = "bodies:\n"
                     "  - name: a\n"
                     "    joint: {type: revolute, axis: [0, 0, 1]}\n"
                     "    flexible:\n" + flexible;
  if (!child_node.empty())
    yaml += "  - name: b\n"
            "    parent: a\n"
            "    parent_node: " + child_node + "\n"
            "    joint: {type: revolute, axis: [0, 0, 1]}\n"
            "    inertia: {mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}\n";
  return yaml;
}

const char* const kBeam =
    "      beam: {youngs_modulus: 70.0e9, area_moment: 1.0e-8, density: 2700, area: 4.0e-4,\n"
    "             length: 0.5, modes: 2, elements: 10, bending: z, damping_ratio: 0.05}\n";

const char* const kLumped =
    "      modes: 1\n"
    "      lumped_masses:\n"
    "        - {position: [0.3, 0, 0], mass: 0.4, slope: [[0], [0], [0.6]], translation: [[0], [0.1], [0]]}\n"
    "        - {position: [0.6, 0, 0], mass: 0.4, slope: [[0], [0], [1.2]], translation: [[0], [0.4], [0]]}\n"
    "        - {position: [1.0, 0, 0], mass: 0.2, rotary_inertia: [1.0e-3, 1.0e-3, 1.0e-3, 0, 0, 0],\n"
    "           slope: [[0], [0], [2]], translation: [[0], [1], [0]], second_order: [[-0.5], [0], [0]]}\n"
    "      stiffness: [[400]]\n"
    "      damping: [[0.5]]\n"
    "      nodes:\n"
    "        - {name: end, position: [1.0, 0, 0], slope: [[0], [0], [2]], translation: [[0], [1], [0]]}\n";

TEST(YamlFlexible, BeamGeneratorMatchesTheLibraryCall) {
  const Model m = loadYamlString(flexibleBody(kBeam, "tip"), ".", "beam.yaml");
  ASSERT_EQ(m.nmodes[1], 2);
  BeamSpec spec;
  spec.youngs_modulus = 70e9;
  spec.area_moment = 1e-8;
  spec.density = 2700;
  spec.area = 4e-4;
  spec.length = 0.5;
  spec.modes = 2;
  spec.elements = 10;
  spec.bending = BeamSpec::Bending::kZ;
  spec.damping_ratio = 0.05;
  const FlexibleBody expected = eulerBernoulliBeam(spec);
  EXPECT_TRUE(m.flexible[1].stiffness.isApprox(expected.stiffness, 1e-14));
  EXPECT_TRUE(m.flexible[1].damping.isApprox(expected.damping, 1e-14));
  EXPECT_TRUE(m.flexible[1].geometric_stiffening);
  EXPECT_EQ(m.parent_node[2], m.flexible[1].nodeIndex("tip"));
  EXPECT_EQ(m.nq, 4);
}

TEST(YamlFlexible, LumpedMassesAreReducedAsTheLibraryDoes) {
  const Model m = loadYamlString(flexibleBody(kLumped, "end"), ".", "lumped.yaml");
  std::vector<LumpedMassNode> lumped(3);
  const double x[3] = {0.3, 0.6, 1.0}, y[3] = {0.1, 0.4, 1.0}, slope[3] = {0.6, 1.2, 2.0};
  for (int k = 0; k < 3; ++k) {
    lumped[k].position = Vector3(x[k], 0, 0);
    lumped[k].mass = k < 2 ? 0.4 : 0.2;
    lumped[k].slope = Matrix3X(3, 1);
    lumped[k].slope << 0, 0, slope[k];
    lumped[k].translation = Matrix3X(3, 1);
    lumped[k].translation << 0, y[k], 0;
  }
  lumped[2].rotary_inertia = 1e-3 * Matrix3::Identity();
  lumped[2].second_order = Matrix3X(3, 1);
  lumped[2].second_order << -0.5, 0, 0;
  const FlexibleBody expected = reduceLumpedMasses(lumped, 1, true);
  const FlexibleBody& got = m.flexible[1];
  EXPECT_DOUBLE_EQ(got.mass, expected.mass);
  EXPECT_TRUE(got.rotational_inertia_second.isApprox(expected.rotational_inertia_second));
  EXPECT_TRUE(got.rotational_inertia_geometric.isApprox(expected.rotational_inertia_geometric));
  EXPECT_TRUE(got.angular_coupling.isApprox(expected.angular_coupling));
  EXPECT_TRUE(got.first_moment_second.isApprox(expected.first_moment_second));
  EXPECT_EQ(got.stiffness(0, 0), 400.0);
  EXPECT_EQ(got.damping(0, 0), 0.5);
}

// Writes a 3 × n or n × n matrix as YAML rows.
std::string rows(const Eigen::MatrixXd& m) {
  std::ostringstream out;
  out.precision(17);
  out << "[";
  for (int r = 0; r < m.rows(); ++r) {
    out << (r ? ", [" : "[");
    for (int c = 0; c < m.cols(); ++c) out << (c ? ", " : "") << m(r, c);
    out << "]";
  }
  out << "]";
  return out.str();
}

std::string symmetricBlocks(const Matrix3X& m) {
  std::ostringstream out;
  out.precision(17);
  out << "[";
  for (int k = 0; k < m.cols() / 3; ++k) {
    const auto b = m.middleCols<3>(3 * k);
    out << (k ? ", [" : "[") << b(0, 0) << ", " << b(1, 1) << ", " << b(2, 2) << ", " << b(0, 1)
        << ", " << b(0, 2) << ", " << b(1, 2) << "]";
  }
  out << "]";
  return out.str();
}

TEST(YamlFlexible, ModalIntegralsFromAFileRoundTrip) {
  const Model lumped = loadYamlString(flexibleBody(kLumped), ".", "lumped.yaml");
  const FlexibleBody& b = lumped.flexible[1];
  const Matrix3 i0 = b.rotational_inertia;
  std::ostringstream yaml;
  yaml.precision(17);
  yaml << "modes: 1\n"
       << "modal_integrals:\n"
       << "  mass: " << b.mass << "\n"
       << "  first_moment: [" << b.first_moment.x() << ", " << b.first_moment.y() << ", "
       << b.first_moment.z() << "]\n"
       << "  first_moment_modes: " << rows(b.first_moment_modes) << "\n"
       << "  rotational_inertia: [" << i0(0, 0) << ", " << i0(1, 1) << ", " << i0(2, 2) << ", "
       << i0(0, 1) << ", " << i0(0, 2) << ", " << i0(1, 2) << "]\n"
       << "  rotational_inertia_modes: " << symmetricBlocks(b.rotational_inertia_modes) << "\n"
       << "  rotational_inertia_second: " << symmetricBlocks(b.rotational_inertia_second) << "\n"
       << "  angular_coupling: " << rows(b.angular_coupling) << "\n"
       << "  angular_coupling_modes: " << rows(b.angular_coupling_modes) << "\n"
       << "  modal_mass: " << rows(b.modal_mass) << "\n"
       << "  first_moment_second: " << rows(b.first_moment_second) << "\n"
       << "  rotational_inertia_geometric: " << symmetricBlocks(b.rotational_inertia_geometric)
       << "\n"
       << "  angular_coupling_geometric: " << rows(b.angular_coupling_geometric) << "\n"
       << "stiffness: [[400]]\n";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "hilsim_yaml_flexible";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "link_modes.yaml") << yaml.str();
  const Model m = loadYamlString(flexibleBody("      file: link_modes.yaml\n"), dir.string(), "m.yaml");
  const FlexibleBody& got = m.flexible[1];
  EXPECT_DOUBLE_EQ(got.mass, b.mass);
  EXPECT_TRUE(got.rotational_inertia_second.isApprox(b.rotational_inertia_second, 1e-15));
  EXPECT_TRUE(got.rotational_inertia_geometric.isApprox(b.rotational_inertia_geometric, 1e-15));
  EXPECT_TRUE(got.angular_coupling_modes.isApprox(b.angular_coupling_modes, 1e-15));
  EXPECT_TRUE(got.geometric_stiffening);
  std::filesystem::remove_all(dir);
}

TEST(YamlLoaderErrors, BadFlexibleBodies) {
  expectYamlError(flexibleBody(kBeam) + "    inertia: {mass: 1}\n",
                  {"body 'a': inertia: a flexible body takes its inertia from its modal data"});
  expectYamlError(flexibleBody(kBeam, "elbow"), {"body 'b'", "parent 'a' has no node 'elbow'"});
  expectYamlError(flexibleBody(std::string(kBeam) + "      modes: 2\n"),
                  {"flexible.modes: a beam's modes, stiffness and nodes are generated"});
  expectYamlError(flexibleBody("      modes: 1\n      stiffness: [[1]]\n"),
                  {"flexible: give exactly one of 'beam', 'lumped_masses', 'modal_integrals'"});
  auto lumpedWith = [](const std::string& from, const std::string& to) {
    std::string text = kLumped;
    text.replace(text.find(from), from.size(), to);
    return flexibleBody(text);
  };
  expectYamlError(lumpedWith("stiffness: [[400]]", "stiffness: [[-400]]"),
                  {"stiffness is not positive semi-definite"});
  expectYamlError(lumpedWith("stiffness: [[400]]", "stiffness: [[400, 1]]"),
                  {"flexible.stiffness[0]: expected a list of 1 numbers"});
  expectYamlError(lumpedWith("slope: [[0], [0], [0.6]], translation: [[0], [0.1], [0]]",
                             "slope: [[0], [0.6]], translation: [[0], [0.1], [0]]"),
                  {"lumped_masses[0].slope: expected 3 rows of 1 numbers"});
  expectYamlError(lumpedWith("damping: [[0.5]]", "damping: [[.nan]]"), {"must be a finite number"});
  expectYamlError(lumpedWith("modes: 1", "modes: 1.5"), {"flexible.modes: expected an integer"});
  expectYamlError(flexibleBody(std::string(kLumped) + "      hinge_node: nowhere\n"),
                  {"flexible.hinge_node: no node named 'nowhere'"});
  std::string beam = kBeam;
  beam.replace(beam.find("bending: z"), 10, "bending: x");
  expectYamlError(flexibleBody(beam), {"flexible.beam.bending: expected y, z or both, got 'x'"});
  beam = kBeam;
  beam.replace(beam.find("modes: 2"), 8, "modes: 40");
  expectYamlError(flexibleBody(beam), {"flexible.beam: beam: 10 elements give at most 10 modes"});
  expectYamlError(flexibleBody("      file: missing_modes.yaml\n"),
                  {"flexible.file", "cannot open", "missing_modes.yaml"});
  // a modal mass that is not symmetric, one that is indefinite
  const std::string integrals =
      "      modes: 2\n"
      "      modal_integrals:\n"
      "        mass: 1.0\n"
      "        first_moment: [0.5, 0, 0]\n"
      "        first_moment_modes: [[0, 0], [0.3, 0], [0, 0.3]]\n"
      "        rotational_inertia: [0.01, 0.34, 0.34, 0, 0, 0]\n"
      "        rotational_inertia_modes: [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]\n"
      "        rotational_inertia_second: [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0],\n"
      "                                    [0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]\n"
      "        angular_coupling: [[0, 0], [0, -0.2], [0.2, 0]]\n"
      "        angular_coupling_modes: [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]\n"
      "        modal_mass: MODAL_MASS\n"
      "      stiffness: [[100, 0], [0, 100]]\n";
  auto withModalMass = [&](const std::string& mass) {
    std::string text = integrals;
    text.replace(text.find("MODAL_MASS"), 10, mass);
    return flexibleBody(text);
  };
  EXPECT_NO_THROW(loadYamlString(withModalMass("[[1, 0], [0, 1]]"), ".", "ok.yaml"));
  expectYamlError(withModalMass("[[1, 0.5], [0, 1]]"), {"modal mass is not symmetric"});
  expectYamlError(withModalMass("[[1, 0], [0, -1]]"), {"modal mass is not positive definite"});
}

TEST(YamlLoaderErrors, InconsistentJointsAndPlacements) {
  expectYamlError(oneBody("{type: spherical, axis: [0, 0, 1]}"),
                  {"joint.axis: not used by a 'spherical' joint"});
  expectYamlError(oneBody("{type: fixed, damping: 1}"), {"joint.damping: not used by a 'fixed'"});
  expectYamlError(oneBody("{type: free, limits: {lower: 0}}"),
                  {"joint.limits.lower: position limits apply to revolute and prismatic"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 0]}"),
                  {"joint.axis: must be a non-zero vector"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1], damping: -1}"),
                  {"joint.damping: must be >= 0"});
  expectYamlError(oneBody("{type: revolute, axis: [0, 0, 1], limits: {lower: 1, upper: 0}}"),
                  {"joint.limits: lower 1 exceeds upper 0"});
  expectYamlError(oneBody() + "    placement: {rpy: [0, 0, 0], quaternion: [1, 0, 0, 0]}\n",
                  {"body 'a': placement: give either 'rpy' or 'quaternion'"});
  expectYamlError(oneBody() + "    placement: {quaternion: [0, 0, 0, 0]}\n",
                  {"placement.quaternion: must be a non-zero quaternion"});
}

TEST(YamlLoaderErrors, WrapperErrors) {
  expectYamlError("urdf: x.urdf\nbodies: []\n", {"bad.yaml:2: bodies: cannot be combined"});
  expectYamlError(oneBody() + "floating_base: true\n", {"floating_base: only applies"});
  expectYamlError("urdf: missing.urdf\n", {"bad.yaml:1: urdf: cannot open '", "missing.urdf'"});
  // an error inside the URDF names both files
  expectYamlError("urdf: bad_negative_mass.urdf\n",
                  {"bad.yaml:1: urdf: ", "bad_negative_mass.urdf:", "link 'arm': <mass> -2 kg"},
                  HILSIM_TEST_DATA_DIR "/io");
}

TEST(YamlLoaderErrors, MissingFile) {
  try {
    loadYaml("/nonexistent/dir/robot.yaml");
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/robot.yaml'"),
              std::string::npos)
        << e.what();
  }
}

// Any truncation or corruption of a valid file loads or throws ModelError: never a crash.
TEST(YamlLoaderErrors, CorruptedFilesNeverCrash) {
  const std::string good = kEverything;
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    try {
      loadYamlString(good.substr(0, cut));
    } catch (const ModelError&) {
    }
  }
  std::mt19937 rng(5);
  const std::string junk = "[]{}:,-'\"&*!|>#%@ .0123456789e\t";
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = good;
    for (int k = 0; k < 3; ++k) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
      text[at] = junk[std::uniform_int_distribution<std::size_t>(0, junk.size() - 1)(rng)];
    }
    try {
      loadYamlString(text);
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}


// --- limits (ModelLimits): each refused before the work it bounds, with a message naming it ---

// Loading `yaml` under `limits` must throw a one-line ModelError naming every `part`, from
// "bad.yaml" unless it comes from an included file; returns the message.
std::string limitError(const std::string& yaml, const ModelLimits& limits,
                       std::initializer_list<std::string> parts,
                       const std::string& base_directory = ".") {
  try {
    loadYamlString(yaml, base_directory, "bad.yaml", limits);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    const std::string message = e.what();
    if (base_directory == ".") {
      EXPECT_EQ(message.rfind("bad.yaml", 0), 0u) << message;
    }
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    return message;
  }
  return {};
}

// One fixed body and `count` − 1 uses of its alias `*b`, in a flow list (3 bytes each).
std::string aliasedBodies(std::size_t count) {
  std::string yaml = "bodies: [&b {name: a, joint: {type: fixed}}";
  yaml.reserve(yaml.size() + 3 * count);
  for (std::size_t k = 1; k < count; ++k) yaml += ",*b";
  return yaml + "]\n";
}

TEST(YamlLimits, BodiesOverTheLimitAreRefusedByTheirCount) {
  ModelLimits limits;
  limits.max_bodies = 3;
  std::string four = oneBody();
  for (const char* name : {"b", "c", "d"})
    four += std::string("  - {name: ") + name + ", joint: {type: fixed}}\n";
  EXPECT_NO_THROW(loadYamlString(oneBody() + "  - {name: b, joint: {type: fixed}}\n"
                                 "  - {name: c, joint: {type: fixed}}\n", ".", "ok.yaml", limits));
  limitError(four, limits, {"bad.yaml:2: bodies: 4 bodies exceed the limit of 3"});
  // A million aliases of one body (3 MB of text) are refused by the count, before any is read
  // (the duplicate name would be the first error otherwise).
  limitError(aliasedBodies(1'000'000), ModelLimits{},
             {"bad.yaml:1: bodies: 1000000 bodies exceed the limit of 200000"});
  limits.max_bodies = 2;
  limitError(aliasedBodies(2), limits, {"duplicate body name"});
}

TEST(YamlLimits, ModesOverTheLimit) {
  // explicit modes (lumped masses), beam modes, and a beam's default of 3 modes
  std::string lumped = kLumped;
  lumped.replace(lumped.find("modes: 1"), 8, "modes: 65");
  limitError(flexibleBody(lumped), ModelLimits{},
             {"flexible.modes: 65 is above the limit of 64 modes per flexible body"});
  ModelLimits limits;
  limits.max_modes = 1;
  limitError(flexibleBody(kBeam), limits,
             {"flexible.beam.modes: 2 is above the limit of 1 modes per flexible body"});
  std::string beam = kBeam;
  beam.replace(beam.find("modes: 2, "), 10, "");
  limitError(flexibleBody(beam), limits,
             {"flexible.beam: 3 modes (the default) are above the limit of 1"});
  limits.max_modes = 2;
  EXPECT_NO_THROW(loadYamlString(flexibleBody(kBeam), ".", "ok.yaml", limits));
}

TEST(YamlLimits, BeamElementsOverTheLimit) {
  std::string beam = kBeam;
  beam.replace(beam.find("elements: 10"), 12, "elements: 1001");
  limitError(flexibleBody(beam), ModelLimits{},
             {"flexible.beam.elements: 1001 is above the limit of 1000 elements per beam"});
  ModelLimits limits;
  limits.max_beam_elements = 9;
  limitError(flexibleBody(kBeam), limits, {"10 is above the limit of 9 elements per beam"});
  beam = kBeam;
  beam.replace(beam.find("elements: 10"), 12, "elements: 1e300");
  limitError(flexibleBody(beam), ModelLimits{}, {"1e+300 is above the limit of 1000"});
  limits.max_beam_elements = 10;
  EXPECT_NO_THROW(loadYamlString(flexibleBody(kBeam), ".", "ok.yaml", limits));
}

// Three lumped masses (those of kLumped) defined once, then listed by alias up to `count`
// entries of `list`: the list's length is what counts.
std::string aliasedLumpedMasses(std::size_t count, const std::string& list = "lumped_masses") {
  std::string yaml =
      "      modes: 1\n"
      "      stiffness: [[400]]\n"
      "      lumped_masses:\n"
      "        - &a {position: [0.3, 0, 0], mass: 0.4, slope: [[0], [0], [0.6]], "
      "translation: [[0], [0.1], [0]]}\n"
      "        - &b {position: [0.6, 0, 0], mass: 0.4, slope: [[0], [0], [1.2]], "
      "translation: [[0], [0.4], [0]]}\n"
      "        - &c {position: [1.0, 0, 0], mass: 0.2, slope: [[0], [0], [2]], "
      "translation: [[0], [1], [0]]}\n";
  std::size_t listed = 3;
  if (list == "nodes") {
    yaml += "      nodes:\n        - &n {name: tip, position: [1, 0, 0], slope: [[0], [0], [2]], "
            "translation: [[0], [1], [0]]}\n";
    listed = 1;
  }
  for (std::size_t k = listed; k < count; ++k) {
    const char alias = list == "nodes" ? 'n' : "abc"[k % 3];
    yaml += std::string("        - *") + alias + "\n";
  }
  return flexibleBody(yaml);
}

TEST(YamlLimits, LumpedMassesAndNodesOverTheLimitEvenThroughAliases) {
  EXPECT_NO_THROW(loadYamlString(aliasedLumpedMasses(4096), ".", "ok.yaml"));
  limitError(aliasedLumpedMasses(4097), ModelLimits{},
             {"flexible.lumped_masses: 4097 lumped masses in one flexible body exceed the limit "
              "of 4096"});
  ModelLimits limits;
  limits.max_flexible_entries = 3;
  limitError(aliasedLumpedMasses(4, "nodes"), limits,
             {"flexible.nodes: 4 nodes in one flexible body exceed the limit of 3"});
}

// yaml-cpp shares an aliased node: the reader counts its text at each use, so that a short text
// cannot make it read more than max_text_bytes.
TEST(YamlLimits, AliasesCannotExpandTheTextBeyondTheLimit) {
  // one lumped mass of 16 modes with second-order shapes (~1.5 kB), used 64 times (~100 kB)
  std::string row;
  for (int k = 0; k < 16; ++k) row += k ? ", 0.001" : "[0.001";
  row += "]";
  std::string row2;
  for (int k = 0; k < 256; ++k) row2 += k ? ", 0" : "[0";
  row2 += "]";
  std::string yaml = "      modes: 16\n      stiffness: [";
  for (int r = 0; r < 16; ++r) {
    yaml += r ? ", [" : "[";
    for (int c = 0; c < 16; ++c) yaml += std::string(c ? ", " : "") + (r == c ? "1" : "0");
    yaml += "]";
  }
  yaml += "]\n      lumped_masses:\n        - &m {position: [0.5, 0, 0], mass: 0.1, slope: [" +
          row + ", " + row + ", " + row + "], translation: [" + row + ", " + row + ", " + row +
          "], second_order: [" + row2 + ", " + row2 + ", " + row2 + "]}\n";
  for (int k = 1; k < 64; ++k) yaml += "        - *m\n";
  const std::string text = flexibleBody(yaml);
  ASSERT_LT(text.size(), 5000u);
  ModelLimits limits;
  limits.max_text_bytes = 32 << 10;
  limitError(text, limits, {"lumped_masses[", "the text read, each use of an alias counted "
                                              "again, goes beyond the limit of 32768 bytes"});
  // Without aliases the text read is at most the text: a text exactly at the limit loads.
  limits.max_text_bytes = std::string(kEverything).size();
  EXPECT_NO_THROW(loadYamlString(kEverything, ".", "ok.yaml", limits));
  limits.max_text_bytes -= 1;
  limitError(kEverything, limits, {"larger than the limit of"});
  // ... but for a double-quoted `\L` or `\P` (U+2028, U+2029), 2 bytes that read as 3: these
  // 287 bytes read as 307
  std::string separators;
  std::string escapes = "bodies:\n  - {name: \"";
  for (int k = 0; k < 80; ++k) {
    escapes += "\\L";
    separators += "\u2028";
  }
  escapes += "\", joint: {type: revolute, axis: [0, 0, 1]},\n"
             "     inertia: {mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}}\n";
  ASSERT_EQ(escapes.size(), 287u);
  limits.max_text_bytes = 287;
  limitError(escapes, limits, {"the text read, each use of an alias counted again, goes beyond "
                               "the limit of 287 bytes"});
  limits.max_text_bytes = 307;
  EXPECT_EQ(loadYamlString(escapes, ".", "ok.yaml", limits).body_names.at(1), separators);
}

// A flexible body of many modes can only be repeated until the model's degrees of freedom reach
// max_dofs: the beam generator (elements³) runs at most that many times.
TEST(YamlLimits, DegreesOfFreedomBoundHowManyFlexibleBodiesAreRead) {
  std::string yaml = "bodies:\n"
                     "  - name: b0\n"
                     "    joint: {type: revolute, axis: [0, 0, 1]}\n"
                     "    flexible: &f {beam: {youngs_modulus: 70.0e9, area_moment: 1.0e-8, "
                     "density: 2700, area: 4.0e-4, length: 0.5, modes: 8, elements: 200}}\n";
  for (int k = 1; k < 1000; ++k) {
    yaml += "  - {name: b" + std::to_string(k) + ", parent: b" + std::to_string(k - 1) +
            ", parent_node: tip, joint: {type: revolute, axis: [0, 0, 1]}, flexible: *f}\n";
  }
  ModelLimits limits;
  limits.max_dofs = 128;
  // 14 bodies of 1 + 8 DoFs (126), then the 15th body's modes: 135
  limitError(yaml, limits,
             {"body 'b14': flexible.beam: its modes take the model to 135 degrees of freedom, "
              "above the limit of 128"});
  limitError(oneBody() + "  - {name: b, joint: {type: free}}\n", ModelLimits{.max_dofs = 6},
             {"bad.yaml:5: body 'b': joint: its joint's DoFs take the model to 7 degrees of "
              "freedom, above the limit of 6"});
}

// yaml-cpp's parser recurses once per level of nesting and stops at 500 levels: deep texts are a
// clean ModelError, never a stack overflow (tests/CMakeLists.txt builds this suite with
// AddressSanitizer in CI, whose larger frames would overflow first).
TEST(YamlLimits, DeepNestingIsAModelError) {
  const std::size_t depth = 100'000;
  const std::string brackets = "bodies: " + std::string(depth, '[') + std::string(depth, ']');
  std::string dashes = "bodies:\n";
  for (std::size_t k = 0; k < depth; ++k) dashes += "- ";
  dashes += "x\n";
  std::string maps = "bodies: ";
  for (std::size_t k = 0; k < depth; ++k) maps += "{a: ";
  maps += std::string(depth, '}');
  std::string indented = "bodies:\n";
  for (std::size_t k = 1; k <= 1000; ++k) indented += std::string(k, ' ') + "a:\n";
  for (const std::string& text : {brackets, dashes, maps, indented}) {
    SCOPED_TRACE(text.substr(0, 20));
    expectYamlError(text, {"malformed YAML: lists and mappings nested deeper than 499 levels"});
  }
  // 499 levels, the root included, parse (and fail later, as a wrong type)
  expectYamlError("bodies: " + std::string(498, '[') + std::string(498, ']'),
                  {"bodies[0]: expected a mapping"});
}

// files_inside_base_directory (hilsim-server): a text names only files inside its directory.
TEST(YamlLimits, FilesCanBeConfinedToTheBaseDirectory) {
  ModelLimits limits;
  limits.files_inside_base_directory = true;
  const std::string data = HILSIM_TEST_DATA_DIR "/io";
  EXPECT_NO_THROW(loadYamlString("urdf: two_link.urdf\n", data, "ok.yaml", limits));
  EXPECT_NO_THROW(loadYamlString("urdf: ./sub/../two_link.urdf\n", data, "ok.yaml", limits));
  for (const std::string& name : {data + "/two_link.urdf", std::string("../io/two_link.urdf"),
                                  std::string("/etc/passwd"), std::string("a/../../b.urdf")}) {
    limitError("urdf: " + name + "\n", limits,
               {"bad.yaml:1: urdf: '" + name + "' is outside the model directory"}, data);
  }
  limitError("urdf: two_link.urdf\n", limits, {"is outside the model directory"}, "");
  limitError(flexibleBody("      file: /dev/zero\n"), limits,
             {"bad.yaml:5: body 'a': flexible.file: '/dev/zero' is outside the model directory"});
  // without it, absolute paths and parent directories are a file's own business
  EXPECT_NO_THROW(loadYamlString("urdf: " + data + "/two_link.urdf\n", ".", "ok.yaml"));
}

TEST(YamlLimits, AnIncludedFlexibleFileCannotIncludeAnother) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "hilsim_yaml_include_limits";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "self.yaml") << "file: self.yaml\n";
  std::ofstream(dir / "first.yaml") << "file: second.yaml\n";
  std::ofstream(dir / "second.yaml") << "file: first.yaml\n";
  std::ofstream(dir / "deep.yaml") << std::string(10'000, '[') << std::string(10'000, ']') << "\n";
  limitError(flexibleBody("      file: self.yaml\n"), ModelLimits{},
             {"/self.yaml:1: flexible.file: an included file holds the flexible data itself; it "
              "cannot include another"},
             dir.string());
  limitError(flexibleBody("      file: first.yaml\n"), ModelLimits{},
             {"/first.yaml:1: flexible.file: an included file", "cannot include another"},
             dir.string());
  limitError(flexibleBody("      file: deep.yaml\n"), ModelLimits{},
             {"bad.yaml:5: body 'a': flexible.file: ",
              "deep.yaml:2: malformed YAML: lists and mappings nested deeper than 499 levels"},
             dir.string());
  // an included file counts towards the text of the model
  ModelLimits limits;
  limits.max_text_bytes = 200;
  std::ofstream(dir / "big.yaml") << "modes: 1\n" << std::string(150, '#') << "\n";
  limitError(flexibleBody("      file: big.yaml\n"), limits,
             {"flexible.file: included files take the model text beyond the limit of 200 bytes"},
             dir.string());
  std::filesystem::remove_all(dir);
}

// The bytes parsed (a text and its included files) and the bytes of the scalars read are two
// bounds, each of max_text_bytes: an included file counts once against each, so a file of most
// of the limit loads, and the same file included twice does not.
TEST(YamlLimits, AnIncludedFileCountsOnceAgainstEachBound) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "hilsim_yaml_include_bounds";
  std::filesystem::create_directories(dir);
  // mostly scalars, so that its bytes and its scalars together exceed the limit: masses along a
  // cantilever's first bending shape, y = x², given to nine digits
  std::string modes = "modes: 1\nstiffness: [[400]]\nlumped_masses:\n";
  for (int k = 1; modes.size() < 1200; ++k) {
    char mass[200];
    const double x = 0.1 * k;
    std::snprintf(mass, sizeof mass,
                  "  - {position: [%.9f, 0, 0], mass: 0.012345678, slope: [[0], [0], [%.9f]],\n"
                  "     translation: [[0], [%.9f], [0]]}\n",
                  x, 2 * x, x * x);
    modes += mass;
  }
  std::ofstream(dir / "modes.yaml") << modes;
  ModelLimits limits;
  limits.max_text_bytes = 2000;
  ASSERT_GE(modes.size(), 1200u);  // 60 % of the limit
  ASSERT_LT(modes.size(), 1400u);
  const Model m = loadYamlString(flexibleBody("      file: modes.yaml\n"), dir.string(),
                                 "ok.yaml", limits);
  EXPECT_EQ(m.nmodes[1], 1);
  // twice: 120 % of the limit parsed
  const std::string twice = flexibleBody("      file: modes.yaml\n") +
                            "  - name: b\n"
                            "    parent: a\n"
                            "    joint: {type: revolute, axis: [0, 0, 1]}\n"
                            "    flexible: {file: modes.yaml}\n";
  EXPECT_NO_THROW(loadYamlString(twice, dir.string(), "ok.yaml"));
  limitError(twice, limits,
             {"body 'b': flexible.file: included files take the model text beyond the limit of "
              "2000 bytes"},
             dir.string());
  std::filesystem::remove_all(dir);
}

TEST(YamlLimits, AliasesOfOneBeamBodyAreRefusedBeforeTheirBeamsAreGenerated) {
  // The fuzz regression aliased_beam_bodies.yaml: one 1000-element beam body listed ten times.
  // A beam is generated once per distinct spec, and a repeated name is refused as soon as it is
  // read, so this costs one beam (~0.5 s in a release build each), not ten. (Both uses are the
  // same node, so both name line 2.)
  std::string text =
      "bodies:\n"
      "  - &b\n"
      "    name: arm\n"
      "    joint: {type: revolute, axis: [0, 0, 1]}\n"
      "    flexible:\n"
      "      beam: {youngs_modulus: 7.0e10, area_moment: 1.0e-8, density: 2700, area: 4.0e-4,\n"
      "             length: 1.0, modes: 1, elements: 1000}\n";
  for (int k = 0; k < 10; ++k) text += "  - *b\n";
  expectYamlError(text, {"bad.yaml:2: body 'arm': duplicate body name (first defined at bad.yaml:2)"});
}

TEST(YamlLimits, IdenticalBeamsAreGeneratedOnceAndShared) {
  // two links of the same beam get the same modal data, as if generated twice
  const std::string beam =
      "flexible: {beam: {youngs_modulus: 7.0e10, area_moment: 1.0e-8, density: 2700,\n"
      "                  area: 4.0e-4, length: 1.0, modes: 2, elements: 10}}}\n";
  const Model m = loadYamlString("bodies:\n"
                                 "  - {name: a, joint: {type: revolute, axis: [0, 0, 1]},\n     " +
                                 beam +
                                 "  - {name: b, parent: a, joint: {type: revolute, axis: [0, 0, 1]},"
                                 "\n     " + beam);
  ASSERT_EQ(m.nmodes[1], 2);
  ASSERT_EQ(m.nmodes[2], 2);
  EXPECT_EQ(m.flexible[1].modal_mass, m.flexible[2].modal_mass);
  EXPECT_EQ(m.flexible[1].stiffness, m.flexible[2].stiffness);
  EXPECT_EQ(m.flexible[1].nodes.size(), m.flexible[2].nodes.size());
}

TEST(YamlLoaderErrors, NamesFollowTheModelRule) {
  expectYamlError("name: \"two\\nlines\"\n" + oneBody(),
                  {"bad.yaml:1: name: name contains a control character"});
  expectYamlError("name: " + std::string(300, 'n') + "\n" + oneBody(),
                  {"bad.yaml:1: name: name of 300 bytes, more than the limit of 256"});
  expectYamlError("bodies:\n  - name: \"a\\tb\"\n    joint: {type: revolute, axis: [0, 0, 1]}\n",
                  {"body #0: name contains a control character"});
}

TEST(YamlLoaderErrors, NamesWithLineBreaksGiveOneLineMessages) {
  expectYamlError("bodies:\n  - name: \"two\\nlines\"\n    joint: {type: hinge}\n",
                  {"body 'two\\x0alines'", "unsupported joint type 'hinge'"});
}

}  // namespace
}  // namespace hilsim
