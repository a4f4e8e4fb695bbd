// The formulation registry and the consistency matrix over it: every formulation, given a Data
// holding only the workspace its row declares, agrees with the dense solve M⁻¹(τ − b) and with
// ABA on every model family it can run (random rigid trees of 1 to 200 bodies, random flexible
// trees, a chain with massless bodies). A formulation added to the registry is checked here
// without a line of this file changing.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/rnea.h"
#include "engine/formulations/formulations.h"
#include "engine/builder/model_builder.h"
#include "engine/integrators/simulator.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kFormulationRelTol;
using test::relativeDifference;

TEST(FormulationRegistry, RowsAreCompleteAndNamesRoundTrip) {
  std::set<std::string> names;
  for (const FormulationInfo& f : formulations()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_TRUE(names.insert(std::string(f.name)).second) << "duplicate name";
    EXPECT_EQ(parseFormulation(f.name), f.id);
    EXPECT_EQ(formulationName(f.id), f.name);
    EXPECT_EQ(&formulationInfo(f.id), &f);
    EXPECT_FALSE(f.summary.empty());
    EXPECT_FALSE(f.reference.empty());
    EXPECT_NE(f.forward_dynamics, nullptr);
    if (f.capabilities.closed_loops) {
      EXPECT_NE(f.inverse_inertia, nullptr);
    }
    EXPECT_NE(formulationNames().find(f.name), std::string::npos);
  }
  EXPECT_EQ(formulations().front().id, Formulation::kAba);  // the default, listed first
  EXPECT_FALSE(parseFormulation("featherstone"));
  // "a, b or c": every name in registry order, the last one after " or "
  std::string expected;
  const auto rows = formulations();
  for (std::size_t k = 0; k < rows.size(); ++k)
    expected += (k == 0 ? "" : k + 1 == rows.size() ? " or " : ", ") + std::string(rows[k].name);
  EXPECT_EQ(formulationNames(", ", " or "), expected);
  EXPECT_EQ(formulationNames(), formulationNames(", ", ", "));
}


TEST(FormulationRegistry, CapabilitiesDecideWhichModelsRun) {
  const Model massless = test::masslessChain();
  ASSERT_GT(massless.nalgebraic, 0);
  for (const FormulationInfo& f : formulations()) {
    const std::string why = checkFormulation(massless, f.id);
    EXPECT_EQ(why.empty(), f.capabilities.massless) << f.name << ": " << why;
    if (!why.empty()) {
      EXPECT_NE(why.find("massless joint motion (joint '"), std::string::npos) << why;
      EXPECT_NE(why.find("needs formulation 'aba'"), std::string::npos) << why;
    }
  }
  std::mt19937 rng(3);
  const Model flexible = test::randomFlexibleTree(rng);
  for (const FormulationInfo& f : formulations())
    EXPECT_EQ(checkFormulation(flexible, f.id).empty(), f.capabilities.flexible) << f.name;
}

// A serial chain of `links` revolute links standing up along z.
Model uprightChain(int links) {
  ModelBuilder builder("chain");
  const Inertia link(1.0, Vector3(0.0, 0.0, 0.05), Vector3(0.01, 0.01, 0.001).asDiagonal());
  std::string parent = "world";
  for (int k = 0; k < links; ++k) {
    std::string name = std::to_string(k);
    name.insert(name.begin(), 'l');  // (GCC 12 warns falsely on "l" + std::string)
    builder.addBody(name, parent, Joint::revolute(Vector3::UnitY()),
                    Transform(Matrix3::Identity(), Vector3(0, 0, 0.1)), link);
    parent = name;
  }
  return builder.build();
}

TEST(FormulationRegistry, DataReservesTheDenseMatricesOnlyOnRequest) {
  // an O(n) formulation is O(n) in memory: a 2000-link chain under aba holds no nv × nv matrix
  const Model chain = uprightChain(2000);
  for (const FormulationInfo& f : formulations()) {
    const Data data = test::dataFor(chain, f.id);
    const bool dense = holds(f.workspace, DataWorkspace::kJointSpaceInertia);
    EXPECT_EQ(data.M.size(), dense ? chain.nv * chain.nv : 0) << f.name;
    EXPECT_EQ(data.M_factor.size(), dense ? chain.nv * chain.nv : 0) << f.name;
  }
  EXPECT_EQ(Data(chain).M.rows(), chain.nv);  // everything by default
}

TEST(FormulationRegistry, PerBodyFormulationsSimulateAHundredThousandLinks) {
  // 10⁵ links: dense nv × nv buffers alone would take 2 × 80 GB, so the Simulator of a
  // formulation that reserves none must construct and step within O(n) memory. The upright chain
  // at rest stays at rest.
  const Model chain = uprightChain(100'000);
  for (const FormulationInfo& f : formulations()) {
    if (f.workspace != DataWorkspace::kPerBody) continue;
    Simulator sim(std::make_shared<const Model>(chain), f.id, Integrator::kRk4, 1e-3);
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(chain.nv);
    for (int k = 0; k < 3; ++k) sim.step(tau);
    EXPECT_TRUE(sim.q().allFinite()) << f.name;
    EXPECT_LT(sim.v().cwiseAbs().maxCoeff(), 1e-9) << f.name;
  }
}

// q̈ by the dense solve M⁻¹(τ − b), from a Data with every workspace.
Eigen::VectorXd denseForwardDynamics(const Model& model, const Eigen::VectorXd& q,
                                     const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  Data full(model);
  const Eigen::MatrixXd M = crba(model, full, q);
  const Eigen::VectorXd b = nonLinearEffects(model, full, q, v);
  return M.ldlt().solve(tau - b);
}

// Every formulation that can run `model`, on a Data of its declared workspace only, against ABA
// and (for a regular mass matrix) the dense solve, at `states` random states.
void expectEveryFormulationAgrees(const Model& model, std::mt19937& rng, int states,
                                  const std::string& where) {
  Data reference(model);
  const std::vector<Formulation> runnable = test::formulationsFor(model);
  ASSERT_FALSE(runnable.empty()) << where;
  for (int state = 0; state < states; ++state) {
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 10.0);
    const Eigen::VectorXd qdd_aba = aba(model, reference, q, v, tau);
    const bool regular = model.nalgebraic == 0;
    const Eigen::VectorXd qdd_dense =
        regular ? denseForwardDynamics(model, q, v, tau) : Eigen::VectorXd();
    for (const Formulation f : runnable) {
      Data data = test::dataFor(model, f);
      const Eigen::VectorXd qdd = forwardDynamics(f, model, data, q, v, tau);
      EXPECT_LT(relativeDifference(qdd, qdd_aba), kFormulationRelTol)
          << where << " " << formulationName(f) << " vs aba, state " << state;
      if (regular) {
        EXPECT_LT(relativeDifference(qdd, qdd_dense), kFormulationRelTol)
            << where << " " << formulationName(f) << " vs dense, state " << state;
      }
    }
  }
}

class RigidTreeMatrix : public ::testing::TestWithParam<int> {};

TEST_P(RigidTreeMatrix, EveryFormulationAgreesWithAbaAndTheDenseSolve) {
  const int bodies = GetParam();
  std::mt19937 rng(4321 + bodies);
  for (int trial = 0; trial < 4; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = bodies;
    options.free_flyer_root = trial % 2 == 0;
    options.damping_and_armature = trial % 4 != 0;
    expectEveryFormulationAgrees(test::randomTree(rng, options), rng, 3,
                                 std::to_string(bodies) + " bodies, trial " +
                                     std::to_string(trial));
  }
}

INSTANTIATE_TEST_SUITE_P(TreeSizes, RigidTreeMatrix, ::testing::Values(1, 2, 5, 20, 60, 200));

TEST(FormulationChains, EveryFormulationAgreesOnDeepChainsOfEveryJointType) {
  // Random trees are shallow (random parents: depth ~ log n); round-off that grows joint by
  // joint shows on chains. 40 bodies, every joint type: ABA once drifted to O(1) here (an
  // asymmetric P − G Uᵀ at multi-DoF joints). The referee is the equations of motion, RNEA(q, v,
  // q̈) = τ, which no formulation shares: each one's residual, relative to the joint forces it
  // balances, to 1e-10, and every formulation against ABA to 1e-10. (The dense solve M⁻¹(τ − b)
  // is no referee here: its error grows with cond(M), 1.4e-10 on these chains.)
  std::mt19937 rng(99);
  for (int trial = 0; trial < 4; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = 40;
    options.chain = true;
    options.free_flyer_root = trial % 2 == 0;
    options.damping_and_armature = trial % 4 != 0;
    const Model model = test::randomTree(rng, options);
    Data reference(model);
    for (int state = 0; state < 3; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 10.0);
      const Eigen::VectorXd qdd_aba = aba(model, reference, q, v, tau);
      // the forces at stake: τ and what holds the chain at rest, RNEA(q, v, 0)
      const double scale =
          std::max(tau.norm(), rnea(model, reference, q, v, Eigen::VectorXd::Zero(model.nv)).norm());
      for (const Formulation f : test::formulationsFor(model)) {
        Data data = test::dataFor(model, f);
        const Eigen::VectorXd qdd = forwardDynamics(f, model, data, q, v, tau);
        EXPECT_LT(relativeDifference(qdd, qdd_aba), kFormulationRelTol)
            << formulationName(f) << " vs aba, trial " << trial << ", state " << state;
        EXPECT_LT((rnea(model, reference, q, v, qdd) - tau).norm() / scale, kFormulationRelTol)
            << formulationName(f) << " residual, trial " << trial << ", state " << state;
      }
    }
  }
}

TEST(FlexibleTreeMatrix, EveryFormulationAgreesWithAbaAndTheDenseSolve) {
  std::mt19937 rng(77);
  for (int trial = 0; trial < 6; ++trial) {
    test::RandomFlexibleTreeOptions options;
    options.free_flyer_root = trial % 2 == 0;
    options.geometric_stiffening = trial % 3 != 0;
    expectEveryFormulationAgrees(test::randomFlexibleTree(rng, options), rng, 3,
                                 "flexible trial " + std::to_string(trial));
  }
}

TEST(MasslessMatrix, EveryCapableFormulationAgreesWithAba) {
  std::mt19937 rng(78);
  expectEveryFormulationAgrees(test::masslessChain(), rng, 5, "massless chain");
}

}  // namespace
}  // namespace hilsim
