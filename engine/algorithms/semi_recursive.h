// Semi-recursive forward dynamics in joint coordinates (seed 002), in 3D for every joint type of
// the engine (docs/SEMI_RECURSIVE.md has the derivation the planar paper leaves out):
//
//   SR-I  (§3, §6.2): each body's reference point is its own frame origin R_i; its velocity
//         q̇_i = [ω_i; Ṙ_i] = V_i ż (eq. 13) with V_i^j = [ω_s; v_s + ω_s × (R_i − p_j)] per
//         column of joint j (eq. C.4), and M̄ = Σ V_iᵀ M_i V_i, Q̄ = Σ V_iᵀ (Q_e + Q_v − M_i V̇_i ż)
//         (eqs. 45–48), accumulated body to parent at the bodies' reference points (§7.2 of the
//         notes).
//   SR-II (§4, §6.3): every body's reference point is the global origin (the intermediate frame):
//         Ż_i = T_i R_d ż (eq. 36) is the spatial velocity about W's origin, b_j the joint's
//         motion subspace in W, and M̿, Q̿ (eqs. 51–55) accumulated as composite inertias and
//         forces about the origin (§7.1 of the notes).
//
// Both leave M̄ in data.M (armature included), −Q̄ (the joint-space bias, as nonLinearEffects
// gives it) in data.bias_forces and M̄'s tree LᵀDL factor in data.M_factor, and solve
// M̄ z̈ = τ + Q̄ (eq. 48 / 55); closed loops go through the constraint stage on that factor
// (eq. 61 by elimination, docs/SEMI_RECURSIVE.md "Closed loops"). Rigid models of full joint
// rank (no flexible bodies, no massless joint motion). Allocation-free.
// References:
//   Yu, Mikkola, Pan, Escalona, "The explanation of two semi-recursive multibody methods for
//   educational purpose" [seed 002]
//   de Jalón, Álvarez, de Ribera, Rodríguez, Funes, "A fast and simple semi-recursive
//   formulation for multi-rigid-body systems" (2005) [the accumulated form]
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// SR-I: z̈ for joint forces tau (nv) at (q, v), into data.qdd (also returned). Data needs
/// DataWorkspace::kJointSpaceInertia. Uses data.A_W for each body's γ_i = V̇_i ż (the classical
/// acceleration of R_i and the angular acceleration at z̈ = 0), data.P_W for the composite
/// inertias about the reference points and data.f_W for the accumulated forces there.
const Eigen::VectorXd& semiRecursiveReferencePoints(const Model& model, Data& data,
                                                    const Eigen::VectorXd& q,
                                                    const Eigen::VectorXd& v,
                                                    const Eigen::VectorXd& tau);

/// SR-II: z̈ as semiRecursiveReferencePoints, with the global origin as every body's reference
/// point. data.A_W holds the accumulated κ_i = T_i d (offset by gravity), data.P_W the composite
/// inertias about the origin, data.f_W the accumulated forces about it.
const Eigen::VectorXd& semiRecursiveGlobalOrigin(const Model& model, Data& data,
                                                 const Eigen::VectorXd& q,
                                                 const Eigen::VectorXd& v,
                                                 const Eigen::VectorXd& tau);

/// SR-I's velocity transformation V (eq. 14): 6 nbodies × nv, body i's rows 6(i−1) … 6i − 1 hold
/// [ω; Ṙ_i] per unit ż (the world, body 0, has none), at the kinematics in `data` (poses and
/// S_W at q, e.g. after forwardKinematics). For tests and docs; allocates its result.
Eigen::MatrixXd semiRecursiveVelocityTransformation(const Model& model, const Data& data);

/// SR-II's W = T R_d (eq. 36) in the same layout: body i's rows hold its spatial velocity about
/// W's origin per unit ż. With D = blockdiag(D_i), V = D W (eq. D.4).
Eigen::MatrixXd semiRecursivePathTransformation(const Model& model, const Data& data);

namespace detail {
/// Adds armature and the joint springs and dampers, factors M̄ on the tree pattern and solves
/// M̄ z̈ = τ − bias: the last step both semi-recursive formulations share.
const Eigen::VectorXd& semiRecursiveSolve(const Model& model, Data& data,
                                          const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                          const Eigen::VectorXd& tau);
}  // namespace detail

}  // namespace hilsim
