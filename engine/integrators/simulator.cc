#include "engine/integrators/simulator.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/energy.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/model/configuration.h"

namespace hilsim {

namespace {

// The power joint damping (vᵀ diag(d) v) and the flexible bodies' modal damping (η̇ᵀ C η̇) take
// out at velocity v [W]
double jointDampingPower(const Model& model, const Eigen::VectorXd& v) {
  double power = model.damping.size() == 0 ? 0.0 : v.cwiseAbs2().dot(model.damping);
  if (model.has_flexible_bodies) {
    for (int i = 1; i < model.nbodies; ++i) {
      const int n = model.nmodes[i];
      if (n == 0) continue;
      // η̇ᵀ C η̇ entry by entry: C η̇ would be a temporary on the heap
      const auto rate = v.segment(model.idxModesV(i), n);
      const Eigen::MatrixXd& C = model.flexible[i].damping;
      for (int k = 0; k < n; ++k) power += rate(k) * C.col(k).dot(rate);
    }
  }
  return power;
}

// RK4's stage times (fractions of h) and weights (of h/6)
constexpr double kStageFraction[4] = {0.0, 0.5, 0.5, 1.0};
constexpr double kWeight[4] = {1.0, 2.0, 2.0, 1.0};

}  // namespace

std::optional<Integrator> parseIntegrator(std::string_view name) {
  if (name == "euler" || name == "semi-implicit-euler") return Integrator::kSemiImplicitEuler;
  if (name == "rk4") return Integrator::kRk4;
  if (name == "imex_euler" || name == "imex-euler") return Integrator::kImexEuler;
  return std::nullopt;
}

std::string_view integratorName(Integrator i) {
  switch (i) {
    case Integrator::kSemiImplicitEuler: return "euler";
    case Integrator::kRk4: return "rk4";
    case Integrator::kImexEuler: return "imex_euler";
  }
  return "unknown";
}

std::span<const Integrator> integrators() {
  static constexpr Integrator kAll[] = {Integrator::kRk4, Integrator::kSemiImplicitEuler,
                                        Integrator::kImexEuler};
  return kAll;
}

std::string checkSimulatorChoice(const Model& model, Formulation formulation,
                                 Integrator integrator) {
  if (std::string why = checkFormulation(model, formulation); !why.empty()) return why;
  if (model.nalgebraic == 0 || integrator == Integrator::kImexEuler) return {};
  std::string joint;
  for (int i = 1; i < model.nbodies && joint.empty(); ++i)
    if (model.idx_algebraic[i] >= 0) joint = model.joint_names[i];
  return "model '" + model.name + "' has massless joint motion (joint '" + joint +
         "'): its mass matrix is singular, so it needs integrator 'imex_euler'";
}

Simulator::Simulator(std::shared_ptr<const Model> model, Formulation formulation,
                     Integrator integrator, double dt,
                     std::unique_ptr<ConstraintStage> constraints)
    : model_(std::move(model)),
      data_(*model_, formulationInfo(formulation).workspace),
      formulation_(formulation),
      integrator_(integrator),
      dt_(dt),
      q_(model_->initialConfiguration()),
      v_(Eigen::VectorXd::Zero(model_->nv)),
      qdd_(Eigen::VectorXd::Zero(model_->nv)),
      q_stage_(q_),
      v_stage_(v_),
      theta_(v_),
      theta_rate_(v_),
      theta_sum_(v_),
      a_sum_(v_),
      algebraic_(*model_),
      last_tau_(Eigen::VectorXd::Zero(model_->nv)),
      gamma_(Eigen::VectorXd::Zero(model_->nalgebraic)),
      constraints_(std::move(constraints)),
      applied_tau_(Eigen::VectorXd::Zero(model_->nv)),
      effort_saturations_(model_->nv, 0),
      velocity_cuts_(model_->nv, 0),
      total_tau_(Eigen::VectorXd::Zero(model_->nv)) {
  if (const std::string why = checkSimulatorChoice(*model_, formulation, integrator); !why.empty())
    throw std::invalid_argument(why);
  const bool own_stage = !constraints_;
  if (!constraints_ && model_->needsConstraintStage())
    constraints_ = std::make_unique<ConstraintRowStage>(*model_, formulationInfo(formulation));
  if (constraints_) {
    constraints_->setTimeStep(dt_);
    assembly_error_ = constraints_->assemble(*model_, data_, q_, v_);
  }
  makeVelocityConsistent(last_tau_);
  const FormulationInfo& info = formulationInfo(formulation);
  // closures alone (no force elements, limits, friction or contact) on the Simulator's own stage:
  // the loops at velocity level in (q, P) (docs/HDCA.md, "Closed loops"); anything else, or a
  // stage the caller gave, at acceleration level through it
  const bool closures_only = own_stage && !model_->loops.empty() &&
                             model_->force_elements.empty() &&
                             model_->constraintRowCapacity() == model_->nconstraints;
  momentum_state_ = info.momentum_rates != nullptr && integrator == Integrator::kRk4 &&
                    (!constraints_ || (closures_only && info.momentum_loops != nullptr)) &&
                    model_->nalgebraic == 0;
  if (momentum_state_ && closures_only) loops_ = info.momentum_loops(*model_);
  if (momentum_state_) {
    p_ = p_stage_ = p_dot_ = p_dot_now_ = tau_now_ = Eigen::VectorXd::Zero(model_->nv);
    captureMomenta();
  }
}

void Simulator::captureMomenta() {
  formulationInfo(formulation_).momenta(*model_, data_, q_, v_, p_);
  evaluateMomentumState();
}

void Simulator::evaluateMomentumState() {
  // v = M⁻¹ p at the state itself (the same v to round-off), and ṗ there under the last forces
  tau_now_ = last_tau_;
  momentumRates(q_, p_, tau_now_, v_, p_dot_now_);
}

void Simulator::momentumRates(const Eigen::VectorXd& q, const Eigen::VectorXd& p,
                              const Eigen::VectorXd& tau, Eigen::VectorXd& v,
                              Eigen::VectorXd& p_dot) {
  if (loops_)
    loops_->momentumRates(*model_, data_, q, p, tau, v, p_dot);
  else
    formulationInfo(formulation_).momentum_rates(*model_, data_, q, p, tau, v, p_dot);
}

void Simulator::stepMomentumRk4(const Eigen::VectorXd& tau) {
  // RK4 (RKMK on q) on Hamilton's equations q̇ = v(q, p), ṗ = f(q, p, τ); the first stage is the
  // state's own evaluation, ṗ affine in τ
  const Model& model = *model_;
  const double h = dt_;
  beginRk4Step();
  qdd_ = v_;  // v_n, for the step's mean acceleration
  for (int stage = 0; stage < 4; ++stage) {
    const double c = kStageFraction[stage];
    if (stage == 0) {
      v_stage_ = v_;
      p_dot_ = p_dot_now_ + (tau - tau_now_);
    } else {
      integrateConfiguration(model, q_, theta_, 1.0, q_stage_);
      p_stage_ = p_ + (c * h) * p_dot_;
      momentumRates(q_stage_, p_stage_, tau, v_stage_, p_dot_);
    }
    accumulateRk4Stage(stage, tau, p_dot_);
  }
  finishRk4Step(p_);
  last_tau_ = tau;
  if (loops_ && model.stabilisation.projection_iterations > 0) {
    // q back onto C(q) = 0 (the note's position projection for long fixed-step runs, §11 item
    // 9); v needs none: (8) at the new q gives it on A v = 0. The stage's projection of v is
    // discarded.
    v_stage_ = v_;
    constraints_->project(model, data_, q_, v_stage_);
  }
  evaluateMomentumState();
  // σ back to zero: P = M v again (the note's momentum reset), so the impulses absorbed over a
  // long run never grow (§11 item 7); what the step absorbed, over h, is its mean closure force
  if (loops_) {
    closure_force_ = loops_->impulses().lpNorm<Eigen::Infinity>() / h;
    loops_->resetImpulses(p_, p_dot_now_);
  }
  qdd_ = (v_ - qdd_) / h;
}

double Simulator::makeVelocityConsistent(const Eigen::VectorXd& tau) {
  const Model& model = *model_;
  if (model.nalgebraic == 0) return 0.0;
  // Newton on γ(q, v + L x) = 0; exact in one step for linear dampers, a few for velocity-
  // dependent gyroscopic terms
  aba(model, data_, q_, v_, tau);
  algebraic_.capture(model, data_);
  for (int iteration = 0; iteration < 4; ++iteration)
    algebraic_.newtonStep(model, data_, q_, v_, tau, 0.0);
  aba(model, data_, q_, v_, tau);
  algebraic_.residual(model, data_, gamma_);
  return gamma_.lpNorm<Eigen::Infinity>();
}

void Simulator::setState(const Eigen::VectorXd& q, const Eigen::VectorXd& v, double time) {
  assert(q.size() == model_->nq && v.size() == model_->nv);
  q_ = q;
  v_ = v;
  normalizeConfiguration(*model_, q_);
  time_ = time;
  if (constraints_) assembly_error_ = constraints_->assemble(*model_, data_, q_, v_);
  makeVelocityConsistent(last_tau_);
  if (momentum_state_) captureMomenta();
  applied_work_ = 0.0;
  dissipated_energy_ = 0.0;
  failure_ = ConstraintFailure{};
  std::fill(effort_saturations_.begin(), effort_saturations_.end(), 0);
  std::fill(velocity_cuts_.begin(), velocity_cuts_.end(), 0);
}

bool hasFloatingBase(const Model& model) {
  return model.nbodies > 1 && model.parent[1] == 0 &&
         model.joint_type[1] == JointType::kFreeFlyer;
}

void Simulator::setBaseWrench(const Vector3& force_W, const Vector3& torque_W) {
  assert(hasFloatingBase(*model_));
  base_force_W_ = force_W;
  base_torque_W_ = torque_W;
  base_wrench_ = !force_W.isZero(0.0) || !torque_W.isZero(0.0);
}

void Simulator::addBaseWrench() {
  // the free joint's v: the origin's velocity in its joint frame J, then ω in the base frame B,
  // so its generalized force is (R_WJᵀ f, R_WBᵀ n) — the power f·ṗ + n·ω (docs/NOTATION.md)
  const Model& model = *model_;
  const Matrix3& R_WJ = model.joint_placement[1].rotation;
  const int qi = model.idx_q[1], vi = model.idx_v[1];
  const Eigen::Quaterniond joint(q_[qi + 3], q_[qi + 4], q_[qi + 5], q_[qi + 6]);
  const Matrix3 R_WB = R_WJ * joint.normalized().toRotationMatrix();
  total_tau_.segment<3>(vi).noalias() += R_WJ.transpose() * base_force_W_;
  total_tau_.segment<3>(vi + 3).noalias() += R_WB.transpose() * base_torque_W_;
}

const Eigen::VectorXd& Simulator::accelerations(const Eigen::VectorXd& q,
                                                const Eigen::VectorXd& v,
                                                const Eigen::VectorXd& tau) {
  forwardDynamics(formulation_, *model_, data_, q, v, tau);
  if (constraints_) constraints_->accelerations(*model_, data_, q, v, tau, data_.qdd);
  return data_.qdd;
}

void Simulator::applyActuatorLimits(const Eigen::VectorXd& commanded) {
  applied_tau_ = commanded;
  const Model& model = *model_;
  if (!model.actuator_limits_enforced) return;
  for (int d = 0; d < model.nv; ++d) {
    // a limit of 0 is what URDFs write for "not known": a drive that cannot move its joint is
    // no model of one (docs/CONTACT.md)
    const double effort = model.effort_limit[d];
    double& tau = applied_tau_[d];
    if (effort > 0.0 && std::abs(tau) > effort) {
      tau = std::copysign(effort, tau);
      ++effort_saturations_[d];
    }
    const double speed = model.velocity_limit[d];
    if (speed > 0.0 && std::abs(v_[d]) >= speed && tau * v_[d] > 0.0) {
      tau = 0.0;
      ++velocity_cuts_[d];
    }
  }
}

void Simulator::step(const Eigen::VectorXd& commanded) {
  const Model& model = *model_;
  const double h = dt_;
  applyActuatorLimits(commanded);
  total_tau_ = applied_tau_;
  if (base_wrench_) addBaseWrench();
  const Eigen::VectorXd& tau = total_tau_;
  if (constraints_) constraints_->beginStep();
  if (momentum_state_) {
    stepMomentumRk4(tau);
    time_ += h;
    recordStageFailure();
    return;
  }
  switch (integrator_) {
    case Integrator::kSemiImplicitEuler: {
      qdd_ = accelerations(q_, v_, tau);
      const double stage_power = constraints_ ? constraints_->dissipatedPower() : 0.0;
      v_ += h * qdd_;
      integrateConfiguration(model, q_, v_, h, q_);
      // q moves with the new velocity: the forces' power at it (the stage's at the old one)
      applied_work_ += h * tau.dot(v_);
      dissipated_energy_ += h * (jointDampingPower(model, v_) + stage_power);
      break;
    }
    case Integrator::kImexEuler: {
      qdd_ = accelerations(q_, v_, tau);
      if (constraints_) dissipated_energy_ += h * constraints_->dissipatedPower();
      if (model.nalgebraic > 0) algebraic_.capture(model, data_);  // L at q_n, from this aba
      v_ += h * qdd_;
      // v_{n+1} = v_n + h q̈ + L x with γ(q_n ⊕ h v_{n+1}, v_{n+1}) = 0 (linearly implicit)
      if (model.nalgebraic > 0) algebraic_.newtonStep(model, data_, q_, v_, tau, h);
      integrateConfiguration(model, q_, v_, h, q_);
      applied_work_ += h * tau.dot(v_);
      dissipated_energy_ += h * jointDampingPower(model, v_);
      break;
    }
    case Integrator::kRk4: {
      // Runge–Kutta–Munthe-Kaas: stages live in the tangent space at q, θ̇ = dexp⁻¹_θ(v)
      beginRk4Step();
      for (int stage = 0; stage < 4; ++stage) {
        const double c = kStageFraction[stage];
        // stage state: q ⊕ θ, v + c h a_prev (theta_ already holds c h K_prev)
        if (stage == 0) {
          q_stage_ = q_;
          v_stage_ = v_;
        } else {
          integrateConfiguration(model, q_, theta_, 1.0, q_stage_);
          v_stage_ = v_ + (c * h) * data_.qdd;
        }
        const Eigen::VectorXd& a = accelerations(q_stage_, v_stage_, tau);
        if (stage == 0) qdd_ = a;
        accumulateRk4Stage(stage, tau, a);
      }
      finishRk4Step(v_);
      break;
    }
  }
  time_ += h;
  if (constraints_) constraints_->project(model, data_, q_, v_);
  recordStageFailure();
  last_tau_ = tau;
}

void Simulator::recordStageFailure() {
  if (constraints_ && failure_.kind == ConstraintFailure::Kind::kNone &&
      constraints_->failure().kind != ConstraintFailure::Kind::kNone) {
    failure_ = constraints_->failure();
    failure_.time = time_;
    // on the velocity-level path the stage only projects: the force is the step's σ / h
    if (loops_) failure_.force = closure_force_;
  }
}

void Simulator::beginRk4Step() {
  theta_sum_.setZero();
  a_sum_.setZero();
  theta_.setZero();
  power_sum_ = damping_sum_ = 0.0;
}

void Simulator::accumulateRk4Stage(int stage, const Eigen::VectorXd& tau,
                                   const Eigen::VectorXd& rate) {
  // ∫ τ·v dt and the dampers' ∫ P dt by the same quadrature as the state
  power_sum_ += kWeight[stage] * tau.dot(v_stage_);
  damping_sum_ += kWeight[stage] * dampingPower(v_stage_);
  tangentRate(*model_, theta_, v_stage_, theta_rate_);
  theta_sum_ += kWeight[stage] * theta_rate_;
  a_sum_ += kWeight[stage] * rate;
  if (stage < 3) theta_ = (kStageFraction[stage + 1] * dt_) * theta_rate_;
}

void Simulator::finishRk4Step(Eigen::VectorXd& state) {
  const double h = dt_;
  integrateConfiguration(*model_, q_, theta_sum_, h / 6.0, q_);
  state += (h / 6.0) * a_sum_;
  applied_work_ += (h / 6.0) * power_sum_;
  dissipated_energy_ += (h / 6.0) * damping_sum_;
}

double Simulator::dampingPower(const Eigen::VectorXd& v) const {
  return jointDampingPower(*model_, v) + (constraints_ ? constraints_->dissipatedPower() : 0.0);
}

const ConstraintFailure& Simulator::constraintFailure() const { return failure_; }

double Simulator::velocityClosureError() const { return loops_ ? loops_->velocityError() : 0.0; }

double Simulator::energy() {
  const double stage = constraints_ ? constraints_->potentialEnergy(*model_, data_, q_) : 0.0;
  return kineticEnergy(*model_, data_, q_, v_) + potentialEnergy(*model_, data_, q_) + stage;
}

}  // namespace hilsim
