// Sparse LᵀDL factorisation of a joint-space inertia matrix on the tree's sparsity pattern
// (RBDA §6.5, Table 6.3): O(n d²) for depth d, allocation-free.
// References:
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include "engine/constraints/constraint_rows.h"
#include "engine/model/data.h"

namespace hilsim {

/// Factorises M = Lᵀ D L in place in `factor` (which holds a copy of M on entry): D on the
/// diagonal, L's strictly lower entries at (i, ancestor j). Only entries on the pattern are used.
void treeLdlFactor(const Model& model, Eigen::MatrixXd& factor);

/// Solves M x = b in place (b becomes x) with a factor from treeLdlFactor.
void treeLdlSolve(const Model& model, const Eigen::MatrixXd& factor, Eigen::VectorXd& b);

/// The same for every column of B (nv × k) at once.
void treeLdlSolve(const Model& model, const Eigen::MatrixXd& factor, Eigen::Ref<Eigen::MatrixXd> B);

/// W ← J M⁻¹ Jᵀ = Yᵀ D⁻¹ Y with Y = L⁻ᵀ Jᵀ on the active rows of `rows` (k =
/// rows.active_count; W's top-left k × k block, upper triangle; W has 4⌈k/4⌉ rows or more)
/// with the factor in data.M_factor (RBDA §6.5, the products of Table 6.4 "J H⁻¹ Jᵀ"). Jᵀ's
/// entries come from the rows' spatial forces (ConstraintRows::force_a, force_b) and the joints'
/// S_W in Data, summed inward over the bodies on the rows' paths (not from
/// ConstraintRows::jacobian); the k columns go four at a time, and a body's dofs visit only the
/// blocks of four whose rows act on its subtree. L⁻ᵀ keeps that sparsity: O(s d k) for the s
/// support dofs of depth d, O(s k²) for the products. Rigid bodies, no massless joints.
/// data.ldl_rows and data.block_reach hold Y, D⁻¹ Y and the blocks.
void treeLdlDelassus(const Model& model, Data& data, const ConstraintRows& rows,
                     Eigen::MatrixXd& W);

/// x ← M⁻¹ Jᵀ λ = L⁻¹ (D⁻¹ Y λ) with the D⁻¹ Y of the last treeLdlDelassus on the same rows
/// (λ: first k entries): one matrix–vector product over every dof (D⁻¹ Y is zero where no row
/// reaches) and one half-solve instead of treeLdlSolve's two.
void treeLdlDelassusResponse(const Model& model, Data& data, const ConstraintRows& rows,
                             const Eigen::VectorXd& lambda, Eigen::VectorXd& x);

}  // namespace hilsim
