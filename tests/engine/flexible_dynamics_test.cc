// Flexible bodies (seed 004): the recursive algorithms agree with each other and with the dense
// M⁻¹(T − 𝒞) on random trees mixing rigid and flexible bodies; the kinematics are the derivatives
// of the poses; the equations of motion balance power exactly; with n_m = 0 they are the rigid ones.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/crba_forward_dynamics.h"
#include "engine/algorithms/energy.h"
#include "engine/algorithms/flexible_dynamics.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/rnea.h"
#include "engine/model/configuration.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/builder/model_builder.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kFormulationRelTol;
using test::relativeDifference;

/// Central differences with step h = 1e-5 along a smooth path: truncation O(h²) ≈ 1e-10 times the
/// third derivative, rounding ε/h ≈ 1e-11 times the magnitude; 1e-7 leaves margin for the O(1)
/// to O(10) derivatives of these random models without hiding a missing term, which is O(1).
constexpr double kFiniteDifferenceStep = 1e-5;
constexpr double kFiniteDifferenceRelTol = 1e-7;

struct State {
  Eigen::VectorXd q, v;
};

State randomState(const Model& model, std::mt19937& rng) {
  return {test::randomConfiguration(model, rng), test::randomVector(model.nv, rng)};
}

// q ⊕ h v on the configuration manifold
Eigen::VectorXd advance(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                        double h) {
  Eigen::VectorXd out(model.nq);
  integrateConfiguration(model, q, v, h, out);
  return out;
}

// ℳ by polarization of the kinetic energy: an independent path to the mass matrix (no recursion).
Eigen::MatrixXd massMatrixFromKineticEnergy(const Model& model, Data& data,
                                            const Eigen::VectorXd& q) {
  const Model* m = &model;
  Eigen::MatrixXd M(model.nv, model.nv);
  Eigen::VectorXd e = Eigen::VectorXd::Zero(model.nv);
  auto energy = [&](const Eigen::VectorXd& v) {
    return kineticEnergy(*m, data, q, v) - 0.5 * v.dot(model.armature.cwiseProduct(v));
  };
  Eigen::VectorXd diag(model.nv);
  for (int i = 0; i < model.nv; ++i) {
    e.setZero();
    e[i] = 1.0;
    diag[i] = 2.0 * energy(e);
  }
  for (int i = 0; i < model.nv; ++i) {
    M(i, i) = diag[i];
    for (int j = 0; j < i; ++j) {
      e.setZero();
      e[i] = 1.0;
      e[j] = 1.0;
      M(i, j) = M(j, i) = energy(e) - 0.5 * (diag[i] + diag[j]);
    }
  }
  M.diagonal() += model.armature;
  return M;
}

test::RandomFlexibleTreeOptions treeOptions(int trial) {
  test::RandomFlexibleTreeOptions options;
  options.bodies = 3 + trial % 6;
  options.free_flyer_root = trial % 2 == 0;
  options.geometric_stiffening = trial % 3 != 0;
  return options;
}

TEST(FlexibleDynamics, AbaCompositeBodyRneaAndDenseSolveAgree) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 24; ++trial) {
    const Model model = test::randomFlexibleTree(rng, treeOptions(trial));
    Data data(model);
    std::vector<ForceVector> f_ext(model.nbodies);
    for (auto& f : f_ext) f = test::randomVector(6, rng);
    // a wrench at the first node of every flexible body that has one
    std::vector<NodalForce> nodal;
    for (int i = 1; i < model.nbodies; ++i)
      if (model.nmodes[i] > 0 && !model.flexible[i].nodes.empty())
        nodal.push_back(NodalForce{i, 0, test::randomVector(6, rng)});
    for (int s = 0; s < 3; ++s) {
      const State x = randomState(model, rng);
      const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 5.0);
      std::span<const ForceVector> fext;
      if (s >= 1) fext = f_ext;
      std::span<const NodalForce> loads;
      if (s == 2) loads = nodal;
      const std::string where = "trial " + std::to_string(trial) + " state " + std::to_string(s);

      const Eigen::VectorXd qdd_aba = aba(model, data, x.q, x.v, tau, fext, loads);
      const Eigen::VectorXd qdd_crba = crbaForwardDynamics(model, data, x.q, x.v, tau, fext, loads);
      EXPECT_LT(relativeDifference(qdd_aba, qdd_crba), kFormulationRelTol) << where;

      // dense: ℳ from the kinetic energy, 𝒞 from rnea at χ̇ = 0, then ℳ⁻¹(T − 𝒞)
      const Eigen::MatrixXd M_dense = massMatrixFromKineticEnergy(model, data, x.q);
      const Eigen::VectorXd bias = nonLinearEffects(model, data, x.q, x.v, fext, loads);
      const Eigen::VectorXd qdd_dense = M_dense.llt().solve(tau - bias);
      EXPECT_LT(relativeDifference(qdd_aba, qdd_dense), kFormulationRelTol) << where;

      // the composite-body ℳ is the kinetic energy's
      const Eigen::MatrixXd M = crba(model, data, x.q);
      EXPECT_LT(relativeDifference(M, M_dense), kFormulationRelTol) << where;

      // RNEA inverts ABA
      const Eigen::VectorXd tau_back = rnea(model, data, x.q, x.v, qdd_aba, fext, loads);
      EXPECT_LT(relativeDifference(tau_back, tau), kFormulationRelTol) << where;
    }
  }
}

TEST(FlexibleDynamics, BodyVelocityIsTheDerivativeOfItsPose) {
  std::mt19937 rng(7);
  const double h = kFiniteDifferenceStep;
  for (int trial = 0; trial < 12; ++trial) {
    const Model model = test::randomFlexibleTree(rng, treeOptions(trial));
    Data data(model), plus(model), minus(model);
    const State x = randomState(model, rng);
    forwardKinematics(model, data, x.q, x.v);
    forwardKinematics(model, plus, advance(model, x.q, x.v, h));
    forwardKinematics(model, minus, advance(model, x.q, x.v, -h));
    for (int i = 1; i < model.nbodies; ++i) {
      // V_W = [ω; ṗ − ω × p], ω from Ṙ Rᵀ
      const Matrix3 R_dot = (plus.X_WB[i].rotation - minus.X_WB[i].rotation) / (2.0 * h);
      const Vector3 p_dot = (plus.X_WB[i].translation - minus.X_WB[i].translation) / (2.0 * h);
      const Matrix3 w_skew = R_dot * data.X_WB[i].rotation.transpose();
      MotionVector V;
      V.head<3>() = Vector3(w_skew(2, 1), w_skew(0, 2), w_skew(1, 0));
      V.tail<3>() = p_dot - V.head<3>().cross(data.X_WB[i].translation);
      EXPECT_LT(relativeDifference(V, data.V_W[i]), kFiniteDifferenceRelTol)
          << "trial " << trial << " body " << i;
    }
  }
}

TEST(FlexibleDynamics, BodyAccelerationIsTheDerivativeOfItsVelocity) {
  std::mt19937 rng(8);
  const double h = kFiniteDifferenceStep;
  for (int trial = 0; trial < 12; ++trial) {
    const Model model = test::randomFlexibleTree(rng, treeOptions(trial));
    Data data(model), plus(model), minus(model);
    const State x = randomState(model, rng);
    const Eigen::VectorXd a = test::randomVector(model.nv, rng);
    forwardKinematics(model, data, x.q, x.v, a);
    // the path q(t), v(t) = v + t a: second-order terms of q cancel in the central difference
    forwardKinematics(model, plus, advance(model, x.q, x.v, h), x.v + h * a);
    forwardKinematics(model, minus, advance(model, x.q, x.v, -h), x.v - h * a);
    for (int i = 1; i < model.nbodies; ++i) {
      const MotionVector A = (plus.V_W[i] - minus.V_W[i]) / (2.0 * h);
      EXPECT_LT(relativeDifference(A, data.A_W[i]), kFiniteDifferenceRelTol)
          << "trial " << trial << " body " << i;
    }
  }
}

// d/dt (T + U) = τᵀ v − (joint and modal damping power), along the motion computed by ABA. Any
// velocity-product term missing or miscounted in b_m or a_m breaks this at O(1).
TEST(FlexibleDynamics, PowerBalanceHoldsAlongTheMotion) {
  std::mt19937 rng(9);
  const double h = kFiniteDifferenceStep;
  for (int trial = 0; trial < 12; ++trial) {
    const Model model = test::randomFlexibleTree(rng, treeOptions(trial));
    Data data(model);
    const State x = randomState(model, rng);
    const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 3.0);
    const Eigen::VectorXd qdd = aba(model, data, x.q, x.v, tau);
    auto energy = [&](const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
      return kineticEnergy(model, data, q, v) + potentialEnergy(model, data, q);
    };
    const double e_dot = (energy(advance(model, x.q, x.v, h), x.v + h * qdd) -
                          energy(advance(model, x.q, x.v, -h), x.v - h * qdd)) /
                         (2.0 * h);
    double dissipation = x.v.dot(model.damping.cwiseProduct(x.v));
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.nmodes[i] == 0) continue;
      const auto eta_dot = x.v.segment(model.idxModesV(i), model.nmodes[i]);
      dissipation += eta_dot.dot(model.flexible[i].damping * eta_dot);
    }
    const double power = tau.dot(x.v) - dissipation;
    const double scale = std::max({1.0, std::abs(power), std::abs(tau.dot(x.v))});
    EXPECT_LT(std::abs(e_dot - power) / scale, kFiniteDifferenceRelTol) << "trial " << trial;
  }
}

// A chain of flexible bodies whose mass is all in point masses, each also a node "mass<k>" so that
// its motion can be read back: the model for the d'Alembert check below.
struct PointMassChain {
  Model model;
  std::vector<std::vector<double>> masses;  ///< [body][k]: mass of node "mass<k>"
};

PointMassChain pointMassChain(std::mt19937& rng, bool geometric_stiffening, bool free_root) {
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto random3X = [&](int cols, double scale) {
    Matrix3X m(3, cols);
    for (int c = 0; c < cols; ++c)
      for (int r = 0; r < 3; ++r) m(r, c) = uniform(-scale, scale);
    return m;
  };
  ModelBuilder builder("point_mass_chain");
  PointMassChain chain;
  chain.masses.emplace_back();  // the world
  for (int k = 0; k < 4; ++k) {
    const int n = 1 + k % 3;
    std::vector<LumpedMassNode> lumped(5);
    std::vector<ModalNode> nodes;
    for (int j = 0; j < 5; ++j) {
      LumpedMassNode& m = lumped[j];
      m.position = Vector3(uniform(-0.5, 0.5), uniform(-0.5, 0.5), uniform(-0.5, 0.5));
      m.mass = uniform(0.2, 1.0);
      m.slope = random3X(n, 0.5);
      m.translation = random3X(n, 0.3);
      m.second_order = Matrix3X(3, n * n);
      for (int r = 0; r < n; ++r)
        for (int s = r; s < n; ++s) {
          m.second_order.col(r * n + s) = random3X(1, 0.3);
          m.second_order.col(s * n + r) = m.second_order.col(r * n + s);
        }
      nodes.push_back(ModalNode{"mass" + std::to_string(j), m.position, m.slope, m.translation,
                                m.second_order});
    }
    BodySpec body;
    body.name = "link" + std::to_string(k);
    body.parent = k == 0 ? "world" : "link" + std::to_string(k - 1);
    body.parent_node = k == 0 ? "" : "mass" + std::to_string(k);  // a child on a mass node
    body.placement = Transform(Matrix3::Identity(), Vector3(uniform(-0.1, 0.1), 0.0, 0.0));
    body.joint = k == 0 && free_root ? Joint::freeFlyer() : Joint::revolute(Vector3(0.0, 0.6, 0.8));
    if (k == 2) body.joint = Joint::spherical();
    body.properties.damping = 0.3;
    FlexibleBody flexible = reduceLumpedMasses(lumped, n, geometric_stiffening);
    Eigen::MatrixXd a = Eigen::MatrixXd::Random(n, n);
    flexible.stiffness = 20.0 * a * a.transpose() + 5.0 * Eigen::MatrixXd::Identity(n, n);
    flexible.damping = 0.1 * Eigen::MatrixXd::Identity(n, n);
    flexible.nodes = nodes;
    if (k % 2 == 1) flexible.hinge_node = 0;  // free-free style: the joint at a deforming node
    body.flexible = flexible;
    builder.addBody(body);
    chain.masses.emplace_back();
    for (const LumpedMassNode& m : lumped) chain.masses.back().push_back(m.mass);
  }
  chain.model = builder.build();
  return chain;
}

// Generalized forces by d'Alembert's principle summed over the point masses,
// Q = Σ_j m_j (∂ṙ_j/∂v)ᵀ (r̈_j − g) + K η + C η̇ + joint damping, with r̈_j differenced from the
// point velocities: a path to the equations of motion that shares nothing with M_m, b_m and the
// recursions but the node kinematics (checked against the poses above).
Eigen::VectorXd dAlembertForces(const PointMassChain& chain, const Eigen::VectorXd& q,
                                const Eigen::VectorXd& v, const Eigen::VectorXd& a) {
  const Model& model = chain.model;
  const double h = kFiniteDifferenceStep;
  Data data(model), plus(model), minus(model), unit(model);
  const Eigen::VectorXd q_plus = advance(model, q, v, h), q_minus = advance(model, q, v, -h);
  const Eigen::VectorXd v_plus = v + h * a, v_minus = v - h * a;
  forwardKinematics(model, plus, q_plus, v_plus);
  forwardKinematics(model, minus, q_minus, v_minus);
  forwardKinematics(model, data, q, v);
  auto pointVelocity = [&](const Data& d, const Eigen::VectorXd& qq, const Eigen::VectorXd& vv,
                           int body, int node) {
    const MotionVector V = nodeVelocity(model, d, qq, vv, body, node);
    const Vector3 p = nodePlacement(model, d, qq, body, node).translation;
    return Vector3(V.tail<3>() + V.head<3>().cross(p));
  };
  Eigen::VectorXd Q = model.damping.cwiseProduct(v);
  for (int body = 1; body < model.nbodies; ++body) {
    const FlexibleBody& flexible = model.flexible[body];
    const int n = model.nmodes[body];
    const auto eta = q.segment(model.idxModesQ(body), n);
    const auto eta_dot = v.segment(model.idxModesV(body), n);
    Q.segment(model.idxModesV(body), n) += flexible.stiffness * eta + flexible.damping * eta_dot;
    for (int j = 0; j < 5; ++j) {
      const int node = flexible.nodeIndex("mass" + std::to_string(j));
      const Vector3 acceleration = (pointVelocity(plus, q_plus, v_plus, body, node) -
                                    pointVelocity(minus, q_minus, v_minus, body, node)) /
                                   (2.0 * h);
      for (int i = 0; i < model.nv; ++i) {
        Eigen::VectorXd e = Eigen::VectorXd::Zero(model.nv);
        e[i] = 1.0;
        forwardKinematics(model, unit, q, e);
        const Vector3 partial = pointVelocity(unit, q, e, body, node);
        Q[i] += chain.masses[body][j] * partial.dot(acceleration - model.gravity);
      }
    }
  }
  return Q;
}

TEST(FlexibleDynamics, RneaIsDAlembertOverTheLumpedMasses) {
  // Without geometric stiffening the kinetic energy of FlexibleBody is the lumped masses' exactly.
  // With it, T is kept to the order that matters at small deformation: the two coincide at
  // η = η̇ = 0, and differ by O(|η|² + |η̇|²) elsewhere. At |η|, |η̇| ~ 1e-3 that is ~1e-6 of the
  // forces while each stiffening term is ~1e-3 of them, so 1e-5 still catches any of them.
  constexpr double kSmallDeformationRelTol = 1e-5;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 6; ++trial) {
    const bool stiffening = trial >= 2;
    const PointMassChain chain = pointMassChain(rng, stiffening, trial % 2 == 0);
    const Model& model = chain.model;
    Data data(model);
    State x = randomState(model, rng);
    if (stiffening) {
      const double scale = trial < 4 ? 0.0 : 1e-3;
      for (int i = 1; i < model.nbodies; ++i) {
        const int n = model.nmodes[i];
        x.q.segment(model.idxModesQ(i), n) = test::randomVector(n, rng, scale);
        x.v.segment(model.idxModesV(i), n) = test::randomVector(n, rng, scale);
      }
    }
    const Eigen::VectorXd a = test::randomVector(model.nv, rng);
    const Eigen::VectorXd tau = rnea(model, data, x.q, x.v, a);
    const Eigen::VectorXd expected = dAlembertForces(chain, x.q, x.v, a);
    EXPECT_LT(relativeDifference(tau, expected),
              trial < 4 ? kFiniteDifferenceRelTol : kSmallDeformationRelTol)
        << "trial " << trial;
  }
}

// The bundled flexible arm with its damping removed, from a swinging, vibrating start: RK4 keeps
// T + U to the integrator's O(h⁴) error. Largest relative drift over 2 s, measured: 1.5e-6 at
// h = 1 ms, 4.8e-8 at 0.5 ms (the arm's fastest mode is 38 Hz: ω h = 0.24 at 1 ms).
double energyDrift(double dt) {
  Model model = loadModel("flexible_arm");
  model.damping.setZero();
  for (FlexibleBody& body : model.flexible) body.damping.setZero();
  const auto shared = std::make_shared<const Model>(model);
  Simulator sim(shared, Formulation::kAba, Integrator::kRk4, dt);
  Eigen::VectorXd q = shared->neutralConfiguration(), v = Eigen::VectorXd::Zero(shared->nv);
  v[0] = 2.0;    // shoulder [rad/s]
  v[3] = -3.0;   // elbow
  v[6] = 5.0;    // wrist
  q[1] = 2e-3;   // upper arm, first mode in the plane
  q[5] = -1e-3;  // forearm, first mode out of the plane
  sim.setState(q, v);
  const double e0 = sim.energy();
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(shared->nv);
  double worst = 0.0;
  while (sim.time() < 2.0 - 1e-9) {
    sim.step(tau);
    worst = std::max(worst, std::abs(sim.energy() - e0));
  }
  return worst / std::abs(e0);
}

TEST(FlexibleDynamics, Rk4ConservesEnergyWithoutDamping) {
  const double coarse = energyDrift(1e-3), fine = energyDrift(5e-4);
  RecordProperty("relative_drift_dt_1ms", ::testing::PrintToString(coarse));
  RecordProperty("relative_drift_dt_0.5ms", ::testing::PrintToString(fine));
  EXPECT_LT(coarse, 1e-5);
  // fourth order: halving the step divides the drift by about 16
  EXPECT_GT(coarse / fine, 10.0);
}

// A nodal wrench enters the generalized forces as its virtual power: −Q·v = f·(node's twist) for
// every v, with the node's twist from nodeVelocity (independent of the projection in the
// algorithms).
TEST(FlexibleDynamics, NodalForcesEnterByTheirVirtualPower) {
  std::mt19937 rng(12);
  for (int trial = 0; trial < 6; ++trial) {
    const Model model = test::randomFlexibleTree(rng, treeOptions(trial));
    Data data(model);
    const State x = randomState(model, rng);
    const Eigen::VectorXd a = test::randomVector(model.nv, rng);
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.nmodes[i] == 0) continue;
      const int node = static_cast<int>(model.flexible[i].nodes.size()) - 1;
      const NodalForce load{i, node, test::randomVector(6, rng)};
      const Eigen::VectorXd loaded = rnea(model, data, x.q, x.v, a, {}, {&load, 1});
      const Eigen::VectorXd free = rnea(model, data, x.q, x.v, a);
      const Eigen::VectorXd Q = free - loaded;  // generalized force of the load
      for (int k = 0; k < 4; ++k) {
        const Eigen::VectorXd u = test::randomVector(model.nv, rng);
        forwardKinematics(model, data, x.q, u);
        // twist of the node frame in W about W's origin; the wrench about the node's origin
        const MotionVector twist = nodeVelocity(model, data, x.q, u, i, node);
        const Vector3 p = nodePlacement(model, data, x.q, i, node).translation;
        ForceVector f_O = load.wrench_W;
        f_O.head<3>() += p.cross(load.wrench_W.tail<3>());
        const double power = f_O.dot(twist);
        EXPECT_NEAR(Q.dot(u), power, 1e-10 * std::max(1.0, std::abs(power)))
            << "trial " << trial << " body " << i;
      }
    }
  }
}

TEST(FlexibleDynamics, RigidModelGivesTheRigidResults) {
  std::mt19937 rng(10);
  for (int trial = 0; trial < 6; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = 8;
    options.free_flyer_root = trial % 2 == 0;
    const Model model = test::randomTree(rng, options);
    ASSERT_FALSE(model.has_flexible_bodies);
    Data data(model);
    const State x = randomState(model, rng);
    const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 5.0);
    const Eigen::VectorXd qdd = aba(model, data, x.q, x.v, tau);
    EXPECT_LT(relativeDifference(flexibleAba(model, data, x.q, x.v, tau), qdd), kFormulationRelTol);
    const Eigen::VectorXd tau_rnea = rnea(model, data, x.q, x.v, qdd);
    EXPECT_LT(relativeDifference(flexibleRnea(model, data, x.q, x.v, qdd), tau_rnea),
              kFormulationRelTol);
    const Eigen::MatrixXd M = crba(model, data, x.q);
    EXPECT_LT(relativeDifference(flexibleCrba(model, data, x.q), M), kFormulationRelTol);
    const double t = kineticEnergy(model, data, x.q, x.v);
    EXPECT_NEAR(flexibleKineticEnergy(model, data, x.q, x.v), t, 1e-12 * std::max(1.0, t));
    const double u = potentialEnergy(model, data, x.q);
    EXPECT_NEAR(flexiblePotentialEnergy(model, data, x.q), u, 1e-12 * std::max(1.0, std::abs(u)));
  }
}

}  // namespace
}  // namespace hilsim
