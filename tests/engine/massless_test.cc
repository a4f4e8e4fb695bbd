// Massless and rank-deficient bodies (seed 003): the articulated-body recursion with
// pseudo-inverses against a dense solve of the full Newton–Euler system, the small-mass limit of
// the paper's oscillator, the imex-euler integrator, URDF models with massless links, and every
// singular-model error.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <Eigen/QR>
#include <unsupported/Eigen/MatrixFunctions>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/algebraic_velocity.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/builder/model_builder.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kFormulationRelTol;
using test::relativeDifference;

Inertia massless() { return Inertia(); }
Inertia pointMass(double m) { return Inertia(m, Vector3::Zero(), Matrix3::Zero()); }

Vector3 randomUnit(std::mt19937& rng) { return test::randomVector(3, rng).normalized(); }

Transform randomPlacement(std::mt19937& rng) {
  const Eigen::Quaterniond rotation(Eigen::Vector4d(test::randomVector(4, rng)).normalized());
  return Transform(rotation.toRotationMatrix(), 0.3 * Vector3(test::randomVector(3, rng)));
}

std::string bodyName(int k) {
  std::string name = "b";
  name += std::to_string(k);
  return name;
}

// A random tree of revolute, prismatic and spherical joints in which about a third of the bodies
// are massless and some are point masses; every joint is damped (index 1) and some 1-DoF joints
// carry springs.
Model randomMasslessTree(std::mt19937& rng, int bodies) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  ModelBuilder builder("random_massless");
  for (int k = 0; k < bodies; ++k) {
    BodySpec b;
    b.name = bodyName(k);
    b.parent = k == 0 ? "world" : bodyName(std::uniform_int_distribution<int>(0, k - 1)(rng));
    b.placement = randomPlacement(rng);
    const double kind = unit(rng);
    b.joint = kind < 0.45 ? Joint::revolute(randomUnit(rng))
              : kind < 0.8 ? Joint::prismatic(randomUnit(rng))
                           : Joint::spherical();
    const double mass_kind = unit(rng);
    b.inertia = mass_kind < 0.35 ? massless()
                : mass_kind < 0.45 ? pointMass(0.5 + unit(rng)).transformed(randomPlacement(rng))
                                   : test::randomInertia(rng);
    b.properties.damping = 0.2 + unit(rng);
    if (b.joint->nv() == 1 && unit(rng) < 0.5) {
      b.properties.stiffness = 5.0 * unit(rng);
      b.properties.spring_reference = unit(rng) - 0.5;
    }
    builder.addBody(b);
  }
  return builder.build();
}

// The full system of the tree in W, unknowns (a_1 … a_N, q̈, f_1 … f_N), the block system
// (9), (11), (12) of seed 003 written with spatial vectors:
//   a_i − a_λ − S_i q̈_i = c_i                        (kinematics, a_0 = −g)
//   f_i − Σ_children f_j − I_i a_i = V_i ×* I_i V_i   (Newton–Euler of body i)
//   S_iᵀ f_i + armature q̈_i = τ_i − d v_i − k (q_i − q_ref)   (joint i)
// Kinematic terms (S, c, V, I in W) are read from `data` after an aba call at the same state.
struct DenseSystem {
  Eigen::MatrixXd A;
  Eigen::VectorXd b;
  int a_offset = 0, qdd_offset = 0, f_offset = 0;
};

DenseSystem denseNewtonEuler(const Model& model, const Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  const int n = model.nbodies - 1;
  DenseSystem s;
  s.qdd_offset = 6 * n;
  s.f_offset = 6 * n + model.nv;
  const int unknowns = 12 * n + model.nv;
  s.A = Eigen::MatrixXd::Zero(unknowns, unknowns);
  s.b = Eigen::VectorXd::Zero(unknowns);
  auto a = [&](int i) { return 6 * (i - 1); };
  auto f = [&](int i) { return s.f_offset + 6 * (i - 1); };
  for (int i = 1; i < model.nbodies; ++i) {
    const int row_kin = 6 * (i - 1), row_dyn = 6 * n + 6 * (i - 1);
    const int iv = model.idx_v[i], nv_i = model.nv_joint[i], parent = model.parent[i];
    s.A.block<6, 6>(row_kin, a(i)).setIdentity();
    s.b.segment<6>(row_kin) = data.c_W[i];
    if (parent > 0) {
      s.A.block<6, 6>(row_kin, a(parent)) = -Matrix6::Identity();
    } else {
      s.b.segment<6>(row_kin) += data.A_W[0];
    }
    s.A.block(row_kin, s.qdd_offset + iv, 6, nv_i) = -data.S_W.middleCols(iv, nv_i);

    Matrix6 inertia;
    data.inertia_W[i].matrix(inertia);
    s.A.block<6, 6>(row_dyn, f(i)).setIdentity();
    for (int j = i + 1; j < model.nbodies; ++j)
      if (model.parent[j] == i) s.A.block<6, 6>(row_dyn, f(j)) = -Matrix6::Identity();
    s.A.block<6, 6>(row_dyn, a(i)) = -inertia;
    ForceVector momentum, gyroscopic;
    data.inertia_W[i].apply(data.V_W[i], momentum);
    crossForce(data.V_W[i], momentum, gyroscopic);
    s.b.segment<6>(row_dyn) = gyroscopic;

    const int row_joint = 12 * n + iv;
    s.A.block(row_joint, f(i), nv_i, 6) = data.S_W.middleCols(iv, nv_i).transpose();
    for (int k = 0; k < nv_i; ++k) {
      s.A(row_joint + k, s.qdd_offset + iv + k) = model.armature[iv + k];
      s.b(row_joint + k) = tau[iv + k] - model.damping[iv + k] * v[iv + k];
    }
    if (nv_i == 1)
      s.b(row_joint) -= model.stiffness[iv] * (q[model.idx_q[i]] - model.spring_reference[iv]);
  }
  return s;
}

// Consistent velocities at q: Newton on γ(q, v + L x) = 0.
void makeConsistent(const Model& model, Data& data, const Eigen::VectorXd& q, Eigen::VectorXd& v,
                    const Eigen::VectorXd& tau) {
  AlgebraicVelocities algebraic(model);
  aba(model, data, q, v, tau);
  algebraic.capture(model, data);
  for (int k = 0; k < 4; ++k) algebraic.newtonStep(model, data, q, v, tau, 0.0);
}

TEST(RankDeficientRecursion, AgreesWithTheDenseNewtonEulerSystemOnRandomTrees) {
  std::mt19937 rng(3003);
  int trees_with_algebraic = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Model model = randomMasslessTree(rng, 3 + trial % 10);
    Data data(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    Eigen::VectorXd v = test::randomVector(model.nv, rng);
    const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
    makeConsistent(model, data, q, v, tau);
    const Eigen::VectorXd qdd = aba(model, data, q, v, tau);
    ASSERT_TRUE(qdd.allFinite()) << "trial " << trial;
    trees_with_algebraic += model.nalgebraic > 0;

    DenseSystem s = denseNewtonEuler(model, data, q, v, tau);
    // without a gauge the system has exactly Σ (n_i − r_i) free directions (seed 003 §3.4) ...
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(s.A);
    qr.setThreshold(1e-10);
    EXPECT_EQ(s.A.cols() - qr.rank(), model.nalgebraic) << "trial " << trial;
    // ... which the recursion fixes by giving q̈ no component in null(D_i): add those rows
    const int rows = static_cast<int>(s.A.rows());
    Eigen::MatrixXd A(rows + model.nalgebraic, s.A.cols());
    Eigen::VectorXd b = Eigen::VectorXd::Zero(A.rows());
    A.topRows(rows) = s.A;
    A.bottomRows(model.nalgebraic).setZero();
    b.head(rows) = s.b;
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.idx_algebraic[i] < 0) continue;
      const int nv_i = model.nv_joint[i], k = nv_i - model.joint_rank[i];
      A.block(rows + model.idx_algebraic[i], s.qdd_offset + model.idx_v[i], k, nv_i) =
          data.null_basis[i].topLeftCorner(nv_i, k).transpose();
    }
    const Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
    // consistent (γ = 0 makes the force state admissible, seed 003 case A′) and equal
    EXPECT_LT((A * x - b).norm() / std::max(1.0, b.norm()), 1e-9) << "trial " << trial;
    EXPECT_LT(relativeDifference(x.segment(s.qdd_offset, model.nv), qdd), kFormulationRelTol)
        << "trial " << trial << ", nalgebraic " << model.nalgebraic;
    // every body with inertia has a unique acceleration, the recursion's α (24)
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.singular_inertia[i]) continue;
      EXPECT_LT(relativeDifference(x.segment<6>(6 * (i - 1)), data.A_W[i]), kFormulationRelTol)
          << "trial " << trial << ", body " << i;
    }

    if (model.nalgebraic == 0) continue;
    // an inconsistent velocity (γ ≠ 0) leaves the full system without a solution
    AlgebraicVelocities algebraic(model);
    aba(model, data, q, v, tau);
    algebraic.capture(model, data);
    Eigen::VectorXd v_bad = v + algebraic.nullMotion().col(0);
    aba(model, data, q, v_bad, tau);
    const DenseSystem bad = denseNewtonEuler(model, data, q, v_bad, tau);
    A.topRows(rows) = bad.A;
    b.head(rows) = bad.b;
    const Eigen::VectorXd y = A.colPivHouseholderQr().solve(b);
    EXPECT_GT((A * y - b).norm() / std::max(1.0, b.norm()), 1e-6) << "trial " << trial;
  }
  EXPECT_GE(trees_with_algebraic, 20);  // the sample exercises the algebraic case
}

TEST(RankDeficientRecursion, NullMotionsMoveNoBodyWithInertia) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    const Model model = randomMasslessTree(rng, 8);
    if (model.nalgebraic == 0) continue;
    Data data(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = Eigen::VectorXd::Zero(model.nv), tau = v;
    aba(model, data, q, v, tau);
    AlgebraicVelocities algebraic(model);
    algebraic.capture(model, data);
    // kinetic energy ½ xᵀ Lᵀ M L x: the body velocities of L x vanish on every body with inertia
    for (int c = 0; c < model.nalgebraic; ++c) {
      const Eigen::VectorXd w = algebraic.nullMotion().col(c);
      aba(model, data, q, w, tau);  // V_W of the velocity w
      for (int i = 1; i < model.nbodies; ++i) {
        Matrix6 inertia;
        data.inertia_W[i].matrix(inertia);
        EXPECT_LT(std::abs(data.V_W[i].dot(inertia * data.V_W[i])), 1e-20 + 1e-12 * w.squaredNorm())
            << "trial " << trial << ", body " << i;
      }
    }
  }
}

// The paper's oscillator (seed 003 §2.2, test problem 1 x-part): a small mass m₁ on a
// spring–damper (c₁, d₁) to the ground, a mass m₂ on a spring–damper (c₂, d₂) to m₁, in relative
// coordinates q₁ = p₁, q₂ = p₂ − p₁.
Model oscillator(double m1, double c1, double d1, double c2, double d2, double m2 = 1.0) {
  ModelBuilder b("oscillator");
  b.setGravity(Vector3::Zero());
  JointProperties p1, p2;
  p1.stiffness = c1;
  p1.damping = d1;
  p2.stiffness = c2;
  p2.damping = d2;
  // the rotational inertia only keeps a small mass from being a point mass; it never moves
  const Inertia small = m1 == 0.0 ? massless() : Inertia(m1, Vector3::Zero(), m1 * Matrix3::Identity());
  b.addBody("small", "world", Joint::prismatic(Vector3::UnitX()), Transform(), small, p1);
  b.addBody("large", "small", Joint::prismatic(Vector3::UnitX()), Transform(),
            Inertia(m2, Vector3::Zero(), m2 * Matrix3::Identity()), p2);
  return b.build();
}

// The reduced (m₁ = 0) oscillator as a linear ODE in y = (p₁, p₂, ṗ₂) with ṗ₁ from
// 0 = F − d₁ṗ₁ − c₁p₁ + d₂(ṗ₂ − ṗ₁) + c₂(p₂ − p₁) (seed 003 (6)); F = 0.
Eigen::Matrix3d reducedOscillator(double c1, double d1, double c2, double d2, double m2) {
  const double d = d1 + d2;
  Eigen::Matrix3d A;
  // ṗ₁ = [−(c₁ + c₂) p₁ + c₂ p₂ + d₂ ṗ₂] / (d₁ + d₂)
  const Eigen::RowVector3d p1_dot((-c1 - c2) / d, c2 / d, d2 / d);
  A.row(0) = p1_dot;
  A.row(1) << 0.0, 0.0, 1.0;
  // m₂ p̈₂ = −d₂(ṗ₂ − ṗ₁) − c₂(p₂ − p₁)
  A.row(2) = (Eigen::RowVector3d(c2, -c2, -d2) + d2 * p1_dot) / m2;
  return A;
}

// (p₁, p₂, ṗ₂) of a simulator state of the oscillator.
Eigen::Vector3d absoluteState(const Simulator& sim) {
  return {sim.q()[0], sim.q()[0] + sim.q()[1], sim.v()[0] + sim.v()[1]};
}

constexpr double kC1 = 100.0, kD1 = 1.0, kC2 = 10.0, kD2 = 0.5;

TEST(SmallMassOscillator, ConvergesToTheMasslessModelAtFirstOrderInTheMass) {
  const Eigen::Matrix3d A = reducedOscillator(kC1, kD1, kC2, kD2, 1.0);
  const Eigen::Vector3d y0(0.01, 0.1, 0.0);
  const Eigen::Vector3d reduced = (A * 1.0).exp() * y0;
  // the values of the extraction's ε-study (its eigenvalue solve), to their printed digits
  EXPECT_NEAR(reduced(0), -7.37042e-3, 1e-8);
  EXPECT_NEAR(reduced(1), -7.954611e-2, 1e-8);
  EXPECT_NEAR(reduced(2), -3.198991e-2, 1e-8);
  const double p1_dot0 = A.row(0).dot(y0);  // on the slow manifold

  double previous = 0.0;
  for (const double epsilon : {1e-2, 1e-3, 1e-4}) {
    auto model = std::make_shared<const Model>(oscillator(epsilon, kC1, kD1, kC2, kD2));
    EXPECT_EQ(model->nalgebraic, 0);
    // RK4 well inside its stability bound h |λ_fast| < 2.78, λ_fast ≈ −(d₁ + d₂)/ε
    const double h = epsilon / 10.0;
    Simulator sim(model, Formulation::kAba, Integrator::kRk4, h);
    sim.setState(Eigen::Vector2d(y0(0), y0(1) - y0(0)), Eigen::Vector2d(p1_dot0, -p1_dot0));
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(2);
    const int steps = static_cast<int>(std::lround(1.0 / h));
    for (int k = 0; k < steps; ++k) sim.step(tau);
    const double error = (absoluteState(sim) - reduced).norm();
    // the extraction's ε-study: ‖y_ε(1) − y₀(1)‖ / ε = 1.77e-3 for every ε
    EXPECT_NEAR(error / epsilon, 1.77e-3, 0.02e-3) << "epsilon " << epsilon;
    if (previous > 0.0) {
      const double order = std::log10(previous / error);  // ε falls tenfold per row
      EXPECT_NEAR(order, 1.0, 0.02) << "epsilon " << epsilon;
    }
    previous = error;
  }
}

TEST(SmallMassOscillator, TheMasslessModelIntegratedByImexEulerConvergesAtFirstOrderInTheStep) {
  const Eigen::Matrix3d A = reducedOscillator(kC1, kD1, kC2, kD2, 1.0);
  const Eigen::Vector3d y0(0.01, 0.1, 0.0);
  const Eigen::Vector3d reduced = (A * 1.0).exp() * y0;
  auto model = std::make_shared<const Model>(oscillator(0.0, kC1, kD1, kC2, kD2));
  ASSERT_EQ(model->nalgebraic, 1);
  ASSERT_EQ(model->joint_rank[1], 0);
  double previous = 0.0;
  for (const double h : {2e-3, 1e-3, 5e-4}) {
    Simulator sim(model, Formulation::kAba, Integrator::kImexEuler, h);
    // ṗ₁ given wrong: setState solves it from (6)
    sim.setState(Eigen::Vector2d(y0(0), y0(1) - y0(0)), Eigen::Vector2d(5.0, -5.0));
    EXPECT_NEAR(sim.v()[0], A.row(0).dot(y0), 1e-12);
    EXPECT_NEAR(sim.v()[0] + sim.v()[1], 0.0, 1e-12);  // the massive body keeps its velocity
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(2);
    const int steps = static_cast<int>(std::lround(1.0 / h));
    for (int k = 0; k < steps; ++k) sim.step(tau);
    const double error = (absoluteState(sim) - reduced).norm();
    if (previous > 0.0) {
      EXPECT_NEAR(previous / error, 2.0, 0.1) << "h " << h;
    }
    previous = error;
  }
  EXPECT_LT(previous, 1e-3 * reduced.norm());
}

// Seed 003 (5) with the extraction's parameters: F = sin 2πt on m₁, m₂ = 1, c₁ = 100, c₂ = 10,
// d₁ = d₂ = 0.1, at rest at t = 0.
constexpr double kForcedC1 = 100.0, kForcedC2 = 10.0, kForcedD = 0.1;

template <typename Step>
void runForced(Simulator& sim, double duration, Step&& after_step) {
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(2);
  const int steps = static_cast<int>(std::lround(duration / sim.dt()));
  for (int k = 0; k < steps; ++k) {
    // the force over a step is held at its value at the step's midpoint
    tau[0] = std::sin(2.0 * M_PI * (sim.time() + 0.5 * sim.dt()));
    sim.step(tau);
    if (!after_step(sim)) return;
  }
}

TEST(SmallMassOscillator, ExplicitRk4FailsAtOneMillisecondWhereTheMasslessModelIsAccurate) {
  constexpr double h = 1e-3;
  // m₁ = 1e-6: λ_fast ≈ −(d₁ + d₂)/m₁ = −2e5, so h |λ| = 200 ≫ 2.78
  auto light = std::make_shared<const Model>(
      oscillator(1e-6, kForcedC1, kForcedD, kForcedC2, kForcedD));
  Simulator rk4(light, Formulation::kAba, Integrator::kRk4, h);
  bool diverged = false;
  runForced(rk4, 10.0, [&](const Simulator& s) {
    diverged = !s.q().allFinite() || s.q().cwiseAbs().maxCoeff() > 1e3;
    return !diverged;
  });
  EXPECT_TRUE(diverged);

  // reference: the reduced model (seed 003 (6)) by RK4 at 1e-5 s in absolute coordinates
  auto reducedRate = [](double t, const Eigen::Vector3d& y) {
    const double force = std::sin(2.0 * M_PI * t);
    const double p1_dot =
        (force - kForcedC1 * y(0) + kForcedD * y(2) + kForcedC2 * (y(1) - y(0))) / (2 * kForcedD);
    return Eigen::Vector3d(p1_dot, y(2), -kForcedD * (y(2) - p1_dot) - kForcedC2 * (y(1) - y(0)));
  };
  auto massless_model = std::make_shared<const Model>(
      oscillator(0.0, kForcedC1, kForcedD, kForcedC2, kForcedD));
  Simulator imex(massless_model, Formulation::kAba, Integrator::kImexEuler, h);
  Eigen::Vector3d y = Eigen::Vector3d::Zero();
  double t = 0.0, worst = 0.0, amplitude = 0.0;
  constexpr int kSub = 100;
  runForced(imex, 10.0, [&](const Simulator& s) {
    for (int k = 0; k < kSub; ++k) {
      const double dt = h / kSub;
      const Eigen::Vector3d k1 = reducedRate(t, y), k2 = reducedRate(t + dt / 2, y + dt / 2 * k1),
                            k3 = reducedRate(t + dt / 2, y + dt / 2 * k2),
                            k4 = reducedRate(t + dt, y + dt * k3);
      y += dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
      t += dt;
    }
    amplitude = std::max(amplitude, std::abs(y(1)));
    worst = std::max(worst, std::abs(s.q()[0] + s.q()[1] - y(1)));
    return true;
  });
  // the extraction's p₂(10) of the reduced model (Radau, rtol 1e-6)
  EXPECT_NEAR(y(1), -4.081762e-3, 1e-8);
  // stable, and within 1 % of the motion's amplitude over 10 s (first order at h = 1 ms)
  EXPECT_LT(worst, 1e-2 * amplitude) << "worst " << worst << " amplitude " << amplitude;
}

// A 3-link arm whose middle link is massless (a universal-joint cross: its rank is restored by
// the next link) with a massless damped sensor wheel on the last link, and a massless tool frame.
constexpr const char* kMasslessLinksUrdf = R"(<?xml version="1.0"?>
<robot name="massless_links">
  <link name="base"/>
  <link name="upper">
    <inertial><origin xyz="0 0 0.2"/><mass value="2.0"/>
      <inertia ixx="0.03" iyy="0.03" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="cross"/>
  <link name="lower">
    <inertial><origin xyz="0 0 0.15"/><mass value="1.0"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="wheel"/>
  <link name="tool"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="upper"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="5"/><dynamics damping="0.1"/>
  </joint>
  <joint name="elbow_pitch" type="revolute">
    <parent link="upper"/><child link="cross"/><origin xyz="0 0 0.4"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="5"/><dynamics damping="0.1"/>
  </joint>
  <joint name="elbow_roll" type="revolute">
    <parent link="cross"/><child link="lower"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="50" velocity="5"/><dynamics damping="0.1"/>
  </joint>
  <joint name="wheel" type="continuous">
    <parent link="lower"/><child link="wheel"/><origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>
    <dynamics damping="0.02"/>
  </joint>
  <joint name="tool" type="fixed">
    <parent link="lower"/><child link="tool"/><origin xyz="0 0 0.32"/>
  </joint>
</robot>
)";

TEST(MasslessUrdf, ZeroMassIntermediateAndLeafLinksLoadAndSimulate) {
  auto model = std::make_shared<const Model>(loadUrdfString(kMasslessLinksUrdf));
  const int cross = model->bodyIndex("cross"), wheel = model->bodyIndex("wheel");
  ASSERT_GT(cross, 0);
  ASSERT_GT(wheel, 0);
  EXPECT_TRUE(model->singular_inertia[cross]);
  EXPECT_EQ(model->joint_rank[cross], 1);  // the lower link gives the cross inertia
  EXPECT_TRUE(model->singular_inertia[wheel]);
  EXPECT_EQ(model->joint_rank[wheel], 0);  // nothing: a first-order equation d ω = τ
  EXPECT_EQ(model->nalgebraic, 1);
  EXPECT_FALSE(checkSimulatorChoice(*model, Formulation::kAba, Integrator::kRk4).empty());
  EXPECT_THROW(Simulator(model, Formulation::kAba, Integrator::kRk4, 1e-3), std::invalid_argument);
  EXPECT_THROW(Simulator(model, Formulation::kCrba, Integrator::kImexEuler, 1e-3),
               std::invalid_argument);

  // the same arm without the wheel: the wheel has no inertia, so it must not change the arm
  const std::string without_wheel = [] {
    std::string urdf = kMasslessLinksUrdf;
    const auto begin = urdf.find("  <joint name=\"wheel\"");
    const auto end = urdf.find("</joint>", begin) + std::string("</joint>\n").size();
    urdf.erase(begin, end - begin);
    urdf.erase(urdf.find("  <link name=\"wheel\"/>\n"), std::string("  <link name=\"wheel\"/>\n").size());
    return urdf;
  }();
  // the model with the massless wheel keeps its limits as data (docs/CONTACT.md): so does the
  // reference, so that both run the same tree dynamics
  Model reference_model = loadUrdfString(without_wheel);
  ASSERT_FALSE(model->limits_enforced);
  reference_model.limits_enforced = false;
  auto reference = std::make_shared<const Model>(std::move(reference_model));
  ASSERT_EQ(reference->nalgebraic, 0);
  constexpr double h = 1e-3;
  Simulator sim(model, Formulation::kAba, Integrator::kImexEuler, h);
  Simulator ref(reference, Formulation::kAba, Integrator::kSemiImplicitEuler, h);
  Eigen::VectorXd q0 = model->neutralConfiguration();
  q0.head<3>() << 0.4, -0.6, 0.3;
  sim.setState(q0, Eigen::VectorXd::Zero(model->nv));
  ref.setState(q0.head<3>(), Eigen::VectorXd::Zero(3));
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv), tau_ref = Eigen::VectorXd::Zero(3);
  const int wheel_v = model->idx_v[wheel];
  const double wheel_damping = 0.02;
  for (int k = 0; k < 2000; ++k) {
    tau[wheel_v] = 0.01 * std::sin(1e-2 * k);  // a drive torque on the wheel
    sim.step(tau);
    ref.step(tau_ref);
    ASSERT_TRUE(sim.q().allFinite() && sim.v().allFinite()) << "step " << k;
  }
  // the arm: to rounding, as without the wheel (its motion enters no inertia)
  EXPECT_LT(relativeDifference(sim.q().head<3>(), ref.q()), 1e-12);
  EXPECT_LT(relativeDifference(sim.v().head<3>(), ref.v()), 1e-12);
  // the wheel turns at ω = τ / d relative to the lower link (first-order equation, exact)
  EXPECT_NEAR(sim.v()[wheel_v], tau[wheel_v] / wheel_damping, 1e-9);
}

TEST(MasslessErrors, EachSingularModelIsRejectedAtBuildTimeNamingItsJoint) {
  auto expectError = [](const ModelBuilder& builder, const std::string& needle) {
    try {
      builder.build();
      ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const Inertia body(1.0, Vector3(0.1, 0.0, 0.0), 0.01 * Matrix3::Identity());
  {
    // a massless leaf on an undamped joint: nothing determines its motion
    ModelBuilder b("undamped_leaf");
    b.addBody("link", "world", Joint::revolute(Vector3::UnitZ()), Transform(), body);
    b.addBody("flag", "link", Joint::revolute(Vector3::UnitX()), Transform(), massless());
    expectError(b, "joint 'flag'");
    expectError(b, "without inertia and without damping");
  }
  {
    // a spring alone does not determine the motion either (seed 003 pitfall: index 1 needs damping)
    ModelBuilder b("spring_only");
    JointProperties spring;
    spring.stiffness = 10.0;
    b.addBody("link", "world", Joint::prismatic(Vector3::UnitX()), Transform(), massless(), spring);
    b.addBody("mass", "link", Joint::prismatic(Vector3::UnitX()), Transform(), body, spring);
    expectError(b, "joint 'link'");
  }
  {
    // a massless gimbal: joint 1's axis meets joint 3's only while joint 2 is at zero
    ModelBuilder b("gimbal");
    JointProperties damped;
    damped.damping = 0.5;
    b.addBody("yaw", "world", Joint::revolute(Vector3::UnitZ()), Transform(), massless(), damped);
    b.addBody("pitch", "yaw", Joint::revolute(Vector3::UnitX()), Transform(), massless(), damped);
    b.addBody("rotor", "pitch", Joint::revolute(Vector3::UnitZ()), Transform(), body, damped);
    expectError(b, "joint 'yaw'");
    expectError(b, "changes with the configuration");
  }
  {
    ModelBuilder b("spherical_spring");
    JointProperties spring;
    spring.stiffness = 1.0;
    b.addBody("ball", "world", Joint::spherical(), Transform(), body, spring);
    expectError(b, "joint 'ball'");
  }
  {
    // a damped massless leaf is fine, and so is one with armature (its motor has inertia)
    ModelBuilder b("armature_leaf");
    JointProperties motor;
    motor.armature = 1e-4;
    b.addBody("link", "world", Joint::revolute(Vector3::UnitZ()), Transform(), body);
    b.addBody("rotor", "link", Joint::revolute(Vector3::UnitX()), Transform(), massless(), motor);
    const Model m = b.build();
    EXPECT_EQ(m.nalgebraic, 0);
    EXPECT_EQ(m.joint_rank[2], 1);
  }
}

TEST(MasslessChain, PointMassOnTwoMasslessSlidersFollowsTestProblemOne) {
  // seed 003 test problem 1 in 2-D: massless point i on x and y spring–dampers to the ground,
  // point j (m_j) on an x spring–damper to i and free in y; each 2-DoF joint is two sliders with a
  // massless body between, so massless bodies follow each other in a chain
  constexpr double kCix = 100.0, kDix = 1.0, kCiy = 50.0, kDiy = 2.0, kCjx = 10.0, kDjx = 0.5;
  ModelBuilder b("test_problem_1");
  b.setGravity(Vector3::Zero());
  JointProperties ix, iy, jx, jy;
  ix.stiffness = kCix, ix.damping = kDix;
  iy.stiffness = kCiy, iy.damping = kDiy;
  jx.stiffness = kCjx, jx.damping = kDjx;
  b.addBody("i_x", "world", Joint::prismatic(Vector3::UnitX()), Transform(), massless(), ix);
  b.addBody("i", "i_x", Joint::prismatic(Vector3::UnitY()), Transform(), massless(), iy);
  b.addBody("j_x", "i", Joint::prismatic(Vector3::UnitX()), Transform(), massless(), jx);
  b.addBody("j", "j_x", Joint::prismatic(Vector3::UnitY()), Transform(), pointMass(1.0), jy);
  auto model = std::make_shared<const Model>(b.build());
  EXPECT_EQ(model->nalgebraic, 2);  // (34): two first-order equations, as the paper
  EXPECT_EQ(model->joint_rank[1], 0);
  EXPECT_EQ(model->joint_rank[2], 0);
  EXPECT_EQ(model->joint_rank[3], 1);  // j's x slider carries j's mass along x
  constexpr double h = 5e-4;
  Simulator sim(model, Formulation::kAba, Integrator::kImexEuler, h);
  // p_i = (0.01, 0.02), p_j = (0.1, 0.3), ṗ_j = (0, 0.2)
  Eigen::VectorXd q(4), v(4);
  q << 0.01, 0.02, 0.09, 0.28;
  v << 0.0, 0.0, 0.0, 0.2;
  sim.setState(q, v);
  EXPECT_NEAR(sim.v()[1] + sim.v()[3], 0.2, 1e-12);       // ṗ_j,y kept
  EXPECT_NEAR(sim.v()[1], -kCiy * 0.02 / kDiy, 1e-12);     // (34b): d ṗ_i,y = −c p_i,y
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(4);
  const int steps = static_cast<int>(std::lround(1.0 / h));
  for (int k = 0; k < steps; ++k) sim.step(tau);
  // y: d ṗ_i,y = −c p_i,y, which implicit Euler steps exactly as p ← p / (1 + h c / d); the
  // exact exp(−c t / d) is within that method's first-order error h λ² t / 2 (16 % here)
  const double lambda = kCiy / kDiy;
  const double implicit_euler = 0.02 * std::pow(1.0 + h * lambda, -steps);
  EXPECT_NEAR(sim.q()[1], implicit_euler, 1e-12);
  EXPECT_NEAR(sim.q()[1] / (0.02 * std::exp(-lambda)), 1.0, h * lambda * lambda / 2.0 * 1.1);
  EXPECT_NEAR(sim.q()[1] + sim.q()[3], 0.3 + 0.2 * 1.0, 1e-9);
  // x: the oscillator of the reduced model (34a), (35a)
  const Eigen::Matrix3d A = reducedOscillator(kCix, kDix, kCjx, kDjx, 1.0);
  const Eigen::Vector3d reduced = (A * 1.0).exp() * Eigen::Vector3d(0.01, 0.1, 0.0);
  const Eigen::Vector3d x(sim.q()[0], sim.q()[0] + sim.q()[2], sim.v()[0] + sim.v()[2]);
  EXPECT_LT((x - reduced).norm(), 1e-3 * reduced.norm() + 2e-5);
}

}  // namespace
}  // namespace hilsim
