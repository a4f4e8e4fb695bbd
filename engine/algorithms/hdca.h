// The Hamiltonian divide-and-conquer algorithm (HDCA) of seed 001: Chadaj, Malczyk, Frączek,
// "A parallel Hamiltonian formulation for forward dynamics of closed-loop multibody systems",
// Multibody System Dynamics 39 (2017) 51–77. State (q, p): p the canonical momenta conjugate to
// the joint velocities v, p = M(q) v. Phase 1 (§2.2) turns p into v by assembling the bodies'
// two-handle mobility equations (15)–(16) up a binary tree, (27)–(36), and taking them apart,
// (29); phase 2 (§2.3) gives ṗ from the impulses phase 1 found, (77), with the applied loads
// accumulated over the same tree, (70)–(76). Each pass over the tree is split among the threads
// of Data::executor (docs/HDCA.md, "Threads").
//
// Representation (docs/HDCA.md): phase 1 about each body's handles, the points where it meets its
// neighbours, in W's axes (the paper's shifts S₁₂); phase 2 about W's origin, where momentum
// changes only by the applied loads and no Ṡ terms appear. Trees (any joint type, armature, joint damping and springs) of bodies with invertible
// spatial inertia; closed loops at velocity level by engine/algorithms/hdca_loops.h (augmented
// momenta, seed 001 (6)–(8)), or at acceleration level through the constraint stage on
// hdcaInverseInertia.
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Phase 1's coefficients at q (nq): kinematics (X_WB, S_W), the joints' bases, the bodies'
/// mobilities and every node's ξ and W, assembled up the tree. Allocation-free.
void hdcaAssemble(const Model& model, Data& data, const Eigen::VectorXd& q);

/// The same at the kinematics already in Data (X_WB and S_W at q).
void hdcaAssembleAtKinematics(const Model& model, Data& data);

/// Phase 1 after hdcaAssemble: the joint velocities v = M⁻¹ p of momenta p (nv) [rad/s, m/s].
/// `p` and `v` may be the same vector. Allocation-free.
void hdcaVelocities(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                    Eigen::Ref<Eigen::VectorXd> v);

/// Both phases at (q, p), the assembly included: v = M⁻¹ p and ṗ = τ − d v − k (q − q_ref) + ∂T/∂q|ᵥ − ∂V/∂q,
/// the Hamiltonian equations of the tree (seed 001 (1)–(2)) under joint forces tau (nv) [N·m, N].
/// Allocation-free.
void hdcaMomentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& p, const Eigen::VectorXd& tau, Eigen::VectorXd& v,
                       Eigen::VectorXd& p_dot);

/// Phase 1 with the applied loads (gravity's weights) summed over the assembly tree for phase 2:
/// v = M⁻¹ p after hdcaAssemble, then hdcaMomentumRatesAt. `p` and `v` may be the same vector.
void hdcaVelocitiesWithLoads(const Model& model, Data& data,
                             const Eigen::Ref<const Eigen::VectorXd>& p,
                             Eigen::Ref<Eigen::VectorXd> v);

/// Phase 2 at joint velocities v after hdcaVelocitiesWithLoads (same q): ṗ of the tree, (77).
/// Leaves every body's spatial velocity in data.hdca.velocity_W (in W about W's origin).
void hdcaMomentumRatesAt(const Model& model, Data& data, const Eigen::VectorXd& q,
                         const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                         Eigen::VectorXd& p_dot);

/// The closures' term of phase 2 (seed 001 (7): Ȧᵀσ, the cut joints' part of (77)): per dof d of
/// body i, out_d = ṡ_dᵀ F_i + s_dᵀ Ḟ_i, for F_i the closure impulses Aᵀσ acts with on the bodies
/// of i's subtree and Ḟ_i their rate at fixed σ, each summed over the subtree (nbodies, in W
/// about W's origin) [N·s, N]. After hdcaMomentumRatesAt (its velocities). Allocation-free.
void hdcaImpulseRates(const Model& model, const Data& data,
                      const std::vector<Vector6>& subtree_impulse,
                      const std::vector<Vector6>& subtree_impulse_rate, Eigen::VectorXd& out);

/// The canonical momenta p = M(q) v (nv) of joint velocities v, by accumulating the bodies'
/// momenta from the tips (the paper's initial conditions, §5). Leaves Data's kinematics at
/// (q, v). Allocation-free.
void hdcaMomenta(const Model& model, Data& data, const Eigen::VectorXd& q,
                 const Eigen::VectorXd& v, Eigen::VectorXd& p);

/// q̈ = M⁻¹ (τ − C(q, v) v − g(q) − d v − k (q − q_ref)) into data.qdd: phase 1 on the bias of
/// the recursive Newton–Euler equations, the entry the acceleration-level integrators and the
/// constraint stage call. Leaves Data's kinematics at (q, v). Allocation-free.
const Eigen::VectorXd& hdcaForwardDynamics(const Model& model, Data& data,
                                           const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                           const Eigen::VectorXd& tau);

/// X ← M⁻¹ X, column by column by phase 1, after hdcaAssemble or hdcaForwardDynamics (same q).
void hdcaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X);

/// Whether the passes over `tree` are shared among Data::executor's threads: from
/// kMinSharedWeight (engine/model/assembly_tree.h, about 512 bodies of a chain); below, the
/// calling thread runs them alone (docs/HDCA.md, "Threads").
bool hdcaSplitsPasses(const AssemblyTree& tree);

}  // namespace hilsim
