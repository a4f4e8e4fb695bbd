// The Hamiltonian divide-and-conquer formulation (seed 001; docs/HDCA.md): phase 1 turns momenta
// into the velocities M⁻¹ p, phase 2 gives ṗ as the Lagrangian d/dt (M v) does, on random trees
// of every joint type with armature, damping and springs; the result does not depend on the
// assembly order; the (q, p) state of the Simulator follows aba's (q, v) one and keeps energy.
// q̈ against the other formulations through the registry is in formulations_test.cc.
#include <gtest/gtest.h>

#include <random>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/hdca.h"
#include "engine/builder/system_generator.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/model/configuration.h"
#include "engine/model/assembly_tree.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

// Random trees: a floating one, a fixed one, and a chain as deep as it is long (the hardest for
// the mobility form: light links carrying the rest)
std::vector<Model> randomTrees() {
  std::vector<Model> out;
  for (int seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(100 + seed);
    test::RandomTreeOptions options;
    options.bodies = 18;
    options.free_flyer_root = seed == 1;
    options.chain = seed == 3;
    out.push_back(test::randomTree(rng, options));
  }
  return out;
}

TEST(Hdca, VelocitiesFromMomentaAreTheInverseOfTheMassMatrix) {
  for (const Model& model : randomTrees()) {
    ASSERT_EQ(checkFormulation(model, Formulation::kHdca), "");
    std::mt19937 rng(7);
    Data data(model), reference(model);
    for (int k = 0; k < 5; ++k) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd p = crba(model, reference, q) * v;
      Eigen::VectorXd v_hdca(model.nv), p_hdca(model.nv);
      hdcaAssemble(model, data, q);
      hdcaVelocities(model, data, p, v_hdca);
      EXPECT_LE((v_hdca - v).lpNorm<Eigen::Infinity>(),
                test::kFormulationRelTol * v.lpNorm<Eigen::Infinity>())
          << model.name;
      // and p = M v by its own sweep (the conversion at the boundary)
      hdcaMomenta(model, data, q, v, p_hdca);
      EXPECT_LE((p_hdca - p).lpNorm<Eigen::Infinity>(),
                test::kAlgebraTol * std::max(1.0, p.lpNorm<Eigen::Infinity>()))
          << model.name;
    }
  }
}

// ṗ = d/dt (M v) = M q̈ + Ṁ v along the motion, q̈ from aba, Ṁ v by central differences of crba's
// M along q ⊕ ±ε v with Richardson's extrapolation (error O(ε⁴) ≈ 1e-12 at ε = 1e-3, round-off
// 1e-16 |M| / ε ≈ 1e-13 relative): the tolerance is 1e-9 of |ṗ|
TEST(Hdca, MomentumRatesAreTheLagrangianRateOfMomentum) {
  for (const Model& model : randomTrees()) {
    std::mt19937 rng(11);
    Data data(model), reference(model);
    for (int k = 0; k < 3; ++k) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
      const Eigen::VectorXd qdd = aba(model, reference, q, v, tau);
      const auto mass_rate = [&](double eps) {
        Eigen::VectorXd q_plus(model.nq), q_minus(model.nq);
        integrateConfiguration(model, q, v, eps, q_plus);
        integrateConfiguration(model, q, v, -eps, q_minus);
        const Eigen::MatrixXd M_plus = crba(model, reference, q_plus);
        const Eigen::MatrixXd M_minus = crba(model, reference, q_minus);
        return Eigen::MatrixXd((M_plus - M_minus) / (2.0 * eps));
      };
      const double eps = 1e-3;
      const Eigen::MatrixXd M_dot = (4.0 * mass_rate(eps / 2) - mass_rate(eps)) / 3.0;
      const Eigen::VectorXd expected = crba(model, reference, q) * qdd + M_dot * v;

      Eigen::VectorXd p(model.nv), v_out(model.nv), p_dot(model.nv);
      hdcaMomenta(model, data, q, v, p);
      hdcaMomentumRates(model, data, q, p, tau, v_out, p_dot);
      EXPECT_LE((v_out - v).lpNorm<Eigen::Infinity>(),
                test::kFormulationRelTol * v.lpNorm<Eigen::Infinity>());
      EXPECT_LE((p_dot - expected).lpNorm<Eigen::Infinity>(),
                1e-9 * expected.lpNorm<Eigen::Infinity>())
          << model.name << "\n" << p_dot.transpose() << "\n" << expected.transpose();
    }
  }
}

// Every order of the assembly, with blocks of one body (the paper's assembly, every joint a
// compound) and of the default length, gives the same q̈ to round-off
TEST(Hdca, AssemblyOrderLeavesTheResultUnchanged) {
  for (const Model& model : randomTrees()) {
    std::mt19937 rng(3);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
    Data balanced(model);
    const Eigen::VectorXd qdd = hdcaForwardDynamics(model, balanced, q, v, tau);
    for (const int block : {1, kDefaultBlockBodies}) {
      for (const auto& [order, seed] : {std::pair{AssemblyOrder::kBalanced, 0},
                                        std::pair{AssemblyOrder::kSequential, 0},
                                        std::pair{AssemblyOrder::kRandom, 1},
                                        std::pair{AssemblyOrder::kRandom, 2}}) {
        Data other(model);
        other.useAssemblyTree(buildAssemblyTree(model, order, seed, block));
        const Eigen::VectorXd other_qdd = hdcaForwardDynamics(model, other, q, v, tau);
        EXPECT_LE((other_qdd - qdd).lpNorm<Eigen::Infinity>(),
                  test::kFormulationRelTol * qdd.lpNorm<Eigen::Infinity>())
            << model.name << " block " << block << " order " << static_cast<int>(order)
            << " seed " << seed;
      }
    }
  }
}

// A block's articulated recursion (docs/HDCA.md, "Blocks") is the assembly of its bodies one
// after the other, in another form: every block length gives M⁻¹ p and q̈ to round-off, from
// one body per block (the paper's leaves) to a whole path in one block
TEST(Hdca, BlockLengthLeavesTheResultUnchanged) {
  for (const Model& model : randomTrees()) {
    std::mt19937 rng(5);
    Data reference(model);
    for (int trial = 0; trial < 3; ++trial) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
      const Eigen::VectorXd p = crba(model, reference, q) * v;
      const Eigen::VectorXd qdd = aba(model, reference, q, v, tau);
      for (const int block : {1, 2, 3, 5, 16, 1000}) {
        Data data(model);
        data.useAssemblyTree(buildAssemblyTree(model, AssemblyOrder::kBalanced, 0, block));
        Eigen::VectorXd v_hdca(model.nv);
        hdcaAssemble(model, data, q);
        hdcaVelocities(model, data, p, v_hdca);
        EXPECT_LE((v_hdca - v).lpNorm<Eigen::Infinity>(),
                  test::kFormulationRelTol * v.lpNorm<Eigen::Infinity>())
            << model.name << " block " << block;
        const Eigen::VectorXd qdd_hdca = hdcaForwardDynamics(model, data, q, v, tau);
        EXPECT_LE((qdd_hdca - qdd).lpNorm<Eigen::Infinity>(),
                  test::kFormulationRelTol * qdd.lpNorm<Eigen::Infinity>())
            << model.name << " block " << block;
      }
    }
  }
}

TEST(Hdca, AssemblyTreeOfAChainHasLogarithmicLevels) {
  SystemSpec spec;
  spec.bodies = 1024;
  const Model chain = generateSystem(spec, "chain");
  // one path of 1024 bodies in blocks of one: the leaves, then ⌈log₂ 1024⌉ = 10 levels of
  // compounds
  const AssemblyTree tree = buildAssemblyTree(chain, AssemblyOrder::kBalanced, 0, 1);
  EXPECT_EQ(tree.upLevels(), 11);
  EXPECT_EQ(tree.nodes.size(), 2u * 1024 - 1);
  EXPECT_EQ(buildAssemblyTree(chain, AssemblyOrder::kSequential, 0, 1).upLevels(), 1024);
  // in blocks of 16: 64 leaves, 6 levels of compounds
  const AssemblyTree blocks = buildAssemblyTree(chain);
  EXPECT_EQ(blocks.upLevels(), 7);
  EXPECT_EQ(blocks.nodes.size(), 2u * 64 - 1);
  for (const AssemblyTree::Node& node : blocks.nodes) {
    if (node.left < 0) {
      EXPECT_EQ(node.count, 16);
    }
  }
  // 1000 bodies in blocks of at most 16: 63 blocks of 15 or 16
  spec.bodies = 1000;
  const AssemblyTree uneven = buildAssemblyTree(generateSystem(spec, "chain"));
  int leaves = 0;
  for (const AssemblyTree::Node& node : uneven.nodes) {
    if (node.left >= 0) continue;
    ++leaves;
    EXPECT_TRUE(node.count == 15 || node.count == 16) << node.count;
  }
  EXPECT_EQ(leaves, 63);
  spec.bodies = 1024;
  spec.shape = GeneratedShape::kTree;
  const Model binary = generateSystem(spec, "binary");
  // paths nest: a path per light child, each short
  EXPECT_LE(buildAssemblyTree(binary).upLevels(), 60);
}

// The tree a model's Data starts with: one block per path where the passes stay on one thread
// (nothing to share; no compounds, the least work), blocks of 16 joined by compounds where
// threads share them; a tree of short paths has no compounds either way
TEST(Hdca, DefaultTreeJoinsBlocksOnlyWhereThreadsShareTheWork) {
  SystemSpec spec;
  spec.bodies = 256;
  const Model short_chain = generateSystem(spec, "chain");
  const AssemblyTree one_block = defaultAssemblyTree(short_chain);
  EXPECT_FALSE(hdcaSplitsPasses(buildAssemblyTree(short_chain)));
  EXPECT_FALSE(one_block.has_compounds);
  ASSERT_EQ(one_block.nodes.size(), 1u);
  EXPECT_EQ(one_block.nodes[0].count, 256);
  EXPECT_EQ(Data(short_chain, DataWorkspace::kDivideAndConquer).hdca.tree.nodes.size(), 1u);

  spec.bodies = 1024;
  const Model long_chain = generateSystem(spec, "chain");
  const AssemblyTree blocks = defaultAssemblyTree(long_chain);
  EXPECT_TRUE(hdcaSplitsPasses(blocks));
  EXPECT_TRUE(blocks.has_compounds);
  EXPECT_EQ(blocks.nodes.size(), 2u * 64 - 1);

  spec.shape = GeneratedShape::kTree;
  const AssemblyTree binary = defaultAssemblyTree(generateSystem(spec, "binary"));
  EXPECT_TRUE(hdcaSplitsPasses(binary));
  EXPECT_FALSE(binary.has_compounds);  // its longest path is 10 bodies
}

// The schedule the threads share a pass by (engine/model/assembly_tree.h): the nodes are numbered
// in a post-order, each after the nodes it reads on the way up and before its consumer; each
// node's subtree is the contiguous range of numbers ending at it, made of its children's ranges
TEST(Hdca, AssemblyTreePostOrderKeepsSubtreesContiguous) {
  SystemSpec spec;
  spec.bodies = 300;
  std::vector<Model> models{generateSystem(spec, "chain")};
  spec.shape = GeneratedShape::kTree;
  models.push_back(generateSystem(spec, "binary"));
  for (const Model& model : randomTrees()) models.push_back(model);
  for (const Model& model : models) {
    for (const auto& [order, block] :
         {std::pair{AssemblyOrder::kBalanced, 1}, std::pair{AssemblyOrder::kSequential, 1},
          std::pair{AssemblyOrder::kBalanced, kDefaultBlockBodies},
          std::pair{AssemblyOrder::kSequential, 5}}) {
      const AssemblyTree tree = buildAssemblyTree(model, order, 0, block);
      const int nodes = static_cast<int>(tree.nodes.size());
      ASSERT_EQ(tree.post_weight.size(), tree.nodes.size() + 1);
      // every body in exactly one block, the block's bodies down its path
      std::vector<int> seen(model.nbodies, 0);
      for (int n = 0; n < nodes; ++n) {
        const AssemblyTree::Node& node = tree.nodes[n];
        if (node.left >= 0) continue;
        EXPECT_GE(node.count, 1);
        EXPECT_LE(node.count, block);
        int previous = -1;
        tree.forEachBlockBody(node, [&](int b) {
          ++seen[b];
          EXPECT_EQ(tree.leaf[b], n);
          if (previous >= 0) {
            EXPECT_EQ(tree.heavy_child[previous], b);
          }
          previous = b;
        });
      }
      for (int i = 1; i < model.nbodies; ++i) EXPECT_EQ(seen[i], 1) << model.name;
      for (int n = 0; n < nodes; ++n) {
        const AssemblyTree::Node& node = tree.nodes[n];
        std::vector<int> children;
        if (node.left >= 0) {
          children = {node.left, node.right};
        } else {
          tree.forEachBlockBody(node, [&](int b) {
            for (int c = tree.light_begin[b]; c < tree.light_begin[b + 1]; ++c)
              children.push_back(tree.path_root[tree.light[c]]);
          });
        }
        int size = 1;
        for (int c : children) {
          EXPECT_LT(c, n) << model.name;
          EXPECT_EQ(tree.consumer[c], n) << model.name;
          size += c - tree.subtree_begin[c] + 1;
        }
        EXPECT_EQ(n - tree.subtree_begin[n] + 1, size) << model.name << " node " << n;
        EXPECT_GT(tree.post_weight[n + 1], tree.post_weight[n]);
        if (tree.consumer[n] < 0) {  // a root of the world's paths: its body hangs off the world
          EXPECT_EQ(tree.path_root[tree.path_top[n]], n);
          EXPECT_LE(model.parent[tree.path_top[n]], 0);
        }
      }
    }
  }
}

// The Simulator's RK4 on (q, p) against aba's RK4 on (q, v): the same fourth-order method on two
// coordinate sets, each within O(h⁴) of the exact motion, so their difference after 0.5 s falls
// 16-fold when h halves (at least 10-fold is asserted: the next order's share at these steps);
// a conservative tree keeps its energy to the method's error
TEST(Hdca, MomentumStateFollowsTheVelocityStateAndKeepsEnergy) {
  std::mt19937 rng(5);
  test::RandomTreeOptions options;
  options.bodies = 8;
  options.damping_and_armature = false;
  const auto model = std::make_shared<Model>(test::randomTree(rng, options));
  const Eigen::VectorXd q0 = test::randomConfiguration(*model, rng);
  const Eigen::VectorXd v0 = test::randomVector(model->nv, rng, 0.5);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  double difference[2] = {0.0, 0.0};
  for (int k = 0; k < 2; ++k) {
    const double h = k == 0 ? 2e-3 : 1e-3;
    Simulator hamiltonian(model, Formulation::kHdca, Integrator::kRk4, h);
    Simulator lagrangian(model, Formulation::kAba, Integrator::kRk4, h);
    ASSERT_TRUE(hamiltonian.momentumState());
    hamiltonian.setState(q0, v0);
    lagrangian.setState(q0, v0);
    const double energy0 = hamiltonian.energy();
    for (int step = 0; step < static_cast<int>(std::lround(0.5 / h)); ++step) {
      hamiltonian.step(tau);
      lagrangian.step(tau);
    }
    // the same quaternion sign on both: they start equal and move continuously
    difference[k] = std::max((hamiltonian.v() - lagrangian.v()).lpNorm<Eigen::Infinity>(),
                             (hamiltonian.q() - lagrangian.q()).lpNorm<Eigen::Infinity>());
    EXPECT_LE(std::abs(hamiltonian.energy() - energy0), 1e-6 * std::abs(energy0));
  }
  EXPECT_LE(difference[1], 1e-6);
  EXPECT_LE(difference[1], difference[0] / 10.0) << difference[0] << " " << difference[1];
}

TEST(Hdca, RefusesBodiesOfSingularInertiaWithTheReason) {
  SystemSpec spec;
  spec.bodies = 3;
  Model model = generateSystem(spec, "rods");
  model.singular_inertia[2] = 1;  // as a point mass would be flagged
  const std::string why = checkFormulation(model, Formulation::kHdca);
  EXPECT_NE(why.find("singular"), std::string::npos) << why;
  EXPECT_NE(why.find("'aba'"), std::string::npos) << why;
}

}  // namespace
}  // namespace hilsim
