// The Delassus matrix W = J M⁻¹ Jᵀ of constraint rows by the articulated-body recursion, from
// the rows' spatial form: each row's forces on its two bodies go inward through the articulated
// inertias of the last aba() and the accelerations they cause come back outward (Featherstone,
// "Rigid Body Dynamics Algorithms" (2008) §7.3 with v = 0, g = 0 and the row's forces as the
// external forces; Jain, Rodriguez, JPL 90-26 (1990) eqs. (7.2)–(7.3)). W(r, c) is then row r
// read on the accelerations of column c: F_b,rᵀ α_b + F_a,rᵀ α_a. Neither Jᵀ nor M⁻¹ Jᵀ (nv × k)
// is formed, and only the bodies on the rows' paths to the world are visited.
#pragma once

#include "engine/constraints/constraint_rows.h"

namespace hilsim {

/// W ← J M⁻¹ Jᵀ on the active rows of `rows` (k = rows.active_count; W's top-left k × k block,
/// upper triangle; W has 4⌈k/4⌉ rows or more) at the q of the last aba() on `data`. O(s k + k²)
/// for s bodies on the rows' paths, the k columns four at a time; Data's minv_z and minv_a hold
/// the columns' forces, joint rates and accelerations (aba_delassus.cc). Rigid models of full
/// joint rank (as abaInverseInertia); allocation-free.
void abaDelassus(const Model& model, Data& data, const ConstraintRows& rows, Eigen::MatrixXd& W);

/// x ← M⁻¹ Jᵀ λ (λ: first k entries) from the k columns' accelerations and joint rates the last
/// abaDelassus on the same rows left in Data: O(s k) on the support, one outward step per
/// other body. Allocation-free.
void abaDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                         const Eigen::VectorXd& lambda, Eigen::VectorXd& x);

}  // namespace hilsim
