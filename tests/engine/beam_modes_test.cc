// The Euler–Bernoulli beam generator against beam theory: natural frequencies of clamped-free and
// free-free beams, the frequency a spinning cantilever gains from geometric stiffening (the
// first-order Southwell coefficient) and loses without it, and bad beam data.
#include <gtest/gtest.h>

#include <cmath>

#include <Eigen/Eigenvalues>

#include "engine/algorithms/rnea.h"
#include "engine/integrators/simulator.h"
#include "engine/model/beam_modes.h"
#include "engine/builder/model_builder.h"

namespace hilsim {
namespace {

// An aluminium strip: 1 m × 50 mm × 5 mm.
BeamSpec aluminiumStrip() {
  BeamSpec spec;
  spec.youngs_modulus = 70e9;
  spec.density = 2700.0;
  spec.area = 0.05 * 0.005;
  spec.area_moment = 0.05 * std::pow(0.005, 3) / 12.0;
  spec.length = 1.0;
  spec.modes = 3;
  spec.elements = 30;
  return spec;
}

double theoryFrequency(const BeamSpec& spec, double beta_l) {
  return beta_l * beta_l *
         std::sqrt(spec.youngs_modulus * spec.area_moment /
                   (spec.density * spec.area * std::pow(spec.length, 4)));
}

// Natural frequencies of the modal model: the generalized eigenvalues of (K, M_ff).
Eigen::VectorXd modelFrequencies(const FlexibleBody& body) {
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eig(body.stiffness,
                                                                        body.modal_mass);
  return eig.eigenvalues().cwiseSqrt();
}

// Lumped-mass beam elements converge as O(h²): 30 elements put the third mode within 0.3 % of
// theory; the bound is 1 %.
constexpr double kFrequencyRelTol = 0.01;

TEST(BeamModes, ClampedFreeFrequenciesMatchEulerBernoulliTheory) {
  const BeamSpec spec = aluminiumStrip();
  const FlexibleBody body = eulerBernoulliBeam(spec);
  EXPECT_EQ(body.validate(), "");
  const Eigen::VectorXd omega = modelFrequencies(body);
  const double beta_l[3] = {1.87510407, 4.69409113, 7.85475744};
  for (int r = 0; r < 3; ++r)
    EXPECT_NEAR(omega[r] / theoryFrequency(spec, beta_l[r]), 1.0, kFrequencyRelTol) << "mode " << r;
  // mass-normalized modes: M_ff = 1
  EXPECT_TRUE(body.modal_mass.isIdentity(1e-9));
  EXPECT_NEAR(body.mass, spec.density * spec.area * spec.length, 1e-12);
}

TEST(BeamModes, FreeFreeFrequenciesMatchEulerBernoulliTheory) {
  BeamSpec spec = aluminiumStrip();
  spec.boundary = BeamSpec::Boundary::kFreeFree;
  const FlexibleBody body = eulerBernoulliBeam(spec);
  EXPECT_EQ(body.validate(), "");
  const Eigen::VectorXd omega = modelFrequencies(body);
  const double beta_l[3] = {4.73004074, 7.85320462, 10.9956078};
  for (int r = 0; r < 3; ++r)
    EXPECT_NEAR(omega[r] / theoryFrequency(spec, beta_l[r]), 1.0, kFrequencyRelTol) << "mode " << r;
  // elastic modes only: no coupling to the rigid motion at rest (mean axes)
  EXPECT_LT(body.first_moment_modes.cwiseAbs().maxCoeff(), 1e-9);
}

TEST(BeamModes, BothPlanesGivePairsOfModes) {
  BeamSpec spec = aluminiumStrip();
  spec.bending = BeamSpec::Bending::kBoth;
  spec.modes = 4;
  const FlexibleBody body = eulerBernoulliBeam(spec);
  const Eigen::VectorXd omega = modelFrequencies(body);
  EXPECT_NEAR(omega[0], omega[1], 1e-9 * omega[0]);
  EXPECT_NEAR(omega[2], omega[3], 1e-9 * omega[2]);
  const ModalNode& tip = body.nodes[body.nodeIndex("tip")];
  EXPECT_GT(std::abs(tip.translation(1, 0)) + std::abs(tip.translation(1, 1)), 0.0);
  EXPECT_GT(std::abs(tip.translation(2, 0)) + std::abs(tip.translation(2, 1)), 0.0);
}

// The beam on a revolute joint about z at its root, spinning at Ω: a joint armature of 1e9 kg·m²
// keeps Ω constant against the beam's reaction. Returns the frequency of small free oscillations
// of its one mode, from the zero crossings of η over 20 periods.
double spinningFrequency(const BeamSpec& spec, double spin_rate) {
  BodySpec beam;
  beam.name = "beam";
  beam.joint = Joint::revolute(Vector3::UnitZ());
  beam.properties.armature = 1e9;
  beam.flexible = eulerBernoulliBeam(spec);
  const auto model = std::make_shared<const Model>(
      ModelBuilder("spinning_beam").setGravity(Vector3::Zero()).addBody(beam).build());
  const double omega0 = std::sqrt(model->flexible[1].stiffness(0, 0));
  const double period_guess = 2.0 * M_PI / omega0;
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, period_guess / 400.0);
  Eigen::VectorXd q = model->neutralConfiguration(), v = Eigen::VectorXd::Zero(model->nv);
  q[1] = 1e-6;  // a small deflection of the mode
  v[0] = spin_rate;
  sim.setState(q, v);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  std::vector<double> crossings;
  double previous = sim.q()[1];
  while (crossings.size() < 21 && sim.time() < 100.0 * period_guess) {
    sim.step(tau);
    const double eta = sim.q()[1];
    if (previous < 0.0 && eta >= 0.0)
      crossings.push_back(sim.time() - sim.dt() * eta / (eta - previous));
    previous = eta;
  }
  EXPECT_EQ(crossings.size(), 21u) << "no steady oscillation";
  if (crossings.size() < 2) return 0.0;
  return 2.0 * M_PI * (crossings.size() - 1) / (crossings.back() - crossings.front());
}

// First-order perturbation of a uniform cantilever spinning about an axis through its root:
// ω² = ω₀² + K Ω² for flapping (displacement along the spin axis) and ω₀² + (K − 1) Ω² in the
// plane of rotation, K = ∫ ½(L² − x²) φ′² dx / ∫ φ² dx = 1.19334 for the first mode (the Rayleigh
// quotient of the centrifugal tension with the non-rotating mode shape). Without geometric
// stiffening the linear modal model keeps only the centrifugal softening −Ω² in the plane.
TEST(BeamModes, SpinningCantileverGainsTheSouthwellStiffness) {
  constexpr double kSouthwell = 1.19334;
  BeamSpec spec = aluminiumStrip();
  spec.modes = 1;
  const double omega0 = theoryFrequency(spec, 1.87510407);
  const double spin = 0.8 * omega0;
  // the measured K is the FE Rayleigh quotient (30 elements: 1.19332) measured over 20 periods
  // with RK4 at 400 steps per period (phase error far below 1e-4): 0.2 % leaves room for both
  constexpr double kCoefficientTol = 0.002;

  spec.bending = BeamSpec::Bending::kZ;
  {
    const double w0 = spinningFrequency(spec, 0.0);
    const double w = spinningFrequency(spec, spin);
    EXPECT_NEAR((w * w - w0 * w0) / (spin * spin), kSouthwell, kCoefficientTol * kSouthwell);
  }
  spec.bending = BeamSpec::Bending::kY;
  {
    const double w0 = spinningFrequency(spec, 0.0);
    const double w = spinningFrequency(spec, spin);
    EXPECT_NEAR((w * w - w0 * w0) / (spin * spin), kSouthwell - 1.0,
                kCoefficientTol * kSouthwell);
  }
  spec.geometric_stiffening = false;
  {
    const double w0 = spinningFrequency(spec, 0.0);
    const double w = spinningFrequency(spec, spin);
    EXPECT_NEAR((w * w - w0 * w0) / (spin * spin), -1.0, kCoefficientTol);
  }
}

// A static load at the tip of a cantilever (4 modes): the modal equilibrium K η = ψᵀ f gives the
// beam-theory tip deflection P L³/3EI for a force and M L²/2EI for a moment. Truncated to four
// modes the force case is within 0.5 %, the moment case (which excites the higher modes more)
// within 1 %: measured −0.74 %.
TEST(BeamModes, StaticTipLoadsDeflectTheBeamAsBeamTheorySays) {
  BeamSpec spec = aluminiumStrip();
  spec.modes = 4;
  BodySpec beam;
  beam.name = "beam";
  beam.joint = Joint::revolute(Vector3::UnitZ());
  beam.flexible = eulerBernoulliBeam(spec);
  const Model model = ModelBuilder("cantilever").setGravity(Vector3::Zero()).addBody(beam).build();
  Data data(model);
  const int tip = model.flexible[1].nodeIndex("tip");
  const double ei = spec.youngs_modulus * spec.area_moment, l = spec.length;
  const Eigen::VectorXd q = model.neutralConfiguration(), zero = Eigen::VectorXd::Zero(model.nv);
  auto tipDeflection = [&](const ForceVector& wrench) {
    // at rest and undeformed the modal forces are −ψᵀ f; equilibrium η = K⁻¹ ψᵀ f
    const NodalForce load{1, tip, wrench};
    const Eigen::VectorXd tau = rnea(model, data, q, zero, zero, {}, {&load, 1});
    const Eigen::VectorXd eta = -model.flexible[1].stiffness.ldlt().solve(tau.tail(4));
    return Vector3(model.flexible[1].nodes[tip].translation * eta).y();
  };
  ForceVector force = ForceVector::Zero();
  force[4] = -0.1;  // 0.1 N along −y
  EXPECT_NEAR(tipDeflection(force) / (-0.1 * l * l * l / (3.0 * ei)), 1.0, 0.005);
  ForceVector moment = ForceVector::Zero();
  moment[2] = 0.01;  // 0.01 N·m about z
  EXPECT_NEAR(tipDeflection(moment) / (0.01 * l * l / (2.0 * ei)), 1.0, 0.01);
}

TEST(BeamModes, BadSpecificationsAreRejected) {
  struct Case {
    void (*apply)(BeamSpec&);
    const char* expected;
  };
  const Case cases[] = {
      {[](BeamSpec& s) { s.youngs_modulus = -1.0; }, "must be finite and > 0"},
      {[](BeamSpec& s) { s.length = std::nan(""); }, "must be finite and > 0"},
      {[](BeamSpec& s) { s.elements = 1; }, "elements"},
      {[](BeamSpec& s) { s.modes = 0; }, "at least one mode"},
      {[](BeamSpec& s) { s.modes = 40; }, "give at most 30 modes"},
      {[](BeamSpec& s) { s.damping_ratio = -0.1; }, "damping ratio"},
  };
  for (const Case& c : cases) {
    BeamSpec spec = aluminiumStrip();
    c.apply(spec);
    try {
      eulerBernoulliBeam(spec);
      ADD_FAILURE() << "accepted: " << c.expected;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace hilsim
