// The control law of examples/delta_pick_place (delta_law.h) on the bundled delta robot: its
// inverse kinematics against the assembled model, its gravity compensation against the
// constrained dynamics (at rest on target, the platform stays put), and the whole loop against
// the simulated robot, with the one-cycle delay of a network controller.
#include "examples/delta_pick_place/delta_law.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/constraints/loop_closure_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "examples/pd_controller/pd_law.h"

namespace hilsim::examples {
namespace {

std::shared_ptr<const Model> delta() {
  static const auto model = std::make_shared<const Model>(loadModel("delta"));
  return model;
}

Eigen::Vector3d platform(const Eigen::VectorXd& q) { return q.segment<3>(3); }

// The path as a function of time, for deltaMotorTargets.
Eigen::Vector3d path(double t) { return pickAndPlacePath(t); }

TEST(DeltaLaw, InverseKinematicsIsTheAssembledModel) {
  // wherever the simulation has put the platform along the path, the motor angles are its
  // inverse kinematics
  Simulator sim(delta(), Formulation::kAba, Integrator::kRk4, 1e-3);
  DeltaLaw law(delta(), 10.0);
  for (int k = 0; k < 2000; ++k) {
    const auto [target, rate] = deltaMotorTargets(path, sim.time() + 1e-3);
    sim.step(law.torques(target, rate, asSpan(sim.q()), asSpan(sim.v())));
    if (k % 100 != 0) continue;
    const Eigen::Vector3d angles = deltaInverseKinematics(platform(sim.q()));
    EXPECT_LT((angles - sim.q().head<3>()).cwiseAbs().maxCoeff(), 1e-8) << "step " << k;
  }
  EXPECT_TRUE(deltaInverseKinematics(Eigen::Vector3d(0, 0, -2.0)).hasNaN());  // out of reach
}

TEST(DeltaLaw, GravityCompensationHoldsThePlatformAtRest) {
  // on target and at rest, the law's torques leave the constrained accelerations at zero
  Simulator sim(delta(), Formulation::kAba, Integrator::kRk4, 1e-3);
  DeltaLaw law(delta(), 10.0);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(delta()->nv);
  const Eigen::VectorXd tau =
      law.torques(sim.q().head<3>(), Eigen::Vector3d::Zero(), asSpan(sim.q()), asSpan(v));
  EXPECT_GT(tau.head<3>().norm(), 0.1);  // gravity does load the motors
  Data data(*delta());
  LoopClosureStage stage(*delta(), formulationInfo(Formulation::kAba).inverse_inertia);
  Eigen::VectorXd qdd = forwardDynamics(Formulation::kAba, *delta(), data, sim.q(), v, tau);
  stage.accelerations(*delta(), data, sim.q(), v, tau, qdd);
  EXPECT_LT(qdd.cwiseAbs().maxCoeff(), 1e-9);
}

TEST(DeltaLaw, ThePlatformFollowsThePickAndPlacePath) {
  // 1 kHz, the torques computed from the state of the cycle before (as over UDP); after a 1 s
  // approach the platform stays within 1 mm of the path (10 Hz motor bandwidth, 0.45 m/s peaks;
  // measured 0.53 mm)
  Simulator sim(delta(), Formulation::kAba, Integrator::kRk4, 1e-3);
  DeltaLaw law(delta(), 10.0);
  double worst = 0.0;
  for (int k = 0; k < 5000; ++k) {
    const auto [target, rate] = deltaMotorTargets(path, sim.time() + 1e-3);
    ASSERT_FALSE(target.hasNaN());
    sim.step(law.torques(target, rate, asSpan(sim.q()), asSpan(sim.v())));
    if (sim.time() > 1.0)
      worst = std::max(worst, (platform(sim.q()) - pickAndPlacePath(sim.time())).norm());
  }
  std::cout << "[ measured ] delta pick-and-place: worst tracking error after 1 s " << worst * 1e3
            << " mm\n";
  EXPECT_LT(worst, 1e-3);
}

}  // namespace
}  // namespace hilsim::examples
