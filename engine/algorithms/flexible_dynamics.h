// The recursive algorithms for models with flexible bodies (seed 004 §4–7, with the corrections of
// its notes), in W like the rigid ones. rnea, nonLinearEffects, crba, aba and the energies call
// these when Model::has_flexible_bodies is set, so a rigid model keeps the rigid code path; called
// directly on a rigid model they give the rigid results (every body then has n_m = 0).
//
// Coordinates of a flexible body: its joint's, then its modal coordinates η (Model::idxModesQ).
// Generalized forces `tau` include the modal ones (zero for an unloaded structure). External loads:
// `f_ext_B` on body frames as for rigid bodies, and `nodal_forces` at nodes of flexible bodies.
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
#pragma once

#include <span>

#include "engine/model/data.h"

namespace hilsim {

/// Recursive Newton–Euler inverse dynamics (4.2) with a tree's branches summed (§9): the
/// generalized forces (joint and modal) that produce accelerations `a`. Same contract as rnea.
const Eigen::VectorXd& flexibleRnea(const Model& model, Data& data, const Eigen::VectorXd& q,
                                    const Eigen::VectorXd& v, const Eigen::VectorXd& a,
                                    std::span<const ForceVector> f_ext_B = {},
                                    std::span<const NodalForce> nodal_forces = {});

/// Bias forces 𝒞 (4.2 with χ̇ = 0), into data.bias_forces. Same contract as nonLinearEffects.
const Eigen::VectorXd& flexibleNonLinearEffects(const Model& model, Data& data,
                                                const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                                std::span<const ForceVector> f_ext_B = {},
                                                std::span<const NodalForce> nodal_forces = {});

/// Composite-body mass matrix ℳ (5.5), into data.M. Same contract as crba.
const Eigen::MatrixXd& flexibleCrba(const Model& model, Data& data, const Eigen::VectorXd& q);

/// Articulated-body forward dynamics: (6.1) and the partitioned sweeps (7.10)–(7.12) with the
/// notes' "Fix B" for the Coriolis term and D_f factored directly (no Γ⁻¹). Same contract as aba.
const Eigen::VectorXd& flexibleAba(const Model& model, Data& data, const Eigen::VectorXd& q,
                                   const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                                   std::span<const ForceVector> f_ext_B = {},
                                   std::span<const NodalForce> nodal_forces = {});

/// X ← ℳ(q)⁻¹ X for the columns of X (nv × k, any k) at the q of the last flexibleAba() on
/// `data`, from the articulated quantities it left (D⁻¹, G, the Cholesky factor of D_f, g, Ψ_t,
/// Ψ_d): the sweeps (7.10)–(7.12) with the velocity terms, gravity and the modal stiffness off.
/// A column at a time, O(n) each. No massless joint motion; allocation-free.
void flexibleAbaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X);

/// Kinetic energy ½ χᵀ ℳ χ, body by body: ½ V_mᵀ M_m(η) V_m [J].
double flexibleKineticEnergy(const Model& model, Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& v);

/// Potential energy: gravity on every body's mass plus ½ ηᵀ K η [J], zero at the world origin.
double flexiblePotentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q);

namespace detail {
/// The inward sweep of flexibleCrba alone, for callers that have just run the position step and
/// modalInertiaStep on every body at the same q (crbaForwardDynamics, after the bias forces).
const Eigen::MatrixXd& flexibleCrbaInwardSweep(const Model& model, Data& data);
}  // namespace detail

}  // namespace hilsim
