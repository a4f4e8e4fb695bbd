// rk4StepLimit: the largest stable RK4 step on a model's joint springs and dampers, against the
// two closed forms of RK4's stability region (real axis 2.7853, imaginary axis 2√2), against runs
// just below and just above it, and on the bundled model whose gripper needs a step under 1 ms.
#include "engine/integrators/step_limit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"

namespace hilsim {
namespace {

// RK4's stability interval on the negative real axis: the root of |R(−x)| = 1 (Hairer, Wanner
// §IV.2, Table 2.1: 2.785)
constexpr double kRk4RealAxis = 2.785293563405282;

// One hinge about z, M = 0.5 kg·m² (moments 0.3, 0.3, 0.5), without gravity: λ = −d / M (damper) or ±i √(k / M) (spring).
Model hinge(double damping, double stiffness) {
  const std::string yaml =
      "version: 1\nname: hinge\ngravity: [0, 0, 0]\nbodies:\n"
      "  - name: b\n"
      "    joint: {type: revolute, name: j, axis: [0, 0, 1], damping: " + std::to_string(damping) +
      ", stiffness: " + std::to_string(stiffness) + "}\n"
      "    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.3, 0.3, 0.5, 0, 0, 0]}\n";
  return loadYamlString(yaml, ".", "hinge.yaml");
}

TEST(Rk4StepLimit, MatchesTheStabilityRegionOnBothAxes) {
  const Model damped = hinge(2.0, 0.0);  // λ = −4 /s
  StepLimit limit = rk4StepLimit(damped, damped.initialConfiguration());
  ASSERT_TRUE(limit.computed);
  EXPECT_NEAR(limit.max_dt, kRk4RealAxis / 4.0, 1e-12);
  EXPECT_NEAR(limit.rate, 4.0, 1e-12);
  EXPECT_EQ(limit.joint, 1);
  const Model spring = hinge(0.0, 8.0);  // λ = ±4i /s
  limit = rk4StepLimit(spring, spring.initialConfiguration());
  EXPECT_NEAR(limit.max_dt, 2.0 * std::sqrt(2.0) / 4.0, 1e-12);
  const Model free_hinge = hinge(0.0, 0.0);
  limit = rk4StepLimit(free_hinge, free_hinge.initialConfiguration());
  EXPECT_TRUE(limit.computed);
  EXPECT_TRUE(std::isinf(limit.max_dt));
}

// The bound is the one the integrator obeys: 1 % below it the damped hinge's speed decays, 1 %
// above it it grows.
TEST(Rk4StepLimit, RunsJustBelowDecayAndJustAboveGrow) {
  auto model = std::make_shared<const Model>(hinge(2.0, 0.0));
  const double max_dt = rk4StepLimit(*model, model->initialConfiguration()).max_dt;
  for (const double factor : {0.99, 1.01}) {
    Simulator sim(model, Formulation::kAba, Integrator::kRk4, factor * max_dt);
    sim.setState(model->initialConfiguration(), Eigen::VectorXd::Constant(1, 1.0));
    for (int k = 0; k < 2000; ++k) sim.step(Eigen::VectorXd::Zero(1));
    const double speed = std::abs(sim.v()(0));
    if (factor < 1.0) {
      EXPECT_LT(speed, 1.0) << "dt " << factor << " × the bound";
    } else {
      EXPECT_GT(speed, 1.0) << "dt " << factor << " × the bound";
    }
  }
}

// talos_full_v2's gripper fingertips: 1 N·m·s of damping on 2e-4 kg·m² of inertia. RK4 runs at
// 0.5 ms and blows up at 0.55 ms (docs/MODEL_FORMAT.md, "Bundled models"); the bound lies between.
TEST(Rk4StepLimit, NamesTheGripperJointThatNeedsASmallStep) {
  const Model talos = loadModel("talos_full_v2");
  const StepLimit limit = rk4StepLimit(talos, talos.initialConfiguration());
  ASSERT_TRUE(limit.computed);
  EXPECT_GT(limit.max_dt, 5.0e-4);
  EXPECT_LT(limit.max_dt, 5.5e-4);
  ASSERT_GT(limit.joint, 0);
  EXPECT_NE(talos.joint_names[limit.joint].find("gripper"), std::string::npos)
      << talos.joint_names[limit.joint];
  EXPECT_EQ(roundStepBelow(limit.max_dt), 2e-4);  // 0.9 × 5.2e-4 = 4.7e-4: the 1-2-5 step below
}

TEST(Rk4StepLimit, RoundStepsAreOneTwoFiveBelowTheFraction) {
  EXPECT_DOUBLE_EQ(roundStepBelow(1e-3, 1.0), 1e-3);
  EXPECT_DOUBLE_EQ(roundStepBelow(5.2e-4), 2e-4);
  EXPECT_DOUBLE_EQ(roundStepBelow(6e-3), 5e-3);
  EXPECT_DOUBLE_EQ(roundStepBelow(2.5e-2), 2e-2);
}

}  // namespace
}  // namespace hilsim
