// ABA, CRBA + LᵀDL and RNEA agree on random trees mixing every joint type.
#include <gtest/gtest.h>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/crba_forward_dynamics.h"
#include "engine/algorithms/rnea.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kFormulationRelTol;
using test::relativeDifference;

class DynamicsConsistency : public ::testing::TestWithParam<int> {};

TEST_P(DynamicsConsistency, AbaCrbaAndRneaAgreeAtRandomStates) {
  const int bodies = GetParam();
  std::mt19937 rng(1234 + bodies);
  for (int trial = 0; trial < 5; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = bodies;
    options.free_flyer_root = trial % 2 == 0;
    // without armature a free root takes ABA's floating-base path; with it, the generic one
    options.damping_and_armature = trial % 4 != 0;
    const Model model = test::randomTree(rng, options);
    Data data(model);
    std::vector<ForceVector> f_ext(model.nbodies);
    for (auto& f : f_ext) f = test::randomVector(6, rng);
    for (int state = 0; state < 4; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd tau = test::randomVector(model.nv, rng, 10.0);
      const bool with_forces = state % 2 == 1;
      std::span<const ForceVector> fext;
      if (with_forces) fext = f_ext;

      const Eigen::VectorXd qdd_aba = aba(model, data, q, v, tau, fext);
      const Eigen::VectorXd qdd_crba = crbaForwardDynamics(model, data, q, v, tau, fext);
      EXPECT_LT(relativeDifference(qdd_aba, qdd_crba), kFormulationRelTol)
          << "bodies " << bodies << " trial " << trial;

      // RNEA inverts both
      const Eigen::VectorXd tau_back = rnea(model, data, q, v, qdd_aba, fext);
      EXPECT_LT(relativeDifference(tau_back, tau), kFormulationRelTol);

      // M q̈ + C == RNEA(q, v, q̈)
      const Eigen::MatrixXd M = crba(model, data, q);
      const Eigen::VectorXd c = nonLinearEffects(model, data, q, v, fext);
      EXPECT_LT(relativeDifference(M * qdd_aba + c, tau), kFormulationRelTol);
      // M is symmetric positive definite
      EXPECT_LT(relativeDifference(M, M.transpose()), test::kAlgebraTol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TreeSizes, DynamicsConsistency, ::testing::Values(1, 2, 5, 20, 60, 200));

}  // namespace
}  // namespace hilsim
