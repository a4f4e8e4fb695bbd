// The semi-recursive formulations (seed 002; docs/SEMI_RECURSIVE.md): the notes' synthetic models
// A and B at their states (every formulation), the velocity transformations' identities
// (V ż and W ż are the bodies' motion, V = D W, C_q V = 0 joint by joint), SR-I's precision far
// from the origin. Random trees of every joint type against aba are in the registry's matrix
// (tests/engine/formulations/formulations_test.cc), loops in loops_test.cc.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/semi_recursive.h"
#include "engine/formulations/formulations.h"
#include "engine/io/model_loader.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

Model load(const std::string& yaml) { return loadYamlString(yaml, ".", "test.yaml"); }

// The notes' model A (§9.2): a 1.2 m bar (3 kg, J_G = 0.36) on a revolute joint at its end, a
// slider (1 kg, J_G = 0.02) on a prismatic joint along it from the same end, a spring k = 50 N/m,
// L₀ = 0.5 m on the slide; gravity −Y. The out-of-plane moments do not enter planar motion.
const char* kModelA = R"(version: 1
name: model_a
gravity: [0, -9.81, 0]
bodies:
  - name: bar
    joint: {type: revolute, name: z1, axis: [0, 0, 1]}
    inertia: {mass: 3.0, com: [0.6, 0, 0], inertia: [0.001, 0.36, 0.36, 0, 0, 0]}
  - name: slider
    parent: bar
    joint: {type: prismatic, name: z2, axis: [1, 0, 0], stiffness: 50.0, spring_reference: 0.5}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [0.011, 0.011, 0.02, 0, 0, 0]}
)";

// Model B: a double pendulum of two 1 m bars, 1 kg, J_G = 1/12, pivots at their ends.
const char* kModelB = R"(version: 1
name: model_b
gravity: [0, -9.81, 0]
bodies:
  - name: upper
    joint: {type: revolute, name: z1, axis: [0, 0, 1]}
    inertia: {mass: 1.0, com: [0.5, 0, 0], inertia: [0.001, 0.08333333333333333, 0.08333333333333333, 0, 0, 0]}
  - name: lower
    parent: upper
    placement: {xyz: [1, 0, 0]}
    joint: {type: revolute, name: z2, axis: [0, 0, 1]}
    inertia: {mass: 1.0, com: [0.5, 0, 0], inertia: [0.001, 0.08333333333333333, 0.08333333333333333, 0, 0, 0]}
)";

// z̈ at the notes' unit-test states, to the digits they print (half a unit of the last one)
TEST(SemiRecursive, NotesModelsAAndBGiveTheirAccelerations) {
  struct Case {
    const char* yaml;
    Eigen::Vector2d q, v, qdd;
    double printed;  // half a unit of the last printed digit
  };
  const Case cases[] = {
      {kModelA, {0.3, 0.6}, {1.0, -0.5}, {-12.0288144505, -7.29905322735}, 5e-11},
      {kModelB, {0.5, -0.7}, {1.2, -0.8}, {-8.92263795908, 6.12908337003}, 5e-12},
  };
  for (const Case& c : cases) {
    const Model model = load(c.yaml);
    for (const Formulation f : test::formulationsFor(model)) {
      Data data = test::dataFor(model, f);
      const Eigen::VectorXd qdd =
          forwardDynamics(f, model, data, c.q, c.v, Eigen::VectorXd::Zero(2));
      EXPECT_NEAR(qdd[0], c.qdd[0], c.printed) << model.name << " " << formulationName(f);
      EXPECT_NEAR(qdd[1], c.qdd[1], c.printed) << model.name << " " << formulationName(f);
    }
  }
  // model A's M̄ = diag(J_1 + m_1 0.6² + m_2 z_2² + J_2, m_2) = diag(1.82, 1) (the notes' hand check)
  const Model model = load(kModelA);
  for (const Formulation f : {Formulation::kSr1, Formulation::kSr2}) {
    Data data = test::dataFor(model, f);
    forwardDynamics(f, model, data, Eigen::Vector2d(0.3, 0.6), Eigen::Vector2d(1.0, -0.5),
                    Eigen::VectorXd::Zero(2));
    EXPECT_NEAR(data.M(0, 0), 1.82, 1e-14) << formulationName(f);
    EXPECT_NEAR(data.M(1, 1), 1.0, 1e-15) << formulationName(f);
    EXPECT_NEAR(data.M(0, 1), 0.0, 1e-15) << formulationName(f);
  }
}

// V ż is every body's [ω; Ṙ] and W ż its spatial velocity about the origin (V_W); V = D W with
// D_i = [1 0; −R̃_i 1]; and C_q V = 0: each column moves every child relative to its parent only
// within that joint's motion subspace (the joint's constraint rows, in velocity form, are the
// complement of S), on random trees of every joint type.
TEST(SemiRecursive, VelocityTransformationsSatisfyTheirIdentities) {
  std::mt19937 rng(2002);
  for (int trial = 0; trial < 4; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = 12;
    options.free_flyer_root = trial % 2 == 0;
    const Model model = test::randomTree(rng, options);
    Data data(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    forwardKinematics(model, data, q, v);
    const Eigen::MatrixXd V = semiRecursiveVelocityTransformation(model, data);
    const Eigen::MatrixXd W = semiRecursivePathTransformation(model, data);
    const Eigen::VectorXd body_motion = V * v, spatial = W * v;
    for (int i = 1; i < model.nbodies; ++i) {
      const Vector3& R = data.X_WB[i].translation;
      const MotionVector& V_W = data.V_W[i];
      MotionVector expected;
      expected.head<3>() = V_W.head<3>();
      expected.tail<3>() = V_W.tail<3>() + V_W.head<3>().cross(R);  // Ṙ = v_O + ω × R
      EXPECT_LT(test::relativeDifference(body_motion.segment<6>(6 * (i - 1)), expected),
                test::kAlgebraTol)
          << "body " << i;
      EXPECT_LT(test::relativeDifference(spatial.segment<6>(6 * (i - 1)), V_W), test::kAlgebraTol);
      // V_i = D_i W_i
      Matrix6 D = Matrix6::Identity();
      D.bottomLeftCorner<3, 3>() = -skew(R);
      EXPECT_LT(test::relativeDifference(V.middleRows<6>(6 * (i - 1)),
                                         D * W.middleRows<6>(6 * (i - 1))),
                test::kAlgebraTol);
    }
    // C_q V = 0: for every column, body i's spatial motion less its parent's lies in S_i
    for (int column = 0; column < model.nv; ++column) {
      for (int i = 1; i < model.nbodies; ++i) {
        const int parent = model.parent[i];
        MotionVector relative = W.block<6, 1>(6 * (i - 1), column);
        if (parent > 0) relative -= W.block<6, 1>(6 * (parent - 1), column);
        const auto S = data.S_W.middleCols(model.idx_v[i], model.nv_joint[i]);
        const Eigen::VectorXd coefficients =
            S.completeOrthogonalDecomposition().solve(relative);
        EXPECT_LT((S * coefficients - relative).cwiseAbs().maxCoeff(), test::kAlgebraTol)
            << "column " << column << " body " << i;
      }
    }
  }
}

// The notes' §7.3: SR-II's composite inertias about the origin hold m‖R‖², so moved 1e4 m from
// the origin its z̈ loses about eight digits (measured 9e-8, as aba's and crba's, which also work
// about the origin); SR-I's reference points keep every lever arm short (measured 2.7e-13: the
// rounding of the 1e4 m placement itself is 2e-12 of a 1 m lever). Model B with its pivot at
// (1e4, 1e4) against the same model at the origin.
TEST(SemiRecursive, ReferencePointsKeepTheirPrecisionFarFromTheOrigin) {
  const Model near = load(kModelB);
  std::string far_yaml = kModelB;
  const std::string first_joint = "joint: {type: revolute, name: z1";
  far_yaml.replace(far_yaml.find(first_joint), first_joint.size(),
                   "placement: {xyz: [10000, 10000, 0]}\n    " + first_joint);
  const Model far = load(far_yaml);
  const Eigen::Vector2d q(0.5, -0.7), v(1.2, -0.8);
  Data near_data(near), far_data(far);
  const Eigen::VectorXd reference =
      forwardDynamics(Formulation::kAba, near, near_data, q, v, Eigen::VectorXd::Zero(2));
  const Eigen::VectorXd sr1 =
      forwardDynamics(Formulation::kSr1, far, far_data, q, v, Eigen::VectorXd::Zero(2));
  EXPECT_LT(test::relativeDifference(sr1, reference), 1e-10);
}

}  // namespace
}  // namespace hilsim
