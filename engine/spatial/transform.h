// Rigid transforms (poses) and how motion and force vectors change frame under them.
#pragma once

#include <algorithm>

#include <Eigen/Geometry>

#include "engine/spatial/spatial.h"

namespace hilsim {

/// Pose X_AB of frame B in frame A: `rotation` R_AB has B's axes as columns in A coordinates, and
/// `translation` p_AB is B's origin in A coordinates [m]. Composition: X_AC = X_AB * X_BC.
///
/// `actMotion` takes a spatial motion vector expressed in B (about B's origin) to A (about A's
/// origin): the Plücker transform ᴬX_B of RBDA §2.8, which seed 004 writes φ*(·) once rotated.
/// `actForce` does the same for forces (ᴬX_B* ). The `inv*` forms go from A to B.
struct Transform {
  Matrix3 rotation = Matrix3::Identity();
  Vector3 translation = Vector3::Zero();

  Transform() = default;
  Transform(const Matrix3& r, const Vector3& p) : rotation(r), translation(p) {}

  static Transform identity() { return Transform(); }

  /// out = X_AB * X_BC (out may alias neither input).
  void compose(const Transform& x_bc, Transform& out) const {
    out.rotation.noalias() = rotation * x_bc.rotation;
    out.translation.noalias() = rotation * x_bc.translation;
    out.translation += translation;
  }
  Transform operator*(const Transform& x_bc) const {
    Transform out;
    compose(x_bc, out);
    return out;
  }

  /// X_BA.
  Transform inverse() const {
    Transform out;
    out.rotation = rotation.transpose();
    out.translation.noalias() = -(out.rotation * translation);
    return out;
  }

  /// A point given in B, in A coordinates.
  Vector3 actPoint(const Vector3& p_b) const { return rotation * p_b + translation; }

  /// Motion vector from B to A: ω_A = R ω_B, v_A = R v_B + p × (R ω_B).
  template <typename In, typename Out>
  void actMotion(const Eigen::MatrixBase<In>& m_b, Eigen::MatrixBase<Out>& m_a) const {
    Vector3 w;
    w.noalias() = rotation * m_b.template head<3>();
    Vector3 v;
    v.noalias() = rotation * m_b.template tail<3>();
    m_a.template tail<3>() = v + translation.cross(w);
    m_a.template head<3>() = w;
  }
  MotionVector actMotion(const MotionVector& m_b) const {
    MotionVector out;
    actMotion(m_b, out);
    return out;
  }

  /// Motion vector from A to B: ω_B = Rᵀ ω_A, v_B = Rᵀ (v_A − p × ω_A).
  template <typename In, typename Out>
  void invActMotion(const Eigen::MatrixBase<In>& m_a, Eigen::MatrixBase<Out>& m_b) const {
    const Vector3 v = m_a.template tail<3>() - translation.cross(m_a.template head<3>());
    m_b.template head<3>() = rotation.transpose() * m_a.template head<3>();
    m_b.template tail<3>() = rotation.transpose() * v;
  }
  MotionVector invActMotion(const MotionVector& m_a) const {
    MotionVector out;
    invActMotion(m_a, out);
    return out;
  }

  /// Force vector from B to A: f_A = R f_B, n_A = R n_B + p × f_A.
  template <typename In, typename Out>
  void actForce(const Eigen::MatrixBase<In>& f_b, Eigen::MatrixBase<Out>& f_a) const {
    Vector3 f;
    f.noalias() = rotation * f_b.template tail<3>();
    Vector3 n;
    n.noalias() = rotation * f_b.template head<3>();
    f_a.template head<3>() = n + translation.cross(f);
    f_a.template tail<3>() = f;
  }
  ForceVector actForce(const ForceVector& f_b) const {
    ForceVector out;
    actForce(f_b, out);
    return out;
  }

  /// Force vector from A to B: f_B = Rᵀ f_A, n_B = Rᵀ (n_A − p × f_A).
  template <typename In, typename Out>
  void invActForce(const Eigen::MatrixBase<In>& f_a, Eigen::MatrixBase<Out>& f_b) const {
    const Vector3 n = f_a.template head<3>() - translation.cross(f_a.template tail<3>());
    f_b.template tail<3>() = rotation.transpose() * f_a.template tail<3>();
    f_b.template head<3>() = rotation.transpose() * n;
  }
  ForceVector invActForce(const ForceVector& f_a) const {
    ForceVector out;
    invActForce(f_a, out);
    return out;
  }

  /// 6×6 Plücker matrix of actMotion (its transpose-inverse is the force transform).
  Matrix6 motionMatrix() const {
    Matrix6 x;
    x.topLeftCorner<3, 3>() = rotation;
    x.topRightCorner<3, 3>().setZero();
    x.bottomLeftCorner<3, 3>().noalias() = skew(translation) * rotation;
    x.bottomRightCorner<3, 3>() = rotation;
    return x;
  }

  bool isApprox(const Transform& other, double precision = 1e-12) const {
    return (rotation - other.rotation).norm() <= precision &&
           (translation - other.translation).norm() <=
               precision * std::max(1.0, translation.norm());
  }
};

/// Rotation by `angle` [rad] about the unit vector `axis` (Rodrigues).
inline Matrix3 axisAngleRotation(const Vector3& axis, double angle) {
  return Eigen::AngleAxisd(angle, axis).toRotationMatrix();
}

}  // namespace hilsim
