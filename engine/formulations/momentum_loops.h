// Closed loops held at velocity level in a formulation's own (q, P) state, P = M v + Aᵀσ with σ
// the closure impulses (seed 001 (6)–(8); docs/HDCA.md, "Closed loops"): what the Simulator's RK4
// calls on a model whose constraints are its loops alone, through the formulation's registry row
// (FormulationInfo::momentum_loops). A formulation implements it beside its momentum_rates.
#pragma once

#include <Eigen/Core>
#include <memory>

#include "engine/model/data.h"

namespace hilsim {

class MomentumLoops {
 public:
  virtual ~MomentumLoops() = default;

  /// v (nv) and σ from (8) at (q, P), Ṗ (nv) from (7) under joint forces tau [N·m, N]. Data's
  /// poses and body velocities (X_WB, S_W, V_W) are left at (q, v). Allocation-free.
  virtual void momentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& P, const Eigen::VectorXd& tau,
                             Eigen::VectorXd& v, Eigen::VectorXd& P_dot) = 0;

  /// Returns the last evaluation's σ to zero: P −= Aᵀ σ and P_dot −= Ȧᵀ σ, the same v.
  /// Allocation-free.
  virtual void resetImpulses(Eigen::VectorXd& P, Eigen::VectorXd& P_dot) = 0;

  /// σ of the last evaluation (model.nconstraints) [N·s, N·m·s].
  virtual const Eigen::VectorXd& impulses() const = 0;

  /// ‖A v‖∞ of the last evaluation: the velocity-level closure error [m/s, rad/s].
  virtual double velocityError() const = 0;
};

/// Sized for `model` (allocates; nothing after it does).
using MomentumLoopsFactory = std::unique_ptr<MomentumLoops> (*)(const Model& model);

}  // namespace hilsim
