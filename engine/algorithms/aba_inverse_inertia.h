// M(q)⁻¹ X by the articulated-body recursion, reusing the articulated inertias of the last aba()
// (Featherstone, "Rigid Body Dynamics Algorithms" (2008) §7.3 with v = 0 and g = 0; Jain,
// Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial Operators", JPL
// 90-26 (1990) eqs. (7.2)–(7.3) with the velocity terms a_m, b_m and the applied forces off).
// The constraint stage applies it to the columns of Jᵀ at once (docs/LOOPS.md).
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// X ← M(q)⁻¹ X for the k = X.cols() columns of X (nv × k, k ≤ Data::minvColumns()) at the q of
/// the last aba() on `data`: P, G, D⁻¹ are that call's. O(n k): per body one 6 × k block inward
/// and one outward, and at a floating root two triangular solves with the factor of P aba() left. On a model with
/// flexible bodies, flexibleAbaInverseInertia (column by column). Models of full joint rank only
/// (no massless joint motion); allocation-free.
void abaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X);

}  // namespace hilsim
