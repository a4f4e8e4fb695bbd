// MJCF loading (engine/io/mjcf_loader.cc): hilsim's model of an MJCF text moves as MuJoCo's
// compiled model of the same text. Trees: q̈ of every formulation that accepts the model against
// MuJoCo's smooth qacc (mj_forward) at random states; loops: against the hard-constraint
// acceleration formed from MuJoCo's own M, equality Jacobian (and its J̇v) and smooth qacc. Body and site frames
// against MuJoCo's forward kinematics. Then what is refused, and what is named in load_warnings.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <Eigen/Geometry>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/builder/closure_builder.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "tests/fuzz/model_limits.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/mujoco_model.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::CoordinateMap;
using test::kMujocoCompiledRelTol;
using test::MujocoModel;
using test::relativeDifference;

std::string mujoco(const std::string& body, const std::string& extra = "") {
  return "<mujoco model='m'><compiler angle='radian'/><option gravity='0.3 -0.2 -9.81'/>"
         "<worldbody>" + body + "</worldbody>" + extra + "</mujoco>";
}

// --- the models ---

// Anchors off the body origin, a rotated body, an inertia off its body frame, a joint ref.
const std::string kPendulum = mujoco(
    "<body name='arm' pos='0.1 0 1' quat='0.9 0.1 0.3 0.2'>"
    "<joint name='hinge' type='hinge' axis='0.2 1 0.1' pos='0 0 0.25' ref='0.3' damping='0.4'/>"
    "<geom type='capsule' fromto='0 0 0 0 0 -0.5' size='0.05' mass='1.5'/></body>");

// body 'lower' has two hinges (about orthogonal axes, anchored apart): a chain of two hilsim
// bodies, the first massless.
const std::string kDoublePendulum = mujoco(
    "<body name='upper' pos='0 0 1'><joint name='shoulder' axis='0 1 0'/>"
    "<geom type='capsule' fromto='0 0 0 0.5 0 0' size='0.04' mass='1'/>"
    "<body name='lower' pos='0.5 0 0' euler='0.2 0 0.1'>"
    "<joint name='elbow_y' axis='0 1 0' pos='0 0 0.02'/>"
    "<joint name='elbow_z' axis='0 0.3 1' pos='0.01 0 0' armature='0.01'/>"
    "<geom type='box' pos='0.25 0.02 0' size='0.25 0.03 0.02' mass='0.7'/>"
    "<site name='tip' pos='0.5 0 0.01' euler='0.3 0 0'/></body></body>");

// A free body with a hinged and a welded child.
const std::string kFreeBody = mujoco(
    "<body name='base' pos='0.3 -0.2 0.8' quat='0.8 0.2 -0.1 0.3'><freejoint name='root'/>"
    "<geom type='box' size='0.2 0.1 0.05' mass='3' pos='0.01 0.02 0'/>"
    "<body name='flap' pos='0.2 0 0'><joint name='flap_hinge' axis='0 1 0' pos='0.02 0 0'"
    " damping='0.1'/><geom type='box' pos='0.1 0 0' size='0.1 0.08 0.01' mass='0.4'/>"
    "<body name='weight' pos='0.2 0 0' euler='0 0.5 0'>"
    "<geom type='sphere' size='0.03' mass='0.2' pos='0 0.01 0'/></body></body></body>");

const std::string kBall = mujoco(
    "<body name='bob' pos='0 0 1' euler='0.1 0.2 0.3'>"
    "<joint name='socket' type='ball' pos='0 0 0.3' damping='0.05' armature='0.002'/>"
    "<geom type='ellipsoid' size='0.1 0.05 0.2' mass='2'/></body>");

const std::string kSlideSpring = mujoco(
    "<body name='cart' pos='0 0 0.2'>"
    "<joint name='rail' type='slide' axis='1 0.2 0' ref='0.1' stiffness='30' springref='0.4'"
    " damping='2' armature='0.3'/><geom type='box' size='0.2 0.1 0.1' mass='4'/>"
    "<body name='pole' pos='0 0 0.1'><joint name='pivot' axis='0 1 0' stiffness='5'"
    " springref='-0.2' damping='0.05'/>"
    "<geom type='capsule' fromto='0 0 0 0 0 0.6' size='0.02' mass='0.5'/></body></body>");

// A planar four-bar: a crank and a rocker on the ground, a coupler hinged on the crank and
// connected to the rocker's tip.
const std::string kFourBar = mujoco(
    "<body name='crank' pos='0 0 0'><joint name='crank_hinge' axis='0 1 0' damping='0.1'/>"
    "<geom type='capsule' fromto='0 0 0 0 0 0.3' size='0.02' mass='0.3'/>"
    "<body name='coupler' pos='0 0 0.3'><joint name='coupler_hinge' axis='0 1 0'/>"
    "<geom type='capsule' fromto='0 0 0 0.6 0 0.1' size='0.02' mass='0.6'/></body></body>"
    "<body name='rocker' pos='0.6 0 0'><joint name='rocker_hinge' axis='0 1 0'/>"
    "<geom type='capsule' fromto='0 0 0 0 0 0.4' size='0.02' mass='0.4'/></body>",
    "<equality><connect name='tip' body1='coupler' body2='rocker' anchor='0.6 0 0.1'/>"
    "</equality>");

// Two pendulums on ball joints welded together where they are in the file (MuJoCo's relpose at
// the model's pose), at an anchor off both frames and with the bodies turned against each other.
const std::string kWeldLoop = mujoco(
    "<body name='left' pos='-0.3 0 1'><joint name='left_ball' type='ball'/>"
    "<geom type='capsule' fromto='0 0 0 0.3 0 -0.4' size='0.03' mass='0.8'/>"
    "<body name='left_hand' pos='0.3 0 -0.4'><joint name='left_wrist' axis='0 1 0'/>"
    "<geom type='sphere' size='0.04' mass='0.1' pos='0.02 0 0'/></body></body>"
    "<body name='right' pos='0.3 0 1' euler='0.3 -0.2 0.5'><joint name='right_ball' type='ball'/>"
    "<geom type='capsule' fromto='0 0 0 -0.3 0 -0.4' size='0.03' mass='0.7'/></body>",
    "<equality><weld name='grip' body1='left_hand' body2='right' anchor='-0.25 0.02 -0.35'/>"
    "</equality>");

const std::string kContacts = mujoco(
    "<geom name='floor' type='plane' size='5 5 0.1' pos='0 0 -0.05' friction='0.7 0.005 0.0001'/>"
    "<geom name='wall' type='box' pos='2 0 0' size='0.1 1 1'/>"
    "<body name='ball' pos='0 0 0.5'><freejoint/>"
    "<geom name='foot' type='sphere' size='0.1' pos='0 0 -0.1' mass='1'/>"
    "<geom name='shell' type='box' size='0.1 0.1 0.1' mass='0.5'/>"
    "<geom name='look' type='sphere' size='0.2' contype='0' conaffinity='0' mass='0'/></body>");

// --- hilsim against MuJoCo ---

struct Pair {
  Model model;
  std::unique_ptr<MujocoModel> mujoco;
  CoordinateMap map;

  explicit Pair(const std::string& xml)
      : model(loadMjcfString(xml, "test.xml")),
        mujoco(std::make_unique<MujocoModel>(MujocoModel::Mjcf{xml, false})),
        map(test::mapCoordinates(model, mujoco->model())) {}

  // hilsim's (q, v, τ) into MuJoCo's state: a hinge or slide coordinate is qpos − qpos0
  void setMujocoState(const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                      const Eigen::VectorXd& tau) const {
    const mjModel* m = mujoco->model();
    Eigen::VectorXd q_mujoco = q;
    for (int i = 1; i < model.nbodies; ++i) {
      const JointType type = model.joints[i].type;
      if (type == JointType::kRevolute || type == JointType::kPrismatic)
        q_mujoco(model.idx_q[i]) += m->qpos0[map.q[model.idx_q[i]]];
    }
    map.setMujocoState(m, mujoco->data(), q_mujoco, v, tau);
    mj_forward(m, mujoco->data());
  }
};

// Every moving body's and named site's world pose against MuJoCo's at the state of `pair`.
void expectSameFrames(const Pair& pair, const Eigen::VectorXd& q) {
  const mjModel* m = pair.mujoco->model();
  const mjData* d = pair.mujoco->data();
  Data data(pair.model);
  forwardKinematics(pair.model, data, q);
  const auto world = [&](const std::string& name) {
    const int f = pair.model.frameIndex(name);
    EXPECT_GE(f, 0) << name;
    const Frame& frame = pair.model.frames[std::max(f, 0)];
    return data.X_WB[frame.body] * frame.placement;
  };
  for (int b = 1; b < m->nbody; ++b) {
    const Transform x = world(mj_id2name(m, mjOBJ_BODY, b));
    EXPECT_LT((x.translation - Eigen::Map<const Vector3>(d->xpos + 3 * b)).norm(), 1e-12)
        << mj_id2name(m, mjOBJ_BODY, b);
    const Matrix3 r = Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(d->xmat + 9 * b);
    EXPECT_LT((x.rotation - r).norm(), 1e-12) << mj_id2name(m, mjOBJ_BODY, b);
  }
  for (int s = 0; s < m->nsite; ++s) {
    const Transform x = world(mj_id2name(m, mjOBJ_SITE, s));
    EXPECT_LT((x.translation - Eigen::Map<const Vector3>(d->site_xpos + 3 * s)).norm(), 1e-12);
  }
}

// A tree: q̈ of every formulation that accepts it against MuJoCo's smooth qacc, at random states.
void expectTreeMatchesMujoco(const std::string& xml, unsigned seed) {
  Pair pair(xml);
  pair.mujoco->model()->opt.disableflags |= test::kMujocoSmoothDynamicsOnly;
  std::mt19937 rng(seed);
  const std::vector<Formulation> runnable = test::formulationsFor(pair.model);
  ASSERT_FALSE(runnable.empty());
  for (int trial = 0; trial < 8; ++trial) {
    const Eigen::VectorXd q = test::randomConfiguration(pair.model, rng);
    const Eigen::VectorXd v = test::randomVector(pair.model.nv, rng, 2.0);
    const Eigen::VectorXd tau = test::randomVector(pair.model.nv, rng, 3.0);
    pair.setMujocoState(q, v, tau);
    expectSameFrames(pair, q);
    const Eigen::VectorXd expected = pair.map.dofVector(pair.mujoco->data()->qacc);
    for (Formulation f : runnable) {
      Data data = test::dataFor(pair.model, f);
      const Eigen::VectorXd qdd = forwardDynamics(f, pair.model, data, q, v, tau);
      EXPECT_LT(relativeDifference(qdd, expected), kMujocoCompiledRelTol)
          << formulationName(f) << ", trial " << trial << "\nhilsim " << qdd.transpose()
          << "\nmujoco " << expected.transpose();
    }
  }
}

// MuJoCo's equality rows J (its dof order) at the state of its last mj_forward.
Eigen::MatrixXd mujocoEqualityRows(const mjModel* m, const mjData* d) {
  std::vector<int> rows;
  for (int r = 0; r < d->nefc; ++r)
    if (d->efc_type[r] == mjCNSTR_EQUALITY) rows.push_back(r);
  Eigen::MatrixXd j(static_cast<int>(rows.size()), m->nv);
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (int c = 0; c < m->nv; ++c) j(static_cast<int>(k), c) = d->efc_J[rows[k] * m->nv + c];
  return j;
}

// J̇v at MuJoCo's state: d/dt (J(q(t)) v) along q(t) = q ⊕ t v (mj_integratePos, so quaternions
// move as MuJoCo's qvel says), by central differences at steps h and h/2 combined by Richardson
// extrapolation: error O(h⁴), about 1e-12 of the rows' scale at h = 1e-3, and rounding about
// ε/h ≈ 1e-13. Leaves MuJoCo at the state it found.
Eigen::VectorXd mujocoJdotV(const mjModel* m, mjData* d) {
  const std::vector<mjtNum> qpos(d->qpos, d->qpos + m->nq);
  const Eigen::Map<const Eigen::VectorXd> v(d->qvel, m->nv);
  const auto jv = [&](double t) {
    std::copy(qpos.begin(), qpos.end(), d->qpos);
    mj_integratePos(m, d->qpos, d->qvel, t);
    mj_forward(m, d);
    return Eigen::VectorXd(mujocoEqualityRows(m, d) * v);
  };
  const auto central = [&](double h) { return Eigen::VectorXd((jv(h) - jv(-h)) / (2 * h)); };
  const Eigen::VectorXd jdot_v = (4 * central(5e-4) - central(1e-3)) / 3;
  std::copy(qpos.begin(), qpos.end(), d->qpos);
  mj_forward(m, d);
  return jdot_v;
}

// The hard-constraint acceleration from MuJoCo's quantities: with a₀ its smooth qacc, M its mass
// matrix and J its equality rows, q̈ = a₀ − M⁻¹Jᵀλ with (J M⁻¹ Jᵀ) λ = J a₀ + J̇v. A
// rank-deficient J (a planar loop's out-of-plane row) has many λ but one q̈: the minimum-norm λ
// of a complete orthogonal decomposition is one of them.
Eigen::VectorXd mujocoHardConstraintAcceleration(const Pair& pair) {
  const mjModel* m = pair.mujoco->model();
  mjData* d = pair.mujoco->data();
  const Eigen::VectorXd jdot_v = mujocoJdotV(m, d);
  const Eigen::MatrixXd j = mujocoEqualityRows(m, d);
  Eigen::MatrixXd minv_jt = j.transpose();  // column-major: the rows of J M⁻¹ one by one
  for (int k = 0; k < minv_jt.cols(); ++k)
    mj_solveM(m, d, minv_jt.col(k).data(), minv_jt.col(k).data(), 1);
  const Eigen::Map<const Eigen::VectorXd> a0(d->qacc_smooth, m->nv);
  const Eigen::VectorXd lambda =
      (j * minv_jt).completeOrthogonalDecomposition().solve(j * a0 + jdot_v);
  const Eigen::VectorXd qacc = a0 - minv_jt * lambda;
  return pair.map.dofVector(qacc.data());
}

// A loop: at random configurations hilsim assembled, at rest and moving (random velocities
// projected onto the loop's J v = 0), q̈ of every formulation with the constraint stage against
// the hard-constraint acceleration of MuJoCo's quantities; and MuJoCo's own equality residual
// (efc_pos) at hilsim's assembled configuration is zero, so the two read the loop's frames alike.
void expectLoopMatchesMujoco(const std::string& xml, unsigned seed) {
  Pair pair(xml);
  pair.mujoco->model()->opt.jacobian = mjJAC_DENSE;
  // J q̈ = −J̇v alone: no Baumgarte terms of the assembly's remaining error
  ConstraintStabilisation exact;
  exact.baumgarte_alpha = exact.baumgarte_beta = 0.0;
  setStabilisation(pair.model, exact);
  auto shared = std::make_shared<const Model>(pair.model);
  std::mt19937 rng(seed);
  const std::vector<Formulation> runnable = test::formulationsFor(pair.model);
  ASSERT_FALSE(runnable.empty());
  const int nv = pair.model.nv;
  for (int trial = 0; trial < 8; ++trial) {
    // a random start near the model's pose, assembled by hilsim
    Simulator simulator(shared, Formulation::kAba, Integrator::kRk4, 1e-3);
    Eigen::VectorXd q0 = pair.model.initialConfiguration();
    Eigen::VectorXd dq = test::randomVector(nv, rng, 0.2);
    Eigen::VectorXd q(pair.model.nq);
    for (int i = 1; i < pair.model.nbodies; ++i)
      jointIntegrate(pair.model.joints[i], q0.data() + pair.model.idx_q[i],
                     dq.data() + pair.model.idx_v[i], 1.0, q.data() + pair.model.idx_q[i]);
    simulator.setState(q, Eigen::VectorXd::Zero(nv));
    ASSERT_LT(simulator.assemblyError(), 1e-12);
    q = simulator.q();
    const Eigen::VectorXd tau = test::randomVector(nv, rng, 3.0);
    pair.setMujocoState(q, Eigen::VectorXd::Zero(nv), tau);
    expectSameFrames(pair, q);
    const mjData* d = pair.mujoco->data();
    for (int r = 0; r < d->nefc; ++r) {
      if (d->efc_type[r] != mjCNSTR_EQUALITY) continue;
      EXPECT_LT(std::abs(d->efc_pos[r]), 1e-10) << "row " << r;
    }
    // the first trials at rest, the others moving along the loop
    Eigen::VectorXd v = Eigen::VectorXd::Zero(nv);
    if (trial >= 2) {
      const Eigen::MatrixXd j_mujoco = mujocoEqualityRows(pair.mujoco->model(), d);
      Eigen::MatrixXd j(j_mujoco.rows(), nv);
      for (int k = 0; k < nv; ++k) j.col(k) = j_mujoco.col(pair.map.v[k]);
      v = test::randomVector(nv, rng, 2.0);
      v -= j.completeOrthogonalDecomposition().solve(Eigen::VectorXd(j * v));
      pair.setMujocoState(q, v, tau);
    }
    const Eigen::VectorXd expected = mujocoHardConstraintAcceleration(pair);
    for (Formulation f : runnable) {
      Data data = test::dataFor(pair.model, f);
      ConstraintRowStage stage(pair.model, formulationInfo(f));
      Eigen::VectorXd qdd = forwardDynamics(f, pair.model, data, q, v, tau);
      stage.accelerations(pair.model, data, q, v, tau, qdd);
      EXPECT_LT(relativeDifference(qdd, expected), kMujocoCompiledRelTol)
          << formulationName(f) << ", trial " << trial << "\nhilsim " << qdd.transpose()
          << "\nmujoco " << expected.transpose();
    }
  }
}

TEST(MjcfLoader, PendulumMovesAsMujoco) { expectTreeMatchesMujoco(kPendulum, 1); }
TEST(MjcfLoader, BodyWithTwoHingesMovesAsMujoco) { expectTreeMatchesMujoco(kDoublePendulum, 2); }
TEST(MjcfLoader, FreeBodyMovesAsMujoco) { expectTreeMatchesMujoco(kFreeBody, 3); }
TEST(MjcfLoader, BallJointMovesAsMujoco) { expectTreeMatchesMujoco(kBall, 4); }
TEST(MjcfLoader, SlideAndSpringsMoveAsMujoco) { expectTreeMatchesMujoco(kSlideSpring, 5); }
TEST(MjcfLoader, FourBarWithConnectMovesAsMujoco) { expectLoopMatchesMujoco(kFourBar, 6); }
TEST(MjcfLoader, WeldLoopMovesAsMujoco) { expectLoopMatchesMujoco(kWeldLoop, 7); }

// --- what the conversion makes of the elements ---

TEST(MjcfLoader, ABodyWithTwoJointsIsAChainWhoseLastBodyCarriesTheInertia) {
  const Model model = loadMjcfString(kDoublePendulum);
  // upper; lower/elbow_y (massless, at elbow_y's anchor); lower/elbow_z (elbow_z's anchor, which
  // is off the body origin, so 'lower' is welded to it and brings the inertia)
  ASSERT_EQ(model.nbodies, 4);
  EXPECT_EQ(model.body_names[2], "lower/elbow_y");
  EXPECT_EQ(model.joint_names[2], "elbow_y");
  EXPECT_EQ(model.inertias[2].mass, 0.0);
  EXPECT_NEAR(model.inertias[3].mass, 0.7, 1e-15);
  EXPECT_EQ(model.frames[model.frameIndex("lower")].body, 3);
  EXPECT_EQ(model.nalgebraic, 0);  // full rank: the last body's inertia moves both hinges
  EXPECT_NEAR(model.armature[2], 0.01, 0.0);
  // the capsule and the box are not contacts in hilsim: the one warning
  ASSERT_EQ(model.load_warnings.size(), 1u);
  EXPECT_NE(model.load_warnings[0].find("2 colliding geoms not contacts"), std::string::npos)
      << model.load_warnings[0];
}

std::string allWarnings(const Model& model) {
  std::string all;
  for (const std::string& w : model.load_warnings) all += w + "\n";
  return all;
}

TEST(MjcfLoader, RefShiftsTheCoordinateAndIsNamedInTheWarnings) {
  const Model model = loadMjcfString(kSlideSpring, "cart.xml");
  const int rail = model.idx_v[model.jointIndex("rail")];
  EXPECT_NEAR(model.stiffness[rail], 30.0, 0.0);
  EXPECT_NEAR(model.spring_reference[rail], 0.3, 1e-15);  // springref − ref
  EXPECT_NEAR(model.damping[rail], 2.0, 0.0);
  EXPECT_NEAR(model.armature[rail], 0.3, 0.0);
  const std::string all = allWarnings(model);
  EXPECT_NE(all.find("cart.xml: slide joint 'rail': ref 0.1: hilsim's coordinate is MuJoCo's "
                     "qpos − 0.1"), std::string::npos) << all;
}

TEST(MjcfLoader, LimitsFrictionAndMotorRanges) {
  const Model model = loadMjcfString(mujoco(
      "<body name='a'><joint name='j' axis='0 0 1' limited='true' range='-1 2' ref='0.5'"
      " frictionloss='0.3'/><geom size='0.1' mass='1'/>"
      "<body name='b' pos='0.3 0 0'><joint name='k' type='slide' limited='true' range='-0.1 0.2'/>"
      "<geom size='0.1' mass='1'/></body></body>",
      "<actuator><motor name='m' joint='j' gear='2' ctrllimited='true' ctrlrange='-3 3'"
      " forcelimited='true' forcerange='-5 5'/><position name='servo' joint='k' kp='10'/>"
      "</actuator>"));
  const int j = model.idx_v[model.jointIndex("j")], k = model.idx_v[model.jointIndex("k")];
  EXPECT_NEAR(model.lower_limit[j], -1.5, 1e-15);
  EXPECT_NEAR(model.upper_limit[j], 1.5, 1e-15);
  EXPECT_NEAR(model.friction[j], 0.3, 0.0);
  EXPECT_NEAR(model.effort_limit[j], 6.0, 1e-15);  // gear 2 × min(5, 1 × 3)
  EXPECT_NEAR(model.lower_limit[k], -0.1, 0.0);
  EXPECT_TRUE(std::isinf(model.effort_limit[k]));
  const std::string all = allWarnings(model);
  EXPECT_NE(all.find("motors 'm' on 'j'"), std::string::npos) << all;
  EXPECT_NE(all.find("actuators 'servo' are not converted"), std::string::npos) << all;
}

TEST(MjcfLoader, SpheresOnBodiesTouchThePlaneAndOtherGeomsAreNamed) {
  const Model model = loadMjcfString(kContacts, "contacts.xml");
  ASSERT_EQ(model.contact_spheres.size(), 1u);
  EXPECT_EQ(model.contact_spheres[0].name, "foot");
  EXPECT_NEAR(model.contact_spheres[0].radius, 0.1, 0.0);
  EXPECT_LT((model.contact_spheres[0].center - Vector3(0, 0, -0.1)).norm(), 1e-15);
  EXPECT_TRUE(model.ground.enabled);
  EXPECT_NEAR(model.ground.height, -0.05, 1e-15);
  EXPECT_NEAR(model.ground.friction, 0.7, 0.0);
  // the free joint starts where MuJoCo's body is
  EXPECT_NEAR(model.initialConfiguration()[2], 0.5, 0.0);
  // the foot's friction is MuJoCo's default 1, above the floor's: MuJoCo takes the larger
  ASSERT_EQ(model.load_warnings.size(), 2u);
  EXPECT_NE(model.load_warnings[0].find("contacts.xml: sphere 'foot': friction 1 above the "
                                        "plane's"), std::string::npos) << model.load_warnings[0];
  const std::string& w = model.load_warnings[1];
  EXPECT_NE(w.find("2 colliding geoms not contacts"), std::string::npos) << w;
  EXPECT_NE(w.find("box 'wall' on 'world'"), std::string::npos) << w;
  EXPECT_NE(w.find("box 'shell' on 'ball'"), std::string::npos) << w;
  EXPECT_EQ(w.find("look"), std::string::npos) << w;  // visual only: no contact in MuJoCo either
}

// MuJoCo's parser prints "WARNING: XML contains a 'NaN'" to stdout by default: the loader
// gathers it into the model's warnings instead, and writes nothing.
TEST(MjcfLoader, MujocosParserWarningsAreLoadWarningsNotOutput) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const Model model = loadMjcfString(
      mujoco("<body name='b'><joint/><geom type='sphere' size='0.1' mass='1' rgba='nan 0 0 1'/>"
             "</body>"), "nan.xml");
  EXPECT_EQ(::testing::internal::GetCapturedStdout(), "");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_FALSE(model.load_warnings.empty());
  EXPECT_NE(model.load_warnings[0].find("nan.xml: MuJoCo: XML contains a 'NaN'"),
            std::string::npos) << model.load_warnings[0];
}

TEST(MjcfLoader, LoadModelReadsXmlFiles) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hilsim_mjcf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "part.xml") << "<mujoco><worldbody><body name='inc'><joint/>"
                                     "<geom size='0.1' mass='1'/></body></worldbody></mujoco>";
  // a file on disk may include its neighbours (MuJoCo resolves them beside it)
  std::ofstream(dir / "main.xml") << "<mujoco model='main'><include file='part.xml'/></mujoco>";
  const Model model = loadModel((dir / "main.xml").string());
  EXPECT_EQ(model.name, "main");
  EXPECT_EQ(model.nv, 1);
  EXPECT_GE(model.bodyIndex("inc"), 1);
  UrdfOptions floating;
  floating.floating_base = true;
  EXPECT_THROW(loadModel((dir / "main.xml").string(), floating), ModelError);
  // ... a text may not
  const std::string text = "<mujoco><include file='" + (dir / "part.xml").string() + "'/></mujoco>";
  EXPECT_THROW(loadMjcfString(text), ModelError);
  std::filesystem::remove_all(dir);
}

// --- errors ---

std::string errorOf(const std::string& xml, const ModelLimits& limits = {}) {
  try {
    loadMjcfString(xml, "bad.xml", limits);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "(loaded)";
}

void expectError(const std::string& xml, const std::string& part, const ModelLimits& limits = {}) {
  const std::string message = errorOf(xml, limits);
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.rfind("bad.xml", 0), 0u) << message;
}

TEST(MjcfLoader, ErrorsNameTheFileAndTheElement) {
  try {
    loadMjcf("/nonexistent/model.xml");
    ADD_FAILURE() << "loaded";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '/nonexistent/model.xml'"),
              std::string::npos) << e.what();
  }
  // MuJoCo's compiler error, with its element, on one line
  expectError(mujoco("<body><joint/><geom size='0.1' euler='1 2'/></body>"),
              "bad.xml: MuJoCo: XML Error: attribute 'euler' does not have enough data; "
              "Element 'geom', line 1");
  expectError("<mujoco><worldbody><body></mujoco>", "bad.xml:1: malformed XML");
  expectError("<robot name='r'/>", "bad.xml:1: <robot>: the root element must be <mujoco>");
  expectError(mujoco("<body><joint name='j'/><geom size='0.1' mass='1'/></body>",
                     "<tendon><fixed name='t'><joint joint='j' coef='1'/></fixed></tendon>"),
              "bad.xml: tendon 't' (of 1): tendons are not supported");
  expectError(mujoco("<body name='a'><joint name='j'/><geom size='0.1' mass='1'/></body>"
                     "<body name='b'><joint name='k'/><geom size='0.1' mass='1'/></body>",
                     "<equality><joint name='couple' joint1='j' joint2='k'/></equality>"),
              "bad.xml: equality 'couple': joint equality constraints are not supported");
  expectError(mujoco("<body><joint type='ball' stiffness='2'/><geom size='0.1' mass='1'/></body>"),
              "ball joint 'body1': stiffness 2");
  expectError(mujoco("<composite type='particle' count='2 2 2' spacing='0.1'>"
                     "<geom size='0.02'/></composite>"),
              "<composite>: composite objects");
  expectError("<mujoco><asset><hfield name='h' file='/etc/passwd.png'/></asset></mujoco>",
              "bad.xml:1: <hfield>: 'file': a model text cannot name files");
  // qhull would print "QH6154 Qhull precision error" on this flat mesh
  expectError("<mujoco><asset><mesh name='m' vertex='0 0 0 1 0 0 0 1 0 1 1 0'/></asset>"
              "</mujoco>", "bad.xml:1: <mesh>: a model text cannot hold meshes");
  expectError("<mujoco><asset><texture name='t' type='2d' builtin='checker' width='100000'"
              " height='100000'/></asset></mujoco>",
              "<texture>: width '100000' is larger than 4096");
  expectError("<mujoco><asset><texture name='t' type='cube' builtin='flat' width='4096'"
              " height='4096'/></asset></mujoco>",
              "<texture>: width × height is 16777216, more than 4194304");
  ModelLimits small;
  small.max_dofs = 2;
  expectError(kDoublePendulum + "", "3 joints, more than the limit of 2", small);
  small = ModelLimits();
  small.max_bodies = 3;  // four hilsim bodies: upper, lower, and a body per extra joint
  expectError(kDoublePendulum, "4 bodies (with one per joint), more than the limit of 3", small);
}

TEST(MjcfLoader, ServerLimitsAcceptTheTestModels) {
  for (const std::string* xml : {&kPendulum, &kDoublePendulum, &kFreeBody, &kBall, &kSlideSpring,
                                 &kFourBar, &kWeldLoop, &kContacts})
    EXPECT_NO_THROW(loadMjcfString(*xml, "m.xml", fuzz::serverModelLimits()));
}

}  // namespace
}  // namespace hilsim
