// M(q)⁻¹ x by the articulated-body recursion, reusing the articulated inertias of the last aba()
// (Featherstone, "Rigid Body Dynamics Algorithms" (2008) §7.3 with v = 0 and g = 0; Jain,
// Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial Operators", JPL
// 90-26 (1990) eqs. (7.2)–(7.3) with the velocity terms a_m, b_m and the applied forces off).
// The constraint stage applies it to each column of Jᵀ (docs/LOOPS.md).
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// x ← M(q)⁻¹ x (nv) at the q of the last aba() on `data`: P, G, D⁻¹ are that call's. O(n):
/// per body one 6-vector inward and one outward, no 6 × 6 products except at a floating root
/// (one 6 × 6 Cholesky). Rigid models of full joint rank only (no flexible bodies, no massless
/// joint motion); allocation-free. Scratch: data.minv_z, data.minv_a.
void abaInverseInertia(const Model& model, Data& data, Eigen::VectorXd& x);

}  // namespace hilsim
