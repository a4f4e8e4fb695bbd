// The rows of the loop closures: position error C(q), Jacobian J(q) (C's rate is J v) and bias
// acceleration J̇ v, from the kinematics in Data. Every row is g_bᵀ V_b + g_aᵀ V_a in the spatial
// velocities V (in W about W's origin, docs/NOTATION.md) of the two bodies it joins, so J's row
// is g_bᵀ S_W on the joints that move body b plus g_aᵀ S_W on those that move body a.
// The rows of each closure type, with their derivation: docs/LOOPS.md "Constraint rows".
#pragma once

#include <Eigen/Core>

#include "engine/constraints/constraint_rows.h"
#include "engine/model/data.h"

namespace hilsim {

/// What evaluateClosures computes; each needs Data's kinematics at (q[, v]): X_WB and S_W for
/// the position error and Jacobian, also V_W for the rate, c_W for the bias and A_W for the
/// acceleration (as every formulation's forward dynamics and forwardKinematics(q, v) leave the
/// first four, aba() and bodyAccelerations() the last).
struct ClosureOutputs {
  Eigen::VectorXd* position_error = nullptr;  ///< m: C(q) [m, rad]
  Eigen::MatrixXd* jacobian = nullptr;        ///< m × nv: J(q)
  Eigen::VectorXd* bias = nullptr;            ///< m: J̇ v, C̈ at q̈ = 0 [m/s², rad/s²]
  ConstraintRows* rows = nullptr;  ///< J and the rows' spatial form (not `active`); built from
                                   ///< the same model
  Eigen::VectorXd* rate = nullptr;  ///< m: Ċ = J v [m/s, rad/s]
  /// m: C̈ = J q̈ + J̇ v at the bodies' accelerations in Data's A_W (those of the q̈ that made
  /// them; A_W[0] the base's, gravity's −g) [m/s², rad/s²]. Not with `bias`.
  Eigen::VectorXd* acceleration = nullptr;
  /// With `rows`: false writes only the rows' spatial form, not their Jacobian.
  bool rows_jacobian = true;
  /// With `rows`: evaluate only the rows in rows->active (its first active_count entries); the
  /// other rows' entries in every output are left as they were. A closure none of whose rows is
  /// active is skipped, and a frame's rotation is computed only where an active row reads it.
  bool active_only = false;
};

/// Evaluates the rows of every closure of `model` (m = model.nconstraints rows, in the order of
/// model.loops) into the outputs that are set. Allocation-free.
void evaluateClosures(const Model& model, const Data& data, const ClosureOutputs& out);

/// The rates Ḟ_a, Ḟ_b (6 × m, columns in model.loops' row order) of the rows' spatial forces F_a,
/// F_b (ConstraintRows::force_a, force_b: the rows' coefficients on the bodies' velocities) along
/// the motion, at the kinematics in Data (X_WB, V_W) [N/s, N·m/s per unit multiplier]: what
/// Ȧᵀσ = Σ_r σ_r (J̇ row r) needs beyond the motion subspaces' rates (engine/algorithms/hdca.h).
/// Allocation-free.
void closureForceRates(const Model& model, const Data& data, Matrix6N& force_a_rate,
                       Matrix6N& force_b_rate);

/// Sets rows.active to the closure rows (the first model.nconstraints) whose Jacobian row is not
/// identically zero: zero at three random configurations means zero by the model's geometry (a
/// planar linkage's out-of-plane rows; docs/LOOPS.md "Dynamics: the constraint stage"). Once
/// per model; allocates.
void findStructuralClosureRows(const Model& model, ConstraintRows& rows);

namespace detail {
/// evaluateClosures with Eigen's fixed-size code for every row: distance rows, and the point
/// rows of a closure none of whose angular rows is wanted, are otherwise written four lanes wide
/// where AVX2 is there (closure_kinematics.cc). The reference of their test.
void evaluateClosuresPortable(const Model& model, const Data& data, const ClosureOutputs& out);
}  // namespace detail

/// Adds the generalised forces of the force elements (model.force_elements) to `forces` (nv)
/// [N·m, N], at the kinematics in Data (X_WB, S_W, V_W). A spring–damper whose points coincide
/// has no direction and exerts nothing. Returns the power their dampers take out, Σ c ℓ̇² [W].
double addForceElementForces(const Model& model, const Data& data, Eigen::VectorXd& forces);

/// Potential energy of the force elements' springs, Σ ½ k (ℓ − ℓ₀)², at the poses in Data [J].
double forceElementEnergy(const Model& model, const Data& data);

}  // namespace hilsim
