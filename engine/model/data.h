// Data: every buffer the algorithms write, sized once from a Model. One Data per thread or session;
// algorithms take `(const Model&, Data&, …)` and never allocate.
#pragma once

#include <cstdint>
#include <vector>

#include <Eigen/Cholesky>

#include "engine/model/assembly_tree.h"
#include "engine/model/model.h"

namespace hilsim {

class Executor;

/// Dynamic-width 6-row matrix of spatial vectors, one column per degree of freedom.
using Matrix6N = Eigen::Matrix<double, 6, Eigen::Dynamic>;

/// Parts of Data only some algorithms use, reserved on request. The per-body buffers (O(n)) are
/// always there; a formulation names what else it needs (engine/formulations/formulations.h), so
/// that an O(n) formulation is O(n) in memory too: the dense nv × nv matrices of a 10⁵-body
/// chain alone would take 160 GB.
enum class DataWorkspace : unsigned {
  kPerBody = 0,                    ///< rnea, aba, forwardKinematics, the energies
  kJointSpaceInertia = 1u << 0,    ///< M and M_factor (nv × nv): crba, crbaForwardDynamics
  kDivideAndConquer = 1u << 1,     ///< the assembly tree and its per-node coefficients: hdca
  kAll = ~0u,
};
constexpr DataWorkspace operator|(DataWorkspace a, DataWorkspace b) {
  return static_cast<DataWorkspace>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr bool holds(DataWorkspace set, DataWorkspace part) {
  return (static_cast<unsigned>(set) & static_cast<unsigned>(part)) == static_cast<unsigned>(part);
}

/// Workspace and results. Names follow docs/NOTATION.md: W is the world frame, B a body frame;
/// spatial vectors with suffix _W are expressed in W and taken about W's origin.
struct Data {
  /// Sizes every buffer for `model`. `workspace`: the optional parts to reserve (all by default,
  /// for code that calls any algorithm; the Simulator reserves its formulation's only).
  explicit Data(const Model& model, DataWorkspace workspace = DataWorkspace::kAll);

  /// Replaces the hdca assembly tree (another order or block length, for tests and benchmarks)
  /// and sizes its per-node buffers; with DataWorkspace::kDivideAndConquer. Allocates.
  void useAssemblyTree(AssemblyTree tree);

  DataWorkspace workspace;          ///< what was reserved

  // --- kinematics (forwardKinematics, and the first sweep of every dynamics algorithm) ---
  std::vector<Transform> X_WB;      ///< [nbodies] pose of each body frame in W
  std::vector<Transform> X_WJ;      ///< [nbodies] scratch: joint frame poses in W (revolute
                                    ///< joints keep only the translation)
  Matrix6N S_W;                     ///< 6 × nv: motion subspace column of each dof, in W
  std::vector<MotionVector> V_W;    ///< [nbodies] spatial velocity of each body
  std::vector<MotionVector> A_W;    ///< [nbodies] spatial acceleration (forwardKinematics: true
                                    ///< acceleration; rnea/aba: offset by −g, RBDA §5.3)
  std::vector<MotionVector> c_W;    ///< [nbodies] velocity-product acceleration of each joint,
                                    ///< a_m(k) of seed 004 eq. (3.27): V_λ ×ᵐ S v + Ṡ_J v
  std::vector<Inertia> inertia_W;   ///< [nbodies] body inertia in W
  std::vector<MotionVector> V_R;    ///< [nbodies] sr1: [ω; Ṙ] of each body, Ṙ the velocity of
                                    ///< its frame origin R (seed 002 eq. 13), in W

  // --- dynamics ---
  std::vector<ForceVector> f_W;     ///< [nbodies] rnea: net force transmitted by each joint
  std::vector<Matrix6> P_W;         ///< [nbodies] aba: articulated inertia P(k) (seed 004 (6.1));
                                    ///< crba: composite inertia R(k) (seed 004 (5.2))
  std::vector<ForceVector> z_W;     ///< [nbodies] aba: articulated bias force z(k) (seed 004 (7.2))
  Matrix6N G_W;                     ///< 6 × nv: aba Kalman gain G = P S D⁻¹; crba: F = R S
  std::vector<Matrix6> D_inv;       ///< [nbodies] aba: D(k)⁻¹ in the top-left nv_i × nv_i block;
                                    ///< at a floating root, P(k)'s Cholesky factor (lower)
  Eigen::VectorXd nu;               ///< nv: aba ν = D⁻¹ ε (seed 004 (7.2))
  std::vector<int> pending;         ///< [nbodies] rtmm: a stack of the bodies whose relation
                                    ///< waits for their parent's turn
  std::vector<Matrix6> null_basis;  ///< [nbodies] aba, joints of rank r_i < n_i (seed 003): the
                                    ///< eigenvectors X of D, null(D) in the first n_i − r_i columns
  Eigen::VectorXd epsilon;          ///< nv: aba ε(k) of those joints (other entries untouched)

  Eigen::VectorXd tau;              ///< nv: rnea output [N·m, N]
  Eigen::VectorXd qdd;              ///< nv: aba / crbaForwardDynamics output
  Eigen::VectorXd bias_forces;      ///< nv: C(q, v) v + g(q) + damping·v (nonLinearEffects)
  Eigen::MatrixXd M;                ///< nv × nv joint-space inertia (crba; lower triangle and
                                    ///< upper filled), armature included. 0 × 0 without
                                    ///< DataWorkspace::kJointSpaceInertia
  Eigen::MatrixXd M_factor;         ///< nv × nv: LᵀDL factor of M on the tree sparsity pattern
                                    ///< (the same condition)

  // --- M⁻¹ X by the articulated-body recursion (abaInverseInertia, abaDelassus), for X of up
  // to minvColumns() columns; sized for a model that needs the constraint stage
  // (Model::needsConstraintStage: max(1, constraintRowCapacity()) columns rounded up to a
  // multiple of 4), else empty ---
  std::vector<Matrix6N> minv_z;  ///< [nbodies] 6 × k: articulated force of X alone
  std::vector<Matrix6N> minv_a;  ///< [nbodies] 6 × k: the acceleration it causes
  Matrix6N minv_scratch;         ///< 6 × k (abaDelassusResponse: λ padded to whole blocks)
  int minvColumns() const { return static_cast<int>(minv_scratch.cols()); }
  /// 2 minvColumns() × nv, with DataWorkspace::kJointSpaceInertia on a model with constraint
  /// rows (else empty): treeLdlDelassus's half-solves Y = L⁻ᵀ Jᵀ and D⁻¹ Y, transposed (column d: row d
  /// of each, one above the other)
  Eigen::MatrixXd ldl_rows;
  /// [nbodies], the same condition: treeLdlDelassus's blocks of four rows whose forces reach
  /// each body's subtree (bit b for block b)
  std::vector<std::uint64_t> block_reach;

  double kinetic_energy = 0.0;      ///< [J]
  double potential_energy = 0.0;    ///< [J], zero at the world origin

  /// Buffers of the flexible-body algorithms (seed 004), per body; entries of rigid bodies are
  /// empty, and every vector is empty for a model without flexible bodies. n_m = nmodes[i].
  struct Flexible {
    std::vector<Matrix6N> Psi_t_W;  ///< 6 × n_m(λ(i)): twist of the parent node joint i attaches
                                    ///< at, per unit η̇ of the parent (𝒜*(k) of seed 004, in W)
    std::vector<Matrix6N> Psi_d_W;  ///< 6 × n_m(i): twist of body i's hinge node relative to its
                                    ///< frame, per unit η̇ (Π^d of seed 004 (3.11), with the lever arm)
    std::vector<Matrix6N> M_rf_W;   ///< 6 × n_m: modal–rigid block of M_m(η) in W
    std::vector<Eigen::VectorXd> b_f;  ///< n_m: modal part of b_m + K η + C η̇ (seed 004 (3.38))
    std::vector<Eigen::VectorXd> f_f;  ///< n_m: rnea modal force f_m^f; aba/crba: ε_f scratch
    // articulated (aba) or composite (crba) inertia: P_ff, P_rf and the modal bias z_f
    std::vector<Eigen::MatrixXd> P_ff;  ///< n_m × n_m
    std::vector<Matrix6N> P_rf_W;       ///< 6 × n_m
    std::vector<Eigen::VectorXd> z_f;   ///< n_m
    std::vector<Eigen::LLT<Eigen::MatrixXd>> D_f;  ///< Cholesky of D_f = ℋ_f P ℋ_f* (7.10)
    std::vector<Matrix6N> g_W;          ///< 6 × n_m: g = μ D_f⁻¹ (7.10); crba: X^r scratch
    std::vector<Matrix6N> mu_W;         ///< 6 × n_m: μ = P^rf − P^rr Π^d (7.10)
    std::vector<Eigen::VectorXd> nu_f;  ///< n_m: ν_f = D_f⁻¹ ε_f (7.11)
    std::vector<Eigen::VectorXd> minv_z_f;  ///< n_m: modal part of M⁻¹'s articulated force
    std::vector<Eigen::MatrixXd> scratch_nn;  ///< n_m × n_m
    std::vector<Matrix6N> scratch_6n;         ///< 6 × n_m (sized by the parent's n_m)
  } flex;

  /// Buffers of the Hamiltonian divide-and-conquer formulation (engine/algorithms/hdca.h, seed
  /// 001), with DataWorkspace::kDivideAndConquer (else empty). In W's axes; phase 1 about each
  /// body's own origin (its joint's point) where the tree has compounds (tree.has_compounds),
  /// else about W's origin, as aba (docs/HDCA.md, "Representation"); phase 2 about W's origin.
  struct Hdca {
    AssemblyTree tree;  ///< the binary assembly tree of the model (fixed)
    // per joint i, [nbodies]: its motion subspace H about W's origin (columns 0 … nv_i − 1) for
    // phase 2; about the joint's point (body i's origin), where it is orthonormal, `local` (for
    // phase 1 there: not written about W's origin but for joints that carry impulses); and
    // the basis B of the impulses it carries there, the constraint directions D (Dᵀ H = 0) then H
    // of each dof with armature, whose compliance 1/armature is in `compliance`
    std::vector<Matrix6> motion, local, impulse_basis;
    std::vector<Vector6> compliance;
    std::vector<int> impulse_count;   ///< columns of impulse_basis
    // per body, [nbodies]
    /// I about W's origin, where phase 1 works there (no compounds); else unused (the sweeps
    /// read Data::inertia_W)
    std::vector<Matrix6> inertia;
    /// a block's first body: Φ = (Iᴬ)⁻¹, its articulated inertia's inverse about its origin
    std::vector<Matrix6> mobility;
    /// a block body below its first: U = Iᴬ H (columns 0 … nv_i − 1) of its joint, and
    /// (Hᵀ Iᴬ H + armature)⁻¹ (the top-left nv_i × nv_i), both in phase 1's frame
    std::vector<Matrix6> joint_gain, joint_inertia_inverse;
    /// a path's top body: Z of its top joint's W = −Z Zᵀ (seed 001 (43)), columns beyond the
    /// joint's impulse count zero
    std::vector<Matrix6> path_factor;
    /// a path's top body, where the path is one block: Iᴬ − U D⁻¹ Uᵀ of its top joint, the
    /// articulated inertia it passes to the body it hangs off (phase 1's frame)
    std::vector<Matrix6> passed_inertia;
    /// β: the momentum the body's joint carries beyond Iᴬ V, in phase 1's frame (its block's
    /// recursion, docs/HDCA.md "Blocks")
    std::vector<Vector6> momentum_bias;
    /// V of phase 1 about the body's own origin (handle 1), where the tree has compounds
    /// (without, phase 1 writes velocity_W)
    std::vector<Vector6> velocity;
    std::vector<Vector6> velocity_W;  ///< V about W's origin (phase 2, refinement)
    std::vector<Vector6> weight;      ///< gravity's wrench on the body
    std::vector<Vector6> subtree_load;     ///< applied wrench on the subtree the joint carries
    // per node of the tree, [nodes]: the coefficients of seed 001 (15)–(16) and (27)–(29)
    std::vector<Matrix6> xi11, xi12, xi22;  ///< ξ₁₁, ξ₁₂ (ξ₂₁ = ξ₁₂ᵀ), ξ₂₂
    std::vector<Matrix6> gain_factor;       ///< Z of the node's joint, W = −Z Zᵀ (27)
    std::vector<Vector6> xi10, xi20, beta;       ///< ξ₁₀, ξ₂₀, β
    std::vector<Vector6> T1, T2;                 ///< impulses at the two handles
    std::vector<Vector6> load, beyond;  ///< applied wrench on the node, and beyond its handle 2
    /// The refinement's scans (subtreeMomenta): the sum of H v over the node's range of its path,
    /// then the velocity where the range begins; the momentum of the range with what hangs off
    /// it, then that of what lies below the range on its path
    std::vector<Vector6> twist_sum, momentum_sum;
    std::vector<Vector6> momentum;      ///< [nbodies] the subtree's momentum Σ I V (refinement)
    Eigen::VectorXd rhs, estimate, residual;  ///< nv scratch
    int corrections = 0;  ///< refinement steps the last solve took (docs/HDCA.md, "Accuracy")
    /// [max(nodes, nbodies)] the pass in which each node (or, in a sweep along the model's
    /// tree, each body) was last finished, and the current pass: on several threads a node or
    /// body waits for those it reads by these stamps (std::atomic_ref)
    std::vector<std::uint32_t> finished;
    std::uint32_t pass = 0;
  } hdca;

  /// The threads of parallel formulations (hdca); null: the calling thread alone. Set by whoever
  /// owns both (a Simulator, a benchmark); not owned.
  Executor* executor = nullptr;

  // per-joint scratch
  Matrix6X S_J;                     ///< motion subspace of one joint in its joint frame
  Transform X_JC;                   ///< joint transform of one joint
};

}  // namespace hilsim
