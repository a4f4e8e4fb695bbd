// Closed loops in seed 001's Hamiltonian form (engine/algorithms/hdca_loops.h, docs/HDCA.md
// "Closed loops"; the rates of the rows' forces it reads are checked in loops_test): the
// velocities of augmented momenta against a dense solve of seed 001 (8); the rates (7) give the
// constrained accelerations of aba's stage; the reset leaves v; and the paper's three test
// systems (4- and 8-body single loops, an 8-body double loop; m = 1 kg, l = 1 m,
// J_c = diag(1, 1, 1), planar, revolute joints) run 10 s without stabilisation with the loops
// closed at velocity level to round-off, energy kept and the motion symmetric.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <Eigen/LU>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/hdca.h"
#include "engine/algorithms/hdca_loops.h"
#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/model/configuration.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::LoopCase;
using test::randomLoopCase;

Eigen::MatrixXd closureJacobian(const Model& model, Data& data, const Eigen::VectorXd& q) {
  Eigen::MatrixXd A(model.nconstraints, model.nv);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {.jacobian = &A});
  return A;
}

// v projected onto A v = 0 in M's metric: the velocity of a consistent state
Eigen::VectorXd consistentVelocity(const Eigen::MatrixXd& M, const Eigen::MatrixXd& A,
                                   const Eigen::VectorXd& v) {
  const Eigen::MatrixXd Minv_At = M.ldlt().solve(A.transpose());
  const Eigen::VectorXd sigma = (A * Minv_At).ldlt().solve(A * v);
  return v - Minv_At * sigma;
}

TEST(HdcaLoops, VelocitiesSolveTheAugmentedSystem) {
  // P = M v + Aᵀ σ for a consistent v and any σ: (8) gives back v and Aᵀσ, as a dense LU of
  // the (nv + m) × (nv + m) matrix [[M, Aᵀ], [A, 0]] does; A v = 0 to round-off. One to three
  // random closures on random spatial trees, the types in turn from a different one each trial
  // (every type, alone and with others): single and coupled loops, most with rows that depend on
  // each other (K of rank below m)
  std::mt19937 rng(42);
  for (int trial = 0; trial < 40; ++trial) {
    LoopCase c = randomLoopCase(rng, 8 + trial % 6, 1 + trial % 3, trial % 5);
    const Model& model = c.model;
    ASSERT_EQ(checkFormulation(model, Formulation::kHdca), "");
    const int nv = model.nv, m = model.nconstraints;
    Data data(model), reference(model);
    const Eigen::MatrixXd M = crba(model, reference, c.q);
    const Eigen::MatrixXd A = closureJacobian(model, reference, c.q);
    const Eigen::VectorXd v = consistentVelocity(M, A, c.v);
    const Eigen::VectorXd sigma = test::randomVector(m, rng);
    const Eigen::VectorXd P = M * v + A.transpose() * sigma;
    Eigen::MatrixXd kkt = Eigen::MatrixXd::Zero(nv + m, nv + m);
    kkt.topLeftCorner(nv, nv) = M;
    kkt.topRightCorner(nv, m) = A.transpose();
    kkt.bottomLeftCorner(m, nv) = A;
    Eigen::VectorXd rhs = Eigen::VectorXd::Zero(nv + m);
    rhs.head(nv) = P;
    const Eigen::VectorXd dense = kkt.fullPivLu().solve(rhs);

    HdcaLoops loops(model);
    Eigen::VectorXd v_hdca(nv), P_dot(nv);
    loops.momentumRates(model, data, c.q, P, c.tau, v_hdca, P_dot);
    const double scale = std::max(1.0, v.lpNorm<Eigen::Infinity>());
    EXPECT_LE((v_hdca - dense.head(nv)).lpNorm<Eigen::Infinity>(), test::kFormulationRelTol * scale)
        << "trial " << trial;
    EXPECT_LE((v_hdca - v).lpNorm<Eigen::Infinity>(), test::kFormulationRelTol * scale)
        << "trial " << trial;
    // σ itself is not unique where rows depend on each other (most of these random sets), its
    // impulses Aᵀσ are
    const Eigen::VectorXd impulses = A.transpose() * sigma;
    EXPECT_LE((A.transpose() * loops.impulses() - impulses).lpNorm<Eigen::Infinity>(),
              test::kFormulationRelTol * std::max(1.0, impulses.lpNorm<Eigen::Infinity>()))
        << "trial " << trial;
    EXPECT_LE(loops.velocityError(), test::kAlgebraTol * scale) << "trial " << trial;
    EXPECT_LE((A * v_hdca).lpNorm<Eigen::Infinity>(), test::kAlgebraTol * scale);
  }
}

// v(q ⊕ t v, P + t Ṗ) by the loops' phase 1
Eigen::VectorXd velocitiesAlong(const LoopCase& c, HdcaLoops& loops, Data& data,
                                const Eigen::VectorXd& P, const Eigen::VectorXd& P_dot,
                                const Eigen::VectorXd& v, double t) {
  const Model& model = c.model;
  Eigen::VectorXd q(model.nq), v_out(model.nv), rates(model.nv);
  integrateConfiguration(model, c.q, v, t, q);
  const Eigen::VectorXd P_t = P + t * P_dot;
  loops.momentumRates(model, data, q, P_t, c.tau, v_out, rates);
  return v_out;
}

TEST(HdcaLoops, MomentumRatesGiveTheConstrainedAccelerations) {
  // Along the motion (q̇, Ṗ) = (v, (7)) from a consistent state with impulses σ absorbed
  // (P = M v + Aᵀ σ), v changes at the constrained q̈: that of aba with the constraint stage
  // (its Baumgarte terms vanish where C = 0 and A v = 0). dv/dt by Richardson-extrapolated
  // central differences (h = 1e-3 and 5e-4: truncation h⁴ |v⁽⁵⁾| ~ 1e-12, round-off ε / h ~
  // 1e-13 relative); 1e-8 relative leaves room for the random mechanisms' size. Dropping Ȧᵀσ
  // moves the result by |σ| |Ȧ| ~ 1: the check sees it.
  std::mt19937 rng(43);
  for (int trial = 0; trial < 12; ++trial) {
    LoopCase c = randomLoopCase(rng, 8 + trial % 6, 1 + trial % 3, trial % 5);
    const Model& model = c.model;
    const int nv = model.nv, m = model.nconstraints;
    Data data(model), reference(model);
    const Eigen::MatrixXd M = crba(model, reference, c.q);
    const Eigen::MatrixXd A = closureJacobian(model, reference, c.q);
    const Eigen::VectorXd v = consistentVelocity(M, A, c.v);
    const Eigen::VectorXd sigma = test::randomVector(m, rng, 3.0);
    const Eigen::VectorXd P = M * v + A.transpose() * sigma;
    HdcaLoops loops(model);
    Eigen::VectorXd v_hdca(nv), P_dot(nv);
    loops.momentumRates(model, data, c.q, P, c.tau, v_hdca, P_dot);
    const auto central = [&](double h) {
      return Eigen::VectorXd((velocitiesAlong(c, loops, data, P, P_dot, v_hdca, h) -
                              velocitiesAlong(c, loops, data, P, P_dot, v_hdca, -h)) /
                             (2 * h));
    };
    const Eigen::VectorXd coarse = central(1e-3), fine = central(5e-4);
    const Eigen::VectorXd qdd_hdca = (4 * fine - coarse) / 3;

    Data aba_data(model);
    ConstraintRowStage stage(model, formulationInfo(Formulation::kAba));
    Eigen::VectorXd qdd = forwardDynamics(Formulation::kAba, model, aba_data, c.q, v, c.tau);
    stage.accelerations(model, aba_data, c.q, v, c.tau, qdd);
    EXPECT_LE((qdd_hdca - qdd).lpNorm<Eigen::Infinity>(),
              1e-8 * std::max(1.0, qdd.lpNorm<Eigen::Infinity>()))
        << "trial " << trial << ": " << (qdd_hdca - qdd).transpose();
  }
}

TEST(HdcaLoops, ResetLeavesTheVelocitiesAndReturnsTheImpulsesToZero) {
  std::mt19937 rng(44);
  LoopCase c = randomLoopCase(rng, 10, 2);
  const Model& model = c.model;
  Data data(model), reference(model);
  const Eigen::MatrixXd M = crba(model, reference, c.q);
  const Eigen::MatrixXd A = closureJacobian(model, reference, c.q);
  const Eigen::VectorXd v = consistentVelocity(M, A, c.v);
  Eigen::VectorXd P = M * v + A.transpose() * test::randomVector(model.nconstraints, rng, 100.0);
  HdcaLoops loops(model);
  Eigen::VectorXd v_before(model.nv), P_dot(model.nv), v_after(model.nv), P_dot_after(model.nv);
  loops.momentumRates(model, data, c.q, P, c.tau, v_before, P_dot);
  loops.resetImpulses(P, P_dot);
  EXPECT_LE((P - M * v).lpNorm<Eigen::Infinity>(), 1e-12 * 100.0);  // σ's size sets round-off
  loops.momentumRates(model, data, c.q, P, c.tau, v_after, P_dot_after);
  EXPECT_LE((v_after - v_before).lpNorm<Eigen::Infinity>(), 1e-12 * 100.0);
  EXPECT_LE(loops.impulses().lpNorm<Eigen::Infinity>(), 1e-12 * 100.0);
  // Ṗ of the reset state is Ṗ less Ȧᵀσ: what the reset subtracted
  EXPECT_LE((P_dot_after - P_dot).lpNorm<Eigen::Infinity>(), 1e-10 * 100.0);
}

// --- the paper's test systems (seed 001 §3.1; its Fig. 4 is not in the seed, so the geometry
// here is our own: symmetric about x = 0, at rest, under gravity along −y) ---

struct PlanarLoop {
  std::shared_ptr<const Model> model;
  std::vector<std::pair<int, int>> mirror;  // bodies whose centres of mass mirror each other
};

// m = 1 kg, l = 1 m, centre of mass at the link's middle, J_c = diag(1, 1, 1) (the paper's values)
Inertia paperLink() { return Inertia(1.0, Vector3(0.5, 0, 0), Matrix3::Identity()); }

Transform at(double x, double y = 0.0) { return Transform(Matrix3::Identity(), Vector3(x, y, 0)); }

// Absolute angles θ of a chain between two ground pins from those of its left half: the right
// half mirrors it, θ_{n+1−k} = −θ_k
std::vector<double> mirrored(const std::vector<double>& left_half) {
  std::vector<double> theta = left_half;
  for (auto it = left_half.rbegin(); it != left_half.rend(); ++it) theta.push_back(-*it);
  return theta;
}

// The chain's links link1 … linkN about z, link1 from the world at the left pin; returns the
// distance between the pins
double addChain(ModelBuilder& builder, const std::vector<double>& theta) {
  double span = 0.0;
  for (double t : theta) span += std::cos(t);
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  for (std::size_t k = 1; k <= theta.size(); ++k)
    builder.addBody("link" + std::to_string(k), k == 1 ? "world" : "link" + std::to_string(k - 1),
                    about_z, k == 1 ? at(-span / 2) : at(1.0), paperLink());
  return span;
}

// The right pin (the last link's far end to the world), and the chain's initial angles
void closeChain(Model& model, const std::vector<double>& theta, double span) {
  const int n = static_cast<int>(theta.size());
  LoopClosureSpec pin;
  pin.name = "right_pin";
  pin.type = ClosureType::kRevolute;
  pin.body_a = "link" + std::to_string(n);
  pin.frame_a = at(1.0);
  pin.body_b = "world";
  pin.frame_b = at(span / 2);
  addLoopClosure(model, pin);
  for (int k = 1; k <= n; ++k) {
    const double relative = theta[k - 1] - (k > 1 ? theta[k - 2] : 0.0);
    setInitialPosition(model, "link" + std::to_string(k), std::vector<double>{relative});
  }
}

PlanarLoop singleLoop(int bodies) {
  // the left half falls from the left pin at angles spread from −75° to −10°
  std::vector<double> left;
  const int half = bodies / 2;
  for (int k = 0; k < half; ++k)
    left.push_back((-75.0 + 65.0 * k / std::max(1, half - 1)) * M_PI / 180.0);
  const std::vector<double> theta = mirrored(left);
  ModelBuilder builder("loop" + std::to_string(bodies));
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const double span = addChain(builder, theta);
  Model model = builder.build();
  closeChain(model, theta, span);
  PlanarLoop out;
  out.model = std::make_shared<const Model>(std::move(model));
  for (int k = 1; k <= half; ++k) out.mirror.push_back({k, bodies + 1 - k});
  return out;
}

PlanarLoop doubleLoop() {
  // six links between the pins, and two more hanging from the middles of links 3 and 4, pinned
  // to each other at their far ends below the chain's middle: two loops sharing links 3 and 4
  const std::vector<double> theta =
      mirrored({-70.0 * M_PI / 180.0, -30.0 * M_PI / 180.0, -10.0 * M_PI / 180.0});
  ModelBuilder builder("double_loop");
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const double span = addChain(builder, theta);
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  builder.addBody("link7", "link3", about_z, at(0.5), paperLink());
  builder.addBody("link8", "link4", about_z, at(0.5), paperLink());
  Model model = builder.build();
  closeChain(model, theta, span);
  // link 7 from the middle of link 3 (at x < 0) down to x = 0; link 8 its mirror
  double x = -span / 2;
  for (int k = 0; k < 2; ++k) x += std::cos(theta[k]);
  x += 0.5 * std::cos(theta[2]);
  const double phi = -std::acos(-x);
  setInitialPosition(model, "link7", std::vector<double>{phi - theta[2]});
  setInitialPosition(model, "link8", std::vector<double>{(M_PI - phi) - theta[3]});
  LoopClosureSpec pin;
  pin.name = "lower_pin";
  pin.type = ClosureType::kRevolute;
  pin.body_a = "link7";
  pin.frame_a = at(1.0);
  pin.body_b = "link8";
  pin.frame_b = at(1.0);
  addLoopClosure(model, pin);
  PlanarLoop out;
  out.model = std::make_shared<const Model>(std::move(model));
  out.mirror = {{1, 6}, {2, 5}, {3, 4}, {7, 8}};
  return out;
}

// |x_a + x_b| and |y_a − y_b| of the mirrored centres of mass, the largest [m]
double asymmetry(const PlanarLoop& loop, Data& data, const Eigen::VectorXd& q) {
  forwardKinematics(*loop.model, data, q);
  double worst = 0.0;
  for (const auto& [a, b] : loop.mirror) {
    const Vector3 ca = data.X_WB[a].actPoint(Vector3(0.5, 0, 0));
    const Vector3 cb = data.X_WB[b].actPoint(Vector3(0.5, 0, 0));
    worst = std::max({worst, std::abs(ca.x() + cb.x()), std::abs(ca.y() - cb.y())});
  }
  return worst;
}

double closureError(const Model& model, Data& data, const Eigen::VectorXd& q) {
  Eigen::VectorXd C(model.nconstraints);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {.position_error = &C});
  return C.lpNorm<Eigen::Infinity>();
}

TEST(HdcaLoops, PaperSystemsRunTenSecondsClosedAtVelocityLevelWithoutStabilisation) {
  // RK4 at 1 ms on (q, P) for 10 s, no projection: ‖A(q) v‖ (the closures' Jacobian at the
  // state, not the solve's) stays at round-off at every step (measured ≤ 2.2e-15 with |v| ≤ 3.9);
  // the position closure drifts only by the integration error (measured ≤ 2.4e-12 m); energy
  // (≤ 2.1e-12 relative) and the mirror symmetry (≤ 2.3e-11 m) are kept to it. The bounds leave
  // two to three orders for another processor's rounding.
  for (const PlanarLoop& loop : {singleLoop(4), singleLoop(8), doubleLoop()}) {
    Model unstabilised = *loop.model;
    ConstraintStabilisation none = unstabilised.stabilisation;
    none.projection_iterations = 0;
    setStabilisation(unstabilised, none);
    const auto model = std::make_shared<const Model>(std::move(unstabilised));
    Simulator sim(model, Formulation::kHdca, Integrator::kRk4, 1e-3);
    ASSERT_TRUE(sim.momentumState());
    Data data(*model);
    ASSERT_LT(sim.assemblyError(), 1e-12) << model->name;
    ASSERT_LT(asymmetry(loop, data, sim.q()), 1e-12) << model->name;
    const double e0 = sim.energy();
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    double velocity_closure = 0.0, position_closure = 0.0, energy_error = 0.0, asym = 0.0;
    double speed = 0.0;
    Eigen::MatrixXd A(model->nconstraints, model->nv);
    for (int k = 1; k <= 10'000; ++k) {
      sim.step(tau);
      speed = std::max(speed, sim.v().lpNorm<Eigen::Infinity>());
      // A(q) v from the closures' own Jacobian, not the solve's
      forwardKinematics(*model, data, sim.q());
      evaluateClosures(*model, data, {.jacobian = &A});
      velocity_closure = std::max(velocity_closure, (A * sim.v()).lpNorm<Eigen::Infinity>());
      if (k % 10 != 0) continue;
      position_closure = std::max(position_closure, closureError(*model, data, sim.q()));
      energy_error = std::max(energy_error, std::abs(sim.energy() - e0));
      asym = std::max(asym, asymmetry(loop, data, sim.q()));
    }
    std::cout << "[ measured ] " << model->name << " (" << model->nv << " joints, "
              << model->nconstraints << " closure rows): 10 s, |v| up to " << speed
              << ", velocity closure " << velocity_closure << ", position closure "
              << position_closure << " m, energy error " << energy_error << " J of "
              << std::abs(e0) << ", asymmetry " << asym << " m\n";
    EXPECT_GT(speed, 1.0) << model->name;  // it moves
    EXPECT_LT(velocity_closure, 1e-13 * speed) << model->name;
    EXPECT_LT(position_closure, 1e-9) << model->name;
    EXPECT_LT(energy_error, 1e-9 * std::abs(e0)) << model->name;
    EXPECT_LT(asym, 1e-8) << model->name;
  }
}

}  // namespace
}  // namespace hilsim
