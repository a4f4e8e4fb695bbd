// Modal data of a uniform Euler–Bernoulli beam, so that the common flexible link needs no
// finite-element package: a lumped-mass finite-element model of the beam, its lowest bending
// modes, and their second-order (foreshortening) displacements for geometric stiffening.
#pragma once

#include <string>

#include "engine/model/flexible_body.h"

namespace hilsim {

/// A straight uniform beam along the body's x axis, from x = 0 to x = length.
struct BeamSpec {
  enum class Boundary {
    kClampedFree,  ///< cantilever: clamped at x = 0, where the body's own joint is (its frame)
    kFreeFree,     ///< free at both ends: elastic modes only, mass-orthogonal to rigid motion
  };
  enum class Bending {
    kY,     ///< displacement along y (bending about z)
    kZ,     ///< displacement along z (bending about y)
    kBoth,  ///< both planes, modes taken in order of frequency
  };

  double youngs_modulus = 0.0;  ///< E [Pa]
  double area_moment = 0.0;     ///< second moment of area I, the same in both planes [m⁴]
  double density = 0.0;         ///< ρ [kg/m³]
  double area = 0.0;            ///< cross-section A [m²]
  double length = 0.0;          ///< L [m]
  int modes = 3;                ///< number of modes kept (n_m)
  int elements = 20;            ///< finite elements; nodes are placed at their ends
  Boundary boundary = Boundary::kClampedFree;
  Bending bending = Bending::kY;
  double damping_ratio = 0.0;   ///< modal damping ratio ζ of every mode (C = diag(2ζω))
  bool geometric_stiffening = true;

  bool operator==(const BeamSpec&) const = default;

  /// Empty when the numbers are usable (positive, finite, enough elements for the modes);
  /// otherwise why not.
  std::string validate() const;
};

/// The flexible body of `spec`. Modes are mass-normalized (M_ff = 1, K = diag(ω²)) and computed
/// from Euler–Bernoulli beam elements (Hermite cubics) with lumped translational masses, the
/// rotations condensed statically, plus the section's torsional inertia ρ·2I per length (no
/// torsion modes). Nodes: "root" (x = 0), "n1" … "n<elements−1>", "tip" (x = L).
/// Throws ModelError when spec.validate() fails.
FlexibleBody eulerBernoulliBeam(const BeamSpec& spec);

}  // namespace hilsim
