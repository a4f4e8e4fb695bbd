// What ModelBuilder packs for the hot sweeps beside the joints it was given (the joint types
// and per-dof parameters again, the axial joints' precomputed terms) agrees with those joints:
// every body's pose from forwardKinematics, which reads the packed data, equals the pose
// composed joint by joint from joint_placement and jointTransform, which do not.
#include <gtest/gtest.h>

#include <random>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/model/data.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

TEST(ModelBuilder, PackedJointDataMatchesTheJoints) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = 12;
    options.free_flyer_root = trial % 2 == 0;
    const Model model = test::randomTree(rng, options);
    ASSERT_EQ(static_cast<int>(model.joint_type.size()), model.nbodies);
    ASSERT_EQ(static_cast<int>(model.axial_joint_terms.size()), model.nbodies);
    for (int i = 0; i < model.nbodies; ++i) {
      EXPECT_EQ(model.joint_type[i], model.joints[i].type) << "body " << i;
      const JointType type = model.joints[i].type;
      if (i > 0 && (type == JointType::kRevolute || type == JointType::kPrismatic)) {
        EXPECT_EQ(model.axial_joint_terms[i].origin_parent, model.joint_placement[i].translation)
            << "body " << i;
      }
    }

    ASSERT_EQ(static_cast<int>(model.dof_parameters.size()), model.nv);
    for (int d = 0; d < model.nv; ++d) {
      const Model::DofParameters& p = model.dof_parameters[d];
      EXPECT_EQ(p.armature, model.armature[d]) << "dof " << d;
      EXPECT_EQ(p.damping, model.damping[d]) << "dof " << d;
      EXPECT_EQ(p.stiffness, model.stiffness[d]) << "dof " << d;
      EXPECT_EQ(p.spring_reference, model.spring_reference[d]) << "dof " << d;
    }

    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    Data data(model);
    forwardKinematics(model, data, q);
    std::vector<Transform> X_WB(model.nbodies);
    for (int i = 1; i < model.nbodies; ++i) {
      Transform X_JC;
      jointTransform(model.joints[i], q.data() + model.idx_q[i], X_JC);
      X_WB[i] = X_WB[model.parent[i]] * model.joint_placement[i] * X_JC;
      EXPECT_LT((data.X_WB[i].rotation - X_WB[i].rotation).cwiseAbs().maxCoeff(),
                test::kAlgebraTol)
          << "body " << i;
      EXPECT_LT((data.X_WB[i].translation - X_WB[i].translation).cwiseAbs().maxCoeff(),
                test::kAlgebraTol)
          << "body " << i;
    }
  }
}

}  // namespace
}  // namespace hilsim
