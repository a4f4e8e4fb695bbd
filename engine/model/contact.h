// What a model says about its stops and the ground: contact spheres on bodies, a ground plane,
// the softness of the unilateral and friction rows and the budget of their solver. The rows
// themselves live in the constraint stage (engine/constraints/unilateral_rows.h); what they mean
// and how they are solved: docs/CONTACT.md. Units SI; frames as docs/NOTATION.md.
#pragma once

#include <string>

#include "engine/spatial/spatial.h"

namespace hilsim {

/// How a soft row answers a violation r and its rate ṙ: its reference acceleration is
/// a_ref = −b ṙ − k d r with b = 2 / (d τ), k = 1 / (d² τ² ζ²), and the row's force is
/// regularised by R = (1 − d) / d · W_rr (W the Delassus matrix). A lone row then follows
/// r̈ + (2 / τ) ṙ + r / (τ ζ)² = (1 − d) a_free: a spring–damper of time constant τ and
/// damping ratio ζ, with a residual (1 − d) of the free acceleration (the static depth of a
/// loaded contact, the give of a held friction row). MuJoCo's solref (τ, ζ) with
/// solimp (d, d, ·, ·, ·): an impedance that does not vary with the violation.
struct ConstraintSoftness {
  double time_constant = 0.02;  ///< τ [s]; at least two steps of the simulation
  double damping_ratio = 1.0;   ///< ζ > 0; 1 is critically damped
  double impedance = 0.95;      ///< d in (0, 1): near 1 stiff, near 0 soft
};

/// A contact sphere fixed on a body: touches the ground plane where its lowest point does. A
/// radius of 0 is a contact point.
struct ContactSphere {
  std::string name;
  int body = 0;                      ///< body index (≥ 1)
  Vector3 center = Vector3::Zero();  ///< in the body frame [m]
  double radius = 0.0;               ///< ≥ 0 [m]
};

/// The ground: the plane z = height of the world frame, its normal +z (against the default
/// gravity), with Coulomb friction μ for every contact sphere.
struct GroundPlane {
  bool enabled = false;
  double height = 0.0;    ///< [m]
  double friction = 1.0;  ///< μ ≥ 0
};

/// The rows' softness and the budget of their solve (projected Gauss–Seidel, docs/CONTACT.md).
struct ContactSettings {
  ConstraintSoftness limit;    ///< joint position limits
  ConstraintSoftness contact;  ///< contact normals
  /// Joint and contact friction rows, held at their anchor while they stick (docs/CONTACT.md):
  /// an impedance near 1 keeps their give below the breakaway force small.
  ConstraintSoftness friction{0.02, 1.0, 0.99};
  int max_iterations = 100;    ///< Gauss–Seidel sweeps at most per evaluation (≥ 1)
  /// The sweeps stop when no multiplier changed by more than this times its row's force scale
  /// (1 / W_rr [N or N·m per m/s² or rad/s²]) in the last one, i.e. when every row's
  /// acceleration moved by less than this [m/s², rad/s²].
  double tolerance = 1e-10;
};

}  // namespace hilsim
