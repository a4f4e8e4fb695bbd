#include "engine/spatial/inertia.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <Eigen/Eigenvalues>

namespace hilsim {

Inertia Inertia::operator+(const Inertia& other) const {
  const double m = mass + other.mass;
  Vector3 c = Vector3::Zero();
  if (m > 0.0) c = (mass * com + other.mass * other.com) / m;
  // parallel-axis shift of each body's inertia to the joint centre of mass
  auto shift = [&c](const Inertia& body) {
    const Vector3 d = body.com - c;
    return Matrix3(body.inertia_com +
                   body.mass * (d.squaredNorm() * Matrix3::Identity() - d * d.transpose()));
  };
  return Inertia(m, c, shift(*this) + shift(other));
}

std::string Inertia::validate(double tolerance) const {
  if (std::string why = validateDefinite(tolerance); !why.empty()) return why;
  const double scale = std::max(1.0, inertia_com.cwiseAbs().maxCoeff());
  // a rigid body's principal moments satisfy I_a + I_b ≥ I_c for every permutation
  if (triangleExcess() > tolerance * scale) {
    Eigen::SelfAdjointEigenSolver<Matrix3> eig(inertia_com, Eigen::EigenvaluesOnly);
    const Vector3 p = eig.eigenvalues();
    std::ostringstream why;
    why << "principal moments " << p(0) << ", " << p(1) << ", " << p(2)
        << " kg·m² violate the triangle inequality";
    return why.str();
  }
  return {};
}

double Inertia::triangleExcess() const {
  Eigen::SelfAdjointEigenSolver<Matrix3> eig(inertia_com, Eigen::EigenvaluesOnly);
  const Vector3 p = eig.eigenvalues();  // ascending
  return p(2) - p(0) - p(1);
}

Inertia Inertia::balanced() const {
  Eigen::SelfAdjointEigenSolver<Matrix3> eig(inertia_com);
  Vector3 p = eig.eigenvalues();  // ascending, with their axes
  const double excess = p(2) - p(0) - p(1);
  if (!(excess > 0.0)) return *this;
  p(0) += 0.5 * excess;
  p(1) += 0.5 * excess;
  const Matrix3& axes = eig.eigenvectors();
  Matrix3 i_c = axes * p.asDiagonal() * axes.transpose();
  i_c = 0.5 * (i_c + i_c.transpose());
  return Inertia(mass, com, i_c);
}

std::string Inertia::validateDefinite(double tolerance) const {
  std::ostringstream why;
  if (!std::isfinite(mass) || !com.allFinite() || !inertia_com.allFinite()) {
    why << "mass, centre of mass and inertia must be finite numbers";
    return why.str();
  }
  if (mass < 0.0) {
    why << "mass " << mass << " kg is negative";
    return why.str();
  }
  const double scale = std::max(1.0, inertia_com.cwiseAbs().maxCoeff());
  if ((inertia_com - inertia_com.transpose()).cwiseAbs().maxCoeff() > tolerance * scale) {
    why << "inertia tensor is not symmetric";
    return why.str();
  }
  Eigen::SelfAdjointEigenSolver<Matrix3> eig(inertia_com, Eigen::EigenvaluesOnly);
  const Vector3 p = eig.eigenvalues();  // ascending
  if (p(0) < -tolerance * scale) {
    why << "inertia tensor is not positive semi-definite (principal moments " << p(0) << ", "
        << p(1) << ", " << p(2) << " kg·m²)";
    return why.str();
  }
  return {};
}

bool Inertia::isApprox(const Inertia& other, double precision) const {
  return std::abs(mass - other.mass) <= precision * std::max(1.0, std::abs(mass)) &&
         (com - other.com).norm() <= precision * std::max(1.0, com.norm()) &&
         (inertia_com - other.inertia_com).norm() <=
             precision * std::max(1.0, inertia_com.norm());
}

}  // namespace hilsim
