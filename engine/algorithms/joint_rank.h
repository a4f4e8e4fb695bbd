// Rank analysis of massless joint motion (seed 003), run once by ModelBuilder.
// References:
//   Arnold, "A recursive multibody formalism for systems with small mass and inertia
//   terms" (2013) [seed 003]
#pragma once

#include "engine/model/model.h"

namespace hilsim {

/// Fills Model::singular_inertia, joint_rank, idx_algebraic and nalgebraic.
///
/// A body is flagged from its data (zero mass, or a principal moment that is zero up to the
/// round-off of the given tensor). Only a flagged body's joint can lose rank: r_i = rank of
/// D_i = S_iᵀ P_i S_i + armature, computed by a symmetric eigen-decomposition at the neutral and at
/// four pseudo-random configurations. Throws ModelError naming the joint when the rank changes
/// between them, when massless joint motion appears in a model with flexible bodies, or when the
/// first-order equations of that motion are singular (no damping determines it: seed 003 §3.5,
/// index 1 needs ∂γ/∂ζ regular).
///
/// With `massless_armature` > 0 [kg·m² or kg] none of these is refused: each flagged joint that
/// loses rank at one of the configurations gets that armature on its DoFs (which makes its D
/// regular everywhere), named in Model::load_warnings.
void analyzeJointRanks(Model& model, double massless_armature = 0.0);

}  // namespace hilsim
