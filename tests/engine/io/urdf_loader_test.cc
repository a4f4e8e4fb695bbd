// URDF loading: mapping of every supported element onto the Model, equivalence with a model built
// directly, and one distinct error (naming file and element) for every class of bad file.
#include <gtest/gtest.h>

#include <Eigen/Geometry>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>

#include "engine/algorithms/crba.h"
#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "engine/builder/model_builder.h"
#include "engine/model/names.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;
using test::relativeDifference;

// --- fixtures written inline ---

std::string inertial(const std::string& xyz, const std::string& rpy, double mass,
                     const std::string& moments) {
  return "<inertial><origin xyz='" + xyz + "' rpy='" + rpy + "'/><mass value='" +
         std::to_string(mass) + "'/><inertia " + moments + "/></inertial>";
}

std::string moments(double ixx, double iyy, double izz, double ixy = 0, double ixz = 0,
                    double iyz = 0) {
  std::ostringstream s;
  s.precision(17);
  s << "ixx='" << ixx << "' iyy='" << iyy << "' izz='" << izz << "' ixy='" << ixy << "' ixz='"
    << ixz << "' iyz='" << iyz << "'";
  return s.str();
}

std::string link(const std::string& name, const std::string& inner = "") {
  return "<link name='" + name + "'>" + inner + "</link>";
}

std::string joint(const std::string& name, const std::string& type, const std::string& parent,
                  const std::string& child, const std::string& extra = "") {
  return "<joint name='" + name + "' type='" + type + "'><parent link='" + parent +
         "'/><child link='" + child + "'/>" + extra + "</joint>";
}

std::string robot(const std::string& body) { return "<robot name='r'>" + body + "</robot>"; }

const std::string kGoodInertial = inertial("0 0 0", "0 0 0", 1.0, moments(0.01, 0.01, 0.01));

// A URDF exercising rotated inertial frames, rotated joint origins, a welded link between two
// moving ones, and revolute, continuous and prismatic joints.
std::string rotatedRobot() {
  return robot(
      link("base", inertial("0.1 0 0.05", "0.3 -0.2 0.5", 2.0,
                            moments(0.02, 0.03, 0.04, 0.001, -0.002, 0.003))) +
      joint("j1", "revolute", "base", "l1",
            "<origin xyz='0 0 0.3' rpy='0.1 0.2 0.3'/><axis xyz='0 0 2'/>"
            "<limit lower='-2' upper='2.5' effort='50' velocity='3'/><dynamics damping='0.5'/>") +
      link("l1", inertial("0 0.05 0.1", "1.0 0.4 -0.7", 1.5,
                          moments(0.015, 0.012, 0.008, 0.0005, 0.0, -0.001))) +
      joint("tool_mount", "fixed", "l1", "tool", "<origin xyz='0.2 0 0' rpy='0 1.2 0'/>") +
      link("tool", inertial("0.03 0 0", "0.2 0.1 -0.3", 0.7, moments(0.002, 0.003, 0.004))) +
      joint("j2", "continuous", "tool", "l2",
            "<origin xyz='0 0.1 0' rpy='-0.4 0 0.2'/><axis xyz='1 1 0'/>") +
      link("l2", inertial("0.1 0.1 0", "0 0 0.8", 1.1, moments(0.01, 0.02, 0.025))) +
      joint("j3", "prismatic", "l2", "l3",
            "<origin xyz='0 0 0.2' rpy='0.5 0.5 0.5'/><axis xyz='0 1 0'/>"
            "<limit lower='-0.1' upper='0.2' effort='10' velocity='1'/>") +
      link("l3", inertial("0 0 -0.05", "-0.6 0.2 1.1", 0.4, moments(0.001, 0.0015, 0.002))));
}

Matrix3 rpy(double r, double p, double y) {
  return (Eigen::AngleAxisd(y, Vector3::UnitZ()) * Eigen::AngleAxisd(p, Vector3::UnitY()) *
          Eigen::AngleAxisd(r, Vector3::UnitX()))
      .toRotationMatrix();
}

// URDF inertia (about the com, in the <inertial> frame at xyz/rpy) in the link frame.
Inertia linkInertia(const Vector3& xyz, const Vector3& angles, double mass, double ixx, double iyy,
                    double izz, double ixy, double ixz, double iyz) {
  Matrix3 i;
  i << ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz;
  const Matrix3 r = rpy(angles.x(), angles.y(), angles.z());
  return Inertia(mass, xyz, r * i * r.transpose());
}

// rotatedRobot() built by hand with ModelBuilder.
Model rotatedRobotByHand(bool floating_base) {
  ModelBuilder b("r");
  BodySpec base;
  base.name = "base";
  base.inertia =
      linkInertia({0.1, 0, 0.05}, {0.3, -0.2, 0.5}, 2.0, 0.02, 0.03, 0.04, 0.001, -0.002, 0.003);
  if (floating_base) {
    base.joint = Joint::freeFlyer();
    base.joint_name = "root_joint";
  }
  b.addBody(base);
  JointProperties p1;
  p1.lower = -2;
  p1.upper = 2.5;
  p1.effort = 50;
  p1.velocity = 3;
  p1.damping = 0.5;
  b.addBody(
      "l1", "base", Joint::revolute(Vector3::UnitZ()),
      Transform(rpy(0.1, 0.2, 0.3), Vector3(0, 0, 0.3)),
      linkInertia({0, 0.05, 0.1}, {1.0, 0.4, -0.7}, 1.5, 0.015, 0.012, 0.008, 0.0005, 0.0, -0.001),
      p1);
  b.addFixedBody("tool", "l1", Transform(rpy(0, 1.2, 0), Vector3(0.2, 0, 0)),
                 linkInertia({0.03, 0, 0}, {0.2, 0.1, -0.3}, 0.7, 0.002, 0.003, 0.004, 0, 0, 0));
  b.addBody("l2", "tool", Joint::revolute(Vector3(1, 1, 0)),
            Transform(rpy(-0.4, 0, 0.2), Vector3(0, 0.1, 0)),
            linkInertia({0.1, 0.1, 0}, {0, 0, 0.8}, 1.1, 0.01, 0.02, 0.025, 0, 0, 0));
  JointProperties p3;
  p3.lower = -0.1;
  p3.upper = 0.2;
  p3.effort = 10;
  p3.velocity = 1;
  b.addBody("l3", "l2", Joint::prismatic(Vector3::UnitY()),
            Transform(rpy(0.5, 0.5, 0.5), Vector3(0, 0, 0.2)),
            linkInertia({0, 0, -0.05}, {-0.6, 0.2, 1.1}, 0.4, 0.001, 0.0015, 0.002, 0, 0, 0), p3);
  return b.build();
}

// Loading `xml` must throw a one-line ModelError naming bad.urdf (and a line, where the problem
// has one) and containing every `part`. Returns the message.
std::string expectUrdfError(const std::string& xml, std::initializer_list<std::string> parts,
                            bool floating_base = false, const ModelLimits& limits = {},
                            InertiaPolicy inertia = InertiaPolicy::kAsGiven) {
  try {
    loadUrdfString(xml, UrdfOptions{floating_base, inertia}, "bad.urdf", limits);
    ADD_FAILURE() << "no error for:\n" << xml;
  } catch (const ModelError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("bad.urdf", 0), 0u) << message;
    const std::size_t colon = message.find(": ");
    EXPECT_NE(colon, std::string::npos) << message;
    // "bad.urdf: …" or "bad.urdf:<line>: …"
    const std::string line = message.substr(8, colon - 8);
    EXPECT_TRUE(line.empty() || (line[0] == ':' && line.size() > 1 &&
                                 line.find_first_not_of("0123456789", 1) == std::string::npos))
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    for (const std::string& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
    return message;
  }
  return {};
}

// --- mapping ---

TEST(UrdfLoader, RotatedInertialsAndFixedJointsGiveTheBuilderMassMatrix) {
  for (bool floating : {false, true}) {
    const Model loaded = loadUrdfString(rotatedRobot(), floating, "rotated.urdf");
    const Model direct = rotatedRobotByHand(floating);
    ASSERT_EQ(loaded.nq, direct.nq);
    ASSERT_EQ(loaded.nv, direct.nv);
    ASSERT_EQ(loaded.nbodies, direct.nbodies);
    EXPECT_EQ(loaded.nv, floating ? 9 : 3);
    for (int i = 1; i < loaded.nbodies; ++i) {
      EXPECT_EQ(loaded.body_names[i], direct.body_names[i]);
      EXPECT_EQ(loaded.parent[i], direct.parent[i]);
      EXPECT_TRUE(loaded.inertias[i].isApprox(direct.inertias[i], 1e-13)) << loaded.body_names[i];
    }
    Data data_loaded(loaded), data_direct(direct);
    std::mt19937 rng(7);
    for (int trial = 0; trial < 5; ++trial) {
      const Eigen::VectorXd q = test::randomConfiguration(loaded, rng);
      const Eigen::MatrixXd m_loaded = crba(loaded, data_loaded, q);
      const Eigen::MatrixXd m_direct = crba(direct, data_direct, q);
      EXPECT_LT(relativeDifference(m_loaded, m_direct), kAlgebraTol) << "floating " << floating;
    }
  }
}

TEST(UrdfLoader, KeepsNamesLimitsDampingAndWeldedFrames) {
  const Model m = loadUrdfString(rotatedRobot(), false, "rotated.urdf");
  EXPECT_EQ(m.name, "r");
  EXPECT_EQ(m.jointIndex("j1"), m.bodyIndex("l1"));
  EXPECT_EQ(m.jointIndex("j2"), m.bodyIndex("l2"));
  EXPECT_EQ(m.jointIndex("tool_mount"), -1);  // welded
  ASSERT_GE(m.frameIndex("tool"), 0);
  EXPECT_EQ(m.frames[m.frameIndex("tool")].body, m.bodyIndex("l1"));
  ASSERT_GE(m.frameIndex("base"), 0);
  EXPECT_EQ(m.frames[m.frameIndex("base")].body, 0);  // fixed base: welded to the world
  const int j1 = m.idx_v[m.jointIndex("j1")];
  EXPECT_EQ(m.lower_limit[j1], -2.0);
  EXPECT_EQ(m.upper_limit[j1], 2.5);
  EXPECT_EQ(m.effort_limit[j1], 50.0);
  EXPECT_EQ(m.velocity_limit[j1], 3.0);
  EXPECT_EQ(m.damping[j1], 0.5);
  const int j2 = m.idx_v[m.jointIndex("j2")];  // continuous: no position limits
  EXPECT_TRUE(std::isinf(m.lower_limit[j2]) && m.lower_limit[j2] < 0);
  EXPECT_TRUE(std::isinf(m.upper_limit[j2]));
  EXPECT_NEAR(m.joints[m.jointIndex("j2")].axis.norm(), 1.0, 1e-15);
  EXPECT_NEAR(m.joints[m.jointIndex("j1")].axis.z(), 1.0, 1e-15);  // <axis xyz="0 0 2">
  EXPECT_EQ(m.joints[m.jointIndex("j3")].type, JointType::kPrismatic);
}

TEST(UrdfLoader, FloatingBaseAddsRootJoint) {
  const Model m = loadUrdfString(rotatedRobot(), true, "rotated.urdf");
  EXPECT_EQ(m.jointIndex("root_joint"), 1);
  EXPECT_EQ(m.body_names[1], "base");
  EXPECT_EQ(m.joints[1].type, JointType::kFreeFlyer);
  EXPECT_EQ(m.nq, 10);
  EXPECT_EQ(m.nv, 9);
}

TEST(UrdfLoader, WorldRootLinkIsTheGround) {
  const std::string xml =
      robot(link("world") + joint("anchor", "fixed", "world", "base", "<origin xyz='0 0 1'/>") +
            link("base", kGoodInertial) +
            joint("j", "revolute", "base", "arm",
                  "<axis xyz='0 1 0'/><limit lower='-1' upper='1' effort='1' velocity='1'/>") +
            link("arm", kGoodInertial) + joint("free", "floating", "world", "ball") +
            link("ball", kGoodInertial));
  const Model m = loadUrdfString(xml);
  EXPECT_EQ(m.nbodies, 3);  // world, arm, ball
  EXPECT_EQ(m.nq, 1 + 7);
  EXPECT_EQ(m.nv, 1 + 6);
  EXPECT_EQ(m.parent[m.bodyIndex("arm")], 0);
  EXPECT_EQ(m.joint_placement[m.bodyIndex("arm")].translation, Vector3(0, 0, 1));
  EXPECT_EQ(m.joints[m.bodyIndex("ball")].type, JointType::kFreeFlyer);
  EXPECT_EQ(m.frames[m.frameIndex("base")].body, 0);
}

TEST(UrdfLoader, PlanarJointNormalIsTheAxis) {
  const Model m = loadUrdfString(robot(link("base") +
                                       joint("p", "planar", "base", "puck", "<axis xyz='0 0 3'/>") +
                                       link("puck", kGoodInertial)));
  ASSERT_EQ(m.nbodies, 2);
  EXPECT_EQ(m.joints[1].type, JointType::kPlanar);
  EXPECT_LT((m.joints[1].axis - Vector3::UnitZ()).norm(), 1e-15);
  EXPECT_EQ(m.nq, 3);
}

TEST(UrdfLoader, LinksWithoutInertialHaveZeroInertiaAndMimicJointsAreIndependent) {
  const std::string xml =
      robot(link("base") + joint("a", "continuous", "base", "massless", "<axis xyz='0 0 1'/>") +
            link("massless") + joint("b", "continuous", "massless", "tip", "<axis xyz='1 0 0'/>") +
            link("tip", kGoodInertial) +
            joint("c", "continuous", "tip", "follower",
                  "<axis xyz='1 0 0'/><mimic joint='b' multiplier='2' offset='0'/>") +
            link("follower", kGoodInertial));
  const Model m = loadUrdfString(xml);
  EXPECT_EQ(m.nv, 3);
  EXPECT_EQ(m.inertias[m.bodyIndex("massless")].mass, 0.0);
  EXPECT_TRUE(m.inertias[m.bodyIndex("massless")].inertia_com.isZero(0.0));
}

TEST(UrdfLoader, BodiesFollowFileOrderNotNameOrder) {
  const std::string xml =
      robot(link("base") + joint("z_first", "continuous", "base", "one", "<axis xyz='0 0 1'/>") +
            link("one", kGoodInertial) +
            joint("a_second", "continuous", "base", "two", "<axis xyz='0 0 1'/>") +
            link("two", kGoodInertial) + "<!-- <joint name='two_child' type='fixed'> -->" +
            joint("m_third", "continuous", "one", "three", "<axis xyz='0 0 1'/>") +
            link("three", kGoodInertial));
  const Model m = loadUrdfString(xml);
  ASSERT_EQ(m.nbodies, 4);
  // depth first from the root, children in file order
  EXPECT_EQ(m.body_names[1], "one");
  EXPECT_EQ(m.body_names[2], "three");
  EXPECT_EQ(m.body_names[3], "two");
}

TEST(UrdfLoader, ToleratesPlaceholderInertiaWeldedToARealBody) {
  // anymal_b's pattern: a 1e-6 kg root link whose inertia breaks the triangle inequality, welded
  // to the real base; the composite body is physical
  const std::string xml =
      robot(link("base",
                 "<inertial><mass value='1e-6'/><inertia ixx='1e-6' ixy='1e-6' ixz='1e-6' "
                 "iyy='1e-6' iyz='1e-6' izz='1e-6'/></inertial>") +
            joint("weld", "fixed", "base", "body") + link("body", kGoodInertial));
  EXPECT_EQ(loadUrdfString(xml, true).nv, 6);
}

TEST(UrdfLoader, LoadsFromFile) {
  const Model m = loadUrdf(HILSIM_TEST_DATA_DIR "/io/two_link.urdf", true);
  EXPECT_EQ(m.name, "two_link");
  EXPECT_EQ(m.nv, 8);
  EXPECT_EQ(m.nq, 9);
}

// --- errors: one distinct message per class ---

// <visual> is kept for viewers: each primitive with its size, colour (inline or a named
// material, defined before or after) and placement, moved into the body a welded link joins.
TEST(UrdfLoader, KeepsVisualGeometryOnTheBodyItMovesWith) {
  const std::string xml = robot(
      link("base", "<visual><geometry><box size='0.4 0.3 0.1'/></geometry>"
                   "<material name='grey'/></visual>") +
      joint("j1", "continuous", "base", "arm", "<origin xyz='0 0 0.1'/><axis xyz='0 0 1'/>") +
      link("arm", kGoodInertial +
                      "<visual><origin xyz='0 0 0.25' rpy='0 1.5707963267948966 0'/>"
                      "<geometry><cylinder radius='0.05' length='0.5'/></geometry>"
                      "<material name='red'><color rgba='1 0 0 0.5'/></material></visual>"
                      "<visual><geometry><mesh filename='package://r/arm.stl' scale='2 2 2'/>"
                      "</geometry></visual><collision><geometry><sphere radius='9'/></geometry>"
                      "</collision>") +
      joint("mount", "fixed", "arm", "tool", "<origin xyz='0 0 0.5'/>") +
      link("tool", "<visual><origin xyz='0 0 0.02'/><geometry><sphere radius='0.03'/></geometry>"
                   "<material name='grey'/></visual>"
                   "<visual><geometry><capsule radius='1' length='1'/></geometry></visual>") +
      "<material name='grey'><color rgba='0.5 0.5 0.5 1'/></material>");
  const Model m = loadUrdfString(xml, false, "visual.urdf");
  ASSERT_EQ(m.visuals.size(), 4u);  // the capsule (not URDF) and the collision are not visuals
  const VisualShape& base = m.visuals[0];
  EXPECT_EQ(base.body, 0);  // the ground root
  EXPECT_EQ(base.geometry, VisualShape::Geometry::kBox);
  EXPECT_EQ(base.size, Vector3(0.4, 0.3, 0.1));
  EXPECT_EQ(base.rgba, Eigen::Vector4d(0.5, 0.5, 0.5, 1));  // a material defined further down
  const VisualShape& arm = m.visuals[1];
  EXPECT_EQ(arm.body, m.bodyIndex("arm"));
  EXPECT_EQ(arm.geometry, VisualShape::Geometry::kCylinder);
  EXPECT_EQ(arm.size, Vector3(0.05, 0.5, 0.0));
  EXPECT_EQ(arm.rgba, Eigen::Vector4d(1, 0, 0, 0.5));
  EXPECT_LT((arm.placement.translation - Vector3(0, 0, 0.25)).norm(), kAlgebraTol);
  EXPECT_LT((arm.placement.rotation * Vector3::UnitZ() - Vector3::UnitX()).norm(), 1e-15);
  const VisualShape& mesh = m.visuals[2];
  EXPECT_EQ(mesh.geometry, VisualShape::Geometry::kMesh);
  EXPECT_EQ(mesh.mesh, "package://r/arm.stl");
  EXPECT_EQ(mesh.scale, Vector3(2, 2, 2));
  EXPECT_EQ(mesh.rgba[3], 0.0);  // no colour given
  const VisualShape& tool = m.visuals[3];
  EXPECT_EQ(tool.body, m.bodyIndex("arm"));  // welded into the arm, 0.5 m up
  EXPECT_EQ(tool.geometry, VisualShape::Geometry::kSphere);
  EXPECT_LT((tool.placement.translation - Vector3(0, 0, 0.52)).norm(), kAlgebraTol);
}

// Mesh files are looked up beside a URDF file, never outside its directory, and never for a
// model given as text.
TEST(UrdfLoader, FindsMeshFilesBesideTheModelFileOnly) {
  namespace fs = std::filesystem;
  const std::string path = HILSIM_TEST_DATA_DIR "/io/mesh_robot.urdf";
  const Model m = loadUrdf(path);
  ASSERT_EQ(m.visuals.size(), 6u);
  const std::string meshes = fs::weakly_canonical(HILSIM_TEST_DATA_DIR "/io/meshes").string();
  EXPECT_EQ(m.visuals[0].body, 0);  // the ground root's
  EXPECT_EQ(m.visuals[0].mesh_file, meshes + "/tetra.stl");  // package://<package>/<path>
  EXPECT_EQ(m.visuals[0].scale, Vector3(2, 2, 2));
  EXPECT_EQ(m.visuals[1].mesh_file, meshes + "/wedge.obj");  // relative
  EXPECT_EQ(m.visuals[2].mesh_file, "");                     // no such file
  EXPECT_EQ(m.visuals[3].mesh_file, meshes + "/tetra.stl");  // a detour that ends inside
  EXPECT_EQ(m.visuals[4].mesh_file, "");                     // file:// outside the directory
  EXPECT_EQ(m.visuals[5].mesh_file, "");                     // package:// climbing out of it
  const Model text = loadUrdfString(io_detail::readTextFile(path, 1 << 20));
  for (const VisualShape& visual : text.visuals) EXPECT_EQ(visual.mesh_file, "");
}

// A malformed <visual> is left out, as the loader leaves out everything the dynamics does not
// use (UrdfLoaderUntrusted below): the model loads, and viewers draw that body from its inertia.
TEST(UrdfLoader, MalformedVisualsAreLeftOut) {
  const std::string mover =
      joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") + link("b", kGoodInertial);
  for (const std::string visual :
       {"", "<geometry/>", "<geometry><box size='1 1'/></geometry>",
        "<geometry><box size='1 -1 1'/></geometry>", "<geometry><cylinder radius='0.1'/></geometry>",
        "<geometry><sphere radius='nan'/></geometry>", "<geometry><mesh/></geometry>",
        "<geometry><sphere radius='1'/></geometry><material><color rgba='2 0 0 1'/></material>"}) {
    SCOPED_TRACE(visual);
    const std::string good = "<visual><geometry><sphere radius='0.1'/></geometry></visual>";
    const Model m =
        loadUrdfString(robot(link("a", "<visual>" + visual + "</visual>" + good) + mover));
    EXPECT_EQ(m.nv, 1);
    ASSERT_EQ(m.visuals.size(), 1u);  // the good one only
    EXPECT_EQ(m.visuals[0].size.x(), 0.1);
  }
}

TEST(UrdfLoaderErrors, MalformedXml) {
  expectUrdfError("<robot name='r'><link name='a'></robot>", {"malformed XML"});
  expectUrdfError("", {"malformed XML"});
  expectUrdfError("<model/>", {"robot"});
}

TEST(UrdfLoaderErrors, MissingMass) {
  expectUrdfError(robot(link("a", "<inertial><inertia " + moments(1, 1, 1) + "/></inertial>")),
                  {"link 'a'", "mass"});
}

TEST(UrdfLoaderErrors, NegativeMass) {
  expectUrdfError(robot(link("a", inertial("0 0 0", "0 0 0", -1.0, moments(1, 1, 1)))),
                  {"link 'a'", "negative"});
}

TEST(UrdfLoaderErrors, NegativeMassInAFileNamesTheFile) {
  const std::string path = HILSIM_TEST_DATA_DIR "/io/bad_negative_mass.urdf";
  try {
    loadUrdf(path);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    const std::string message = e.what();
    // the <mass> element's line
    EXPECT_EQ(message.rfind(path + ":12: link 'arm': ", 0), 0u) << message;
  }
}

TEST(UrdfLoaderErrors, NonPsdInertia) {
  expectUrdfError(robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
                        link("b", inertial("0 0 0", "0 0 0", 1.0, moments(1, 1, 1, 2, 0, 0)))),
                  {"link 'b'", "positive semi-definite"});
}

TEST(UrdfLoaderErrors, TriangleInequalityViolationUnderTheStrictPolicy) {
  expectUrdfError(robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
                        link("b", inertial("0 0 0", "0 0 0", 1.0, moments(1, 1, 3)))),
                  {"link 'b'", "triangle"}, false, {}, InertiaPolicy::kStrict);
  // a bad welded link is reported with the body it is welded to
  expectUrdfError(robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
                        link("b") + joint("w", "fixed", "b", "c") +
                        link("c", inertial("0 0 0", "0 0 0", 1.0, moments(1, 1, 3)))),
                  {"link 'b' (with welded links 'c')", "triangle"}, false, {},
                  InertiaPolicy::kStrict);
}

// Vendor URDFs often give principal moments that break the triangle inequality by a few percent;
// the dynamics are defined (positive definite): loaded as given with a warning naming the link,
// or balanced (the two smaller moments raised by half the excess each) on request. A tensor that
// is not positive semi-definite stays refused whatever the policy.
// A root link with mass and no floating base: welded to the world, which a legged robot's
// trunk must not be unnoticed; the warning names the link and the way to float it.
TEST(UrdfLoader, AMassiveRootWeldedToTheWorldIsNamed) {
  const std::string xml = robot(link("trunk", kGoodInertial) +
                                joint("hip", "continuous", "trunk", "leg", "<axis xyz='0 1 0'/>") +
                                link("leg", kGoodInertial));
  const Model fixed = loadUrdfString(xml, UrdfOptions{}, "dog.urdf");
  ASSERT_EQ(fixed.load_warnings.size(), 1u);
  EXPECT_NE(fixed.load_warnings[0].find("dog.urdf:1: link 'trunk' ("), std::string::npos)
      << fixed.load_warnings[0];
  EXPECT_NE(fixed.load_warnings[0].find("is the root and is welded to the world: a fixed base; "
                                        "a robot that moves its base needs floating_base"),
            std::string::npos)
      << fixed.load_warnings[0];
  EXPECT_TRUE(loadUrdfString(xml, UrdfOptions{true, InertiaPolicy::kAsGiven}).load_warnings.empty());
  // a massless root (a base frame), or a 'world' root: nothing to say
  const std::string frame = robot(link("base") + joint("j", "continuous", "base", "leg",
                                                       "<axis xyz='0 1 0'/>") +
                                  link("leg", kGoodInertial));
  EXPECT_TRUE(loadUrdfString(frame, UrdfOptions{}).load_warnings.empty());
  // a massless base_link with the trunk welded to it (a1, b1): the composite is named
  const std::string composite =
      robot(link("base_link") + joint("base_to_trunk", "fixed", "base_link", "trunk") +
            link("trunk", inertial("0 0 0", "0 0 0", 6.0, moments(0.1, 0.1, 0.1))) +
            joint("hip", "continuous", "trunk", "leg", "<axis xyz='0 1 0'/>") +
            link("leg", kGoodInertial));
  const Model a1 = loadUrdfString(composite, UrdfOptions{}, "a1.urdf");
  ASSERT_EQ(a1.load_warnings.size(), 1u);
  EXPECT_NE(a1.load_warnings[0].find(
                "link 'base_link' (6 kg with the links welded to it) is the root and is welded"),
            std::string::npos)
      << a1.load_warnings[0];
}

// q = 0 outside a joint's limit range, or a zero range: loaded as written, with a word on each.
TEST(UrdfLoader, LimitsThatExcludeTheStartOrLockAJointAreNamed) {
  const auto limited = [](const std::string& lower, const std::string& upper) {
    return "<axis xyz='0 1 0'/><limit lower='" + lower + "' upper='" + upper +
           "' effort='0' velocity='0'/>";
  };
  const std::string xml =
      robot(link("base") + joint("a", "revolute", "base", "la", limited("0.1", "1")) +
            link("la", kGoodInertial) + joint("b", "prismatic", "la", "lb", limited("-1", "-0.5")) +
            link("lb", kGoodInertial) + joint("c", "revolute", "lb", "lc", limited("0", "0")) +
            link("lc", kGoodInertial) + joint("d", "revolute", "lc", "ld", limited("-1", "1")) +
            link("ld", kGoodInertial));
  const Model m = loadUrdfString(xml, UrdfOptions{}, "exported.urdf");
  ASSERT_EQ(m.load_warnings.size(), 2u);
  EXPECT_NE(m.load_warnings[0].find("exported.urdf:1: joint 'c': <limit lower=\"0\" "
                                    "upper=\"0\">: a zero range, which locks this revolute joint"),
            std::string::npos)
      << m.load_warnings[0];
  EXPECT_NE(m.load_warnings[1].find("exported.urdf: q = 0, where a simulation starts unless told "
                                    "otherwise, lies outside the limits of joint 'a' [0.1, 1], "
                                    "joint 'b' [-1, -0.5]; the limit rows push them"),
            std::string::npos)
      << m.load_warnings[1];
  // as written: the ranges are the file's
  EXPECT_EQ(m.lower_limit[0], 0.1);
  EXPECT_EQ(m.upper_limit[2], 0.0);
}

TEST(UrdfLoader, InertiaThatBreaksTheTriangleInequalityLoadsByPolicy) {
  const std::string xml =
      robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
            link("b", inertial("0 0 0", "0 0 0", 1.0, moments(1, 1, 3))));
  const Model given = loadUrdfString(xml, UrdfOptions{}, "vendor.urdf");
  ASSERT_EQ(given.load_warnings.size(), 1u);
  EXPECT_NE(given.load_warnings[0].find("vendor.urdf:"), std::string::npos);
  EXPECT_NE(given.load_warnings[0].find("link 'b'"), std::string::npos) << given.load_warnings[0];
  EXPECT_NE(given.load_warnings[0].find("by 1 kg·m²; loaded as given"), std::string::npos)
      << given.load_warnings[0];
  EXPECT_EQ(given.inertias[1].inertia_com.diagonal(), Vector3(1, 1, 3));

  const Model balanced =
      loadUrdfString(xml, UrdfOptions{false, InertiaPolicy::kBalance}, "vendor.urdf");
  ASSERT_EQ(balanced.load_warnings.size(), 1u);
  EXPECT_NE(balanced.load_warnings[0].find("raised by 0.5 kg·m² each"), std::string::npos)
      << balanced.load_warnings[0];
  EXPECT_TRUE(balanced.inertias[1].inertia_com.isApprox(Vector3(1.5, 1.5, 3).asDiagonal().toDenseMatrix(), 1e-14));
  EXPECT_EQ(balanced.inertias[1].validate(), "");

  // a sound link: no warning under any policy
  const std::string sound =
      robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
            link("b", kGoodInertial));
  for (const InertiaPolicy policy :
       {InertiaPolicy::kAsGiven, InertiaPolicy::kBalance, InertiaPolicy::kStrict}) {
    EXPECT_TRUE(loadUrdfString(sound, UrdfOptions{false, policy}).load_warnings.empty())
        << inertiaPolicyName(policy);
  }
  expectUrdfError(robot(link("a") + joint("j", "continuous", "a", "b", "<axis xyz='0 0 1'/>") +
                        link("b", inertial("0 0 0", "0 0 0", 1.0, moments(1, 1, 1, 2, 0, 0)))),
                  {"link 'b'", "positive semi-definite"}, false, {}, InertiaPolicy::kBalance);
}


// A gripper: a hand on a wrist, two fingers on prismatic joints without <inertial>, one with a
// massless tip welded to it.
std::string gripperUrdf() {
  const std::string slide = "<axis xyz='1 0 0'/><limit lower='0' upper='0.04' effort='10' "
                            "velocity='1'/>";
  return robot(link("palm") + joint("wrist", "continuous", "palm", "hand", "<axis xyz='0 0 1'/>") +
               link("hand", kGoodInertial) + joint("left_joint", "prismatic", "hand", "left", slide) +
               link("left") + joint("right_joint", "prismatic", "hand", "right", slide) +
               link("right") + joint("right_tip_joint", "fixed", "right", "right_tip") +
               link("right_tip"));
}

TEST(UrdfLoader, MasslessFingersAreRefusedWeldedOrGivenArmatureByPolicy) {
  const std::string xml = gripperUrdf();
  // one of the two fingers is named (whichever dominates the undetermined directions)
  expectUrdfError(xml, {"_joint': massless body '", "without inertia", "massless: weld",
                        "massless: armature=<kg·m²>"});

  UrdfOptions weld;
  weld.massless = MasslessPolicy::kWeld;
  const Model welded = loadUrdfString(xml, weld, "gripper.urdf");
  EXPECT_EQ(welded.nv, 1);
  ASSERT_EQ(welded.load_warnings.size(), 2u);
  EXPECT_NE(welded.load_warnings[0].find("gripper.urdf:1: joint 'left_joint' (prismatic) welded"),
            std::string::npos)
      << welded.load_warnings[0];
  EXPECT_NE(welded.load_warnings[1].find("joint 'right_joint'"), std::string::npos);
  // the finger links stay frames, on the hand
  for (const char* frame : {"left", "right", "right_tip"}) {
    ASSERT_GE(welded.frameIndex(frame), 0) << frame;
    EXPECT_EQ(welded.frames[welded.frameIndex(frame)].body, 1) << frame;
  }

  UrdfOptions armature;
  ASSERT_EQ(parseMasslessPolicy("armature=0.002", armature), "");
  const Model geared = loadUrdfString(xml, armature, "gripper.urdf");
  ASSERT_EQ(geared.nv, 3);
  ASSERT_EQ(geared.load_warnings.size(), 2u);
  EXPECT_NE(geared.load_warnings[0].find("gripper.urdf:1: joint 'left_joint': massless body"),
            std::string::npos)
      << geared.load_warnings[0];
  EXPECT_NE(geared.load_warnings[0].find("armature 0.002 added"), std::string::npos);
  EXPECT_EQ(geared.armature[0], 0.0);
  EXPECT_EQ(geared.armature[1], 0.002);
  EXPECT_EQ(geared.armature[2], 0.002);
  EXPECT_EQ(geared.nalgebraic, 0);
  // a massless finger's only inertia is its armature: M is diag(I_zz of the hand, a, a)
  Data data(geared);
  Eigen::VectorXd q = geared.neutralConfiguration();
  q(0) = 0.7;
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(3, 3);
  expected.diagonal() << 0.01, 0.002, 0.002;
  EXPECT_LE(relativeDifference(crba(geared, data, q), expected), kAlgebraTol);
}

// A massless neck carrying a point-mass head whose centre lies on the neck's yaw axis at the
// neutral pose: the yaw has no inertia there and some elsewhere. The armature loads it.
TEST(UrdfLoader, ANeckWhoseInertiaChangesRankLoadsWithArmature) {
  const std::string xml = robot(
      link("torso", kGoodInertial) +
      joint("neck_yaw", "continuous", "torso", "neck", "<axis xyz='0 0 1'/>") + link("neck") +
      joint("neck_pitch", "continuous", "neck", "head",
            "<origin xyz='0 0 0.1'/><axis xyz='0 1 0'/>") +
      link("head", inertial("0 0 0.2", "0 0 0", 1.0, moments(0, 0, 0))));
  expectUrdfError(xml, {"joint 'neck_yaw'", "rank", "massless: armature"});
  UrdfOptions options;
  ASSERT_EQ(parseMasslessPolicy("armature=1e-4", options), "");
  const Model model = loadUrdfString(xml, options, "head.urdf");
  EXPECT_EQ(model.nalgebraic, 0);
  // the warnings: the root welded to the world, then the neck's armature
  ASSERT_EQ(model.load_warnings.size(), 2u);
  EXPECT_NE(model.load_warnings[1].find("joint 'neck_yaw'"), std::string::npos)
      << model.load_warnings[1];
  EXPECT_EQ(model.armature[0], 1e-4);
  EXPECT_EQ(model.armature[1], 0.0);
}

TEST(UrdfLoader, MasslessPolicyTextIsChecked) {
  UrdfOptions options;
  EXPECT_EQ(parseMasslessPolicy("weld", options), "");
  EXPECT_EQ(options.massless, MasslessPolicy::kWeld);
  EXPECT_EQ(parseMasslessPolicy("refuse", options), "");
  EXPECT_EQ(options.massless, MasslessPolicy::kRefuse);
  for (const char* bad : {"", "armature", "armature=", "armature=0", "armature=-1",
                          "armature=1e7", "armature=nan", "armature=1x", "Weld"}) {
    const std::string why = parseMasslessPolicy(bad, options);
    EXPECT_NE(why.find("refuse, weld, or armature=<value>"), std::string::npos) << bad;
    EXPECT_EQ(options.massless, MasslessPolicy::kRefuse) << bad;
  }
  EXPECT_NE(parseInertiaPolicy("balanced", options).find("as_given, balance or strict"),
            std::string::npos);
}

TEST(UrdfLoaderErrors, UnknownParent) {
  expectUrdfError(robot(link("a") + link("b") + joint("j", "fixed", "zz", "b")),
                  {"joint 'j'", "parent link 'zz' does not exist"});
  expectUrdfError(robot(link("a") + link("b") + joint("j", "fixed", "a", "zz")),
                  {"joint 'j'", "child link 'zz' does not exist"});
  expectUrdfError(robot(link("a") + link("b") + joint("j", "fixed", "a", "a")),
                  {"joint 'j'", "own parent"});
  expectUrdfError(robot(link("a") + link("b") +
                        "<joint name='j' type='fixed'><parent link='a'/></joint>"),
                  {"joint 'j'", "no <child link=...>"});
}

TEST(UrdfLoaderErrors, Cycles) {
  // b has two parents
  expectUrdfError(robot(link("a") + link("b") + link("c") + joint("j1", "fixed", "a", "b") +
                        joint("j2", "fixed", "b", "c") + joint("j3", "fixed", "c", "b")),
                  {"link 'b'", "two parent joints", "'j1'", "'j3'"});
  // a loop detached from the root
  expectUrdfError(robot(link("a") + link("b") + link("c") + joint("j2", "fixed", "b", "c") +
                        joint("j3", "fixed", "c", "b")),
                  {"link '", "kinematic loop"});
  // everything in the loop: no root at all
  expectUrdfError(robot(link("a") + link("b") + joint("j1", "fixed", "a", "b") +
                        joint("j2", "fixed", "b", "a")),
                  {"root"});
}

TEST(UrdfLoaderErrors, DuplicateNames) {
  expectUrdfError(robot(link("a") + link("a")), {"link 'a'", "duplicate name"});
  expectUrdfError(robot(link("a") + link("b") + link("c") + joint("j", "fixed", "a", "b") +
                        joint("j", "fixed", "a", "c")),
                  {"joint 'j'", "duplicate name"});
  // the added root joint must not clash with a joint of the file
  expectUrdfError(
      robot(link("a") + joint("root_joint", "continuous", "a", "b") + link("b", kGoodInertial)),
      {"duplicate joint name 'root_joint'"}, true);
}

TEST(UrdfLoaderErrors, NanAndInf) {
  expectUrdfError(robot(link("a", "<inertial><mass value='nan'/><inertia " + moments(1, 1, 1) +
                                      "/></inertial>")),
                  {"link 'a'", "mass"});
  expectUrdfError(robot(link("a",
                             "<inertial><mass value='1'/><inertia ixx='inf' iyy='1' "
                             "izz='1' ixy='0' ixz='0' iyz='0'/></inertial>")),
                  {"link 'a'"});
  expectUrdfError(
      robot(link("a") + link("b") + joint("j", "continuous", "a", "b", "<origin xyz='nan 0 0'/>")),
      {"joint 'j'"});
  expectUrdfError(
      robot(link("a") + link("b") + joint("j", "continuous", "a", "b", "<axis xyz='0 inf 0'/>")),
      {"joint 'j'"});
  expectUrdfError(robot(link("a") + link("b") +
                        joint("j", "continuous", "a", "b", "<dynamics damping='NaN'/>")),
                  {"joint 'j'"});
}

TEST(UrdfLoaderErrors, UnsupportedJointType) {
  expectUrdfError(robot(link("a") + link("b") + joint("j", "ball", "a", "b")),
                  {"joint 'j'", "unsupported joint type 'ball'", "floating"});
}

TEST(UrdfLoaderErrors, BadJoints) {
  expectUrdfError(robot(link("a") + link("b", kGoodInertial) +
                        joint("j", "continuous", "a", "b", "<axis xyz='0 0 0'/>")),
                  {"joint 'j'", "non-zero"});
  expectUrdfError(robot(link("a") + link("b") + joint("j", "revolute", "a", "b")),
                  {"joint 'j'", "limits"});
  expectUrdfError(robot(link("a") + link("b", kGoodInertial) +
                        joint("j", "revolute", "a", "b",
                              "<limit lower='1' upper='-1' effort='1' velocity='1'/>")),
                  {"joint 'j'", "lower limit"});
  // a floating joint below a moving link
  expectUrdfError(robot(link("a") + link("b", kGoodInertial) + link("c", kGoodInertial) +
                        joint("j", "continuous", "a", "b") + joint("f", "floating", "b", "c")),
                  {"joint 'f'", "world"});
}

TEST(UrdfLoaderErrors, MisusedWorldLink) {
  expectUrdfError(robot(link("world", kGoodInertial) + joint("j", "continuous", "world", "b") +
                        link("b", kGoodInertial)),
                  {"link 'world'", "ground"});
  expectUrdfError(
      robot(link("world") + joint("j", "continuous", "world", "b") + link("b", kGoodInertial)),
      {"link 'world'", "floating_base"}, true);
}

TEST(UrdfLoaderErrors, MissingFile) {
  try {
    loadUrdf("/nonexistent/dir/robot.urdf");
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/dir/robot.urdf'"),
              std::string::npos)
        << e.what();
  }
}

// --- untrusted text: what once crashed or leaked, line numbers, limits ---

// iiwa14.urdf with its first joint origin replaced by `xyz`.
std::string iiwaWithFirstJointOrigin(const std::string& xyz) {
  std::string text = io_detail::readTextFile(HILSIM_MODEL_DIR "/iiwa14.urdf",
                                             ModelLimits{}.max_text_bytes);
  const std::size_t joint = text.find("<joint");
  const std::size_t origin = text.find("xyz=\"", joint);
  const std::size_t close = text.find('"', origin + 5);
  return text.substr(0, origin + 5) + xyz + text.substr(close);
}

TEST(UrdfLoaderUntrusted, PrintfDirectivesInAnAttributeAreQuotedNotInterpreted) {
  // urdfdom 3.0 passed such text to printf as the format and aborted on "%n"
  testing::internal::CaptureStderr();
  const std::string message = expectUrdfError(iiwaWithFirstJointOrigin("0 0 0%1$s%2$n%p"),
                                              {"joint '", "'0%1$s%2$n%p' is not a number"});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  // the error names the joint's <origin> line
  EXPECT_EQ(message.find("bad.urdf:"), 0u) << message;
  EXPECT_NE(message.find("<origin xyz="), std::string::npos) << message;
}

TEST(UrdfLoaderUntrusted, TwoParentsAndAnOrphanAreRefusedWithoutOutput) {
  // one link the child of two joints, another with no parent: urdfdom leaked every such load
  const std::string xml =
      robot(link("a", kGoodInertial) + link("b", kGoodInertial) + link("orphan", kGoodInertial) +
            joint("j1", "continuous", "a", "b") + joint("j2", "continuous", "a", "b"));
  testing::internal::CaptureStderr();
  for (int k = 0; k < 2000; ++k) {
    try {
      loadUrdfString(xml);
      FAIL() << "loaded";
    } catch (const ModelError& e) {
      ASSERT_NE(std::string(e.what()).find("two parent joints"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(UrdfLoaderUntrusted, ErrorsNameTheLineOfTheElement) {
  const std::string xml =
      "<robot name='r'>\n"
      "  <link name='a'/>\n"
      "  <link name='b'/>\n"
      "  <joint name='j' type='continuous'>\n"
      "    <parent link='a'/><child link='b'/>\n"
      "    <axis xyz='0 0 1 0'/>\n"
      "  </joint>\n"
      "</robot>\n";
  expectUrdfError(xml, {"bad.urdf:6: joint 'j': <axis xyz=\"0 0 1 0\">: expected 3 numbers"});
  // an unclosed element: tinyxml2 names the line where it starts
  expectUrdfError("<robot name='r'>\n<link name='a'>\n</robot>",
                  {"bad.urdf:2: malformed XML: the element starting here is closed by another"});
  expectUrdfError("<robot name='r'>\n<link name='a'/>\n<link name='a'/>\n</robot>",
                  {"bad.urdf:3: link 'a': duplicate name (first defined at line 2)"});
  expectUrdfError("<robot name='r'>\n<link name='a'/>\n<link name='b'/>\n</robot>",
                  {"bad.urdf:3: link 'b': a second root link", "'a'"});
}

TEST(UrdfLoaderUntrusted, NamesWithControlCharactersGiveOneLineMessages) {
  const std::string name = "bad\nname\x01" + std::string(300, 'x');
  const std::string message =
      expectUrdfError(robot(link("a") + joint(name, "ball", "a", "b") + link("b")),
                      {"joint 'bad\\x0aname\\x01xxx", "...'", "unsupported joint type"});
  EXPECT_LT(message.size(), 300u) << message;
}

TEST(UrdfLoaderUntrusted, NumbersAreStrict) {
  const auto origin = [](const std::string& xyz) {
    return robot(link("a") + joint("j", "continuous", "a", "b", "<origin xyz='" + xyz + "'/>") +
                 link("b", kGoodInertial));
  };
  // accepted: signs, exponents, any whitespace between and around the numbers
  EXPECT_EQ(loadUrdfString(origin(" +1 -2.5e-1\t\n3E2 ")).joint_placement[1].translation,
            Vector3(1, -0.25, 300));
  expectUrdfError(origin("1 2"), {"expected 3 numbers, got 2"});
  expectUrdfError(origin("1 2 3 4"), {"expected 3 numbers, got more"});
  expectUrdfError(origin("1,5 2 3"), {"'1,5' is not a number"});
  expectUrdfError(origin("0x10 2 3"), {"'0x10' is not a number"});
  expectUrdfError(origin("1 2 3abc"), {"'3abc' is not a number"});
  expectUrdfError(origin("1 2 1e999"), {"'1e999' is out of range"});
  expectUrdfError(origin("1 2 -inf"), {"non-finite"});
  expectUrdfError(origin("1 2 ++3"), {"'++3' is not a number"});
}

TEST(UrdfLoaderUntrusted, LimitsAreCheckedBeforeTheWork) {
  std::string links;
  for (char name = 'a'; name <= 'k'; ++name) links += link(std::string(1, name));
  ModelLimits limits;
  limits.max_bodies = 10;
  expectUrdfError(robot(links), {"11 links, more than the limit of 10"}, false, limits);
  limits = ModelLimits{};
  limits.max_dofs = 7;
  expectUrdfError(rotatedRobot(), {"9 degrees of freedom, more than the limit of 7"}, true, limits);
  limits = ModelLimits{};
  limits.max_text_bytes = 100;
  expectUrdfError(robot(links), {"larger than the limit of 100 bytes"}, false, limits);
  // tinyxml2 stops at 100 nested elements: no recursion without bound
  std::string deep = "<robot name='r'>";
  for (int k = 0; k < 10000; ++k) deep += "<a>";
  expectUrdfError(deep, {"malformed XML", "nested more than 100 deep"});
}

TEST(UrdfLoaderUntrusted, WorkStaysLinearInHostileShapes) {
  // one element with very many attributes: tinyxml2's duplicate check is quadratic in them
  std::string many = "<robot name='r'\n";
  for (int k = 0; k < 20000; ++k) many += " a" + std::to_string(k) + "=''";
  many += "><link name='a'/></robot>";
  expectUrdfError(many, {"bad.urdf:1: an element with more than 64 attributes"});
  // a joint name of quotes with a bad limit: refused where the limit is read, with its line
  const std::string quotes(100000, '\'');
  expectUrdfError(robot(link("a") + link("b") + "<joint name=\"" + quotes +
                        "\" type='revolute'><parent link='a'/><child link='b'/>"
                        "<limit lower='0' upper='1' effort='-1' velocity='1'/></joint>"),
                  {"<limit> effort and velocity must be >= 0"});
  expectUrdfError(robot(link("a") + link("b", kGoodInertial) +
                        joint("j", "prismatic", "a", "b",
                              "<limit lower='1' upper='-1' effort='1' velocity='1'/>")),
                  {"joint 'j': <limit> lower limit must not exceed upper limit"});
  expectUrdfError(robot(link("a") + link("b", kGoodInertial) +
                        joint("j", "continuous", "a", "b", "<dynamics damping='-0.1'/>")),
                  {"joint 'j': <dynamics> damping must be >= 0"});
}

TEST(UrdfLoaderUntrusted, NamesMustBeValidUtf8AndMessagesStaySo) {
  // tinyxml2 turns the character reference of a surrogate into bytes that are not UTF-8: such a
  // name would reach the wire contract (proto3 strings are UTF-8) and the logs
  const std::string message = expectUrdfError(
      robot(link("a") + link("b&#xD800;", kGoodInertial) +
            joint("j", "continuous", "a", "b&#xD800;")),
      {"name is not valid UTF-8"});
  EXPECT_TRUE(isValidUtf8(message)) << message;
  const std::string robot_name = expectUrdfError(
      "<robot name='r&#xD800;'>" + link("a") + "</robot>", {"model name: name is not valid UTF-8"});
  EXPECT_TRUE(isValidUtf8(robot_name)) << robot_name;
  // valid UTF-8 names load and keep their bytes
  const Model m = loadUrdfString(robot(link("Basis") + link("Glied_\xC3\xBC", kGoodInertial) +
                                       joint("Gelenk_\xE2\x82\xAC", "continuous", "Basis",
                                             "Glied_\xC3\xBC")));
  EXPECT_EQ(m.body_names[1], "Glied_\xC3\xBC");
  EXPECT_EQ(m.joint_names[1], "Gelenk_\xE2\x82\xAC");
}

TEST(UrdfLoaderUntrusted, NumbersBelowTheSmallestDoubleReadAsZero) {
  const Model m = loadUrdfString(robot(
      link("a") + joint("j", "continuous", "a", "b", "<origin xyz='1e-400 -1e-400 2'/>") +
      link("b", kGoodInertial)));
  EXPECT_EQ(m.joint_placement[1].translation, Vector3(0, 0, 2));
}

TEST(UrdfLoaderUntrusted, VisualsCollisionsAndExtensionsAreIgnored) {
  // Geometry, materials, transmissions and simulator extensions carry nothing the dynamics
  // uses: malformed ones do not stop a model from loading.
  const std::string xml = robot(
      "<material name='m'><color rgba='not numbers'/></material>" +
      link("a", "<visual><geometry><mesh filename='%n.stl'/></geometry></visual>") +
      joint("j", "continuous", "a", "b", "<mimic joint='nowhere'/><calibration rising='x'/>") +
      link("b", kGoodInertial + "<collision><geometry><box size='1'/></geometry></collision>") +
      "<transmission name='t'><joint name='j'/></transmission><gazebo reference='b'/>");
  EXPECT_EQ(loadUrdfString(xml).nv, 1);
}

// Any truncation or byte corruption of a real URDF loads or throws ModelError: never a crash.
TEST(UrdfLoaderErrors, CorruptedFilesNeverCrash) {
  const std::string good = io_detail::readTextFile(HILSIM_MODEL_DIR "/iiwa14.urdf", ModelLimits{}.max_text_bytes);
  for (std::size_t cut = 0; cut < good.size(); cut += 97) {
    try {
      loadUrdfString(good.substr(0, cut));
    } catch (const ModelError&) {
    }
  }
  std::mt19937 rng(3);
  const std::string junk = "<>\"'/= -.0123456789naif\x01\xff";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = good;
    for (int k = 0; k < 4; ++k) {
      const std::size_t at = std::uniform_int_distribution<std::size_t>(0, text.size() - 1)(rng);
      text[at] = junk[std::uniform_int_distribution<std::size_t>(0, junk.size() - 1)(rng)];
    }
    try {
      const Model m = loadUrdfString(text);
      EXPECT_LE(m.nv, 7);
    } catch (const ModelError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace hilsim
