// Spatial vectors: 6-vectors with the angular part on top, [ω; v] for motion and [n; f] for force
// (seed 004 §1.1, Featherstone RBDA §2). Units SI: rad/s, m/s, N·m, N. The frame a vector is
// expressed in, and the point it is taken about, are named by the variable (docs/NOTATION.md).
#pragma once

#include <Eigen/Core>

namespace hilsim {

using Vector3 = Eigen::Vector3d;
using Matrix3 = Eigen::Matrix3d;
using Vector6 = Eigen::Matrix<double, 6, 1>;
using Matrix6 = Eigen::Matrix<double, 6, 6>;
/// Up to 6 columns of spatial vectors (a joint's motion subspace), fixed capacity: never allocates.
using Matrix6X = Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6>;

/// Spatial motion vector [angular; linear] (velocity, acceleration, motion subspace column).
using MotionVector = Vector6;
/// Spatial force vector [moment; force] (wrench, momentum).
using ForceVector = Vector6;

/// [x]^×: the 3×3 matrix with skew(x) * y == x.cross(y).
inline Matrix3 skew(const Vector3& x) {
  Matrix3 s;
  s << 0.0, -x.z(), x.y(),  //
      x.z(), 0.0, -x.x(),   //
      -x.y(), x.x(), 0.0;
  return s;
}

/// Motion cross product out = m1 ×ᵐ m2 (RBDA eq. 2.31): [ω1×ω2; ω1×v2 + v1×ω2].
/// `out` must not alias the inputs.
template <typename A, typename B, typename Out>
inline void crossMotion(const Eigen::MatrixBase<A>& m1, const Eigen::MatrixBase<B>& m2,
                        Eigen::MatrixBase<Out>& out) {
  const auto w1 = m1.template head<3>();
  const auto v1 = m1.template tail<3>();
  const auto w2 = m2.template head<3>();
  const auto v2 = m2.template tail<3>();
  out.template head<3>() = w1.cross(w2);
  out.template tail<3>() = w1.cross(v2) + v1.cross(w2);
}

/// Force cross product out = m ×* f (RBDA eq. 2.32): [ω×n + v×f; ω×f].
/// `out` must not alias the inputs.
template <typename A, typename B, typename Out>
inline void crossForce(const Eigen::MatrixBase<A>& m, const Eigen::MatrixBase<B>& f,
                       Eigen::MatrixBase<Out>& out) {
  const auto w = m.template head<3>();
  const auto v = m.template tail<3>();
  const auto n = f.template head<3>();
  const auto fl = f.template tail<3>();
  out.template head<3>() = w.cross(n) + v.cross(fl);
  out.template tail<3>() = w.cross(fl);
}

inline MotionVector crossMotion(const MotionVector& m1, const MotionVector& m2) {
  MotionVector out;
  crossMotion(m1, m2, out);
  return out;
}

inline ForceVector crossForce(const MotionVector& m, const ForceVector& f) {
  ForceVector out;
  crossForce(m, f, out);
  return out;
}

/// 6×6 matrix of m ×ᵐ (crm in spatial_v2).
inline Matrix6 crossMotionMatrix(const MotionVector& m) {
  Matrix6 x = Matrix6::Zero();
  const Matrix3 w = skew(m.head<3>());
  x.topLeftCorner<3, 3>() = w;
  x.bottomRightCorner<3, 3>() = w;
  x.bottomLeftCorner<3, 3>() = skew(m.tail<3>());
  return x;
}

/// 6×6 matrix of m ×* (crf in spatial_v2) = −(m ×ᵐ)ᵀ.
inline Matrix6 crossForceMatrix(const MotionVector& m) {
  return -crossMotionMatrix(m).transpose();
}

}  // namespace hilsim
