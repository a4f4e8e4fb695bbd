// Sparse LᵀDL factorisation of a joint-space inertia matrix on the tree's sparsity pattern
// (RBDA §6.5, Table 6.3): O(n d²) for depth d, allocation-free.
// References:
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Factorises M = Lᵀ D L in place in `factor` (which holds a copy of M on entry): D on the
/// diagonal, L's strictly lower entries at (i, ancestor j). Only entries on the pattern are used.
void treeLdlFactor(const Model& model, Eigen::MatrixXd& factor);

/// Solves M x = b in place (b becomes x) with a factor from treeLdlFactor.
void treeLdlSolve(const Model& model, const Eigen::MatrixXd& factor, Eigen::VectorXd& b);

/// The same for every column of B (nv × k) at once.
void treeLdlSolve(const Model& model, const Eigen::MatrixXd& factor, Eigen::Ref<Eigen::MatrixXd> B);

}  // namespace hilsim
