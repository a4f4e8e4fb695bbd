// frameJacobian against oracles that do not share its code:
//  - finite differences of the frames' poses (forwardKinematics' X_WB and the frame placement)
//    along q(t) = q ⊕ e_d t, one dof at a time, so that every column is checked on its own, the
//    zero columns of dofs off the frame's path included; rigid trees of every joint type with
//    welded frames, and trees with flexible bodies (modal columns);
//  - the spatial velocities of forwardKinematics(q, v): J_world v = V_W of the frame's body;
//  - the closed form of a free-floating body, whose free-joint velocity convention (linear in
//    the world, angular in the body, docs/NOTATION.md) fixes every entry.
#include <array>

#include <gtest/gtest.h>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/frame_jacobian.h"
#include "engine/io/model_loader.h"
#include "engine/model/configuration.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;

// Central 5-point stencil of step h: truncation h⁴/30 |f⁽⁵⁾|. Per unit dof rate the frames of
// these trees turn at ≤ 1 rad/s and sit ≤ ~5 m from the joints, so |f⁽⁵⁾| ≲ 5 and the truncation
// is ≲ 2e-12 at h = 1e-3; rounding ~18 ε |f| / (12 h) ≈ 2e-12 on |f| ≲ 5 m. 1e-8 (relative to
// max(1, |column|)) is far above both, while a wrong term in a column (a missing lever arm, a
// transposed rotation, a lost modal column) is O(0.1 … 1).
constexpr double kH = 1e-3;
constexpr double kFiniteDifferenceTol = 1e-8;
constexpr std::array<double, 4> kOffsets = {-2.0, -1.0, 1.0, 2.0};
constexpr std::array<double, 4> kWeights = {1.0, -8.0, 8.0, -1.0};  // of 1 / (12 h)

constexpr std::array<JacobianReference, 3> kReferences = {
    JacobianReference::kWorld, JacobianReference::kLocal, JacobianReference::kLocalWorldAligned};

Transform framePose(const Model& model, const Data& data, int frame) {
  return data.X_WB[model.frames[frame].body] * model.frames[frame].placement;
}

Vector3 vee(const Matrix3& m) {
  return 0.5 * Vector3(m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1));
}

// The frame's velocity from Ṙ and ṗ of its pose, in the representation `reference`.
MotionVector velocityFromPoseRate(const Transform& X_WF, const Matrix3& R_dot, const Vector3& p_dot,
                                  JacobianReference reference) {
  const Matrix3& R = X_WF.rotation;
  const Vector3 omega_W = vee(R_dot * R.transpose());
  // the angular rows in W's axes but for kLocal; the linear rows: the velocity of F's origin,
  // or (kWorld) of the body point at W's origin
  MotionVector V;
  V.head<3>() = reference == JacobianReference::kLocal ? Vector3(R.transpose() * omega_W) : omega_W;
  switch (reference) {
    case JacobianReference::kWorld:
      V.tail<3>() = p_dot - omega_W.cross(X_WF.translation);
      break;
    case JacobianReference::kLocal:
      V.tail<3>() = R.transpose() * p_dot;
      break;
    case JacobianReference::kLocalWorldAligned:
      V.tail<3>() = p_dot;
      break;
  }
  return V;
}

// Every column of every frame's Jacobian, in each reference, against the pose derivative along
// that dof alone. Returns the largest relative error.
double checkAgainstPoseDerivatives(const Model& model, std::mt19937& rng) {
  Data data(model);
  Matrix6N J(6, model.nv);
  const Eigen::VectorXd q = test::randomConfiguration(model, rng);
  const int nframes = static_cast<int>(model.frames.size());
  // poses[s][f]: frame f at q ⊕ e_d kOffsets[s] h
  std::array<std::vector<Transform>, 4> poses;
  Eigen::VectorXd q_t(model.nq), direction(model.nv);
  std::vector<Matrix6N> columns(nframes * kReferences.size(), Matrix6N(6, model.nv));
  forwardKinematics(model, data, q);
  for (int f = 0; f < nframes; ++f)
    for (std::size_t r = 0; r < kReferences.size(); ++r)
      frameJacobian(model, data, f, kReferences[r], columns[f * kReferences.size() + r]);

  double worst = 0.0;
  for (int d = 0; d < model.nv; ++d) {
    direction.setZero();
    direction[d] = 1.0;
    for (std::size_t s = 0; s < kOffsets.size(); ++s) {
      integrateConfiguration(model, q, direction, kOffsets[s] * kH, q_t);
      forwardKinematics(model, data, q_t);
      poses[s].clear();
      for (int f = 0; f < nframes; ++f) poses[s].push_back(framePose(model, data, f));
    }
    forwardKinematics(model, data, q);
    for (int f = 0; f < nframes; ++f) {
      Matrix3 R_dot = Matrix3::Zero();
      Vector3 p_dot = Vector3::Zero();
      for (std::size_t s = 0; s < kOffsets.size(); ++s) {
        R_dot += kWeights[s] / (12.0 * kH) * poses[s][f].rotation;
        p_dot += kWeights[s] / (12.0 * kH) * poses[s][f].translation;
      }
      const Transform X_WF = framePose(model, data, f);
      for (std::size_t r = 0; r < kReferences.size(); ++r) {
        const MotionVector expected = velocityFromPoseRate(X_WF, R_dot, p_dot, kReferences[r]);
        const MotionVector column = columns[f * kReferences.size() + r].col(d);
        const double error = test::relativeDifference(column, expected);
        EXPECT_LT(error, kFiniteDifferenceTol)
            << "frame '" << model.frames[f].name << "', dof " << d << ", reference " << r
            << "\ncolumn   " << column.transpose() << "\nexpected " << expected.transpose();
        worst = std::max(worst, error);
      }
    }
  }
  return worst;
}

TEST(FrameJacobian, ColumnsAreThePoseDerivativesOnRigidTrees) {
  std::mt19937 rng(48);
  double worst = 0.0;
  for (const bool free_flyer_root : {true, false}) {
    test::RandomTreeOptions options;
    options.bodies = 12;
    options.free_flyer_root = free_flyer_root;
    options.fixed_fraction = 0.4;  // welded links: frames away from their body's origin
    const Model model = test::randomTree(rng, options);
    ASSERT_GT(model.frames.size(), static_cast<std::size_t>(model.nbodies));
    worst = std::max(worst, checkAgainstPoseDerivatives(model, rng));
  }
  std::printf("max relative error of the Jacobian columns vs pose finite differences: %.3g\n",
              worst);
}

TEST(FrameJacobian, ColumnsAreThePoseDerivativesWithFlexibleBodies) {
  std::mt19937 rng(49);
  test::RandomFlexibleTreeOptions options;
  options.bodies = 6;
  options.hinge_node_fraction = 0.5;  // both Ψ_t (children at nodes) and Ψ_d (hinge nodes)
  const Model model = test::randomFlexibleTree(rng, options);
  ASSERT_TRUE(model.has_flexible_bodies);
  const double worst = checkAgainstPoseDerivatives(model, rng);
  std::printf("flexible tree: max relative error %.3g\n", worst);
}

// J_world v is the body's spatial velocity that forwardKinematics(q, v) computes by its own
// recursion; the other references are that velocity moved to the frame.
TEST(FrameJacobian, TimesVelocityIsTheFramesSpatialVelocity) {
  std::mt19937 rng(50);
  test::RandomTreeOptions options;
  options.bodies = 30;
  options.fixed_fraction = 0.3;
  const Model model = test::randomTree(rng, options);
  Data data(model);
  Matrix6N J(6, model.nv);
  for (int state = 0; state < 3; ++state) {
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    forwardKinematics(model, data, q, v);
    for (int f = 0; f < static_cast<int>(model.frames.size()); ++f) {
      const MotionVector& V_W = data.V_W[model.frames[f].body];
      const Transform X_WF = framePose(model, data, f);
      frameJacobian(model, data, f, JacobianReference::kWorld, J);
      EXPECT_LT(test::relativeDifference(MotionVector(J * v), V_W), kAlgebraTol);
      frameJacobian(model, data, f, JacobianReference::kLocal, J);
      EXPECT_LT(test::relativeDifference(MotionVector(J * v), X_WF.invActMotion(V_W)), kAlgebraTol);
      frameJacobian(model, data, f, JacobianReference::kLocalWorldAligned, J);
      const MotionVector V_aligned = Transform(Matrix3::Identity(), X_WF.translation).invActMotion(V_W);
      EXPECT_LT(test::relativeDifference(MotionVector(J * v), V_aligned), kAlgebraTol);
    }
  }
}

// A free-floating body with a tool frame welded at p_BT: v = (ṗ_B in W, ω in B), so
//   local-world-aligned at the tool: [ω_W; ṗ_T] = [[0, R]; [1, −[R p_BT]× R]] v,
//   local at the body: [ω_B; Rᵀ ṗ_B] = [[0, 1]; [Rᵀ, 0]] v.
TEST(FrameJacobian, FreeFloatingBodyHasTheClosedForm) {
  const Model model = loadUrdfString(R"(<robot name="floating">
      <link name="base"><inertial><mass value="2"/>
        <inertia ixx="0.1" iyy="0.2" izz="0.25" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="tool"/>
      <joint name="weld" type="fixed"><parent link="base"/><child link="tool"/>
        <origin xyz="0.3 -0.2 0.5" rpy="0.4 0.1 -0.7"/></joint>
    </robot>)",
                                     /*floating_base=*/true);
  ASSERT_EQ(model.nv, 6);
  const int base = model.frameIndex("base");
  const int tool = model.frameIndex("tool");
  ASSERT_GE(base, 0);
  ASSERT_GE(tool, 0);
  Data data(model);
  const Eigen::Quaterniond orientation(Eigen::AngleAxisd(0.9, Vector3(1, 2, 3).normalized()));
  Eigen::VectorXd q(7);
  q << 1.0, -2.0, 0.5, orientation.w(), orientation.x(), orientation.y(), orientation.z();
  forwardKinematics(model, data, q);
  const Matrix3& R = data.X_WB[model.frames[base].body].rotation;
  const Vector3 p_BT_W = R * model.frames[tool].placement.translation;
  Matrix6N J(6, 6);
  Matrix6N expected = Matrix6N::Zero(6, 6);

  frameJacobian(model, data, tool, JacobianReference::kLocalWorldAligned, J);
  expected.topRightCorner<3, 3>() = R;
  expected.bottomLeftCorner<3, 3>().setIdentity();
  expected.bottomRightCorner<3, 3>() = -skew(p_BT_W) * R;
  EXPECT_LT(test::relativeDifference(J, expected), kAlgebraTol) << J;

  frameJacobian(model, data, base, JacobianReference::kLocal, J);
  expected.setZero();
  expected.topRightCorner<3, 3>().setIdentity();
  expected.bottomLeftCorner<3, 3>() = R.transpose();
  EXPECT_LT(test::relativeDifference(J, expected), kAlgebraTol) << J;

  // in W about W's origin the linear rows follow the body's point at the origin: ṗ_B − ω × p_B
  frameJacobian(model, data, base, JacobianReference::kWorld, J);
  expected.setZero();
  expected.topRightCorner<3, 3>() = R;
  expected.bottomLeftCorner<3, 3>().setIdentity();
  expected.bottomRightCorner<3, 3>() = skew(data.X_WB[model.frames[base].body].translation) * R;
  EXPECT_LT(test::relativeDifference(J, expected), kAlgebraTol) << J;
}

}  // namespace
}  // namespace hilsim
