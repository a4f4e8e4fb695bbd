#include "rt/actuator_models.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include "rt/joint_entries.h"

namespace hilsim::rt {

namespace {

void check(const ActuatorConfig& a, bool one_dof, double dt, const std::string& where) {
  std::ostringstream why;
  const auto fail = [&]() { throw std::invalid_argument(where + ": " + why.str()); };
  if (!(a.time_constant >= 0.0 && std::isfinite(a.time_constant))) {
    why << "time_constant " << a.time_constant << " s must be finite and ≥ 0";
    fail();
  }
  if (!(a.delay >= 0.0 && a.delay <= kMaxActuatorDelay)) {
    why << "delay " << a.delay << " s is outside 0 … " << kMaxActuatorDelay << " s";
    fail();
  }
  if (std::llround(a.delay / dt) > kMaxActuatorDelaySteps) {
    why << "delay " << a.delay << " s is " << std::llround(a.delay / dt) << " physics steps of "
        << dt << " s; at most " << kMaxActuatorDelaySteps;
    fail();
  }
  if (!(a.resolution >= 0.0 && std::isfinite(a.resolution))) {
    why << "resolution " << a.resolution << " must be finite and ≥ 0";
    fail();
  }
  if (!(a.ripple >= 0.0 && a.ripple <= 0.5)) {
    why << "ripple " << a.ripple << " is outside 0 … 0.5";
    fail();
  }
  if (a.ripple > 0.0 && !(a.ripple_period > 0.0 && std::isfinite(a.ripple_period))) {
    why << "a ripple needs ripple_period > 0 (got " << a.ripple_period << ")";
    fail();
  }
  if (a.ripple > 0.0 && !one_dof) {
    why << "a ripple is periodic in one coordinate: 1-DoF joints only";
    fail();
  }
}

}  // namespace

ActuatorModels::ActuatorModels(const Model& model, const std::vector<ActuatorConfig>& actuators,
                               double dt)
    : model_(model),
      delay_steps_(static_cast<std::size_t>(model.nv), 0),
      line_start_(static_cast<std::size_t>(model.nv), 0),
      resolution_(Eigen::VectorXd::Zero(model.nv)),
      lag_gain_(Eigen::VectorXd::Ones(model.nv)),
      ripple_(Eigen::VectorXd::Zero(model.nv)),
      ripple_wavenumber_(Eigen::VectorXd::Zero(model.nv)),
      lagged_(Eigen::VectorXd::Zero(model.nv)),
      q_index_(static_cast<std::size_t>(model.nv), -1) {
  const JointEntries<ActuatorConfig> entries = resolveJointEntries(
      model, actuators, "actuators",
      [&](const ActuatorConfig& a, int body, const std::string& where) {
        // "*" leaves the ripple to the 1-DoF joints
        check(a, body < 0 || (model.nv_joint[body] == 1 && model.nq_joint[body] == 1), dt, where);
      });
  int line_size = 0;
  for (int body = 1; body < model.nbodies; ++body) {
    const ActuatorConfig* a = entries.named[static_cast<std::size_t>(body)];
    if (a == nullptr) a = entries.fallback;
    if (a == nullptr) continue;
    const bool one_dof = model.nv_joint[body] == 1 && model.nq_joint[body] == 1;
    for (int k = 0; k < model.nv_joint[body]; ++k) {
      const int dof = model.idx_v[body] + k;
      const auto at = static_cast<std::size_t>(dof);
      delay_steps_[at] = static_cast<int>(std::llround(a->delay / dt));
      line_start_[at] = line_size;
      line_size += delay_steps_[at];
      resolution_[dof] = a->resolution;
      if (a->time_constant > 0.0) lag_gain_[dof] = -std::expm1(-dt / a->time_constant);
      if (a->ripple > 0.0 && one_dof) {
        ripple_[dof] = a->ripple;
        ripple_wavenumber_[dof] = 2.0 * std::numbers::pi / a->ripple_period;
        q_index_[at] = model.idx_q[body];
      }
      ideal_ = ideal_ && delay_steps_[at] == 0 && a->resolution == 0.0 &&
               a->time_constant == 0.0 && ripple_[dof] == 0.0;
    }
  }
  line_.assign(static_cast<std::size_t>(line_size), 0.0);
}

void ActuatorModels::apply(const Eigen::VectorXd& q, const Eigen::VectorXd& commanded,
                           Eigen::VectorXd& delivered) {
  for (int dof = 0; dof < model_.nv; ++dof) {
    const auto at = static_cast<std::size_t>(dof);
    double u = commanded[dof];
    if (const int d = delay_steps_[at]; d > 0) {
      // the slot of this step holds the command of d steps ago: take it, leave this one
      double& slot = line_[static_cast<std::size_t>(line_start_[at]) + steps_ % d];
      const double late = slot;
      slot = u;
      u = late;
    }
    if (resolution_[dof] > 0.0) u = resolution_[dof] * std::round(u / resolution_[dof]);
    // gain 1 (no lag) assigns: y + (u − y) need not round to u
    lagged_[dof] = lag_gain_[dof] == 1.0 ? u : lagged_[dof] + lag_gain_[dof] * (u - lagged_[dof]);
    double y = lagged_[dof];
    if (ripple_[dof] > 0.0) {
      y *= 1.0 + ripple_[dof] * std::sin(ripple_wavenumber_[dof] * q[q_index_[at]]);
    }
    delivered[dof] = y;
  }
  ++steps_;
}

void ActuatorModels::reset() {
  std::fill(line_.begin(), line_.end(), 0.0);
  lagged_.setZero();
  steps_ = 0;
}

}  // namespace hilsim::rt
