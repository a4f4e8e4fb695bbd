// The rotation of a rotation vector and its derivatives: used for the slope rotation of a flexible
// body's node, exp([λ η]^×), whose rate is not λ η̇ unless every mode bends about one axis.
#pragma once

#include <cmath>

#include "engine/spatial/spatial.h"

namespace hilsim {

namespace detail {

// Coefficients of the exponential map and its left Jacobian as functions of θ = |x|:
//   a(θ) = (1 − cos θ)/θ², b(θ) = (θ − sin θ)/θ³, s(θ) = sin θ/θ,
//   a1(θ) = a′(θ)/θ, b1(θ) = b′(θ)/θ.
// Below θ = 0.1 the closed forms lose digits to cancellation; the Taylor series there are kept to
// the term whose successor is below 1e-20.
struct So3Coefficients {
  double s, a, b, a1, b1;
};

inline So3Coefficients so3Coefficients(double theta) {
  So3Coefficients c;
  const double t2 = theta * theta;
  if (theta < 0.1) {
    const double t4 = t2 * t2, t6 = t4 * t2, t8 = t4 * t4;
    c.s = 1.0 - t2 / 6.0 + t4 / 120.0 - t6 / 5040.0 + t8 / 362880.0;
    c.a = 0.5 - t2 / 24.0 + t4 / 720.0 - t6 / 40320.0 + t8 / 3628800.0;
    c.b = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0 - t6 / 362880.0 + t8 / 39916800.0;
    c.a1 = -1.0 / 12.0 + t2 / 180.0 - t4 / 6720.0 + t6 / 453600.0 - t8 / 47900160.0;
    c.b1 = -1.0 / 60.0 + t2 / 1260.0 - t4 / 60480.0 + t6 / 4989600.0 - t8 / 622702080.0;
    return c;
  }
  const double sn = std::sin(theta), cs = std::cos(theta);
  c.s = sn / theta;
  c.a = (1.0 - cs) / t2;
  c.b = (theta - sn) / (t2 * theta);
  // a′ = (θ sin θ − 2(1 − cos θ))/θ³, b′ = (1 − cos θ)/θ³ − 3(θ − sin θ)/θ⁴
  c.a1 = (theta * sn - 2.0 * (1.0 - cs)) / (t2 * t2);
  c.b1 = (1.0 - cs) / (t2 * t2) - 3.0 * (theta - sn) / (t2 * t2 * theta);
  return c;
}

}  // namespace detail

/// exp([x]^×): the rotation by |x| [rad] about x/|x| (Rodrigues).
inline Matrix3 so3Exp(const Vector3& x) {
  const detail::So3Coefficients c = detail::so3Coefficients(x.norm());
  const Matrix3 k = skew(x);
  Matrix3 r = Matrix3::Identity();
  r += c.s * k;
  r.noalias() += c.a * k * k;
  return r;
}

/// Left Jacobian J(x) = 1 + a [x]^× + b [x]^×²: for R(t) = exp([x(t)]^×), the angular velocity of R
/// expressed in the frame R maps into is ω = J(x) ẋ.
inline Matrix3 so3LeftJacobian(const Vector3& x) {
  const detail::So3Coefficients c = detail::so3Coefficients(x.norm());
  const Matrix3 k = skew(x);
  Matrix3 j = Matrix3::Identity();
  j += c.a * k;
  j.noalias() += c.b * k * k;
  return j;
}

/// J̇(x, ẋ) ẋ: the part of ω̇ = J(x) ẍ + J̇ ẋ that does not depend on ẍ.
///   J̇ ẋ = a1 (x·ẋ) x × ẋ + b1 (x·ẋ) x × (x × ẋ) + b ẋ × (x × ẋ).
inline Vector3 so3LeftJacobianRateTimesRate(const Vector3& x, const Vector3& x_dot) {
  const detail::So3Coefficients c = detail::so3Coefficients(x.norm());
  const double x_dot_xd = x.dot(x_dot);
  const Vector3 x_cross_xd = x.cross(x_dot);
  return (c.a1 * x_dot_xd) * x_cross_xd + (c.b1 * x_dot_xd) * x.cross(x_cross_xd) +
         c.b * x_dot.cross(x_cross_xd);
}

}  // namespace hilsim
