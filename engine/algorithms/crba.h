// Composite-rigid-body algorithm: joint-space inertia matrix (seed 004 §5 eq. (5.5) with n_m = 0;
// RBDA §6.2).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Joint-space inertia M(q) (nv × nv, symmetric, both triangles filled), armature included on the
/// diagonal, into data.M (also returned). Allocation-free. `data` must hold
/// DataWorkspace::kJointSpaceInertia.
const Eigen::MatrixXd& crba(const Model& model, Data& data, const Eigen::VectorXd& q);

namespace detail {
/// The inward sweep of crba alone, for callers that have just filled data.S_W and
/// data.inertia_W at the same q (crbaForwardDynamics, after the bias forces).
const Eigen::MatrixXd& crbaInwardSweep(const Model& model, Data& data);
}  // namespace detail

}  // namespace hilsim
