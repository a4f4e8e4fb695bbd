// The Riccati transfer matrix method (engine/algorithms/riccati_transfer.h, docs/RICCATI.md) on
// the planar branch pendulum of seed 000 §5.1 (notes §6.1): four rods of 1 kg and 1 m, body 7
// pinned at its midpoint to the ceiling, body 1 hanging from one end, the chain 5–3 from the
// other; g = 9.8. The notes give the exact accelerations and joint forces at t = 0 and a reference
// trajectory (RK4, 1 ms, two independent solvers agreeing to every printed digit).
#include "engine/algorithms/riccati_transfer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <numbers>
#include <random>
#include <vector>

#include <Eigen/LU>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/rnea.h"
#include "engine/builder/model_builder.h"
#include "engine/builder/system_generator.h"
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
  double worst = 0.0;
  for (const Sample& s : samples) {
    for (; step < std::lround(s.t / 1e-3); ++step) sim.step(tau);
    const Eigen::Vector4d theta = absoluteAngles(sim.q());
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(theta(k), s.theta(k), 1e-7) << "t = " << s.t << ", angle " << k;
    worst = std::max(worst, (theta - s.theta).cwiseAbs().maxCoeff());
  }
  std::cout << "[ measured ] largest difference from the notes' angles " << worst << " rad\n";
  EXPECT_NEAR(sim.energy(), energy0, 1e-8);
}

// --- long chains: the Riccati recursion against the ordinary MSTMM ---

// A planar chain of the paper's rods in the x–y plane (g = 9.8 along −y), body 1 pinned to the
// ceiling at `ceiling`, each next one hanging from the previous one's lower end; frames as in
// branchPendulum (origin at the rod's output end, x along input → output). The absolute angle of
// body k is θ_k = q_1 + … + q_k.
std::shared_ptr<const Model> rodChain(int bodies, const Vector3& ceiling = Vector3::Zero()) {
  ModelBuilder builder("rod_chain");
  builder.setGravity(Vector3(0.0, -kG, 0.0));
  // the paper's rod, with a little inertia about its axis (which the planar motion never
  // reads): a zero principal moment would have the model builder check the chain for massless
  // joint motion, a cost that grows with its length
  const Matrix3 across = Vector3(1e-4, 1.0 / 12.0, 1.0 / 12.0).asDiagonal();
  const Inertia rod(1.0, Vector3(-kA, 0.0, 0.0), across);
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  for (int k = 1; k <= bodies; ++k)
    builder.addBody("rod" + std::to_string(k), k == 1 ? "world" : "rod" + std::to_string(k - 1),
                    about_z,
                    Transform(Matrix3::Identity(),
                              k == 1 ? ceiling : Vector3(-2.0 * kA, 0.0, 0.0)),
                    rod);
  return std::make_shared<const Model>(builder.build());
}

// The ordinary multibody transfer matrix method of the paper (eqs. 18–19) on that chain: the
// planar element matrices of the paper (state [ẍ ÿ Ω̇z mz qx qy 1], notes §6.1: the rod, eq. 36,
// and the smooth hinge, eq. 44, with the notes' fix B: no moment passed on), multiplied from the
// free tip (m = q = 0 there, the tip's r̈ and Ω̇ unknown) to the pinned root (r̈ = 0, m = 0 there),
// the 3 × 3 boundary system solved, and the states carried up again. Returns every body's
// absolute angular acceleration θ̈ (root first), from the rods' angles and rates (root first).
// Test-only: it shows where the plain product fails; rtmm is the method hilsim runs.
Eigen::VectorXd ordinaryTransferMatrixMethod(const std::vector<double>& theta,
                                             const std::vector<double>& theta_dot) {
  using Matrix7 = Eigen::Matrix<double, 7, 7>;
  using Vector7 = Eigen::Matrix<double, 7, 1>;
  const int n = static_cast<int>(theta.size());
  const double m = 1.0, a = kA, g = kG;
  const auto body = [&](int k) {  // eq. 36 for rod k
    const double s = std::sin(theta[k]), c = std::cos(theta[k]), w2 = theta_dot[k] * theta_dot[k];
    Matrix7 U = Matrix7::Identity();
    U(0, 2) = -2 * a * s;  U(0, 6) = -2 * a * c * w2;
    U(1, 2) = 2 * a * c;   U(1, 6) = -2 * a * s * w2;
    U(3, 0) = m * a * s;   U(3, 1) = -m * a * c;  U(3, 2) = -2 * m * a * a / 3;
    U(3, 4) = -2 * a * s;  U(3, 5) = 2 * a * c;   U(3, 6) = -m * a * g * c;
    U(4, 0) = -m;          U(4, 2) = m * a * s;   U(4, 6) = m * a * c * w2;
    U(5, 1) = -m;          U(5, 2) = -m * a * c;  U(5, 6) = m * a * s * w2 - m * g;
    return U;
  };
  const auto hinge = [&](int outboard) {  // eq. 44, fix B, with the outboard (root-side) rod's u
    const double s = std::sin(theta[outboard]), c = std::cos(theta[outboard]);
    Matrix7 U = Matrix7::Identity();
    U.row(2) << 3 * s / (2 * a), -3 * c / (2 * a), 0, 3 / (2 * m * a * a), -3 * s / (m * a),
        3 * c / (m * a), -3 * g * c / (2 * a);
    U.row(3).setZero();  // fix B: the hinge passes no moment
    return U;
  };
  // elements from the tip (body n − 1 in root-first order) to the root (body 0)
  std::vector<Matrix7> elements;
  for (int k = n - 1; k >= 0; --k) {
    elements.push_back(body(k));
    if (k > 0) elements.push_back(hinge(k - 1));
  }
  Matrix7 product = Matrix7::Identity();
  for (const Matrix7& U : elements) product = U * product;
  // root: ẍ = ÿ = 0 and m_z = 0 at the output, from z_tip = [ẍ ÿ Ω̇ 0 0 0 1]
  Eigen::Matrix3d A;
  Eigen::Vector3d b;
  const int rows[] = {0, 1, 3};
  for (int r = 0; r < 3; ++r) {
    A.row(r) = product.row(rows[r]).head<3>();
    b(r) = -product(rows[r], 6);
  }
  Vector7 z = Vector7::Zero();
  z.head<3>() = A.partialPivLu().solve(b);
  z(6) = 1.0;
  Eigen::VectorXd theta_dd(n);
  int k = n - 1;
  for (std::size_t e = 0; e < elements.size(); e += 2, --k) {
    theta_dd(k) = z(2);  // Ω̇z of rod k, at its input
    z = elements[e] * z;
    if (e + 1 < elements.size()) z = elements[e + 1] * z;
  }
  return theta_dd;
}

// A chain's state near hanging down, and its absolute angular accelerations by ABA.
struct ChainState {
  Eigen::VectorXd q, v;
  std::vector<double> theta, theta_dot;
};

ChainState hangingState(int bodies, std::mt19937& rng) {
  std::uniform_real_distribution<double> noise(-0.3, 0.3);
  ChainState s{Eigen::VectorXd(bodies), Eigen::VectorXd(bodies), {}, {}};
  double theta = 0.0, theta_dot = 0.0;
  for (int k = 0; k < bodies; ++k) {
    s.q(k) = (k == 0 ? kPi / 2 : 0.0) + noise(rng);
    s.v(k) = noise(rng);
    theta += s.q(k);
    theta_dot += s.v(k);
    s.theta.push_back(theta);
    s.theta_dot.push_back(theta_dot);
  }
  return s;
}

Eigen::VectorXd absoluteFromRelative(const Eigen::VectorXd& x) {
  Eigen::VectorXd out(x.size());
  double sum = 0.0;
  for (Eigen::Index k = 0; k < x.size(); ++k) out(k) = sum += x(k);
  return out;
}

TEST(RiccatiChain, TheOrdinaryProductFailsPastTwentyBodiesAndRtmmDoesNot) {
  // The notes (§7, §8.2) measured the plain product at 1e-10 for 10 rods, 5e-5 for 20 and past 1
  // from 30; the Riccati recursion stays at round-off. Relative to ABA, on three random states
  // each. The limits: 1e-8 where the product still works (10 rods), past 1e-3 where it must have
  // failed (30 and 50: ~1e2 and ~1e13 in the notes), and the formulations' 1e-10 for rtmm
  // (measured: 2e-14 at 10 rods, 2e-12 at 50: round-off grows with the length).
  std::mt19937 rng(17);
  for (const int bodies : {10, 30, 50}) {
    const auto model = rodChain(bodies);
    Data aba_data(*model), rtmm_data(*model);
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(bodies);
    for (int trial = 0; trial < 3; ++trial) {
      const ChainState s = hangingState(bodies, rng);
      const Eigen::VectorXd reference = absoluteFromRelative(aba(*model, aba_data, s.q, s.v, tau));
      const Eigen::VectorXd rtmm = absoluteFromRelative(
          riccatiTransferForwardDynamics(*model, rtmm_data, s.q, s.v, tau));
      const Eigen::VectorXd product = ordinaryTransferMatrixMethod(s.theta, s.theta_dot);
      const double product_error = test::relativeDifference(product, reference);
      EXPECT_LT(test::relativeDifference(rtmm, reference), test::kFormulationRelTol)
          << bodies << " rods";
      if (bodies == 10)
        EXPECT_LT(product_error, 1e-8) << "the product works for 10 rods";
      else
        EXPECT_FALSE(product_error < 1e-3) << "the product of " << bodies << " rods: " << product_error;
      std::cout << "[ measured ] " << bodies << " rods: ordinary MSTMM " << product_error
                << ", rtmm " << test::relativeDifference(rtmm, reference) << " relative to ABA\n";
    }
  }
}

TEST(RiccatiChain, TwentyThousandRodsStayAccurate) {
  // The notes' longest chain: 20 000 planar rods, curled by random joint angles (±0.3 rad) and
  // rates. The exact q̈ does not change when the whole chain is moved: rtmm, which works from
  // point to point, must not either (1e-11 relative; measured 6e-13) when the ceiling is 1000 m
  // from W's origin. ABA, whose spatial vectors are taken about W's origin, does change there
  // (lever arms of hundreds of metres to the rods), so it is the referee only to its own
  // accuracy: rtmm agrees with it to twice what ABA changes by in the same run. That round-off
  // depends on the build (5.9e-9 native on an AMD EPYC, 7.6e-9 portable: FMA contraction), and
  // so does the agreement (5.8e-9, 7.5e-9); a fixed bound would pass on one processor only.
  constexpr int kRods = 20000;
  std::mt19937 rng(19);
  const ChainState s = hangingState(kRods, rng);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(kRods);
  Eigen::VectorXd rtmm[2], by_aba[2];
  for (const int moved : {0, 1}) {
    const auto model = rodChain(kRods, Vector3(moved * 1000.0, 0.0, 0.0));
    Data data(*model, DataWorkspace::kPerBody);
    rtmm[moved] = riccatiTransferForwardDynamics(*model, data, s.q, s.v, tau);
    by_aba[moved] = aba(*model, data, s.q, s.v, tau);
  }
  const double rtmm_moved = test::relativeDifference(rtmm[1], rtmm[0]);
  const double aba_moved = test::relativeDifference(by_aba[1], by_aba[0]);
  const double rtmm_vs_aba = test::relativeDifference(rtmm[0], by_aba[0]);
  EXPECT_LT(rtmm_moved, 1e-11);
  EXPECT_LT(aba_moved, 1e-7);  // ABA's round-off on this chain, 6e-9 to 8e-9 measured
  EXPECT_LT(rtmm_vs_aba, 2.0 * aba_moved);
  std::cout << "[ measured ] 20000 rods: moved 1000 m, rtmm changes by " << rtmm_moved
            << " and ABA by " << aba_moved << "; rtmm against ABA " << rtmm_vs_aba << "\n";
}

TEST(RiccatiGenerated, EveryShapeAndJointAgreesWithAba) {
  // the generated systems (engine/builder/system_generator.h) at random states; spherical links
  // a tenth as thick as long (thin ones make every formulation ill-conditioned, docs/RICCATI.md)
  std::mt19937 rng(23);
  for (const GeneratedShape shape :
       {GeneratedShape::kChain, GeneratedShape::kTree, GeneratedShape::kBranch}) {
    for (const JointType joint : {JointType::kRevolute, JointType::kSpherical}) {
      SystemSpec spec;
      spec.shape = shape;
      spec.bodies = 40;
      spec.joint = joint;
      spec.link_radius = 0.1;
      const Model model = generateSystem(spec, "generated");
      std::uniform_real_distribution<double> unit(-1.0, 1.0);
      Eigen::VectorXd q = model.initialConfiguration();
      for (Eigen::Index k = 0; k < q.size(); ++k) q(k) += 0.2 * unit(rng);
      for (int i = 1; i < model.nbodies; ++i)  // quaternions back to unit length
        if (model.joints[i].type == JointType::kSpherical)
          q.segment<4>(model.idx_q[i]).normalize();
      Eigen::VectorXd v(model.nv), tau(model.nv);
      for (Eigen::Index k = 0; k < v.size(); ++k) v(k) = unit(rng), tau(k) = unit(rng);
      Data aba_data(model), rtmm_data(model);
      const Eigen::VectorXd reference = aba(model, aba_data, q, v, tau);
      EXPECT_LT(test::relativeDifference(
                    riccatiTransferForwardDynamics(model, rtmm_data, q, v, tau), reference),
                test::kFormulationRelTol)
          << generatedShapeName(shape) << " " << (joint == JointType::kSpherical ? "spherical" : "revolute");
    }
  }
}

}  // namespace
}  // namespace hilsim
