// Forward dynamics by composite bodies: form M (crba) and C (rnea with q̈ = 0), solve
// M q̈ = τ − C with the tree LᵀDL factorisation (seed 004 eq. (5.1); RBDA §6.1).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include <span>

#include "engine/model/data.h"

namespace hilsim {

/// Joint accelerations for joint forces tau (nv) at state (q, v), external wrenches and nodal
/// forces as in rnea.
/// Result in data.qdd (also returned); data.M, data.bias_forces and data.M_factor are left
/// filled. Allocation-free.
const Eigen::VectorXd& crbaForwardDynamics(const Model& model, Data& data,
                                           const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                           const Eigen::VectorXd& tau,
                                           std::span<const ForceVector> f_ext_B = {},
                                           std::span<const NodalForce> nodal_forces = {});

}  // namespace hilsim
