// The Riccati transfer matrix method (engine/algorithms/riccati_transfer.h, docs/RICCATI.md) on
// the planar branch pendulum of seed 000 §5.1 (notes §6.1): four rods of 1 kg and 1 m, body 7
// pinned at its midpoint to the ceiling, body 1 hanging from one end, the chain 5–3 from the
// other; g = 9.8. The notes give the exact accelerations and joint forces at t = 0 and a reference
// trajectory (RK4, 1 ms, two independent solvers agreeing to every printed digit).
#include "engine/algorithms/riccati_transfer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numbers>

#include "engine/builder/model_builder.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

constexpr double kA = 0.5;   // half length [m]
constexpr double kG = 9.8;   // the notes' g [m/s²]
constexpr double kPi = std::numbers::pi;

// Each rod's frame has its origin at the rod's output end (where its joint holds it) and its x
// axis along input → output, so that the paper's absolute angle θ_i of the vector I → C is the
// angle of the frame's x axis; the rod lies along −x, its centre at x = −a. Body 7's origin is
// its midpoint (the ceiling pivot), its input I1 at −a and I2 at +a along x.
// Joint coordinates are relative: q7 = θ7, q1 = θ1 − θ7, q5 = θ5 − θ7, q3 = θ3 − θ5.
std::shared_ptr<const Model> branchPendulum() {
  ModelBuilder builder("riccati_demo");
  builder.setGravity(Vector3(0.0, -kG, 0.0));
  // J about the centre m a²/3 = 1/12 kg·m² across the rod, none about its axis (J'_I of the paper)
  const Matrix3 across = Vector3(0.0, 1.0 / 12.0, 1.0 / 12.0).asDiagonal();
  const Inertia rod(1.0, Vector3(-kA, 0.0, 0.0), across);
  const Inertia centred(1.0, Vector3::Zero(), across);
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  const auto at = [](double x) { return Transform(Matrix3::Identity(), Vector3(x, 0.0, 0.0)); };
  builder.addBody("body7", "world", about_z, Transform(), centred);
  builder.addBody("body1", "body7", about_z, at(-kA), rod);
  builder.addBody("body5", "body7", about_z, at(kA), rod);
  builder.addBody("body3", "body5", about_z, at(-2.0 * kA), rod);
  return std::make_shared<const Model>(builder.build());
}

// θ = (θ1, θ3, θ5, θ7) from q = (q7, q1, q5, q3) (the bodies in model order 7, 1, 5, 3)
Eigen::Vector4d absoluteAngles(const Eigen::VectorXd& q) {
  const double t7 = q(0), t1 = t7 + q(1), t5 = t7 + q(2), t3 = t5 + q(3);
  return Eigen::Vector4d(t1, t3, t5, t7);
}

Eigen::VectorXd initialQ() {
  // θ1 = θ3 = θ5 = π/2 (hanging), θ7 = 0 (horizontal)
  return (Eigen::VectorXd(4) << 0.0, kPi / 2, kPi / 2, 0.0).finished();
}

TEST(RiccatiDemo, AccelerationsAndJointForcesAtTheStart) {
  const auto model = branchPendulum();
  Data data(*model, formulationInfo(Formulation::kRtmm).workspace);
  const Eigen::VectorXd q = initialQ(), v = Eigen::VectorXd::Zero(4), tau = v;
  const Eigen::VectorXd qdd = riccatiTransferForwardDynamics(*model, data, q, v, tau);
  // θ̈7 = −3g/(10a) = −0.6 g, θ̈1 = θ̈3 = θ̈5 = 0 (notes §6.1, by hand: the effective inertia about
  // the pivot is (10/3) m a², the torque (2 − 1) m g a); q̈ is relative
  const double theta7_dd = -0.6 * kG;
  EXPECT_NEAR(qdd(0), theta7_dd, test::kAlgebraTol * 10);
  EXPECT_NEAR(qdd(1), -theta7_dd, test::kAlgebraTol * 10);
  EXPECT_NEAR(qdd(2), -theta7_dd, test::kAlgebraTol * 10);
  EXPECT_NEAR(qdd(3), 0.0, test::kAlgebraTol * 10);
  // the states of the paper at the joints (its sign convention): ÿ_1O = +2.94, ÿ_5O = −2.94 m/s²;
  // q_y at the outputs of 7, 1, 5, 3: −36.26, −12.74, −13.72, −6.86 N; every x-force 0
  const auto z7 = riccatiTransferState(*model, data, 1), z1 = riccatiTransferState(*model, data, 2),
             z5 = riccatiTransferState(*model, data, 3), z3 = riccatiTransferState(*model, data, 4);
  constexpr double kTol = 1e-12;  // exact numbers, O(10) in size: round-off only
  EXPECT_NEAR(z1(1), 0.3 * kG, kTol);
  EXPECT_NEAR(z5(1), -0.3 * kG, kTol);
  EXPECT_NEAR(z7(10), -3.7 * kG, kTol);
  EXPECT_NEAR(z1(10), -1.3 * kG, kTol);
  EXPECT_NEAR(z5(10), -1.4 * kG, kTol);
  EXPECT_NEAR(z3(10), -0.7 * kG, kTol);
  for (const auto* z : {&z7, &z1, &z5, &z3}) {
    EXPECT_NEAR((*z)(9), 0.0, kTol);
    EXPECT_NEAR((*z)(8), 0.0, kTol);  // no moment at the smooth (ball) hinges: m_z = 0
  }
}

TEST(RiccatiDemo, FollowsTheNotesTrajectoryWithEnergyConserved) {
  // RK4 at 1 ms as the paper. The motion is chaotic: the notes' values (8 decimals) are compared
  // up to 2 s, where two solvers' round-off has not yet grown past 1e-7 rad.
  const auto model = branchPendulum();
  Simulator sim(model, Formulation::kRtmm, Integrator::kRk4, 1e-3);
  sim.setState(initialQ(), Eigen::VectorXd::Zero(4));
  const double energy0 = sim.energy();
  EXPECT_NEAR(energy0, -24.5, 1e-12);  // the notes' E with the pivot as the height datum
  struct Sample {
    double t;
    Eigen::Vector4d theta;  // θ1, θ3, θ5, θ7
  };
  const Sample samples[] = {
      {0.25, {1.55856598, 1.56790842, 1.58125049, -0.18446199}},
      {0.50, {1.38181162, 1.55837238, 1.72740746, -0.78262572}},
      {1.00, {1.28766658, 2.35475417, 1.35850648, -1.73654832}},
      {2.00, {1.60616333, 1.55416932, 1.12359394, -2.21079549}},
  };
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(4);
  int step = 0;
  for (const Sample& s : samples) {
    for (; step < std::lround(s.t / 1e-3); ++step) sim.step(tau);
    const Eigen::Vector4d theta = absoluteAngles(sim.q());
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(theta(k), s.theta(k), 1e-7) << "t = " << s.t << ", angle " << k;
  }
  EXPECT_NEAR(sim.energy(), energy0, 1e-8);
}

}  // namespace
}  // namespace hilsim
