// The 4-wide steps of ABA (outward: revolute and prismatic joints; inward: 1-DoF joints) against
// the portable ones, body by body on random trees, every output they write: both must leave the
// same Data behind, so every later sweep (and every other test of aba) sees one definition. The
// dynamics tests then hold for whichever of the two the build uses.
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "engine/algorithms/aba_steps.h"
#include "engine/spatial/spatial.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;
using test::relativeDifference;

#ifdef HILSIM_HAVE_ABA_STEPS_AVX2

bool isAxial(JointType type) {
  return type == JointType::kRevolute || type == JointType::kPrismatic;
}

/// One of the random cases: a tree of 25 moving bodies (every joint type, on a free joint in
/// every other trial) with springs on its 1-DoF joints, a configuration, velocities and joint
/// forces.
struct RandomCase {
  Model model;
  Eigen::VectorXd q, v, tau;
};

RandomCase randomCase(std::mt19937& rng, int trial) {
  test::RandomTreeOptions options;
  options.bodies = 25;
  options.free_flyer_root = trial % 2 == 0;
  RandomCase c{test::randomTree(rng, options), {}, {}, {}};
  for (int i = 1; i < c.model.nbodies; ++i) {  // springs, as ModelBuilder allows: 1-DoF only
    if (c.model.nv_joint[i] != 1) continue;
    c.model.stiffness[c.model.idx_v[i]] = 20.0 * (1.0 + Eigen::Vector2d::Random()(0));
    c.model.spring_reference[c.model.idx_v[i]] = Eigen::Vector2d::Random()(0);
  }
  c.model.packSweepData();  // the steps read the parameters from their packed copy
  c.q = test::randomConfiguration(c.model, rng);
  c.v = Eigen::VectorXd::Random(c.model.nv) * 2.0;
  c.tau = Eigen::VectorXd::Random(c.model.nv) * 10.0;
  return c;
}

TEST(AbaOutwardStep, VectorisedAxialStepMatchesThePortableStepOnRandomTrees) {
  std::mt19937 rng(42);
  int axial_bodies = 0, prismatic_bodies = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const RandomCase random = randomCase(rng, trial);
    const Model& model = random.model;
    const Eigen::VectorXd &q = random.q, &v = random.v;
    Data portable(model), vectorised(model);
    for (int i = 1; i < model.nbodies; ++i) {
      detail::abaOutwardStep(model, portable, i, q.data(), v.data());
      const JointType type = model.joints[i].type;
      if (!isAxial(type)) {
        detail::abaOutwardStep(model, vectorised, i, q.data(), v.data());
        continue;
      }
      ++axial_bodies;
      if (type == JointType::kPrismatic) ++prismatic_bodies;
      detail::abaOutwardStepAxialAvx2(model, vectorised, i, q.data(), v.data());
      std::string where = "trial " + std::to_string(trial);
      where += ", body " + std::to_string(i) + " (";
      where += jointTypeName(type);
      where += ")";
      SCOPED_TRACE(where);
      const int iv = model.idx_v[i];
      EXPECT_LT(relativeDifference(vectorised.X_WB[i].rotation, portable.X_WB[i].rotation),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.X_WB[i].translation, portable.X_WB[i].translation),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.X_WJ[i].translation, portable.X_WJ[i].translation),
                kAlgebraTol);
      if (type == JointType::kPrismatic) {
        EXPECT_LT(relativeDifference(vectorised.X_WJ[i].rotation, portable.X_WJ[i].rotation),
                  kAlgebraTol);
      }
      EXPECT_LT(relativeDifference(vectorised.S_W.col(iv), portable.S_W.col(iv)), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.V_W[i], portable.V_W[i]), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.c_W[i], portable.c_W[i]), kAlgebraTol);
      EXPECT_EQ(vectorised.inertia_W[i].mass, portable.inertia_W[i].mass);
      EXPECT_LT(relativeDifference(vectorised.inertia_W[i].com, portable.inertia_W[i].com),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.inertia_W[i].inertia_com,
                                   portable.inertia_W[i].inertia_com),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.P_W[i], portable.P_W[i]), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.z_W[i], portable.z_W[i]), kAlgebraTol);
    }
    // and no step wrote over an earlier body's outputs
    SCOPED_TRACE("trial " + std::to_string(trial) + ", whole sweep");
    EXPECT_LT(relativeDifference(vectorised.S_W, portable.S_W), kAlgebraTol);
    for (int i = 1; i < model.nbodies; ++i) {
      EXPECT_LT(relativeDifference(vectorised.X_WB[i].rotation, portable.X_WB[i].rotation),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.X_WB[i].translation, portable.X_WB[i].translation),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.V_W[i], portable.V_W[i]), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.c_W[i], portable.c_W[i]), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.inertia_W[i].inertia_com,
                                   portable.inertia_W[i].inertia_com),
                kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.P_W[i], portable.P_W[i]), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.z_W[i], portable.z_W[i]), kAlgebraTol);
    }
  }
  // the trees must have exercised both joint types
  EXPECT_GT(axial_bodies, 200);
  EXPECT_GT(prismatic_bodies, 50);
}

TEST(AbaInwardStep, VectorisedOneDofStepMatchesThePortableStepOnRandomTrees) {
  std::mt19937 rng(7);
  int one_dof_bodies = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const RandomCase random = randomCase(rng, trial);
    const Model& model = random.model;
    const Eigen::VectorXd &q = random.q, &v = random.v, &tau = random.tau;
    Data data(model);
    for (int i = 1; i < model.nbodies; ++i)
      detail::abaOutwardStep(model, data, i, q.data(), v.data());
    // each 1-DoF body from the same inputs: the outward sweep's P, z and c, with random
    // children's contributions standing in for the rest of the inward sweep
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.nv_joint[i] != 1 || model.joint_rank[i] != 1) continue;  // aba's dispatch
      ++one_dof_bodies;
      Data portable = data;
      const Matrix6 A = Matrix6::Random();
      portable.P_W[i] += A * A.transpose();
      portable.z_W[i] += ForceVector::Random();
      Data vectorised = portable;
      detail::abaInwardStep(model, portable, i, q.data(), v, tau);
      detail::abaInwardStepOneDofAvx2(model, vectorised, i, q.data(), v.data(), tau.data());
      SCOPED_TRACE("trial " + std::to_string(trial) + ", body " + std::to_string(i));
      const int parent = model.parent[i];
      // the step's outputs: z_W[i], G_W's and nu's entries, D⁻¹, and the parent's P and z; every
      // other body's P and z must come out as they went in
      EXPECT_LT(relativeDifference(vectorised.G_W, portable.G_W), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.nu, portable.nu), kAlgebraTol);
      EXPECT_LT(relativeDifference(vectorised.D_inv[i].topLeftCorner<1, 1>(),
                                   portable.D_inv[i].topLeftCorner<1, 1>()),
                kAlgebraTol);
      for (int b = 0; b < model.nbodies; ++b) {
        EXPECT_LT(relativeDifference(vectorised.P_W[b], portable.P_W[b]), kAlgebraTol) << b;
        EXPECT_LT(relativeDifference(vectorised.z_W[b], portable.z_W[b]), kAlgebraTol) << b;
      }
      if (parent == 0) {  // nothing is handed to the world
        EXPECT_EQ(vectorised.P_W[0], data.P_W[0]);
        EXPECT_EQ(vectorised.z_W[0], data.z_W[0]);
      }
    }
  }
  EXPECT_GT(one_dof_bodies, 200);
}

#else

TEST(AbaInwardStep, VectorisedOneDofStepMatchesThePortableStepOnRandomTrees) {
  GTEST_SKIP() << "built without AVX2 and FMA: aba uses the portable inward step only";
}

TEST(AbaOutwardStep, VectorisedAxialStepMatchesThePortableStepOnRandomTrees) {
  GTEST_SKIP() << "built without AVX2 and FMA: aba uses the portable outward step only";
}

#endif

}  // namespace
}  // namespace hilsim
