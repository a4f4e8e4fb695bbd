// Articulated-body forward dynamics (seed 004 §6–7: eqs. (6.1), (7.2), (7.3) with n_m = 0; RBDA §7.3).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
//   Arnold, "A recursive multibody formalism for systems with small mass and inertia
//   terms" (2013) [seed 003]
#pragma once

#include <span>

#include "engine/model/data.h"

namespace hilsim {

/// Joint accelerations q̈ for joint forces tau (nv) at state (q, v), so that
/// rnea(q, v, q̈, f_ext_B) == tau. External wrenches as in rnea. Result in data.qdd (also
/// returned). `nodal_forces`: wrenches at nodes of flexible bodies (docs/FLEXIBLE.md). O(n),
/// allocation-free. All spatial quantities are kept in W about W's origin, where
/// every interbody operator Φ(k+1, k) of seed 004 is the identity.
const Eigen::VectorXd& aba(const Model& model, Data& data, const Eigen::VectorXd& q,
                           const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                           std::span<const ForceVector> f_ext_B = {},
                           std::span<const NodalForce> nodal_forces = {});

}  // namespace hilsim
