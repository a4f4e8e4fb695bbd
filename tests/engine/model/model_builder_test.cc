// What ModelBuilder packs for the hot sweeps beside the joints it was given (the joint types
// and per-dof parameters again, the axial joints' origins) equals the fields it copies. That the
// poses the sweeps make from them are right is kinematics_test's
// `PosesComposePlacementAndDocumentedJointTransform`.
#include <gtest/gtest.h>

#include <random>

#include "tests/support/random_model.h"

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

  }
}

}  // namespace
}  // namespace hilsim
