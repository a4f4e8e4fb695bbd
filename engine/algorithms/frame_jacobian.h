// The Jacobian of a frame: the map from joint velocities v to the frame's spatial velocity, in
// one of three representations (angular rows first, docs/NOTATION.md).
//
// Unrolling the outward velocity recursion V(k) = V(λ) + Ψ_t η̇_λ + S θ̇ − Ψ_d η̇_k (seed 004
// (3.13); V(k) = V(λ) + S θ̇ for rigid bodies) from the world to body b gives
//   V_b = Σ_{k on the path of b} (S_k θ̇_k + Ψ_t,k η̇_λ(k) − Ψ_d,k η̇_k):
// column d of the Jacobian in W about W's origin is the coefficient of v_d there, zero off the
// path (the spatial manipulator Jacobian of Murray, Li, Sastry §3.4). A frame rigidly attached to
// b has b's spatial velocity; its body and mixed Jacobians are that one moved to the frame's
// origin (and axes).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Murray, Li, Sastry, "A Mathematical Introduction to Robotic Manipulation", CRC Press (1994)
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Where a frame's Jacobian is expressed and which point its linear rows follow.
enum class JacobianReference {
  /// In W about W's origin (the spatial Jacobian): rows [ω_W; v of the point of the frame's
  /// body that is at W's origin, in W]. The representation every algorithm works in.
  kWorld,
  /// In the frame F about its origin (the body Jacobian): rows [ω in F's axes; v of F's origin in
  /// F's axes].
  kLocal,
  /// At F's origin with W's axes: rows [ω_W; v of F's origin in W], the classical linear velocity
  /// of the frame's origin.
  kLocalWorldAligned,
};

/// J (6 × nv) with J v the spatial velocity of `frame` (an index into model.frames) in the
/// representation `reference`, at the configuration of Data's kinematics: X_WB and S_W (and, on
/// a model with flexible bodies, flex.Psi_t_W and flex.Psi_d_W) as forwardKinematics(q) or any
/// formulation's forward dynamics leave them. Columns of dofs that do not move the frame are
/// zero. `J` must be 6 × model.nv. Allocation-free.
void frameJacobian(const Model& model, const Data& data, int frame, JacobianReference reference,
                   Matrix6N& J);

}  // namespace hilsim
