// Rigid-body spatial inertia in minimal form: mass, centre of mass, rotational inertia about it.
#pragma once

#include <string>

#include "engine/spatial/transform.h"

namespace hilsim {

/// Spatial inertia of a rigid body, expressed in some frame F: `mass` [kg], `com` the centre of
/// mass in F [m], `inertia_com` the rotational inertia about the centre of mass, in F's axes
/// [kg·m²]. The 6×6 matrix about F's origin is RBDA eq. 2.63:
///   [ I_c + m c̃ c̃ᵀ   m c̃ ]
///   [ m c̃ᵀ           m 1 ].
struct Inertia {
  double mass = 0.0;
  Vector3 com = Vector3::Zero();
  Matrix3 inertia_com = Matrix3::Zero();

  Inertia() = default;
  Inertia(double m, const Vector3& c, const Matrix3& i_c) : mass(m), com(c), inertia_com(i_c) {}

  static Inertia zero() { return Inertia(); }

  /// Rotational inertia about F's origin (parallel-axis theorem).
  Matrix3 inertiaAboutOrigin() const {
    const Matrix3 c = skew(com);
    return inertia_com - mass * c * c;
  }

  Matrix6 matrix() const {
    Matrix6 out;
    matrix(out);
    return out;
  }
  void matrix(Matrix6& out) const {
    // I_c + m c̃ c̃ᵀ = I_c + m (|c|² 1 − c cᵀ), written entry by entry: this sits in every sweep
    const Vector3 h = mass * com;
    const double hx = h.x(), hy = h.y(), hz = h.z();
    const double cx = com.x(), cy = com.y(), cz = com.z();
    const Matrix3& ic = inertia_com;
    out(0, 0) = ic(0, 0) + hy * cy + hz * cz;
    out(1, 1) = ic(1, 1) + hx * cx + hz * cz;
    out(2, 2) = ic(2, 2) + hx * cx + hy * cy;
    out(1, 0) = out(0, 1) = ic(0, 1) - hx * cy;
    out(2, 0) = out(0, 2) = ic(0, 2) - hx * cz;
    out(2, 1) = out(1, 2) = ic(1, 2) - hy * cz;
    // m c̃ (top right) and its transpose (bottom left)
    out(0, 3) = 0.0;  out(0, 4) = -hz;  out(0, 5) = hy;
    out(1, 3) = hz;   out(1, 4) = 0.0;  out(1, 5) = -hx;
    out(2, 3) = -hy;  out(2, 4) = hx;   out(2, 5) = 0.0;
    out.bottomLeftCorner<3, 3>() = out.topRightCorner<3, 3>().transpose();
    out.bottomRightCorner<3, 3>().setZero();
    out(3, 3) = out(4, 4) = out(5, 5) = mass;
  }

  /// f = I v for a motion vector v about F's origin: f_lin = m (v + ω × c), n = I_c ω + c × f_lin.
  template <typename In, typename Out>
  void apply(const Eigen::MatrixBase<In>& v, Eigen::MatrixBase<Out>& f) const {
    const Vector3 w = v.template head<3>();
    const Vector3 lin = mass * (v.template tail<3>() + w.cross(com));
    f.template head<3>() = inertia_com * w + com.cross(lin);
    f.template tail<3>() = lin;
  }
  ForceVector operator*(const MotionVector& v) const {
    ForceVector f;
    apply(v, f);
    return f;
  }

  /// This inertia (given in frame B) expressed in frame A, with x_ab the pose of B in A.
  Inertia transformed(const Transform& x_ab) const {
    return Inertia(mass, x_ab.actPoint(com),
                   x_ab.rotation * inertia_com * x_ab.rotation.transpose());
  }

  /// The inertia of two bodies rigidly joined, both given in the same frame.
  Inertia operator+(const Inertia& other) const;

  /// ½ vᵀ I v [J].
  double kineticEnergy(const MotionVector& v) const { return 0.5 * v.dot(*this * v); }

  /// Empty when the inertia is physically valid (finite, mass ≥ 0, I_c symmetric positive
  /// semi-definite, principal moments obey the triangle inequality); otherwise why not.
  std::string validate(double tolerance = 1e-9) const;
  /// validate() without the triangle inequality: empty when the dynamics are defined (finite,
  /// mass ≥ 0, I_c symmetric positive semi-definite), whatever a rigid body could have.
  std::string validateDefinite(double tolerance = 1e-9) const;
  /// How far the principal moments break the triangle inequality: I₃ − (I₁ + I₂) with
  /// I₁ ≤ I₂ ≤ I₃ [kg·m²]; ≤ 0 when they keep it.
  double triangleExcess() const;
  /// This body with its two smaller principal moments raised by half the excess each, about the
  /// same principal axes: the least change of trace that makes I₁ + I₂ = I₃ (as given when the
  /// moments keep the inequality). Mass and centre of mass unchanged.
  Inertia balanced() const;

  bool isApprox(const Inertia& other, double precision = 1e-12) const;
};

}  // namespace hilsim
