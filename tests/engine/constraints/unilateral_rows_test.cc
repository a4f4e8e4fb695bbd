// Joint limits, joint friction and ground contact on the constraint stage (docs/CONTACT.md),
// against their analytic values: the static depth of a loaded stop and the creep of a held
// friction row (the soft rows' spring–damper), Coulomb's breakaway and sliding deceleration, a
// block on a ramp that sticks below tan θ = μ and slides with g (sin θ − μ cos θ) above; every
// formulation with the stage giving the same q̈; bit-identical reruns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "engine/algorithms/aba.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "tests/support/contact_models.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

std::shared_ptr<const Model> load(const std::string& yaml) {
  return std::make_shared<const Model>(loadYamlString(yaml, ".", "test.yaml"));
}

// Two links in the horizontal plane (no gravity), joints about z, limits ±1 rad on both.
const char* kPlanarArm = R"(version: 1
name: planar_arm
gravity: [0, 0, 0]
bodies:
  - name: upper
    joint: {type: revolute, name: shoulder, axis: [0, 0, 1], limits: {lower: -1, upper: 1}}
    inertia: {mass: 2.0, com: [0.25, 0, 0], inertia: [0.001, 0.04, 0.04, 0, 0, 0]}
  - name: lower
    parent: upper
    placement: {xyz: [0.5, 0, 0]}
    joint: {type: revolute, name: elbow, axis: [0, 0, 1], limits: {lower: -0.5, upper: 0.8}}
    inertia: {mass: 1.0, com: [0.2, 0, 0], inertia: [0.001, 0.02, 0.02, 0, 0, 0]}
)";

struct Case {
  Formulation formulation;
  Integrator integrator;
};
const Case kCases[] = {{Formulation::kAba, Integrator::kRk4},
                       {Formulation::kAba, Integrator::kSemiImplicitEuler},
                       {Formulation::kCrba, Integrator::kRk4},
                       {Formulation::kCrba, Integrator::kSemiImplicitEuler}};

std::string caseName(const Case& c) {
  return std::string(formulationName(c.formulation)) + "/" +
         std::string(integratorName(c.integrator));
}

// Pushed into a stop with a constant torque, a joint comes to rest past it by the soft row's
// static depth: at rest J q̈ = 0 leaves R λ = a_ref = −k d r, so r = −(1 − d) τ² ζ² W_rr λ with
// W_rr = (M⁻¹)_dd and λ the torque held; both joints at once, into each limit, at 1 kHz.
TEST(JointLimits, AnArmDrivenIntoEachLimitStopsThereAtTheStaticDepth) {
  const auto model = load(kPlanarArm);
  const ConstraintSoftness soft = model->contact_settings.limit;
  for (const Case& c : kCases) {
    for (const double direction : {1.0, -1.0}) {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      const Eigen::Vector2d tau(3.0 * direction, 1.0 * direction);
      double min_multiplier = 0.0;
      for (int k = 0; k < 3000; ++k) {
        sim.step(tau);
        const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
        min_multiplier = std::min(min_multiplier, stage->multipliers().minCoeff());
      }
      EXPECT_GE(min_multiplier, 0.0) << caseName(c) << ": a stop pulled";
      // the static depth from M⁻¹ at the final q (the rows hold the joints, so λ = |τ|)
      Data data(*model);
      Eigen::MatrixXd Minv = Eigen::MatrixXd::Identity(2, 2);
      aba(*model, data, sim.q(), Eigen::VectorXd::Zero(2), Eigen::VectorXd::Zero(2));
      formulationInfo(Formulation::kAba).inverse_inertia(*model, data, Minv);
      const double d = soft.impedance, zeta = soft.damping_ratio, tc = soft.time_constant;
      for (int j = 0; j < 2; ++j) {
        const double limit = direction > 0 ? model->upper_limit[j] : model->lower_limit[j];
        const double depth = (1.0 - d) * tc * tc * zeta * zeta * Minv(j, j) * std::abs(tau[j]);
        // at rest after 3 s (τ = 0.02 s: 150 time constants); the depth to 1e-9 of itself
        EXPECT_NEAR(sim.q()[j], limit + direction * depth, 1e-9 * depth + 1e-12)
            << caseName(c) << " joint " << j << " direction " << direction;
        EXPECT_LT(std::abs(sim.v()[j]), 1e-9) << caseName(c);
      }
      // reversed, the joints leave the stops, and a stop no longer touched holds no force
      const Eigen::Vector2d reversed = -tau;
      for (int k = 0; k < 300; ++k) sim.step(reversed);
      const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
      for (int j = 0; j < 2; ++j) {
        const double limit = direction > 0 ? model->upper_limit[j] : model->lower_limit[j];
        EXPECT_GT(direction * (limit - sim.q()[j]), 0.01) << caseName(c) << " joint " << j;
      }
      EXPECT_EQ(stage->multipliers().cwiseAbs().maxCoeff(), 0.0) << caseName(c);
    }
  }
}

// Thrown at a stop at 10 rad/s, a joint comes back within the critically damped bound
// v₀ τ / e of the row's spring–damper, and stays there: no tunnelling at the step.
TEST(JointLimits, AFastJointStopsWithinTheCriticallyDampedBound) {
  const auto model = load(kPlanarArm);
  const double tc = model->contact_settings.limit.time_constant;
  for (const Case& c : kCases) {
    Simulator sim(model, c.formulation, c.integrator, 1e-3);
    const double speed = 10.0;
    sim.setState(Eigen::Vector2d(0.5, 0.0), Eigen::Vector2d(speed, 0.0));
    double deepest = 0.0;
    for (int k = 0; k < 1000; ++k) {
      sim.step(Eigen::Vector2d::Zero());
      deepest = std::max(deepest, sim.q()[0] - model->upper_limit[0]);
    }
    EXPECT_LT(deepest, speed * tc / std::exp(1.0)) << caseName(c);
    EXPECT_LT(sim.q()[0], model->upper_limit[0] + 1e-6) << caseName(c);
    EXPECT_GT(sim.q()[0], model->lower_limit[0]) << caseName(c);
  }
}

TEST(JointLimits, DataOnlyLimitsLetTheJointPass) {
  const auto model = load(std::string(kPlanarArm) + "limits: data\n");
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  for (int k = 0; k < 2000; ++k) sim.step(Eigen::Vector2d(3.0, 0.0));
  EXPECT_GT(sim.q()[0], model->upper_limit[0] + 1.0);
}

// One hinge, no gravity, inertia I = 0.5 kg·m², Coulomb friction F = 2 N·m.
const char* kRubbingHinge = R"(version: 1
name: rubbing_hinge
gravity: [0, 0, 0]
bodies:
  - name: b
    joint: {type: revolute, name: j, axis: [0, 0, 1], friction: 2.0}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.3, 0.3, 0.5, 0, 0, 0]}
)";

// Below the breakaway torque the joint holds: it gives by the row's static deflection about its
// anchor, r = (1 − d) τ² ζ² W τ_j (W = 1 / I; at rest R λ = a_ref = −k d r with λ = −τ_j), and
// stops there; above it, it accelerates at (τ − F) / I; thrown and let go, it stops after
// v₀ I / F with deceleration F / I, and stays.
TEST(JointFriction, BreakawayAndSlidingFollowCoulomb) {
  const auto model = load(kRubbingHinge);
  const double inertia = 0.5, friction = 2.0;
  const ConstraintSoftness soft = model->contact_settings.friction;
  for (const Case& c : kCases) {
    {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      const double tau = 0.9 * friction;
      for (int k = 0; k < 1000; ++k) sim.step(Eigen::VectorXd::Constant(1, tau));
      const double zeta = soft.damping_ratio, tc = soft.time_constant;
      const double give = (1.0 - soft.impedance) * tc * tc * zeta * zeta * tau / inertia;
      // 50 time constants: at rest, the deflection to 1e-9 of itself
      EXPECT_NEAR(sim.q()[0], give, 1e-9 * give) << caseName(c);
      EXPECT_LT(std::abs(sim.v()[0]), 1e-9 * give) << caseName(c);
      for (int k = 0; k < 1000; ++k) sim.step(Eigen::VectorXd::Constant(1, tau));
      EXPECT_NEAR(sim.q()[0], give, 1e-9 * give) << caseName(c) << ": it creeps";
    }
    {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      const double tau = 2.0 * friction;
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Constant(1, tau));
      const double v0 = sim.v()[0];
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Constant(1, tau));
      // sliding, the row sits at its bound: exact up to round-off
      EXPECT_NEAR((sim.v()[0] - v0) / 0.5, (tau - friction) / inertia, 1e-9) << caseName(c);
    }
    {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      const double v0 = 5.0;
      sim.setState(Eigen::VectorXd::Zero(1), Eigen::VectorXd::Constant(1, v0));
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Zero(1));
      EXPECT_NEAR(sim.v()[0], v0 - friction / inertia * 0.5, 1e-9) << caseName(c);
      // stopped at 1.25 s: it sticks within a step's travel of where it stopped (its anchor, set
      // at the start of that step) and settles there, 60 time constants later at rest
      for (int k = 0; k < 2000; ++k) sim.step(Eigen::VectorXd::Zero(1));
      EXPECT_LT(std::abs(sim.v()[0]), 1e-9) << caseName(c);
      const double stopped = sim.q()[0];
      for (int k = 0; k < 1000; ++k) sim.step(Eigen::VectorXd::Zero(1));
      EXPECT_LT(std::abs(sim.q()[0] - stopped), 1e-9) << caseName(c) << ": it stays";
      const double stop = v0 * v0 * inertia / (2.0 * friction);  // ∫ v dt to the stop
      EXPECT_NEAR(sim.q()[0], stop, 5e-3 * stop) << caseName(c);  // the stop's last step
    }
  }
}

// A 1 kg box on four contact points, on a ramp of angle θ: gravity tilted by θ about y over a
// level ground (the same thing), μ = 0.5.
std::string boxOnRamp(double angle) {
  const double g = 9.81;
  return "version: 1\nname: box\ngravity: [" + std::to_string(-g * std::sin(angle)) + ", 0, " +
         std::to_string(-g * std::cos(angle)) + R"(]
bodies:
  - name: box
    joint: {type: free, name: box}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.0017, 0.0017, 0.0017, 0, 0, 0]}
initial: {box: [0, 0, 0.05, 1, 0, 0, 0]}
contacts:
  - {name: c1, body: box, center: [0.05, 0.05, -0.05]}
  - {name: c2, body: box, center: [0.05, -0.05, -0.05]}
  - {name: c3, body: box, center: [-0.05, 0.05, -0.05]}
  - {name: c4, body: box, center: [-0.05, -0.05, -0.05]}
ground: {height: 0, friction: 0.5}
)";
}

TEST(GroundContact, ABlockOnARampSticksBelowTheFrictionAngleAndSlidesAbove) {
  for (const Case& c : kCases) {
    {
      const double angle = std::atan(0.5) - 0.1;  // tan θ < μ
      const auto model = load(boxOnRamp(angle));
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Zero(6));
      const double x0 = sim.q()[0];
      for (int k = 0; k < 2000; ++k) sim.step(Eigen::VectorXd::Zero(6));
      // held at its anchors: it moves by less than 1 mm in 2 s where it would slide 10 m without
      // friction
      EXPECT_LT(std::abs(sim.q()[0] - x0), 1e-3) << caseName(c);
      // resting on the ground: the depth of the soft contacts, (1 − d) g cos θ τ², < 1 mm
      EXPECT_NEAR(sim.q()[2], 0.05, 1e-3) << caseName(c);
    }
    {
      const double angle = std::atan(0.5) + 0.1;  // tan θ > μ
      const auto model = load(boxOnRamp(angle));
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Zero(6));
      const double v0 = sim.v()[0];
      for (int k = 0; k < 500; ++k) sim.step(Eigen::VectorXd::Zero(6));
      // down the ramp: −x
      const double expected = -9.81 * (std::sin(angle) - 0.5 * std::cos(angle));
      // sliding: every friction row at its cone's edge against the motion; the normal forces
      // at rest in z carry m g cos θ, so the acceleration is exact but for the settling of the
      // soft normals (e^{−t/τ} after 25 time constants)
      EXPECT_NEAR((sim.v()[0] - v0) / 0.5, expected, 1e-6 * std::abs(expected)) << caseName(c);
    }
  }
}

// The same model, state and torques: aba, crba and the general route (M⁻¹ on the columns of
// Jᵀ, no Delassus operator) give the same constrained q̈ with loops, limits, friction and
// contacts active together.
TEST(ConstraintRows, EveryFormulationGivesTheSameConstrainedAccelerations) {
  const auto model = load(test::kLeggedFourBar);
  ASSERT_EQ(model->constraintRowCapacity(), 5 + 3 + 2 + 6);
  Simulator reference(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  // a state where rows of each kind are active: the toe below the ground, the knee past its
  // upper limit, every joint moving
  Eigen::VectorXd q = reference.q(), v = Eigen::VectorXd::Zero(model->nv);
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  for (int k = 0; k < 400; ++k) reference.step(tau);
  q = reference.q();
  v = reference.v();
  v[0] += 0.3;
  tau << 1.0, -0.5, 0.2, 3.0;
  const auto evaluate = [&](ConstraintRowStage& stage, Formulation f) {
    Data data(*model, formulationInfo(f).workspace);
    stage.setTimeStep(1e-3);
    Eigen::VectorXd qdd = forwardDynamics(f, *model, data, q, v, tau);
    stage.accelerations(*model, data, q, v, tau, qdd);
    return std::pair{qdd, stage.lastSolve()};
  };
  ConstraintRowStage aba_stage(*model, formulationInfo(Formulation::kAba));
  const auto [qdd_aba, solve_aba] = evaluate(aba_stage, Formulation::kAba);
  const int active = aba_stage.activeUnilateralRows();
  ASSERT_GE(active, 3) << "the state should have limit, friction and contact rows active";
  EXPECT_TRUE(solve_aba.converged);
  for (const Formulation f : test::formulationsFor(*model)) {
    ConstraintRowStage general(*model, formulationInfo(f).inverse_inertia);
    const auto [qdd_general, s1] = evaluate(general, f);
    ConstraintRowStage fast(*model, formulationInfo(f));
    const auto [qdd_fast, s2] = evaluate(fast, f);
    // the solver stops at 1e-10 of an acceleration; the formulations' q̈ agree to round-off
    EXPECT_LT(test::relativeDifference(qdd_general, qdd_aba), 1e-8) << formulationName(f);
    EXPECT_LT(test::relativeDifference(qdd_fast, qdd_aba), 1e-8) << formulationName(f);
  }
}

// Lockstep: the same steps from the same state give the same bits, warm starts included, also
// after setState() brings the run back to its start.
TEST(ConstraintRows, ARunWithContactsRepeatsBitForBit) {
  const auto model = load(boxOnRamp(0.3));
  Simulator first(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  Simulator second(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  const Eigen::VectorXd q0 = first.q(), v0 = first.v();
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(6);
  for (int k = 0; k < 1500; ++k) {
    tau[5] = std::sin(0.01 * k);
    first.step(tau);
    second.step(tau);
  }
  EXPECT_EQ(first.q(), second.q());
  EXPECT_EQ(first.v(), second.v());
  const Eigen::VectorXd q_end = first.q();
  first.setState(q0, v0);
  for (int k = 0; k < 1500; ++k) {
    tau[5] = std::sin(0.01 * k);
    first.step(tau);
  }
  EXPECT_EQ(first.q(), q_end);
}

// Two flexible links in the horizontal plane (no gravity): aluminium bars clamped at their
// joints, two bending modes each, 30 % modal damping so that they settle within the runs; the
// joints as kPlanarArm's, the elbow on the upper link's tip node.
const char* kFlexiblePlanarArm = R"(version: 1
name: flexible_planar_arm
gravity: [0, 0, 0]
bodies:
  - name: upper
    joint: {type: revolute, name: shoulder, axis: [0, 0, 1], armature: 0.05,
            limits: {lower: -1, upper: 1}}
    flexible:
      beam: {youngs_modulus: 70.0e9, area_moment: 1.3333e-8, density: 2700, area: 4.0e-4,
             length: 0.6, modes: 2, elements: 10, boundary: clamped_free, bending: both,
             damping_ratio: 0.3}
  - name: lower
    parent: upper
    parent_node: tip
    joint: {type: revolute, name: elbow, axis: [0, 0, 1], armature: 0.02,
            limits: {lower: -0.5, upper: 0.8}}
    flexible:
      beam: {youngs_modulus: 70.0e9, area_moment: 1.3333e-8, density: 2700, area: 4.0e-4,
             length: 0.5, modes: 2, elements: 10, boundary: clamped_free, bending: both,
             damping_ratio: 0.3}
)";

// The stage's operator on a model with flexible bodies: each formulation's M⁻¹ (aba's from the
// modal articulated sweeps, crba's from its LᵀDL factor) is the inverse of crba's M, at random
// states with the modes deflected. Modal coordinates of 1e-3 (a few mm at the tips): the
// stiffened modal mass is a small-deformation model, and at 0.5 M has negative eigenvalues.
TEST(FlexibleBodies, EveryFormulationsInverseInertiaInvertsTheMassMatrix) {
  const auto model = load(kFlexiblePlanarArm);
  ASSERT_TRUE(model->has_flexible_bodies);
  ASSERT_TRUE(model->limits_enforced);
  const int nv = model->nv;
  std::srand(43);
  for (int trial = 0; trial < 5; ++trial) {
    Eigen::VectorXd q = 1e-3 * Eigen::VectorXd::Random(model->nq);
    for (int i = 1; i < model->nbodies; ++i) q[model->idx_q[i]] = Eigen::VectorXd::Random(1)[0];
    const Eigen::VectorXd v = Eigen::VectorXd::Random(nv);
    const Eigen::VectorXd tau = Eigen::VectorXd::Random(nv);
    Data crba_data(*model, DataWorkspace::kJointSpaceInertia);
    forwardDynamics(Formulation::kCrba, *model, crba_data, q, v, tau);
    const Eigen::MatrixXd M_inv = crba_data.M.inverse();
    for (const Formulation f : {Formulation::kAba, Formulation::kCrba}) {
      Data data(*model, formulationInfo(f).workspace);
      forwardDynamics(f, *model, data, q, v, tau);
      Eigen::MatrixXd X = Eigen::MatrixXd::Identity(nv, nv);
      formulationInfo(f).inverse_inertia(*model, data, X);
      // cond(M) ~ 1e5 (the modes' small masses against the links'): 1e-10 of M⁻¹'s size
      EXPECT_LT((X - M_inv).cwiseAbs().maxCoeff(), 1e-10 * M_inv.cwiseAbs().maxCoeff())
          << formulationName(f) << " trial " << trial;
    }
  }
}

// The flexible arm driven into each stop stops there at the rigid arm's static depth (at rest
// the stop holds the joint torque, and W_rr = (M⁻¹)_dd with the modes' share), lets go when the
// torque reverses, on both formulations and integrators; the formulations' runs agree.
TEST(FlexibleBodies, AFlexibleArmDrivenIntoEachLimitStopsThereAtTheStaticDepth) {
  const auto model = load(kFlexiblePlanarArm);
  const ConstraintSoftness soft = model->contact_settings.limit;
  const int nv = model->nv;
  const int shoulder = model->idx_v[1], elbow = model->idx_v[2];
  for (const double direction : {1.0, -1.0}) {
    // q after each step, of aba with each integrator (kCases: aba's cases first)
    std::map<Integrator, Eigen::MatrixXd> aba_runs;
    for (const Case& c : kCases) {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv);
      tau[shoulder] = 3.0 * direction;
      tau[elbow] = 1.0 * direction;
      Eigen::MatrixXd run(3000, model->nq);
      double min_multiplier = 0.0;
      for (int k = 0; k < 3000; ++k) {
        sim.step(tau);
        run.row(k) = sim.q().transpose();
        const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
        min_multiplier = std::min(min_multiplier, stage->multipliers().minCoeff());
      }
      EXPECT_GE(min_multiplier, 0.0) << caseName(c) << ": a stop pulled";
      if (c.formulation == Formulation::kAba) {
        aba_runs[c.integrator] = run;
      } else {
        // the same steps through another M⁻¹: round-off apart (measured 2e-12 rad)
        EXPECT_LT((run - aba_runs.at(c.integrator)).cwiseAbs().maxCoeff(), 1e-9) << caseName(c);
      }
      Data data(*model);
      Eigen::MatrixXd M_inv = Eigen::MatrixXd::Identity(nv, nv);
      aba(*model, data, sim.q(), Eigen::VectorXd::Zero(nv), Eigen::VectorXd::Zero(nv));
      formulationInfo(Formulation::kAba).inverse_inertia(*model, data, M_inv);
      const double d = soft.impedance, zeta = soft.damping_ratio, tc = soft.time_constant;
      for (const int j : {shoulder, elbow}) {
        const double limit = direction > 0 ? model->upper_limit[j] : model->lower_limit[j];
        const double depth = (1.0 - d) * tc * tc * zeta * zeta * M_inv(j, j) * std::abs(tau[j]);
        // at rest after 3 s (150 time constants of the stop; the slowest mode's decay time,
        // 1 / (ζ ω) = 0.03 s, 100 times): the depth to 1e-9 of itself
        EXPECT_NEAR(sim.q()[model->idx_q[model->dof_body[j]]], limit + direction * depth,
                    1e-9 * depth + 1e-12)
            << caseName(c) << " dof " << j << " direction " << direction;
        EXPECT_LT(std::abs(sim.v()[j]), 1e-9) << caseName(c);
      }
      for (int k = 0; k < 300; ++k) sim.step(-tau);
      const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
      for (const int j : {shoulder, elbow}) {
        const double limit = direction > 0 ? model->upper_limit[j] : model->lower_limit[j];
        EXPECT_GT(direction * (limit - sim.q()[model->idx_q[model->dof_body[j]]]), 0.01)
            << caseName(c) << " dof " << j;
      }
      EXPECT_EQ(stage->multipliers().cwiseAbs().maxCoeff(), 0.0) << caseName(c);
    }
  }
}

// Joint friction on a flexible link: below the breakaway torque the joint holds (the row's
// static give, at rest), above it the joint turns; aba and crba give the same constrained q̈ with
// the friction row and a stop active at once.
TEST(FlexibleBodies, FrictionHoldsAFlexibleLinkBelowBreakaway) {
  std::string yaml = kFlexiblePlanarArm;
  const std::string shoulder_joint = "armature: 0.05,";
  yaml.replace(yaml.find(shoulder_joint), shoulder_joint.size(), "armature: 0.05, friction: 2.0,");
  const auto model = load(yaml);
  const int nv = model->nv;
  const int shoulder = model->idx_v[1];
  ASSERT_EQ(model->friction[shoulder], 2.0);
  const ConstraintSoftness soft = model->contact_settings.friction;
  for (const Case& c : kCases) {
    for (const double fraction : {0.9, 2.0}) {
      Simulator sim(model, c.formulation, c.integrator, 1e-3);
      Eigen::VectorXd tau = Eigen::VectorXd::Zero(nv);
      tau[shoulder] = fraction * 2.0;
      for (int k = 0; k < 1000; ++k) sim.step(tau);
      const double q = sim.q()[model->idx_q[1]];
      if (fraction < 1.0) {
        Data data(*model);
        Eigen::MatrixXd M_inv = Eigen::MatrixXd::Identity(nv, nv);
        aba(*model, data, sim.q(), Eigen::VectorXd::Zero(nv), Eigen::VectorXd::Zero(nv));
        formulationInfo(Formulation::kAba).inverse_inertia(*model, data, M_inv);
        const double zeta = soft.damping_ratio, tc = soft.time_constant;
        const double give =
            (1.0 - soft.impedance) * tc * tc * zeta * zeta * M_inv(shoulder, shoulder) * tau[shoulder];
        EXPECT_NEAR(q, give, 1e-9 * give) << caseName(c);
        EXPECT_LT(std::abs(sim.v()[shoulder]), 1e-9) << caseName(c);
      } else {
        EXPECT_GT(q, 0.1) << caseName(c) << ": it should have broken away";
      }
    }
  }
  // a state with the friction row sliding, the elbow past its stop, the modes moving
  Eigen::VectorXd q = model->neutralConfiguration(), v = Eigen::VectorXd::Random(nv);
  q[model->idx_q[2]] = 0.81;
  const Eigen::VectorXd tau = Eigen::VectorXd::Random(nv);
  Eigen::VectorXd reference;
  for (const Formulation f : {Formulation::kAba, Formulation::kCrba}) {
    ConstraintRowStage stage(*model, formulationInfo(f));
    Data data(*model, formulationInfo(f).workspace);
    stage.setTimeStep(1e-3);
    Eigen::VectorXd qdd = forwardDynamics(f, *model, data, q, v, tau);
    stage.accelerations(*model, data, q, v, tau, qdd);
    EXPECT_EQ(stage.activeUnilateralRows(), 2) << formulationName(f);
    EXPECT_TRUE(stage.lastSolve().converged) << formulationName(f);
    if (reference.size() == 0) reference = qdd;
    // the solver stops at 1e-10 of an acceleration
    EXPECT_LT(test::relativeDifference(qdd, reference), 1e-8) << formulationName(f);
  }
}

// Ground contact on a model with flexible bodies is refused with the reason (a contact row there
// needs the modes' share of the point's motion).
TEST(FlexibleBodies, GroundContactIsRefusedWithTheReason) {
  try {
    load(std::string(kFlexiblePlanarArm) + "ground: {height: -1.0, friction: 0.5}\n");
    FAIL() << "a ground on a model with flexible bodies was accepted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("ground contact is not supported on a model with "
                                         "flexible bodies"),
              std::string::npos)
        << e.what();
  }
}

// Actuator limits: effort saturates, and a joint at its velocity limit gets no force that
// drives it faster; each cut counted.
TEST(ActuatorLimits, EffortSaturatesAndVelocityLimitCutsTheDrive) {
  const auto model = load(R"(version: 1
name: drive
gravity: [0, 0, 0]
bodies:
  - name: b
    joint: {type: revolute, name: j, axis: [0, 0, 1], limits: {effort: 2.0, velocity: 3.0}}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.3, 0.3, 0.5, 0, 0, 0]}
)");
  Simulator sim(model, Formulation::kAba, Integrator::kSemiImplicitEuler, 1e-3);
  sim.step(Eigen::VectorXd::Constant(1, 1e9));
  EXPECT_EQ(sim.appliedTau()[0], 2.0);
  EXPECT_EQ(sim.effortSaturations()[0], 1u);
  EXPECT_NEAR(sim.v()[0], 2.0 / 0.5 * 1e-3, 1e-15);
  for (int k = 0; k < 2000; ++k) sim.step(Eigen::VectorXd::Constant(1, 1e9));
  // 4 rad/s² reaches 3 rad/s after 0.75 s; then only steps below the limit accelerate
  EXPECT_LE(sim.v()[0], 3.0 + 4.0 * 1e-3);
  EXPECT_GE(sim.v()[0], 3.0);
  EXPECT_GT(sim.velocityCuts()[0], 1000u);
  EXPECT_EQ(sim.effortSaturations()[0], 2001u);
  sim.step(Eigen::VectorXd::Constant(1, -1.0));  // braking is never cut
  EXPECT_EQ(sim.appliedTau()[0], -1.0);
}

}  // namespace
}  // namespace hilsim

namespace hilsim {
namespace {
// A session resets to the model's start with setState(); the run from there is the run from
// construction, bit for bit (the assembly must not read what the rows beyond the loops left in
// the stage's workspace).
TEST(ConstraintRows, SetStateToTheStartRepeatsTheRunFromConstruction) {
  auto model = std::make_shared<const Model>(loadModel("delta"));
  Simulator a(model, Formulation::kAba, Integrator::kRk4, 1e-3),
      b(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  b.setState(model->initialConfiguration(), Eigen::VectorXd::Zero(model->nv), 0.0);
  EXPECT_EQ(a.q(), b.q());
  EXPECT_EQ(a.v(), b.v());
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  for (int k = 0; k < 3; ++k) {
    for (int j = 0; j < 3; ++j) tau[j] = 20.0 * 0.3 * std::sin(0.02 + 2.0 * j);
    a.step(tau);
    b.step(tau);
    EXPECT_EQ(a.q(), b.q()) << k;
  }
}
}  // namespace
}  // namespace hilsim
