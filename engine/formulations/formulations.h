// The forward-dynamics formulations, in one table: what each is called, what it can run, what it
// needs in Data, and its entry point. The CLI, the server's proto mapping, the Simulator, the
// tests and the benchmarks all read this table; adding a formulation is one row here (and one
// proto enum value), see docs/ENGINE.md "Adding a formulation".
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/constraints/constraint_rows.h"
#include "engine/formulations/momentum_loops.h"
#include "engine/model/data.h"

namespace hilsim {

/// Forward-dynamics formulations; every one gives the same q̈ on the same model and state.
enum class Formulation {
  kAba,   ///< articulated body, O(n) (engine/algorithms/aba.h)
  kCrba,  ///< composite body + tree LᵀDL, O(n²) memory (engine/algorithms/crba_forward_dynamics.h)
  kRtmm,  ///< Riccati transfer matrix method, O(n) (engine/algorithms/riccati_transfer.h)
  kSr1,   ///< semi-recursive I, reference points on the bodies (engine/algorithms/semi_recursive.h)
  kSr2,   ///< semi-recursive II, the global origin as reference (the same header)
  kHdca,  ///< Hamiltonian divide-and-conquer, canonical momenta, parallel (engine/algorithms/hdca.h)
};

/// What a formulation can run. A model needing a capability a formulation lacks is refused by
/// checkFormulation() with the reason and the formulations that can.
struct FormulationCapabilities {
  bool massless = false;      ///< massless joint motion (Model::nalgebraic > 0, seed 003)
  bool flexible = false;      ///< flexible bodies with assumed modes (seed 004)
  bool closed_loops = false;  ///< the constraint stage: loop closures, limits, friction, contact
  bool parallel = false;      ///< uses more than one core per evaluation (Data::executor)
  /// bodies whose own spatial inertia is singular (Model::singular_inertia: point masses,
  /// massless links) inside a tree whose mass matrix is regular
  bool singular_bodies = true;
};

/// q̈ = FD(q, v, τ) into data.qdd (also returned). Allocation-free; Data must hold the
/// formulation's workspace.
using ForwardDynamicsFunction = const Eigen::VectorXd& (*)(const Model& model, Data& data,
                                                           const Eigen::VectorXd& q,
                                                           const Eigen::VectorXd& v,
                                                           const Eigen::VectorXd& tau);

/// X ← M(q)⁻¹ X for the columns of X (nv × k, k ≤ Data::minvColumns()) with what the
/// formulation's last forward-dynamics call on `data` left there (same q): the constraint stage's
/// operator (docs/LOOPS.md). Allocation-free.
using InverseInertiaFunction = void (*)(const Model& model, Data& data,
                                        Eigen::Ref<Eigen::MatrixXd> X);

/// W ← J M(q)⁻¹ Jᵀ (the Delassus matrix) on the active rows of `rows` (k = rows.active_count;
/// W's top-left k × k block, upper triangle read; W has at least 4⌈k/4⌉ rows, written four at
/// a time) after the formulation's forward dynamics on `data` (same q). Optional: without it
/// the constraint stage forms J M⁻¹ Jᵀ from inverse_inertia on the k columns of Jᵀ.
/// Allocation-free.
using DelassusFunction = void (*)(const Model& model, Data& data, const ConstraintRows& rows,
                                  Eigen::MatrixXd& W);

/// x ← M(q)⁻¹ Jᵀ λ (nv) for multipliers λ of the active rows of `rows` (first k entries, in
/// the order of rows.active), from what the formulation's DelassusFunction left in `data` on
/// the same rows: q̈'s response to the closure forces without another sweep over M⁻¹.
/// Allocation-free.
using DelassusResponseFunction = void (*)(const Model& model, Data& data,
                                          const ConstraintRows& rows,
                                          const Eigen::VectorXd& lambda, Eigen::VectorXd& x);

/// The canonical momenta p = M(q) v (nv) of joint velocities v, for a formulation whose state is
/// (q, p). Allocation-free.
using MomentaFunction = void (*)(const Model& model, Data& data, const Eigen::VectorXd& q,
                                 const Eigen::VectorXd& v, Eigen::VectorXd& p);

/// Hamilton's equations of the tree: v = ∂H/∂p = M⁻¹ p and ṗ = τ − ∂H/∂q (with the joints'
/// damping and springs), at (q, p) under joint forces tau. Allocation-free.
using MomentumRatesFunction = void (*)(const Model& model, Data& data, const Eigen::VectorXd& q,
                                       const Eigen::VectorXd& p, const Eigen::VectorXd& tau,
                                       Eigen::VectorXd& v, Eigen::VectorXd& p_dot);

/// One row of the table.
struct FormulationInfo {
  Formulation id;
  std::string_view name;       ///< as typed on the command line and in configuration files
  std::string_view summary;    ///< one line, for help texts and `hilsim info`
  std::string_view reference;  ///< the paper or book it follows
  FormulationCapabilities capabilities;
  DataWorkspace workspace;     ///< what Data must hold beyond the per-body buffers
  /// Leaves Data's kinematics at (q, v) (X_WB, S_W, V_W, c_W), which the constraint stage reads.
  ForwardDynamicsFunction forward_dynamics;
  /// M⁻¹ after forward_dynamics; needed for closed_loops.
  InverseInertiaFunction inverse_inertia;
  /// J M⁻¹ Jᵀ after forward_dynamics, faster than through inverse_inertia; may be null.
  DelassusFunction delassus;
  /// M⁻¹ Jᵀ λ after delassus; set where delassus is.
  DelassusResponseFunction delassus_response;
  /// forward_dynamics also leaves the bodies' accelerations of its q̈ in Data's A_W (A_W[0]
  /// the base's), which the constraint stage reads (else it computes them).
  bool leaves_body_accelerations = false;
  /// delassus and delassus_response read the rows' Jacobian (ConstraintRows::jacobian), not only
  /// their spatial form; the constraint stage then writes it.
  bool delassus_reads_jacobian = true;
  /// A formulation whose own state is (q, p): the Simulator's RK4 advances the momenta with these
  /// on a tree (docs/HDCA.md); null for the others.
  MomentaFunction momenta = nullptr;
  MomentumRatesFunction momentum_rates = nullptr;
  /// With momentum_rates: the closed loops in (q, P) at velocity level, for a model whose
  /// constraints are its loops alone (docs/HDCA.md, "Closed loops"); null for the others.
  MomentumLoopsFactory momentum_loops = nullptr;
};

/// Every formulation, in the order help texts list them (the default, aba, first).
std::span<const FormulationInfo> formulations();

/// The row of `formulation`.
const FormulationInfo& formulationInfo(Formulation formulation);

/// The formulation called `name`, or nullopt.
std::optional<Formulation> parseFormulation(std::string_view name);

/// The name of `formulation` ("aba").
std::string_view formulationName(Formulation formulation);

/// Every name, joined: "aba, crba" (`separator` ", "), or "aba or crba" (last " or ").
std::string formulationNames(std::string_view separator = ", ",
                             std::string_view last_separator = ", ");

/// Empty when `formulation` can run `model`; otherwise why not, naming the formulations that can.
std::string checkFormulation(const Model& model, Formulation formulation);

/// Empty when `formulation` can run on `threads` threads (≥ 1; more than one: a parallel
/// formulation); otherwise why not, naming the formulations that can.
std::string checkThreads(Formulation formulation, int threads);

/// Forward dynamics with `formulation` (dispatched once, through its table row).
inline const Eigen::VectorXd& forwardDynamics(Formulation formulation, const Model& model,
                                              Data& data, const Eigen::VectorXd& q,
                                              const Eigen::VectorXd& v,
                                              const Eigen::VectorXd& tau) {
  return formulationInfo(formulation).forward_dynamics(model, data, q, v, tau);
}

}  // namespace hilsim
