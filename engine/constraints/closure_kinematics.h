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
/// the position error and Jacobian, also V_W and c_W for the bias (as every formulation's forward
/// dynamics and forwardKinematics(q, v) leave them).
struct ClosureOutputs {
  Eigen::VectorXd* position_error = nullptr;  ///< m: C(q) [m, rad]
  Eigen::MatrixXd* jacobian = nullptr;        ///< m × nv: J(q)
  Eigen::VectorXd* bias = nullptr;            ///< m: J̇ v, C̈ at q̈ = 0 [m/s², rad/s²]
  ConstraintRows* rows = nullptr;  ///< J and the rows' spatial form (not `active`); built from
                                   ///< the same model
};

/// Evaluates the rows of every closure of `model` (m = model.nconstraints rows, in the order of
/// model.loops) into the outputs that are set. Allocation-free.
void evaluateClosures(const Model& model, const Data& data, const ClosureOutputs& out);

/// Adds the generalised forces of the force elements (model.force_elements) to `forces` (nv)
/// [N·m, N], at the kinematics in Data (X_WB, S_W, V_W). A spring–damper whose points coincide
/// has no direction and exerts nothing.
void addForceElementForces(const Model& model, const Data& data, Eigen::VectorXd& forces);

/// Potential energy of the force elements' springs, Σ ½ k (ℓ − ℓ₀)², at the poses in Data [J].
double forceElementEnergy(const Model& model, const Data& data);

}  // namespace hilsim
