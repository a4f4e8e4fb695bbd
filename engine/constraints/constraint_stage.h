// The constraint stage: what runs after a formulation's unconstrained q̈, as MuJoCo runs its
// constraint stage after its smooth dynamics. Every formulation computes the tree's q̈ for the
// applied joint forces; a stage then turns it into the constrained q̈ (closed kinematic loops,
// joint limits, contact) and, after each integration step, projects (q, v) back onto the
// constraint manifold (stabilisation). The Simulator calls it at every forward-dynamics
// evaluation of every integrator (four per RK4 step) and once after every step.
//
// The seam is the same for every formulation: a stage sees only the Model, the Data the
// formulation filled (poses, motion subspaces, and whatever its row's workspace holds) and the
// state; what it needs beyond that it sizes itself at construction. docs/ENGINE.md, "The
// constraint stage".
#pragma once

#include <Eigen/Core>

#include "engine/model/data.h"

namespace hilsim {

class ConstraintStage {
 public:
  virtual ~ConstraintStage() = default;

  /// Constraint rows the stage can hold at once (its workspace is sized for them at construction);
  /// 0 for a stage without rows.
  virtual int capacity() const = 0;

  /// Turns the unconstrained `qdd` (nv, the formulation's result at (q, v, tau); `data` as the
  /// formulation left it) into the constrained one, in place [rad/s², m/s²]. Allocation-free,
  /// lock-free, no exceptions: it runs on the real-time thread.
  virtual void accelerations(const Model& model, Data& data, const Eigen::VectorXd& q,
                             const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                             Eigen::VectorXd& qdd) = 0;

  /// After an integration step: moves (q, v) onto the constraint manifold (position and velocity
  /// stabilisation); leaves them when they are on it. The same rules as accelerations().
  virtual void project(const Model& model, Data& data, Eigen::VectorXd& q, Eigen::VectorXd& v) = 0;

  /// On a new state (start, setState): moves (q, v) onto the manifold from wherever they are;
  /// returns the remaining position error ‖C(q)‖∞ [m, rad]. The same rules as accelerations().
  virtual double assemble(const Model&, Data&, Eigen::VectorXd&, Eigen::VectorXd&) { return 0.0; }

  /// Potential energy the stage's elements store at q (springs between bodies) [J].
  virtual double potentialEnergy(const Model&, Data&, const Eigen::VectorXd&) { return 0.0; }
};

}  // namespace hilsim
