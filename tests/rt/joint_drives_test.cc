// JointDrives: the position and velocity loops against their closed-loop responses (sampled,
// exactly; continuous, within the zero-order hold's delay), the stability bound of a sampled loop
// on both sides of it, the integral's bound, the effort limit on the loops' output, and the
// configuration errors.

#include "rt/joint_drives.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "engine/builder/model_builder.h"
#include "engine/integrators/simulator.h"
#include "tests/support/tolerances.h"

namespace hilsim::rt {
namespace {

constexpr double kMass = 2.0;  // [kg]

/// A block of kMass on a prismatic joint along x (gravity along z: no force along the joint), or
/// along z with `vertical` (gravity −9.81 m/s² along the joint).
std::shared_ptr<const Model> slider(bool vertical = false, double effort_limit = INFINITY) {
  JointProperties properties;
  properties.effort = effort_limit;
  ModelBuilder builder("slider");
  builder.addBody("block", "world",
                  Joint::prismatic(vertical ? Vector3::UnitZ() : Vector3::UnitX()), Transform(),
                  Inertia(kMass, Vector3::Zero(), 0.01 * Matrix3::Identity()), properties);
  return std::make_shared<const Model>(builder.build());
}

/// Runs `steps` physics steps of the drives on `model` from rest at 0 and calls
/// `each(step, q, v, tau)` after every one.
template <typename Each>
void run(const std::shared_ptr<const Model>& model, JointDrives& drives, const DriveReference& ref,
         double dt, int steps, Each each) {
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, dt);
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  for (int n = 1; n <= steps; ++n) {
    drives.compute(sim.q(), sim.v(), ref, tau);
    sim.step(tau);
    each(n, sim.q(), sim.v(), sim.appliedTau());
  }
}

// RK4 integrates a constant force on a free mass exactly (x is quadratic in t over a step), so
// the simulated loop is the sampled PD loop e' = e + h v + h²/2 u, v' = v + h u,
// u = (kp (r − x) − kd v) / m to rounding.
TEST(JointDrives, PositionStepIsTheSampledClosedLoopExactly) {
  const auto model = slider();
  constexpr double kp = 400.0, kd = 40.0, h = 1e-3, r = 0.1;
  JointDrives drives(*model, {{"block", CommandInterface::kPosition, kp, kd, 0.0}}, h);
  const double position[1] = {r}, velocity[1] = {0.0}, tau_ff[1] = {0.0};
  double x = 0.0, v = 0.0, worst = 0.0;
  run(model, drives, {tau_ff, position, velocity}, h, 2000,
      [&](int, const Eigen::VectorXd& q, const Eigen::VectorXd& qd, const Eigen::VectorXd&) {
        const double u = (kp * (r - x) - kd * v) / kMass;
        x += h * v + 0.5 * h * h * u;
        v += h * u;
        worst = std::max({worst, std::abs(q[0] - x), std::abs(qd[0] - v)});
      });
  EXPECT_LT(worst, test::kAlgebraTol);
  EXPECT_NEAR(x, r, 1e-9) << "settled after 2 s (ζ = 0.71, ω = 14 rad/s)";
}

// The continuous closed loop m ẍ = kp (r − x) − kd ẋ from rest: the sampled loop differs by its
// zero-order hold, to first order a delay of h/2, hence by at most about (h/2)·max|ẋ|: twice that
// is the tolerance.
TEST(JointDrives, PositionStepFollowsTheContinuousClosedLoop) {
  const auto model = slider();
  constexpr double kp = 400.0, kd = 16.0, h = 1e-4, r = 0.1;  // ζ = 0.28: an overshoot
  const double wn = std::sqrt(kp / kMass), zeta = kd / (2.0 * std::sqrt(kp * kMass));
  const double wd = wn * std::sqrt(1.0 - zeta * zeta);
  const auto analytic = [&](double t) {
    return r * (1.0 - std::exp(-zeta * wn * t) *
                          (std::cos(wd * t) + zeta / std::sqrt(1.0 - zeta * zeta) * std::sin(wd * t)));
  };
  const auto analytic_speed = [&](double t) {
    return r * wn / std::sqrt(1.0 - zeta * zeta) * std::exp(-zeta * wn * t) * std::sin(wd * t);
  };
  double max_speed = 0.0;
  for (int n = 0; n <= 10000; ++n) max_speed = std::max(max_speed, std::abs(analytic_speed(n * h)));
  JointDrives drives(*model, {{"block", CommandInterface::kPosition, kp, kd, 0.0}}, h);
  const double position[1] = {r}, velocity[1] = {0.0};
  double worst = 0.0, peak = 0.0;
  run(model, drives, {nullptr, position, velocity}, h, 10000,
      [&](int n, const Eigen::VectorXd& q, const Eigen::VectorXd&, const Eigen::VectorXd&) {
        worst = std::max(worst, std::abs(q[0] - analytic(n * h)));
        peak = std::max(peak, q[0]);
      });
  EXPECT_LT(worst, h * max_speed) << "max |ẋ| = " << max_speed << " m/s";
  // the overshoot of a second-order system, exp(−πζ/√(1−ζ²)) = 40 %
  EXPECT_NEAR(peak / r - 1.0, std::exp(-M_PI * zeta / std::sqrt(1.0 - zeta * zeta)), 2e-3);
}

// A P velocity loop on a free mass: v_n = v_r (1 − (1 − h kd/m)^n), stable iff h kd/m < 2.
TEST(JointDrives, VelocityLoopIsTheSampledFirstOrderLoopOnBothSidesOfItsStabilityBound) {
  const auto model = slider();
  constexpr double h = 1e-3, v_ref = 0.5;
  for (const double b : {0.2, 1.9, 2.1}) {  // h·kd/m
    SCOPED_TRACE("h·kd/m = " + std::to_string(b));
    const double kd = b * kMass / h;
    JointDrives drives(*model, {{"block", CommandInterface::kVelocity, 0.0, kd, 0.0}}, h);
    const double velocity[1] = {v_ref};
    double worst = 0.0, last = 0.0;
    run(model, drives, {nullptr, nullptr, velocity}, h, 200,
        [&](int n, const Eigen::VectorXd&, const Eigen::VectorXd& v, const Eigen::VectorXd&) {
          const double expected = v_ref * (1.0 - std::pow(1.0 - b, n));
          worst = std::max(worst, std::abs(v[0] - expected) / std::max(1.0, std::abs(expected)));
          last = v[0];
        });
    EXPECT_LT(worst, test::kAlgebraTol);
    if (b < 2.0) {
      EXPECT_NEAR(last, v_ref, 1e-6);
    } else {
      EXPECT_GT(std::abs(last - v_ref), 1e3) << "(1 − 2.1)^200 grows without bound";
    }
    // the check at creation tells the two apart
    const std::string problem = drives.stabilityProblem(Eigen::VectorXd::Zero(1));
    EXPECT_EQ(problem.empty(), b < 2.0) << problem;
  }
}

// kd ≤ kp·h/2 makes a sampled PD loop unstable whatever the inertia (Jury's condition).
TEST(JointDrives, APositionLoopWithTooLittleDampingForItsStepIsRefusedAndDoesDiverge) {
  const auto model = slider();
  constexpr double h = 1e-3, kp = 1e5;
  for (const double kd : {0.9 * kp * h / 2.0, 1.5 * kp * h / 2.0}) {
    JointDrives drives(*model, {{"block", CommandInterface::kPosition, kp, kd, 0.0}}, h);
    const std::string problem = drives.stabilityProblem(Eigen::VectorXd::Zero(1));
    const double position[1] = {0.01};
    double last = 0.0, largest = 0.0;
    run(model, drives, {nullptr, position, nullptr}, h, 5000,
        [&](int, const Eigen::VectorXd& q, const Eigen::VectorXd&, const Eigen::VectorXd&) {
          last = q[0];
          largest = std::max(largest, std::abs(q[0]));
        });
    if (kd < kp * h / 2.0) {
      EXPECT_NE(problem.find("kd > kp·dt/2"), std::string::npos) << problem;
      // |λ| = √(1 − b + a/2) = 1.00125 per step: e^6.25 ≈ 500 times the step of 0.01 m
      EXPECT_GT(largest, 1.0) << "diverged";
    } else {
      EXPECT_EQ(problem, "");
      EXPECT_NEAR(last, 0.01, 1e-9);
    }
  }
}

// Against gravity along the joint a P velocity loop keeps an error m g / kd; the integral takes
// it away, and it never grows past the effort limit when the drive cannot hold the load.
TEST(JointDrives, TheVelocityIntegralCancelsASteadyLoadWithinTheEffortLimit) {
  constexpr double h = 1e-3, kd = 40.0, ki = 200.0, weight = kMass * 9.81;
  const double velocity[1] = {0.0};
  {
    const auto model = slider(true);
    JointDrives p_only(*model, {{"block", CommandInterface::kVelocity, 0.0, kd, 0.0}}, h);
    double last = 0.0;
    run(model, p_only, {nullptr, nullptr, velocity}, h, 3000,
        [&](int, const Eigen::VectorXd&, const Eigen::VectorXd& v, const Eigen::VectorXd&) {
          last = v[0];
        });
    EXPECT_NEAR(last, -weight / kd, 1e-9);
    JointDrives pi(*model, {{"block", CommandInterface::kVelocity, 0.0, kd, ki}}, h);
    run(model, pi, {nullptr, nullptr, velocity}, h, 10000,
        [&](int, const Eigen::VectorXd&, const Eigen::VectorXd& v, const Eigen::VectorXd&) {
          last = v[0];
        });
    EXPECT_NEAR(last, 0.0, 1e-9);
  }
  {
    constexpr double kLimit = 12.0;  // < m g: the block falls
    const auto model = slider(true, kLimit);
    JointDrives pi(*model, {{"block", CommandInterface::kVelocity, 0.0, kd, ki}}, h);
    double applied = 0.0;
    run(model, pi, {nullptr, nullptr, velocity}, h, 3000,
        [&](int, const Eigen::VectorXd&, const Eigen::VectorXd&, const Eigen::VectorXd& tau) {
          applied = tau[0];
        });
    EXPECT_DOUBLE_EQ(applied, kLimit) << "the drive gives all it has";
    // at zero error the output is the integral alone: at the limit, not beyond it
    const double at_rest[1] = {0.0};
    Eigen::VectorXd tau(1);
    pi.compute(Eigen::VectorXd::Zero(1), Eigen::VectorXd::Zero(1), {nullptr, nullptr, at_rest},
               tau);
    EXPECT_LE(tau[0], kLimit + 1e-12);
    EXPECT_GT(tau[0], kLimit - 1.0);
    pi.resetIntegrals();
    pi.compute(Eigen::VectorXd::Zero(1), Eigen::VectorXd::Zero(1), {nullptr, nullptr, at_rest},
               tau);
    EXPECT_EQ(tau[0], 0.0);
  }
}

TEST(JointDrives, TheEffortLimitCutsTheLoopsOutput) {
  constexpr double kLimit = 5.0, h = 1e-3;
  const auto model = slider(false, kLimit);
  JointDrives drives(*model, {{"*", CommandInterface::kPosition, 1000.0, 50.0, 0.0}}, h);
  const double position[1] = {1.0};
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, h);
  Eigen::VectorXd tau(1);
  drives.compute(sim.q(), sim.v(), {nullptr, position, nullptr}, tau);
  EXPECT_DOUBLE_EQ(tau[0], 1000.0) << "the loop asks kp·1 m";
  sim.step(tau);
  EXPECT_DOUBLE_EQ(sim.appliedTau()[0], kLimit);
  EXPECT_EQ(sim.effortSaturations()[0], 1u);
}

// A planar two-link arm: the shoulder follows positions, the elbow takes efforts; the shoulder's
// feed-forward adds to its loop.
TEST(JointDrives, InterfacesMixPerJointAndFeedForwardAdds) {
  ModelBuilder builder("two_link");
  builder.setGravity(Vector3::Zero());
  const Inertia link(1.0, Vector3(0.25, 0, 0), 0.01 * Matrix3::Identity());
  builder.addBody("upper", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link);
  builder.addBody("lower", "upper", Joint::revolute(Vector3::UnitZ()),
                  Transform(Matrix3::Identity(), Vector3(0.5, 0, 0)), link);
  const Model model = builder.build();
  JointDrives drives(model, {{"upper", CommandInterface::kPosition, 50.0, 5.0, 0.0}}, 1e-3);
  EXPECT_EQ(drives.interface(0), CommandInterface::kPosition);
  EXPECT_EQ(drives.interface(1), CommandInterface::kEffort);
  EXPECT_TRUE(drives.anyPosition());
  EXPECT_FALSE(drives.anyVelocity());
  const double tau_ff[2] = {0.5, -0.25}, position[2] = {0.2, 99.0}, velocity[2] = {0.1, 99.0};
  Eigen::VectorXd tau(2);
  const Eigen::Vector2d q(0.05, 0.3), v(-0.1, 2.0);
  drives.compute(q, v, {tau_ff, position, velocity}, tau);
  EXPECT_DOUBLE_EQ(tau[0], 0.5 + 50.0 * (0.2 - 0.05) + 5.0 * (0.1 - -0.1));
  EXPECT_DOUBLE_EQ(tau[1], -0.25) << "an effort joint reads neither position nor velocity";
  double held[2] = {0.0, 7.0};
  drives.holdAt(q, held);
  EXPECT_EQ(held[0], 0.05);
  EXPECT_EQ(held[1], 7.0);
}

TEST(JointDrives, ConfigurationErrorsNameTheEntryAndTheReason) {
  ModelBuilder builder("mixed");
  builder.addBody("ball", "world", Joint::spherical(), Transform(),
                  Inertia(1.0, Vector3::Zero(), 0.1 * Matrix3::Identity()));
  builder.addBody("hinge", "ball", Joint::revolute(Vector3::UnitY()), Transform(),
                  Inertia(1.0, Vector3::Zero(), 0.1 * Matrix3::Identity()));
  const Model model = builder.build();
  const auto refused = [&](const std::vector<DriveConfig>& drives, const std::string& why) {
    try {
      JointDrives d(model, drives, 1e-3);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({{"elbow", CommandInterface::kPosition, 1, 1, 0}}, "has no such joint");
  refused({{"ball", CommandInterface::kVelocity, 0, 1, 0}}, "spherical joint takes efforts only");
  refused({{"hinge", CommandInterface::kPosition, 0, 1, 0}}, "kp > 0 and kd > 0");
  refused({{"hinge", CommandInterface::kPosition, 1, 1, 1}}, "takes no ki");
  refused({{"hinge", CommandInterface::kVelocity, 1, 1, 0}}, "takes no kp");
  refused({{"hinge", CommandInterface::kVelocity, 0, 1, -1}}, "kd > 0 and ki ≥ 0");
  refused({{"hinge", CommandInterface::kEffort, 1, 0, 0}}, "takes no gains");
  refused({{"hinge", CommandInterface::kPosition, NAN, 1, 0}}, "finite");
  refused({{"hinge", CommandInterface::kEffort}, {"hinge", CommandInterface::kEffort}},
          "drives[1] (joint 'hinge'): named twice");
  refused({{"*", CommandInterface::kEffort}, {"*", CommandInterface::kEffort}}, "a second '*'");
  // "*" leaves the joints without set-points to efforts
  const JointDrives all(model, {{"*", CommandInterface::kVelocity, 0, 1, 0}}, 1e-3);
  for (int dof = 0; dof < 3; ++dof) EXPECT_EQ(all.interface(dof), CommandInterface::kEffort);
  EXPECT_EQ(all.interface(3), CommandInterface::kVelocity);
  EXPECT_TRUE(JointDrives(model, {}, 1e-3).effortOnly());
}

}  // namespace
}  // namespace hilsim::rt
