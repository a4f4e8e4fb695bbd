// Recursive Newton–Euler inverse dynamics (seed 004 §4 eq. (4.1) with n_m = 0; RBDA §5.3).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include <span>

#include "engine/model/data.h"

namespace hilsim {

/// Joint forces that produce joint accelerations `a` at state (q, v):
///   τ = M(q) a + C(q, v) v + g(q) + damping ∘ v + armature ∘ a − Σ_i J_iᵀ f_ext_i.
/// `f_ext_B`, if not empty, has nbodies entries: the external wrench on each body, expressed in that
/// body's frame about its origin [N·m; N] (entry 0, the world, is ignored).
/// `nodal_forces`: wrenches at nodes of flexible bodies (docs/FLEXIBLE.md).
/// Sizes: q nq, v nv, a nv. Result in data.tau (nv), also returned. Allocation-free.
const Eigen::VectorXd& rnea(const Model& model, Data& data, const Eigen::VectorXd& q,
                            const Eigen::VectorXd& v, const Eigen::VectorXd& a,
                            std::span<const ForceVector> f_ext_B = {},
                            std::span<const NodalForce> nodal_forces = {});

/// Bias forces C(q, v) v + g(q) + damping ∘ v (rnea with a = 0), into data.bias_forces.
const Eigen::VectorXd& nonLinearEffects(const Model& model, Data& data, const Eigen::VectorXd& q,
                                        const Eigen::VectorXd& v,
                                        std::span<const ForceVector> f_ext_B = {},
                                        std::span<const NodalForce> nodal_forces = {});

}  // namespace hilsim
