// The Simulator's energy accounting: the work of the applied joint forces and the energy the
// dampers take out, by the integrator's own quadrature. On a hinge the work is τ Δq exactly (RK4's
// weights on the stage velocities are its update of q); on damped models, rigid, flexible and with
// force elements, E − E₀ = W − D up to the integrator's error.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <string>

#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"

namespace hilsim {
namespace {

// A hinge about z (M = 0.5 kg·m²), without gravity, with the given joint damping.
Model hinge(double damping) {
  const std::string yaml =
      "version: 1\nname: hinge\ngravity: [0, 0, 0]\nbodies:\n"
      "  - name: b\n"
      "    joint: {type: revolute, name: j, axis: [0, 0, 1], damping: " +
      std::to_string(damping) +
      "}\n"
      "    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.3, 0.3, 0.5, 0, 0, 0]}\n";
  return loadYamlString(yaml, ".", "hinge.yaml");
}

// Two links under gravity, damped joints, and a spring–damper from the second link to the world.
Model dampedArmWithSpring() {
  const std::string yaml = R"(version: 1
name: damped_arm
gravity: [0, 0, -9.81]
bodies:
  - name: upper
    parent: world
    joint: {type: revolute, name: shoulder, axis: [0, 1, 0], damping: 0.05}
    inertia: {mass: 1.0, com: [0.25, 0, 0], inertia: [0.001, 0.02, 0.02, 0, 0, 0]}
  - name: lower
    parent: upper
    placement: {xyz: [0.5, 0, 0]}
    joint: {type: revolute, name: elbow, axis: [0, 1, 0], damping: 0.02}
    inertia: {mass: 0.5, com: [0.2, 0, 0], inertia: [0.001, 0.01, 0.01, 0, 0, 0]}
forces:
  - name: tendon
    type: spring_damper
    body_a: world
    point_a: [0.3, 0, 0.4]
    body_b: lower
    point_b: [0.4, 0, 0]
    stiffness: 40
    damping: 0.8
    rest_length: 0.3
)";
  return loadYamlString(yaml, ".", "damped_arm.yaml");
}

TEST(EnergyBalance, AppliedWorkOnAHingeIsTheTorqueTimesTheAngleTurned) {
  // ∫ τ v dt = τ Δq: RK4 adds h/6 Σ w_s τ·v_s to the work and h/6 Σ w_s v_s to q; the Euler
  // steps add h τ·v_{n+1} and h v_{n+1}. Equal up to the rounding of the sums.
  auto model = std::make_shared<const Model>(hinge(0.3));
  const Eigen::VectorXd tau = Eigen::VectorXd::Constant(1, 0.7);
  for (const Integrator integrator : {Integrator::kRk4, Integrator::kSemiImplicitEuler}) {
    SCOPED_TRACE(std::string(integratorName(integrator)));
    Simulator sim(model, Formulation::kAba, integrator, 1e-3);
    for (int k = 0; k < 2000; ++k) sim.step(tau);
    const double turned = sim.q()(0) - model->initialConfiguration()(0);
    ASSERT_GT(turned, 1.0);
    EXPECT_NEAR(sim.appliedWork(), 0.7 * turned, 1e-12 * 0.7 * turned);
    EXPECT_GT(sim.dissipatedEnergy(), 0.0);
  }
}

TEST(EnergyBalance, EnergyChangesByTheWorkDoneLessWhatTheDampersTookOut) {
  // E − E₀ = W − D up to RK4's error at 1 ms (O(h⁴)), and on the four-bar what the projection
  // onto the loop removes: measured 8e-10 (damped arm), 2.7e-9 (flexible arm) and 5.6e-8
  // (four-bar) of the energy that went through; held to 1e-6. A term left out fails by its size:
  // without the tendon's damper the arm's gap is 3.0 J (of 3.0 J through), without the modal
  // damping the flexible arm's is 0.068 J (2.7e-3 of it).
  struct Case {
    std::string name;
    std::shared_ptr<const Model> model;
  };
  const Case cases[] = {
      {"damped_arm", std::make_shared<const Model>(dampedArmWithSpring())},
      {"flexible_arm", std::make_shared<const Model>(loadModel("flexible_arm"))},
      {"four_bar", std::make_shared<const Model>(loadModel("four_bar"))},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Simulator sim(c.model, Formulation::kAba, Integrator::kRk4, 1e-3);
    const double e0 = sim.energy();
    Eigen::VectorXd tau = Eigen::VectorXd::Zero(c.model->nv);
    double largest_gap = 0.0, throughput = 0.0;
    for (int k = 0; k < 3000; ++k) {
      // joint torques that change every 0.1 s (the modal coordinates take none)
      for (int d = 0; d < c.model->nv; ++d) {
        const bool modal = d >= c.model->idxModesV(c.model->dof_body[d]);
        tau(d) = modal ? 0.0 : 0.3 * std::sin(0.7 * (k / 100) + d);
      }
      sim.step(tau);
      const double gap = sim.energy() - e0 - (sim.appliedWork() - sim.dissipatedEnergy());
      largest_gap = std::max(largest_gap, std::abs(gap));
      throughput = std::max(throughput, std::abs(sim.appliedWork()) + sim.dissipatedEnergy());
    }
    std::cout << c.name << ": largest |E − E₀ − (W − D)| " << largest_gap << " J of "
              << throughput << " J through\n";
    EXPECT_GT(sim.dissipatedEnergy(), 1e-3);
    EXPECT_LT(largest_gap, 1e-6 * throughput) << "W " << sim.appliedWork() << " J, D "
                                              << sim.dissipatedEnergy() << " J";
  }
}

TEST(EnergyBalance, SetStateStartsTheAccountsAgain) {
  auto model = std::make_shared<const Model>(hinge(0.3));
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  for (int k = 0; k < 100; ++k) sim.step(Eigen::VectorXd::Constant(1, 1.0));
  ASSERT_GT(sim.appliedWork(), 0.0);
  sim.setState(sim.q(), sim.v());
  EXPECT_EQ(sim.appliedWork(), 0.0);
  EXPECT_EQ(sim.dissipatedEnergy(), 0.0);
}

// A push on a floating base (Simulator::setBaseWrench): a free body without gravity, its centre
// of mass at its origin, pushed by a constant force and a torque about a principal axis, moves
// as Newton and Euler say — x = F t² / 2m, a turn of T t² / 2I about the torque's axis — and the
// push's work is the kinetic energy it gave. The force and the torque are in the world frame,
// and the body is turned to start with, so a frame mix-up shows.
TEST(BaseWrench, PushesAFreeBodyAsNewtonAndEulerSay) {
  const auto model = std::make_shared<const Model>(loadYamlString(R"(version: 1
name: free_body
gravity: [0, 0, 0]
bodies:
  - name: body
    joint: {type: free, name: root}
    inertia: {mass: 2.0, com: [0, 0, 0], inertia: [0.01, 0.02, 0.03, 0, 0, 0]}
)", ".", "free_body.yaml"));
  ASSERT_TRUE(hasFloatingBase(*model));
  const Vector3 force(1.0, 2.0, -3.0);
  const double torque = 0.006;  // about W's x, which the turned body's z axis is
  for (const Integrator integrator : {Integrator::kRk4, Integrator::kSemiImplicitEuler}) {
    Simulator sim(model, Formulation::kAba, integrator, 1e-3);
    Eigen::VectorXd q = model->neutralConfiguration();
    // body z along world x: a quarter turn about y (w, x, y, z)
    q.segment<4>(3) << std::cos(M_PI / 4), 0.0, std::sin(M_PI / 4), 0.0;
    sim.setState(q, Eigen::VectorXd::Zero(6));
    sim.setBaseWrench(force, Vector3(torque, 0.0, 0.0));
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(6);
    for (int k = 0; k < 1000; ++k) sim.step(tau);
    const double t = 1.0;
    const double order = integrator == Integrator::kRk4 ? 1e-12 : 2e-3;  // Euler: O(h)
    const Vector3 expected = force / 2.0 * t * t / 2.0;
    EXPECT_LT((sim.q().head<3>() - expected).norm(), order * expected.norm());
    // the turn: ω about body z grows as T t / I_zz, the angle as T t² / 2 I_zz
    const double angle = torque * t * t / (2.0 * 0.03);
    const Eigen::Quaterniond start(q[3], q[4], q[5], q[6]);
    const Eigen::Quaterniond now(sim.q()[3], sim.q()[4], sim.q()[5], sim.q()[6]);
    const Eigen::AngleAxisd turn(start.conjugate() * now);  // in the body frame
    EXPECT_NEAR(turn.angle(), angle, order * angle);
    EXPECT_NEAR(std::abs(turn.axis().z()), 1.0, 1e-9);
    EXPECT_NEAR(sim.v()[5], torque * t / 0.03, order * torque * t / 0.03);
    EXPECT_NEAR(sim.appliedWork(), sim.energy(), std::max(1e-9, order) * sim.energy())
        << "the push did the work";
    EXPECT_TRUE(sim.appliedTau().isZero(0.0)) << "no drive applied it";
  }
  // a fixed-base model has nothing to push
  const Model arm = loadModel("iiwa14");
  EXPECT_FALSE(hasFloatingBase(arm));
}

}  // namespace
}  // namespace hilsim
