// Flexible bodies by assumed modes (seed 004 §2, App. B): the modal data a body carries, and its
// reduction from lumped-mass finite-element nodes.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Core>

#include "engine/spatial/inertia.h"

namespace hilsim {

using Matrix3X = Eigen::Matrix<double, 3, Eigen::Dynamic>;

/// A point of a flexible body whose motion the model follows: where the body's own joint or a
/// child's joint attaches, or where an external force acts. Its deformation for modal coordinates η
/// (seed 004 (3.3), (B.2)), in the body frame B:
///   displacement  u(η) = γ η + ½ Σ_rs q_rs η_r η_s,
///   rotation      exp([λ η]^×),
/// so the node frame is at `position + u(η)` with B's axes rotated by exp([λ η]^×).
struct ModalNode {
  std::string name;
  Vector3 position = Vector3::Zero();  ///< undeformed position in B [m]
  Matrix3X slope;                      ///< λ (3 × n_m): rotation per unit η [rad]
  Matrix3X translation;                ///< γ (3 × n_m): displacement per unit η [m]
  /// q (3 × n_m²), column r·n_m + s = ∂²u/∂η_r∂η_s [m]: the second-order (foreshortening)
  /// displacement behind geometric stiffening. Empty or zero when stiffening is off.
  Matrix3X second_order;
};

/// One lumped mass of a finite-element model: a point mass at a node, with an optional rotary
/// inertia, and the node's mode shapes. Input to `reduceLumpedMasses`.
struct LumpedMassNode {
  Vector3 position = Vector3::Zero();        ///< undeformed position in B [m]
  double mass = 0.0;                         ///< [kg]
  Matrix3 rotary_inertia = Matrix3::Zero();  ///< about the node, in B's axes [kg·m²]
  Matrix3X slope;                            ///< λ (3 × n_m) [rad]
  Matrix3X translation;                      ///< γ (3 × n_m) [m]
  Matrix3X second_order;                     ///< q (3 × n_m²) [m]; may be empty
};

/// The modal description of a flexible body with n_m assumed modes, in its body frame B.
///
/// Kinetic energy. With the modal spatial velocity V_m = [η̇; ω; v] (seed 004 (3.13); ω and v the
/// body velocity in B's axes, v that of B's origin), T = ½ V_mᵀ M_m(η) V_m with
///   M_m(η) = [ M_ff        M_rfᵀ(η) ]      M_rf(η) = [ A(η)  ]    A(η) = A₀ + Σ_s A₁ₛ η_s
///            [ M_rf(η)     M_rr(η)  ]                [ ∂h/∂η ]
/// and M_rr(η) the rigid spatial inertia of mass m, first moment h(η) = h₀ + H₁ η + ½ h₂(η, η) and
/// rotational inertia about B's origin I(η) = I₀ + Σ_s I₁ₛ η_s + Σ_rs I₂ᵣₛ η_r η_s. This is seed
/// 004 (B.8) kept to the order in η that makes every equation of motion exact to first order in η.
/// The equations of motion are Lagrange's for this T (docs/FLEXIBLE.md), so energy is conserved.
///
/// Geometric stiffening adds the second-order (foreshortening) displacement q of every mass point:
/// h₂ = Σ m q, and the parts I₂ᵍ, A₁ᵍ of I₂ and A₁ that q brings. They are kept apart so that the
/// switch `geometric_stiffening` needs no other data.
///
/// Potential energy ½ ηᵀ K η plus gravity on the first moment; modal damping force C η̇.
struct FlexibleBody {
  int nmodes = 0;
  bool geometric_stiffening = false;

  double mass = 0.0;                      ///< m [kg]
  Vector3 first_moment = Vector3::Zero(); ///< h₀ = m c₀ [kg·m]
  Matrix3X first_moment_modes;            ///< H₁ (3 × n_m) [kg·m]
  Matrix3 rotational_inertia = Matrix3::Zero();  ///< I₀ about B's origin [kg·m²]
  Matrix3X rotational_inertia_modes;      ///< I₁ (3 × 3n_m): block s is I₁ₛ [kg·m²]
  Matrix3X rotational_inertia_second;     ///< I₂ (3 × 3n_m²): block r·n_m + s is I₂ᵣₛ = I₂ₛᵣ,
                                          ///< each a symmetric 3 × 3 [kg·m²]
  Matrix3X angular_coupling;              ///< A₀ (3 × n_m) [kg·m²]
  Matrix3X angular_coupling_modes;        ///< A₁ (3 × n_m²): block s (3 × n_m) is A₁ₛ [kg·m²]
  Eigen::MatrixXd modal_mass;             ///< M_ff (n_m × n_m), symmetric positive definite
  Eigen::MatrixXd stiffness;              ///< K (n_m × n_m), symmetric positive semi-definite
  Eigen::MatrixXd damping;                ///< C (n_m × n_m), symmetric positive semi-definite

  // geometric stiffening terms, used only when geometric_stiffening is true (may be empty then)
  Matrix3X first_moment_second;           ///< h₂ (3 × n_m²), column r·n_m + s [kg·m]
  Matrix3X rotational_inertia_geometric;  ///< I₂ᵍ, laid out as I₂ [kg·m²]
  Matrix3X angular_coupling_geometric;    ///< A₁ᵍ, laid out as A₁ [kg·m²]

  std::vector<ModalNode> nodes;
  /// Node at which the body's own joint attaches (its frame is the joint's child frame), or −1:
  /// the joint attaches at B's origin, which then does not deform (cantilever modes, Π^d = 0).
  int hinge_node = -1;

  /// The rigid inertia of the undeformed body (η = 0).
  Inertia rigidInertia() const;
  /// Index of the node with this name, or −1.
  int nodeIndex(const std::string& node_name) const;
  /// Empty when every size agrees with nmodes and the data are physically valid; otherwise the
  /// first problem found (non-symmetric or indefinite modal mass, indefinite stiffness, …).
  std::string validate() const;
};

/// An external wrench at a node of a flexible body: the moment about the node's origin and the
/// force, both in W's axes [N·m; N]. Input of the dynamics algorithms (`nodal_forces`).
struct NodalForce {
  int body = 0;  ///< index of the flexible body
  int node = 0;  ///< index in its FlexibleBody::nodes
  ForceVector wrench_W = ForceVector::Zero();
};

/// Natural frequencies of the body with its joint held still, √eig(K, M_ff) [rad/s], ascending.
Eigen::VectorXd naturalFrequencies(const FlexibleBody& body);

/// Modal integrals (seed 004 (B.4), in the truncated form above) from lumped finite-element masses,
/// by direct nodal sums (3.25). `stiffness`, `damping`, `nodes` and `hinge_node` are left for the
/// caller; the geometric-stiffening terms are filled when the nodes carry second-order
/// displacements, and switched on by `geometric_stiffening`.
FlexibleBody reduceLumpedMasses(const std::vector<LumpedMassNode>& lumped, int nmodes,
                                bool geometric_stiffening);

}  // namespace hilsim
