// Identities of the spatial algebra.
#include <gtest/gtest.h>

#include <Eigen/Geometry>

#include "engine/spatial/inertia.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;

Transform randomTransform(std::mt19937& rng) {
  const Eigen::VectorXd r = test::randomVector(7, rng);
  Eigen::Quaterniond q(r(0), r(1), r(2), r(3));
  return Transform(q.normalized().toRotationMatrix(), r.tail<3>());
}

TEST(Spatial, TransformMatchesPluckerMatrix) {
  std::mt19937 rng(1);
  for (int k = 0; k < 20; ++k) {
    const Transform x = randomTransform(rng);
    const MotionVector m = test::randomVector(6, rng);
    const ForceVector f = test::randomVector(6, rng);
    const Matrix6 X = x.motionMatrix();
    EXPECT_LT((x.actMotion(m) - X * m).norm(), kAlgebraTol);
    EXPECT_LT((x.actForce(f) - X.inverse().transpose() * f).norm(), kAlgebraTol);
    EXPECT_LT((x.invActMotion(x.actMotion(m)) - m).norm(), kAlgebraTol);
    EXPECT_LT((x.invActForce(x.actForce(f)) - f).norm(), kAlgebraTol);
    // power is frame invariant
    EXPECT_NEAR(x.actMotion(m).dot(x.actForce(f)), m.dot(f), kAlgebraTol);
  }
}

TEST(Spatial, CompositionAndInverse) {
  std::mt19937 rng(2);
  const Transform a = randomTransform(rng), b = randomTransform(rng);
  const MotionVector m = test::randomVector(6, rng);
  EXPECT_LT(((a * b).actMotion(m) - a.actMotion(b.actMotion(m))).norm(), kAlgebraTol);
  EXPECT_TRUE((a * a.inverse()).isApprox(Transform::identity(), kAlgebraTol));
}

TEST(Spatial, CrossProducts) {
  std::mt19937 rng(3);
  const MotionVector v = test::randomVector(6, rng), m = test::randomVector(6, rng);
  const ForceVector f = test::randomVector(6, rng);
  EXPECT_LT((crossMotion(v, m) - crossMotionMatrix(v) * m).norm(), kAlgebraTol);
  EXPECT_LT((crossForce(v, f) - crossForceMatrix(v) * f).norm(), kAlgebraTol);
  EXPECT_LT(crossMotion(v, v).norm(), kAlgebraTol);  // v × v = 0
  // (v ×ᵐ m) · f = −m · (v ×* f)
  EXPECT_NEAR(crossMotion(v, m).dot(f), -m.dot(crossForce(v, f)), kAlgebraTol);
  // transforms commute with cross products: X(v × m) = (Xv) × (Xm)
  const Transform x = randomTransform(rng);
  EXPECT_LT((x.actMotion(crossMotion(v, m)) - crossMotion(x.actMotion(v), x.actMotion(m))).norm(),
            kAlgebraTol);
}

TEST(Spatial, InertiaMatrixApplyAndTransform) {
  std::mt19937 rng(4);
  for (int k = 0; k < 20; ++k) {
    const Inertia I = test::randomInertia(rng);
    const MotionVector v = test::randomVector(6, rng);
    EXPECT_LT((I * v - I.matrix() * v).norm(), kAlgebraTol);
    EXPECT_LT((I.matrix() - I.matrix().transpose()).norm(), kAlgebraTol);
    // X* I X congruence: I_A = X_AB⁻ᵀ I_B X_AB⁻¹
    const Transform x = randomTransform(rng);
    const Matrix6 Xinv = x.motionMatrix().inverse();
    EXPECT_LT((I.transformed(x).matrix() - Xinv.transpose() * I.matrix() * Xinv).norm(), 1e-10);
    // kinetic energy is frame invariant
    EXPECT_NEAR(I.transformed(x).kineticEnergy(x.actMotion(v)), I.kineticEnergy(v), 1e-10);
    EXPECT_TRUE(I.validate().empty()) << I.validate();
  }
}

TEST(Spatial, InertiaSumMatchesMatrices) {
  std::mt19937 rng(5);
  const Inertia a = test::randomInertia(rng), b = test::randomInertia(rng);
  EXPECT_LT(((a + b).matrix() - (a.matrix() + b.matrix())).norm(), 1e-10);
}

TEST(Spatial, InvalidInertiasAreExplained) {
  EXPECT_FALSE(Inertia(-1.0, Vector3::Zero(), Matrix3::Identity()).validate().empty());
  EXPECT_FALSE(Inertia(1.0, Vector3::Zero(), -Matrix3::Identity()).validate().empty());
  EXPECT_FALSE(
      Inertia(1.0, Vector3::Zero(), Vector3(1.0, 1.0, 3.0).asDiagonal().toDenseMatrix()).validate().empty());
  Matrix3 asym = Matrix3::Identity();
  asym(0, 1) = 0.5;
  EXPECT_FALSE(Inertia(1.0, Vector3::Zero(), asym).validate().empty());
  EXPECT_FALSE(Inertia(std::nan(""), Vector3::Zero(), Matrix3::Identity()).validate().empty());
  EXPECT_TRUE(Inertia(0.0, Vector3::Zero(), Matrix3::Zero()).validate().empty());
}

// The balanced inertia keeps the principal axes: a rotated tensor balances about its own axes.
TEST(Inertia, BalancedRaisesTheTwoSmallerPrincipalMomentsAboutTheirAxes) {
  const Matrix3 rotation =
      Eigen::AngleAxisd(0.7, Vector3(1, 2, 3).normalized()).toRotationMatrix();
  const Inertia bad(2.0, Vector3(0.1, 0.2, 0.3),
                    rotation * Vector3(0.1, 0.2, 0.5).asDiagonal() * rotation.transpose());
  EXPECT_NEAR(bad.triangleExcess(), 0.2, 1e-14);
  const Inertia good = bad.balanced();
  EXPECT_EQ(good.mass, bad.mass);
  EXPECT_EQ(good.com, bad.com);
  EXPECT_NEAR(good.triangleExcess(), 0.0, 1e-14);
  const Matrix3 expected = rotation * Vector3(0.2, 0.3, 0.5).asDiagonal() * rotation.transpose();
  EXPECT_LT((good.inertia_com - expected).cwiseAbs().maxCoeff(), 1e-14);
  EXPECT_TRUE(good.validate().empty());
  EXPECT_TRUE(good.balanced().inertia_com.isApprox(good.inertia_com, 1e-14)) << "kept as is";
}

}  // namespace
}  // namespace hilsim
