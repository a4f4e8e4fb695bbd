// Simulator: a Model, its Data, a forward-dynamics formulation and a fixed-step integrator.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "engine/constraints/constraint_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/algorithms/algebraic_velocity.h"
#include "engine/model/data.h"

namespace hilsim {

/// Fixed-step integrators.
enum class Integrator {
  kSemiImplicitEuler,  ///< v ← v + h q̈(q, v); q ← q ⊕ h v. First order; symplectic only for a
                       ///< constant mass matrix, so energy drifts slowly (O(h)) on linkages.
  kRk4,                ///< classical Runge–Kutta 4 on the configuration manifold (RKMK form).
  kImexEuler,          ///< semi-implicit Euler on the motion with inertia, linearly implicit
                       ///< Euler on massless joint motion (seed 003: its velocities solve the
                       ///< first-order equations γ(q_{n+1}, v_{n+1}) = 0 by one Newton step, so a
                       ///< stiff spring–damper on a massless body sets no step-size limit). First
                       ///< order. The same as kSemiImplicitEuler on a model without massless joint
                       ///< motion (Model::nalgebraic = 0); the only integrator for one with it.
};

std::optional<Integrator> parseIntegrator(std::string_view name);  ///< "euler", "rk4", "imex_euler"
std::string_view integratorName(Integrator i);

/// Every integrator, in the order help texts list them.
std::span<const Integrator> integrators();

/// Empty when the formulation and integrator can run the model; otherwise why not. The
/// formulation's capabilities are checked by checkFormulation(); a model with massless joint
/// motion (Model::nalgebraic > 0) also needs the integrator `imex_euler`.
std::string checkSimulatorChoice(const Model& model, Formulation formulation, Integrator integrator);

/// Whether the model's first joint is a free joint on the world (a floating base): the joint a
/// base wrench (Simulator::setBaseWrench) acts through.
bool hasFloatingBase(const Model& model);

/// Advances (q, v, t) by a fixed step under joint forces tau. `step` is allocation-free, lock-free
/// and does not throw; the state starts at the neutral configuration at rest (with consistent
/// massless velocities).
class Simulator {
 public:
  /// Throws std::invalid_argument with the reason of checkSimulatorChoice. `constraints`: the
  /// constraint stage run after every forward-dynamics evaluation and every step; none: the
  /// model's own (a ConstraintRowStage for a model with loops or force elements, else the tree
  /// alone). The state starts at Model::initial_configuration, assembled when there are loops.
  Simulator(std::shared_ptr<const Model> model, Formulation formulation, Integrator integrator,
            double dt, std::unique_ptr<ConstraintStage> constraints = nullptr);

  /// One step of length dt() with joint forces tau (nv) held constant over it: the commanded
  /// forces, which the model's actuator limits saturate (appliedTau()).
  void step(const Eigen::VectorXd& tau);

  /// The joint forces the last step applied (nv) [N·m, N]: the commanded ones within the
  /// actuator limits when Model::actuator_limits_enforced (docs/CONTACT.md, "Actuator limits"):
  /// |τ| ≤ effort limit, and no force that drives a joint already at its velocity limit
  /// faster (a limit of 0 or +inf: none). Zero before the first step.
  const Eigen::VectorXd& appliedTau() const { return applied_tau_; }
  /// An external wrench on the floating base (hasFloatingBase) for the steps that follow, until
  /// set again: a force in W [N] at the base body's origin and a torque in W [N·m] (a push, a
  /// tether, a lifting crane). It enters as the free joint's generalized force, converted at each
  /// step's start (the force exactly; the torque with the base's orientation then, so within a
  /// step it turns with the base). Not an actuator's: no limit applies, appliedTau() leaves it
  /// out; its work counts in appliedWork(). Zero until set; kept by setState().
  void setBaseWrench(const Vector3& force_W, const Vector3& torque_W);

  /// Per dof, the steps whose commanded force the effort limit cut since construction or the last
  /// setState().
  const std::vector<std::uint64_t>& effortSaturations() const { return effort_saturations_; }
  /// Per dof, the steps whose commanded force the velocity limit cut since construction or the
  /// last setState().
  const std::vector<std::uint64_t>& velocityCuts() const { return velocity_cuts_; }

  /// Sets the state; quaternions are renormalised, and with loops (q, v) are assembled onto the
  /// constraint manifold (assemblyError()). Sizes must be nq and nv. On a model with
  /// massless joint motion the velocity is made consistent: its massless components are solved
  /// from γ(q, v) = 0 under the joint forces of the last step (zero before the first), the other
  /// motion kept (seed 003 §2.1: z₀(0) is not free).
  void setState(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double time = 0.0);

  /// Makes the current velocity consistent (as setState) under joint forces tau; returns ‖γ‖∞
  /// after the solve [N or N·m]. Allocation-free.
  double makeVelocityConsistent(const Eigen::VectorXd& tau);

  const Eigen::VectorXd& q() const { return q_; }
  const Eigen::VectorXd& v() const { return v_; }
  /// q̈ at the start of the last step; when the state is (q, p) (momentumState()), the step's
  /// mean acceleration (v_{n+1} − v_n)/h.
  const Eigen::VectorXd& qdd() const { return qdd_; }
  /// Whether RK4 advances the canonical momenta p = M v instead of v: a formulation whose state
  /// is (q, p) (FormulationInfo::momentum_rates, hdca) on a tree or on closed loops alone (then
  /// p = M v + Aᵀσ within a step, σ back to zero after it); v is then M⁻¹ p after each step
  /// (docs/HDCA.md, "State", "Closed loops").
  bool momentumState() const { return momentum_state_; }
  /// The canonical momenta p = M v (nv) of the current state, when momentumState().
  const Eigen::VectorXd& momenta() const { return p_; }
  /// The velocity-level closure error ‖A v‖∞ of the current state when the loops are held in
  /// (q, P) (momentumState() on a model with closures), else 0 [m/s, rad/s].
  double velocityClosureError() const;
  double time() const { return time_; }
  double dt() const { return dt_; }
  const Model& model() const { return *model_; }
  Formulation formulation() const { return formulation_; }
  Integrator integrator() const { return integrator_; }

  /// The threads a parallel formulation (FormulationCapabilities::parallel) runs each evaluation
  /// on; null (the default): the calling thread alone. Not owned; must outlive the Simulator's
  /// steps. Results are the same, bit for bit, for every thread count.
  void setExecutor(Executor* executor) { data_.executor = executor; }

  /// The constraint stage, or nullptr for a tree without one.
  ConstraintStage* constraints() const { return constraints_.get(); }
  /// ‖C(q)‖∞ left by the last assembly (construction, setState) [m, rad]; 0 without loops.
  double assemblyError() const { return assembly_error_; }

  /// Kinetic + potential energy at the current state, springs of force elements included [J].
  double energy();

  /// Work the applied joint forces did on the system since construction or the last setState()
  /// [J]: ∫ τ·v dt by the integrator's own quadrature (RK4: its weights on its four stages;
  /// the Euler steps: h τ·v at the new velocity, with which they move q).
  double appliedWork() const { return applied_work_; }
  /// Energy the dampers took out over the same time [J] (≥ 0): ∫ vᵀ diag(d) v dt of the joint
  /// (and modal) damping plus the constraint stage's dampers (force elements), same quadrature.
  /// With them, energy() − E₀ = appliedWork() − dissipatedEnergy() up to the integration error
  /// (and the energy the projection onto the constraints removes): docs/ENGINE.md.
  double dissipatedEnergy() const { return dissipated_energy_; }

  /// How the constraint stage failed to keep its constraints in a step since construction or the
  /// last setState() (the first failure; kind kNone when none did): a loop the step opened and
  /// its projection could not close. The state after it no longer satisfies the closures.
  const ConstraintFailure& constraintFailure() const;

 private:
  /// q̈ at (q, v) under tau: the formulation's, then the constraint stage's. Into data_.qdd.
  const Eigen::VectorXd& accelerations(const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                       const Eigen::VectorXd& tau);
  /// Power the dampers take out at velocity v [W]: vᵀ diag(d) v plus the stage's, whose
  /// dissipation is that of its last accelerations() (so at v after accelerations(q, v, ·)).
  double dampingPower(const Eigen::VectorXd& v) const;

  std::shared_ptr<const Model> model_;
  Data data_;
  Formulation formulation_;
  Integrator integrator_;
  double dt_;
  double time_ = 0.0;
  Eigen::VectorXd q_, v_, qdd_;
  // RK4 stage buffers, sized once
  Eigen::VectorXd q_stage_, v_stage_, theta_, theta_rate_, theta_sum_, a_sum_;
  // the state (q, p): the momenta, a stage's and the rates at the current state under the last
  // step's forces (the next step's first stage, shifted by its change of forces)
  bool momentum_state_ = false;
  Eigen::VectorXd p_, p_stage_, p_dot_, p_dot_now_, tau_now_;
  // p_ from (q_, v_), then v_ and p_dot_now_ from (q_, p_) under last_tau_
  void captureMomenta();
  void evaluateMomentumState();
  // v and ṗ at (q, p): the formulation's tree, or its loops at velocity level
  void momentumRates(const Eigen::VectorXd& q, const Eigen::VectorXd& p,
                     const Eigen::VectorXd& tau, Eigen::VectorXd& v, Eigen::VectorXd& p_dot);
  std::unique_ptr<MomentumLoops> loops_;  // closures in (q, P), P = M v + Aᵀσ
  double closure_force_ = 0.0;        // the last step's largest |σ| / h [N, N·m]
  // the stage's first failure into failure_, with the time
  void recordStageFailure();
  void stepMomentumRk4(const Eigen::VectorXd& tau);
  // RK4's bookkeeping, shared by the (q, v) and (q, p) paths: clears the sums; adds a stage's
  // weighted rates at v_stage_ (∫ τ·v, the dampers' ∫ P, θ̇, and `rate`: q̈ or ṗ) and sets θ for
  // the next stage; moves q and `state` (v or p) by the weighted sums
  void beginRk4Step();
  void accumulateRk4Stage(int stage, const Eigen::VectorXd& tau, const Eigen::VectorXd& rate);
  void finishRk4Step(Eigen::VectorXd& state);
  double power_sum_ = 0.0, damping_sum_ = 0.0;
  // massless joint motion
  AlgebraicVelocities algebraic_;
  Eigen::VectorXd last_tau_, gamma_;
  std::unique_ptr<ConstraintStage> constraints_;
  double assembly_error_ = 0.0;
  double applied_work_ = 0.0, dissipated_energy_ = 0.0;
  ConstraintFailure failure_;
  // the joint forces of the last step within the actuator limits, and how often they cut
  Eigen::VectorXd applied_tau_;
  std::vector<std::uint64_t> effort_saturations_, velocity_cuts_;
  // the floating base's external wrench (force, torque in W) and the forces a step applies:
  // applied_tau_ plus its generalized force
  Vector3 base_force_W_ = Vector3::Zero(), base_torque_W_ = Vector3::Zero();
  bool base_wrench_ = false;
  Eigen::VectorXd total_tau_;
  // applied_tau_ from the commanded tau at the current velocity
  void applyActuatorLimits(const Eigen::VectorXd& tau);
  // total_tau_ += the base wrench's generalized force at q_
  void addBaseWrench();
};

}  // namespace hilsim
