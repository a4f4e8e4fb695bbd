// Closed loops in seed 001's Hamiltonian form: the state (q, P) with augmented momenta
// P = M v + Aᵀ σ (seed 001 (6), the note's sign convention: σ the closure impulses, A the m × nv
// closure Jacobian of engine/constraints/closure_kinematics.h). At every evaluation
//
//   [[M, Aᵀ], [A, 0]] [v; σ] = [P; 0]                                                   (8)
//   Ṗ = τ + ∂T/∂q − ∂V/∂q + Ȧᵀ σ                                                         (7)
//
// so A v = 0 holds to round-off at every evaluation, without stabilisation: the loops close at
// velocity level. (8) is solved by its Schur complement on the tree's phase 1, K σ = A M⁻¹ P with
// K = A M⁻¹ Aᵀ, v = M⁻¹ (P − Aᵀ σ): for one loop cut at one joint this is the paper's root case
// (c) (its cut handle's ξ is K in the cut's directions); it holds as written for several cuts in
// one subsystem and for coupled loops, where the paper gives no equations. Ȧᵀ σ is phase 2's
// term of the cut impulses (hdcaImpulseRates): Aᵀσ acts on the bodies as spatial impulses, and
// their rates follow each row's direction (closureForceRates). docs/HDCA.md, "Closed loops".
#pragma once

#include <Eigen/Core>
#include <vector>

#include "engine/constraints/constraint_rows.h"
#include "engine/constraints/pivoted_cholesky.h"
#include "engine/formulations/momentum_loops.h"
#include "engine/model/data.h"

namespace hilsim {

class HdcaLoops final : public MomentumLoops {
 public:
  /// Sized for `model` (its closures' rows; the rows zero at every configuration left out, as
  /// the constraint stage leaves them). Allocates; nothing after it does.
  explicit HdcaLoops(const Model& model);

  /// Both phases at (q, P): v (nv) from (8) [rad/s, m/s], Ṗ (nv) from (7) under joint forces
  /// tau [N·m, N]; σ kept (impulses()). Data's poses and body velocities (X_WB, S_W, V_W) are
  /// left at (q, v). Allocation-free.
  void momentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& P, const Eigen::VectorXd& tau, Eigen::VectorXd& v,
                     Eigen::VectorXd& P_dot) override;

  /// Returns the last evaluation's σ to zero: P −= Aᵀ σ and P_dot −= Ȧᵀ σ (the momenta of the
  /// same v with no impulse absorbed, the note's reset, §11 item 7). v is unchanged: (8) at the
  /// new P gives σ = 0. Allocation-free.
  void resetImpulses(Eigen::VectorXd& P, Eigen::VectorXd& P_dot) override;

  /// σ of the last evaluation (model.nconstraints; zero on the rows left out) [N·s, N·m·s].
  const Eigen::VectorXd& impulses() const override { return sigma_; }
  /// ‖A v‖∞ of the last evaluation: the velocity-level closure error [m/s, rad/s].
  double velocityError() const override { return velocity_error_; }
  /// Numerical rank of K at the last evaluation (below the rows solved for at a singular
  /// configuration).
  int rank() const { return solver_.rank(); }
  /// The rows solved for (not zero at every configuration).
  int rowsSolved() const { return k_; }

 private:
  ConstraintRows rows_;
  int m_ = 0, k_ = 0;
  Eigen::MatrixXd J_;      // k × nv: the solved rows of A
  Eigen::MatrixXd Y_;      // nv × k: M⁻¹ Aᵀ
  Eigen::MatrixXd K_;      // k × k: A M⁻¹ Aᵀ
  PivotedCholesky solver_;
  Eigen::VectorXd u_, rhs_, sigma_active_, sigma_, row_rates_, impulse_part_;
  Matrix6N force_a_rate_, force_b_rate_;
  std::vector<Vector6> impulse_, impulse_rate_;  // per body, summed over its subtree
  double velocity_error_ = 0.0;
};

/// hdca's row of the registry (FormulationInfo::momentum_loops).
std::unique_ptr<MomentumLoops> makeHdcaLoops(const Model& model);

}  // namespace hilsim
