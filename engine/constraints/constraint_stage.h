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
#include <cstdint>
#include <string>

#include "engine/model/data.h"

namespace hilsim {

/// Why a constraint stage could not keep its constraints in a step: plain numbers, recorded on the
/// real-time thread, described off it (describeConstraintFailure). docs/LOOPS.md, "When a step
/// cannot follow".
struct ConstraintFailure {
  enum class Kind : std::uint8_t {
    kNone,
    /// The projection after a step left a loop open by more than 1e-9 m or rad: its Gauss–Newton
    /// step no longer closes what the step opened, and the step no longer follows the motion (at
    /// or near a singular configuration, where the closure forces grow without bound and the
    /// rows' linearisation fails; or a step far too long for the motion).
    kLoopOpened,
  };
  Kind kind = Kind::kNone;
  int closure = -1;       ///< the closure (index in Model::loops) of the worst row
  int row = -1;           ///< that row among the closure's (docs/LOOPS.md, "Closure types")
  double error = 0.0;     ///< that row's error after the projection [m or rad, as the row]
  double drift = 0.0;     ///< ‖C‖∞ the step left before the projection [m, rad]
  double limit = 0.0;     ///< the error the projection must reach [m, rad]
  int rank = 0;           ///< numerical rank of the rows at the projection
  int nominal_rank = 0;   ///< their rank at the last assembly (where the motion started)
  double force = 0.0;     ///< the largest closure force of the step's last evaluation [N, N·m]
  double time = 0.0;      ///< simulation time at the end of the step [s] (set by the Simulator)
};

/// One line naming the closure and what it met, e.g. "closure 'rod_3a' (distance) stayed open by
/// 0.00045 m after the step's projection (more than 1e-09; the step had opened the loops by
/// 0.000273), with closure forces up to 6.42e+07 and the rows of rank 6 (6 where the motion
/// started): the fixed step cannot follow the motion at or near a singular configuration …".
/// Not for the real-time thread. "" for kNone.
std::string describeConstraintFailure(const Model& model, const ConstraintFailure& failure);

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

  /// Called by the Simulator before the first evaluation of each step: a stage with state that
  /// must stay fixed over a step's evaluations (the friction rows' anchors) updates it at the next
  /// accelerations(), the step's start.
  virtual void beginStep() {}

  /// The integrator's step [s]: soft rows take their time constants at no less than two of them
  /// (as MuJoCo does), and a row becomes active from the step in which it would close.
  virtual void setTimeStep(double) {}

  /// Potential energy the stage's elements store at q (springs between bodies) [J].
  virtual double potentialEnergy(const Model&, Data&, const Eigen::VectorXd&) { return 0.0; }

  /// Power the stage's forces took out at the last accelerations() [W]: its dampers' (≥ 0),
  /// and the soft rows' −λ·ṙ (friction's ≥ 0; a contact or limit returns what its spring
  /// stored).
  virtual double dissipatedPower() const { return 0.0; }

  /// The first failure since the last assemble() (kind kNone while the constraints hold).
  virtual const ConstraintFailure& failure() const {
    static const ConstraintFailure kNone;
    return kNone;
  }
};

}  // namespace hilsim
