// Independent oracles for the joint kinematics shared by every algorithm (jointPositionStep,
// jointVelocityStep, and the acceleration recursion of forwardKinematics):
//  - V_W is the time derivative of the body poses along q(t) = q ⊕ v t (finite differences of the
//    rotation matrices and origins, never of the engine's spatial quantities);
//  - A_W is the time derivative of V_W along a path whose tangent is (v, a);
//  - the classical origin velocity/acceleration and the body-frame velocity agree with the poses;
//  - the documented joint velocity conventions (free joint à la MuJoCo, spherical in the child
//    frame, planar q̇) hold, which the finite-difference oracles alone cannot see because they use
//    the engine's own q ⊕ v.
#include <array>
#include <set>

#include <Eigen/Geometry>

#include <gtest/gtest.h>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/model/configuration.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;

// Step of the finite-difference stencils. The 5-point central stencils used below have truncation
// error h⁴/30 |f⁽⁵⁾| (first derivative) and h⁴/90 |f⁽⁶⁾| (second derivative). On these trees body
// angular rates stay below ~10 rad/s and lever arms below ~5 m, so |f⁽ⁿ⁾| ≲ 5·10ⁿ and the
// truncation is ≲ 2e-8 (first) / 6e-8 (second) in the worst case, typically 1e-11. Rounding is
// ~18 ε |f| / (12 h) ≈ 2e-12 for the first derivative, ~64 ε |f| / (12 h²) ≈ 1e-9 for the second.
constexpr double kH = 1e-3;
// Bound on |finite difference − analytic| / max(1, |analytic|): first derivatives. Observed
// ≤ 5e-11 (printed); 1e-8 leaves room for the worst-case truncation estimate above while any error
// in a joint term is O(1) (dropping the planar Ṡ v term, for instance, gives 2.3).
constexpr double kFirstDerivativeTol = 1e-8;
// Same for second derivatives (rounding ∝ ε/h² dominates; worst case estimate ~1e-8; observed
// 1.6e-9).
constexpr double kSecondDerivativeTol = 1e-7;

// 5-point central stencils: f(t) sampled at t = −2h, −h, 0, h, 2h (index 0 … 4).
template <typename T>
T firstDerivative(const std::array<T, 5>& f, double h) {
  return (f[0] - 8.0 * f[1] + 8.0 * f[3] - f[4]) / (12.0 * h);
}
template <typename T>
T secondDerivative(const std::array<T, 5>& f, double h) {
  return (-f[0] + 16.0 * f[1] - 30.0 * f[2] + 16.0 * f[3] - f[4]) / (12.0 * h * h);
}
constexpr std::array<double, 5> kOffsets = {-2.0, -1.0, 0.0, 1.0, 2.0};

Vector3 vee(const Matrix3& m) {
  // axial vector of the skew-symmetric part
  return 0.5 * Vector3(m(2, 1) - m(1, 2), m(0, 2) - m(2, 0), m(1, 0) - m(0, 1));
}

double relativeError(const Eigen::Ref<const Eigen::VectorXd>& estimate,
                     const Eigen::Ref<const Eigen::VectorXd>& exact) {
  return (estimate - exact).cwiseAbs().maxCoeff() / std::max(1.0, exact.cwiseAbs().maxCoeff());
}

struct Case {
  int bodies;
  bool free_flyer_root;
};

std::vector<Model> randomModels(std::mt19937& rng) {
  std::vector<Model> models;
  for (const Case c : {Case{1, true}, Case{1, false}, Case{3, false}, Case{8, true},
                       Case{20, true}, Case{20, false}, Case{40, true}}) {
    test::RandomTreeOptions options;
    options.bodies = c.bodies;
    options.free_flyer_root = c.free_flyer_root;
    options.fixed_fraction = 0.2;
    models.push_back(test::randomTree(rng, options));
  }
  return models;
}

// The oracles are only meaningful if every joint type is exercised.
TEST(Kinematics, RandomModelsCoverEveryJointType) {
  std::mt19937 rng(7);
  std::set<JointType> seen;
  for (const Model& model : randomModels(rng))
    for (int i = 1; i < model.nbodies; ++i) seen.insert(model.joints[i].type);
  EXPECT_EQ(seen.size(), 5u);
}

// (a) V_W == d/dt of the poses along q(t) = q ⊕ v t: ω = vee(Ṙ Rᵀ), v_O = ṗ − ω × p.
// (c) bodyOriginVelocity == ṗ and bodyVelocityInBodyFrame == [vee(Rᵀ Ṙ); Rᵀ ṗ].
TEST(Kinematics, SpatialVelocityIsTheDerivativeOfThePoses) {
  std::mt19937 rng(7);
  double worst = 0.0;
  for (const Model& model : randomModels(rng)) {
    Data data(model);
    for (int state = 0; state < 4; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      std::array<std::vector<Transform>, 5> poses;
      Eigen::VectorXd q_t(model.nq);
      for (int s = 0; s < 5; ++s) {
        integrateConfiguration(model, q, v, kOffsets[s] * kH, q_t);
        forwardKinematics(model, data, q_t);
        poses[s] = data.X_WB;
      }
      forwardKinematics(model, data, q, v);
      for (int i = 1; i < model.nbodies; ++i) {
        std::array<Matrix3, 5> R;
        std::array<Vector3, 5> p;
        for (int s = 0; s < 5; ++s) {
          R[s] = poses[s][i].rotation;
          p[s] = poses[s][i].translation;
        }
        const Matrix3 R_dot = firstDerivative(R, kH);
        const Vector3 p_dot = firstDerivative(p, kH);
        const Matrix3& R0 = data.X_WB[i].rotation;
        const Vector3& p0 = data.X_WB[i].translation;
        // the pose at t = 0 of the velocity call is the pose of the position-only call
        ASSERT_TRUE(data.X_WB[i].isApprox(poses[2][i], kAlgebraTol));

        MotionVector V_fd;
        V_fd.head<3>() = vee(R_dot * R0.transpose());
        V_fd.tail<3>() = p_dot - V_fd.head<3>().cross(p0);
        const double e_spatial = relativeError(V_fd, data.V_W[i]);
        EXPECT_LT(e_spatial, kFirstDerivativeTol) << "body " << i << " ("
                                                  << jointTypeName(model.joints[i].type) << ")";

        const double e_origin = relativeError(p_dot, bodyOriginVelocity(data, i));
        EXPECT_LT(e_origin, kFirstDerivativeTol) << "body " << i;

        MotionVector V_B_fd;
        V_B_fd.head<3>() = vee(R0.transpose() * R_dot);
        V_B_fd.tail<3>() = R0.transpose() * p_dot;
        const double e_body = relativeError(V_B_fd, bodyVelocityInBodyFrame(data, i));
        EXPECT_LT(e_body, kFirstDerivativeTol) << "body " << i;
        worst = std::max({worst, e_spatial, e_origin, e_body});
      }
    }
  }
  std::printf("max relative error of V_W vs pose finite differences: %.3g\n", worst);
}

// (b) A_W == d/dt V_W along a path (q(t), v(t)) with q(0) = q, q̇(0) = v (in the joints' sense:
// q ⊕ v t) and v̇(0) = a. V_W(t) = Φ(q(t), v(t)) with Φ smooth, so dV/dt(0) = Φ_q q̇(0) + Φ_v a
// depends on the path only through its tangent; we use q(t) = q ⊕ (v t + ½ a t²), v(t) = v + a t.
// That path is also second-order exact for the true motion: for vector joints trivially, and for
// rotations R(t) = R₀ exp([ω t + ½ α t²]) has R̈(0) = R₀([α] + [ω]²) = d/dt(R [ω]) — which lets
// the classical origin acceleration be checked against the second derivative of the origin.
TEST(Kinematics, SpatialAccelerationIsTheDerivativeOfTheVelocity) {
  std::mt19937 rng(11);
  double worst_first = 0.0, worst_second = 0.0;
  for (const Model& model : randomModels(rng)) {
    Data data(model);
    for (int state = 0; state < 4; ++state) {
      const Eigen::VectorXd q = test::randomConfiguration(model, rng);
      const Eigen::VectorXd v = test::randomVector(model.nv, rng);
      const Eigen::VectorXd a = test::randomVector(model.nv, rng);
      std::array<std::vector<MotionVector>, 5> velocities;
      std::array<std::vector<Transform>, 5> poses;
      Eigen::VectorXd q_t(model.nq);
      for (int s = 0; s < 5; ++s) {
        const double t = kOffsets[s] * kH;
        const Eigen::VectorXd displacement = v * t + 0.5 * a * t * t;
        integrateConfiguration(model, q, displacement, 1.0, q_t);
        const Eigen::VectorXd v_t = v + a * t;
        forwardKinematics(model, data, q_t, v_t);
        velocities[s] = data.V_W;
        poses[s] = data.X_WB;
      }
      forwardKinematics(model, data, q, v, a);
      for (int i = 1; i < model.nbodies; ++i) {
        std::array<MotionVector, 5> V;
        std::array<Vector3, 5> p;
        for (int s = 0; s < 5; ++s) {
          V[s] = velocities[s][i];
          p[s] = poses[s][i].translation;
        }
        const MotionVector A_fd = firstDerivative(V, kH);
        const double e_spatial = relativeError(A_fd, data.A_W[i]);
        EXPECT_LT(e_spatial, kFirstDerivativeTol) << "body " << i << " ("
                                                  << jointTypeName(model.joints[i].type) << ")";
        const Vector3 p_ddot = secondDerivative(p, kH);
        const double e_origin = relativeError(p_ddot, bodyOriginAcceleration(data, i));
        EXPECT_LT(e_origin, kSecondDerivativeTol) << "body " << i << " ("
                                                  << jointTypeName(model.joints[i].type) << ")";
        worst_first = std::max(worst_first, e_spatial);
        worst_second = std::max(worst_second, e_origin);
      }
    }
  }
  std::printf("max relative error: A_W vs dV/dt %.3g, origin acceleration vs p'' %.3g\n",
              worst_first, worst_second);
}

// The velocity call and the acceleration call compute the same poses and velocities, and the
// accessors agree with each other algebraically.
TEST(Kinematics, AccessorsAreMutuallyConsistent) {
  std::mt19937 rng(13);
  for (const Model& model : randomModels(rng)) {
    Data data(model), data_v(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    const Eigen::VectorXd a = test::randomVector(model.nv, rng);
    forwardKinematics(model, data_v, q, v);
    forwardKinematics(model, data, q, v, a);
    for (int i = 1; i < model.nbodies; ++i) {
      EXPECT_TRUE(data.X_WB[i].isApprox(data_v.X_WB[i], 0.0));
      EXPECT_EQ(data.V_W[i], data_v.V_W[i]);
      const MotionVector V_B = bodyVelocityInBodyFrame(data, i);
      const Matrix3& R = data.X_WB[i].rotation;
      // body-frame velocity, rotated to W, is [ω; ṗ]
      EXPECT_LT((R * V_B.head<3>() - data.V_W[i].head<3>()).norm(), kAlgebraTol);
      EXPECT_LT((R * V_B.tail<3>() - bodyOriginVelocity(data, i)).norm(),
                kAlgebraTol * std::max(1.0, data.V_W[i].norm()));
      EXPECT_LT((data.X_WB[i].actMotion(V_B) - data.V_W[i]).norm(),
                kAlgebraTol * std::max(1.0, data.V_W[i].norm()));
    }
  }
}

// Positions: X_WB = X_Wλ · X_λJ (placement) · X_JC(q), with X_JC written out here from the joint
// documentation (not through jointTransform), and the child frame at the joint frame at neutral.
TEST(Kinematics, PosesComposePlacementAndDocumentedJointTransform) {
  std::mt19937 rng(23);
  for (const Model& model : randomModels(rng)) {
    Data data(model);
    for (const bool neutral : {false, true}) {
      const Eigen::VectorXd q =
          neutral ? model.neutralConfiguration() : test::randomConfiguration(model, rng);
      forwardKinematics(model, data, q);
      for (int i = 1; i < model.nbodies; ++i) {
        const Joint& joint = model.joints[i];
        const double* qi = q.data() + model.idx_q[i];
        Transform x_jc;
        switch (joint.type) {
          case JointType::kRevolute:
            x_jc.rotation = Eigen::AngleAxisd(qi[0], joint.axis).toRotationMatrix();
            break;
          case JointType::kPrismatic:
            x_jc.translation = qi[0] * joint.axis;
            break;
          case JointType::kSpherical:
            x_jc.rotation = Eigen::Quaterniond(qi[0], qi[1], qi[2], qi[3]).toRotationMatrix();
            break;
          case JointType::kFreeFlyer:
            x_jc.translation = Vector3(qi[0], qi[1], qi[2]);
            x_jc.rotation = Eigen::Quaterniond(qi[3], qi[4], qi[5], qi[6]).toRotationMatrix();
            break;
          case JointType::kPlanar:
            x_jc.translation = qi[0] * joint.plane_e1 + qi[1] * joint.plane_e2;
            x_jc.rotation = Eigen::AngleAxisd(qi[2], joint.axis).toRotationMatrix();
            break;
        }
        if (neutral) {
          EXPECT_TRUE(x_jc.isApprox(Transform::identity(), 0.0));
        }
        const Transform expected = data.X_WB[model.parent[i]] * model.joint_placement[i] * x_jc;
        // a few compositions of O(1) rotations and translations of up to a few metres
        EXPECT_TRUE(data.X_WB[i].isApprox(expected, 10 * kAlgebraTol))
            << "body " << i << " (" << jointTypeName(joint.type) << ")";
      }
    }
  }
}

// The documented velocity conventions of each joint type, checked against the poses directly.
TEST(Kinematics, JointVelocityConventions) {
  std::mt19937 rng(17);
  for (const Model& model : randomModels(rng)) {
    Data data(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    forwardKinematics(model, data, q, v);
    for (int i = 1; i < model.nbodies; ++i) {
      const Joint& joint = model.joints[i];
      const int parent = model.parent[i];
      // joint frame from the parent's pose and the placement (data.X_WJ is engine scratch)
      const Transform X_WJ = data.X_WB[parent] * model.joint_placement[i];
      const Transform& X_WB = data.X_WB[i];
      const double* vi = v.data() + model.idx_v[i];
      // relative angular velocity, in W
      const Vector3 w_rel = data.V_W[i].head<3>() - data.V_W[parent].head<3>();
      // rate of the child origin relative to the joint frame (fixed on the parent), in J:
      // d/dt R_WJᵀ (p_WB − p_WJ) = R_WJᵀ (ṗ_WB − ṗ_WJ − ω_λ × (p_WB − p_WJ))
      const Vector3& w_parent = data.V_W[parent].head<3>();
      const Vector3 p_WJ_dot = data.V_W[parent].tail<3>() + w_parent.cross(X_WJ.translation);
      const Vector3 p_rel_dot_J =
          X_WJ.rotation.transpose() * (bodyOriginVelocity(data, i) - p_WJ_dot -
                                       w_parent.cross(X_WB.translation - X_WJ.translation));
      // Both sides are a handful of roundings on world-origin spatial velocities; the linear parts
      // carry |ω| |p| terms that cancel, so the rounding scales with (1 + |V|)(1 + |p|).
      const double scale = (1.0 + data.V_W[i].norm() + data.V_W[parent].norm()) *
                           (1.0 + X_WB.translation.norm() + X_WJ.translation.norm());
      const double tol = kAlgebraTol * scale;
      switch (joint.type) {
        case JointType::kRevolute:
          EXPECT_LT((w_rel - X_WJ.rotation * joint.axis * vi[0]).norm(), tol);
          EXPECT_LT(p_rel_dot_J.norm(), tol);
          break;
        case JointType::kPrismatic:
          EXPECT_LT(w_rel.norm(), tol);
          EXPECT_LT((p_rel_dot_J - joint.axis * vi[0]).norm(), tol);
          break;
        case JointType::kSpherical:
          // v = angular velocity of the child relative to the parent, in the child frame
          EXPECT_LT((X_WB.rotation.transpose() * w_rel - Vector3(vi[0], vi[1], vi[2])).norm(),
                    tol);
          EXPECT_LT(p_rel_dot_J.norm(), tol);
          break;
        case JointType::kFreeFlyer:
          // MuJoCo: v[0:3] = linear velocity of the child origin in the joint (parent) frame,
          // v[3:6] = angular velocity in the child frame
          EXPECT_LT((X_WB.rotation.transpose() * w_rel - Vector3(vi[3], vi[4], vi[5])).norm(),
                    tol);
          EXPECT_LT((p_rel_dot_J - Vector3(vi[0], vi[1], vi[2])).norm(), tol);
          break;
        case JointType::kPlanar: {
          // v = q̇: in-plane translation rates along e1, e2 and the rotation rate about the normal
          EXPECT_LT((w_rel - X_WJ.rotation * joint.axis * vi[2]).norm(), tol);
          EXPECT_LT((p_rel_dot_J - (vi[0] * joint.plane_e1 + vi[1] * joint.plane_e2)).norm(),
                    tol);
          break;
        }
      }
    }
  }
}

// q ⊕ v dt moves quaternions by the body-frame rate: q̇ = ½ q ⊗ (0, ω) — the convention the
// velocity oracles above inherit from integrateConfiguration, checked on the raw coefficients.
TEST(Kinematics, QuaternionIntegrationUsesBodyFrameAngularVelocity) {
  std::mt19937 rng(19);
  for (const Model& model : randomModels(rng)) {
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    const Eigen::VectorXd v = test::randomVector(model.nv, rng);
    std::array<Eigen::VectorXd, 5> qs;
    for (int s = 0; s < 5; ++s) {
      qs[s].resize(model.nq);
      integrateConfiguration(model, q, v, kOffsets[s] * kH, qs[s]);
    }
    const Eigen::VectorXd q_dot = firstDerivative(qs, kH);
    for (int i = 1; i < model.nbodies; ++i) {
      const JointType type = model.joints[i].type;
      if (type != JointType::kSpherical && type != JointType::kFreeFlyer) {
        // vector joints: q̇ = v
        EXPECT_LT(relativeError(q_dot.segment(model.idx_q[i], model.nq_joint[i]),
                                v.segment(model.idx_v[i], model.nv_joint[i])),
                  kFirstDerivativeTol);
        continue;
      }
      const int kq = model.idx_q[i] + (type == JointType::kFreeFlyer ? 3 : 0);
      const int kv = model.idx_v[i] + (type == JointType::kFreeFlyer ? 3 : 0);
      if (type == JointType::kFreeFlyer) {
        EXPECT_LT(relativeError(q_dot.segment<3>(model.idx_q[i]), v.segment<3>(model.idx_v[i])),
                  kFirstDerivativeTol);
      }
      const Eigen::Quaterniond quat(q(kq), q(kq + 1), q(kq + 2), q(kq + 3));
      const Eigen::Quaterniond omega(0.0, v(kv), v(kv + 1), v(kv + 2));
      const Eigen::Quaterniond expected = quat * omega;
      const Eigen::Vector4d expected_wxyz =
          0.5 * Eigen::Vector4d(expected.w(), expected.x(), expected.y(), expected.z());
      EXPECT_LT(relativeError(q_dot.segment<4>(kq), expected_wxyz), kFirstDerivativeTol);
    }
  }
}

}  // namespace
}  // namespace hilsim
