// Forward dynamics by the Riccati transfer matrix method, "new version" (seed 000: Rui, Bestle,
// Wang, Zhang, Rui, He, "A new version of the Riccati transfer matrix method for multibody systems
// consisting of chain and branch bodies", Multibody System Dynamics 49 (2020) 337–354), for rigid
// trees with every joint type of the engine. docs/RICCATI.md has the derivation and what it adds
// to the paper (general joints, the junction of a branch by substitution, the hinge step free of
// u32⁻¹, the corrected ball hinge "fix B" it reduces to).
//
// The state at a connection point (a joint; the child body's origin) is the paper's
// z = [r̈ Ω̇ m q 1]: the classical acceleration of the point and the angular acceleration, then
// the moment m and force q of the paper's sign convention (on the root-side element at its input
// +q and −m act; on the tip-side element at its output −q and +m), all in W's axes. Transfer runs
// from the tips to the root: each body's output relation z_a = S z_b + e (z_a = (m, q),
// z_b = (r̈, Ω̇), eq. 21) is built from its inputs' (its children's joints) and its own
// Newton–Euler equations, carried through its joint by the hinge step, and the root's joints close
// against the world; the back substitution (eq. 33) runs from the root to the tips.
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// q̈ for joint forces tau (nv) at state (q, v) [rad/s², m/s²], into data.qdd (also returned).
/// Leaves the kinematics (X_WB, S_W, V_W; not c_W nor inertia_W, which it does without) and the
/// true spatial acceleration of every body in A_W; per body it uses P_W (S), z_W (e), f_W (the
/// body's (r̈, Ω̇) at its origin), G_W and nu (the back substitution's gains), and pending.
/// O(n), 6 × 6 fixed-size blocks, allocation-free. Rigid models of full joint rank only (no
/// flexible bodies, no massless joint motion), bodies in ModelBuilder's depth-first order (every
/// subtree contiguous).
const Eigen::VectorXd& riccatiTransferForwardDynamics(const Model& model, Data& data,
                                                      const Eigen::VectorXd& q,
                                                      const Eigen::VectorXd& v,
                                                      const Eigen::VectorXd& tau);

/// The paper's state at joint i's connection point (body i's origin) after
/// riccatiTransferForwardDynamics on `data`: z = [r̈ Ω̇ m q] (12; the "1" left out) with r̈, Ω̇
/// those of body i [m/s², rad/s²] and (m, q) the moment and force in the paper's sign convention
/// [N·m, N] (on body i act +m and −q there), in W's axes.
Eigen::Matrix<double, 12, 1> riccatiTransferState(const Model& model, const Data& data, int i);

}  // namespace hilsim
