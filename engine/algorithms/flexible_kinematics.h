// The per-body steps every flexible-body algorithm shares (seed 004 §3 and App. B), written once:
// node kinematics, the outward position and velocity recursion (3.12)–(3.13) with the lever-arm
// correction of the notes, and the modal mass matrix M_m(η) and bias b_m of a body.
//
// All spatial vectors are in W about W's origin, like the rigid algorithms (docs/NOTATION.md). In
// that representation the interbody operator Φ(k+1, k) only carries the parent's node twist:
//   V(k) = V(λ) + Ψ_t η̇_λ + S θ̇ − Ψ_d η̇_k,
// with Ψ_t the twist of the parent node the joint attaches at and Ψ_d that of body k's own hinge
// node, per unit modal rate (docs/FLEXIBLE.md).
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
#pragma once

#include <span>

#include "engine/model/data.h"

namespace hilsim::detail {

/// Pose of `node` in its body's frame B at modal coordinates eta (nmodes values): origin at
/// position + γ η (+ ½ q(η, η) with geometric stiffening), axes rotated by exp([λ η]^×).
void nodePose(const FlexibleBody& body, const ModalNode& node, const double* eta,
              Transform& X_B_node);

/// Twist of `node` relative to B per unit η̇, in B's axes about B's origin: psi_B (6 × nmodes,
/// column r = [ω_r; u_r − ω_r × l], ω_r = J(λη) λ_r, u_r = γ_r + q(·, r) η, l the node position).
void nodeTwist(const FlexibleBody& body, const ModalNode& node, const double* eta,
               Matrix6N& psi_B);

/// ψ̇ η̇ for modal rates eta_dot: the part of the node's relative acceleration free of η̈, in B's
/// axes about B's origin.
MotionVector nodeTwistRate(const FlexibleBody& body, const ModalNode& node, const double* eta,
                           const double* eta_dot);

/// ψ η̇: the twist of `node` relative to B for modal rates eta_dot, in B's axes about B's origin.
MotionVector nodeRelativeTwist(const FlexibleBody& body, const ModalNode& node, const double* eta,
                               const double* eta_dot);

/// X_WJ[i], X_WB[i], the columns of S_W for joint i, flex.Psi_t_W[i] and flex.Psi_d_W[i], from the
/// parent's pose and q. Any body of a model with flexible bodies.
void flexibleJointPositionStep(const Model& model, Data& data, int i, const double* q);

/// V_W[i] and c_W[i] = a_m(k) of seed 004 (3.27) in W (every velocity-product term of the joint and
/// of both nodes). Requires flexibleJointPositionStep(i) and V_W of the parent.
void flexibleJointVelocityStep(const Model& model, Data& data, int i, const double* q,
                               const double* v);

/// The modal mass matrix and bias of body i (flexible or rigid) at the current pose and velocity:
/// inertia_W[i] = M_rr(η), flex.M_rf_W[i] = M_rf(η), and the bias b_m: rigid part into b_r_W,
/// modal part (with K η + C η̇) into flex.b_f[i]. Lagrange's equations for the kinetic energy of
/// FlexibleBody (docs/FLEXIBLE.md), computed in B and moved to W. With v == nullptr only the mass
/// matrix blocks are computed.
void modalInertiaStep(const Model& model, Data& data, int i, const double* q, const double* v,
                      ForceVector& b_r_W);

/// Subtracts the external nodal wrenches from the bias of their bodies: the rigid part from
/// rigid_bias_W[body] (a spatial force about W's origin), the modal part ψᵀ f from modal_bias[body].
/// Requires the poses of the position step.
void applyNodalForces(const Model& model, Data& data, const double* q,
                      std::span<const NodalForce> nodal_forces,
                      std::vector<ForceVector>& rigid_bias_W,
                      std::vector<Eigen::VectorXd>& modal_bias);

}  // namespace hilsim::detail
