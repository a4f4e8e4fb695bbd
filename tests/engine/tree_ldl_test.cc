// The joint-space inertia matrix (CRBA) and its sparse LᵀDL factorisation on the tree pattern.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/energy.h"
#include "engine/algorithms/tree_ldl.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;
using test::kFormulationRelTol;

/// true when dof j is i or one of i's ancestors in the dof tree.
bool isAncestorOrSelf(const Model& model, int j, int i) {
  for (int k = i; k >= 0; k = model.dof_parent[k])
    if (k == j) return true;
  return false;
}

struct TreeCase {
  int bodies;
  bool free_flyer_root;
};

void PrintTo(const TreeCase& c, std::ostream* os) {
  *os << c.bodies << (c.free_flyer_root ? " bodies, floating" : " bodies, fixed base");
}

class TreeLdl : public ::testing::TestWithParam<TreeCase> {};

// M x = b solved by the tree LᵀDL agrees with a dense Cholesky, has a backward-stable residual,
// and the factor reproduces M exactly on and off the tree pattern.
TEST_P(TreeLdl, FactorReconstructsMAndSolvesLikeDenseCholesky) {
  const TreeCase c = GetParam();
  std::mt19937 rng(100 + c.bodies);
  double worst_forward = 0.0, worst_residual = 0.0, worst_reconstruction = 0.0, worst_cond = 0.0;
  for (int trial = 0; trial < 4; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = c.bodies;
    options.free_flyer_root = c.free_flyer_root;
    const Model model = test::randomTree(rng, options);
    Data data(model);
    for (int state = 0; state < 3; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::MatrixXd M = crba(model, data, q);
      Eigen::MatrixXd factor = M;
      treeLdlFactor(model, factor);

      // Lᵀ D L == M, with L unit lower triangular holding the factor's entries at (i, ancestor j)
      const int n = model.nv;
      Eigen::MatrixXd L = Eigen::MatrixXd::Identity(n, n);
      for (int i = 0; i < n; ++i)
        for (int j = model.dof_parent[i]; j >= 0; j = model.dof_parent[j]) L(i, j) = factor(i, j);
      const Eigen::MatrixXd LtDL = L.transpose() * factor.diagonal().asDiagonal() * L;
      // LᵀDL is backward stable entrywise: |LᵀDL − M| ≤ γ_d |L|ᵀ|D||L| with d the tree depth
      // (≤ n), and for an SPD M, ‖|L|ᵀ|D||L|‖ is within a small factor of ‖M‖. 1e-12 relative to
      // ‖M‖ allows ~50 roundings per entry.
      const double reconstruction = (LtDL - M).cwiseAbs().maxCoeff() / M.cwiseAbs().maxCoeff();
      EXPECT_LT(reconstruction, kAlgebraTol);
      // the factor has no fill-in: entries off the pattern are untouched (and M is zero there)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < i; ++j)
          if (!isAncestorOrSelf(model, j, i)) {
            EXPECT_EQ(M(i, j), 0.0) << i << ", " << j;
            EXPECT_EQ(factor(i, j), 0.0) << i << ", " << j;
          }
      EXPECT_GT(factor.diagonal().minCoeff(), 0.0);  // M is positive definite: D > 0

      for (int rhs = 0; rhs < 3; ++rhs) {
        const Eigen::VectorXd b = test::randomVector(n, rng, 10.0);
        Eigen::VectorXd x = b;
        treeLdlSolve(model, factor, x);
        const Eigen::VectorXd x_dense = M.llt().solve(b);
        // backward error: ‖M x − b‖ / (‖M‖ ‖x‖) is O(n ε) for a stable solver regardless of the
        // conditioning of M
        const double residual =
            (M * x - b).lpNorm<Eigen::Infinity>() /
            (M.lpNorm<Eigen::Infinity>() * x.lpNorm<Eigen::Infinity>());
        EXPECT_LT(residual, kAlgebraTol);
        // forward agreement with the dense solver at the engine's formulation tolerance (both are
        // backward stable, so they differ by ≲ cond(M) · n ε; see the printed condition numbers)
        const double forward = test::relativeDifference(x, x_dense);
        EXPECT_LT(forward, kFormulationRelTol);
        worst_forward = std::max(worst_forward, forward);
        worst_residual = std::max(worst_residual, residual);
      }
      worst_reconstruction = std::max(worst_reconstruction, reconstruction);
      const Eigen::VectorXd eig = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(M).eigenvalues();
      worst_cond = std::max(worst_cond, eig.maxCoeff() / eig.minCoeff());
    }
  }
  std::printf("%3d bodies: max cond(M) %.3g, reconstruction %.3g, residual %.3g, vs LLT %.3g\n",
              c.bodies, worst_cond, worst_reconstruction, worst_residual, worst_forward);
}

INSTANTIATE_TEST_SUITE_P(TreeSizes, TreeLdl,
                         ::testing::Values(TreeCase{1, false}, TreeCase{1, true},
                                           TreeCase{2, false}, TreeCase{5, true},
                                           TreeCase{20, false}, TreeCase{20, true},
                                           TreeCase{60, true}, TreeCase{200, true}),
                         [](const auto& info) {
                           return std::to_string(info.param.bodies) +
                                  (info.param.free_flyer_root ? "_floating" : "_fixed");
                         });

// CRBA against an independent energy computation: ½ vᵀ M v is the kinetic energy summed body by
// body from the spatial velocities (armature included in both), for any v; M is symmetric.
TEST(Crba, QuadraticFormIsTheKineticEnergy) {
  std::mt19937 rng(3);
  for (const int bodies : {1, 5, 20, 60}) {
    test::RandomTreeOptions options;
    options.bodies = bodies;
    options.free_flyer_root = bodies % 2 == 0;
    const Model model = test::randomTree(rng, options);
    Data data(model);
    for (int state = 0; state < 5; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::MatrixXd M = crba(model, data, q);
      const double from_M = 0.5 * v.dot(M * v);
      const double from_bodies = kineticEnergy(model, data, q, v);
      // both are sums of O(n) positive terms of similar size: relative rounding ~ n ε
      EXPECT_NEAR(from_M, from_bodies, kAlgebraTol * std::max(1.0, from_bodies))
          << bodies << " bodies";
      // off-diagonal blocks are mirrored exactly; a joint's own block Sᵀ(P S) is a product whose
      // two triangles round independently: a few ulps of ‖M‖
      EXPECT_LT((M - M.transpose()).cwiseAbs().maxCoeff(), kAlgebraTol * M.cwiseAbs().maxCoeff());
    }
  }
}

}  // namespace
}  // namespace hilsim
