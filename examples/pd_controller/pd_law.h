// The control law of the pd_controller example: a joint-space PD around a target posture, scaled
// by the arm's inertia, plus gravity, velocity-product and joint-damping compensation — all from
// one call of the engine's inverse dynamics (RNEA, "computed torque"):
//
//   q̈_des = ω² (q* − q) − 2ω v,   τ = M(q) q̈_des + C(q, v) v + g(q) + d ∘ v = rnea(q, v, q̈_des).
//
// With the same model as the server, every joint then behaves as a critically damped
// second-order system of bandwidth ω, whatever its inertia. A PD with one gain for all joints
// could not do that on the iiwa14, whose joint inertias span a factor of 4000 (4.2 kg·m² at the
// shoulder, 0.001 kg·m² at the flange); per-joint gains from the diagonal of M alone are unstable
// near the stretched posture, where joints 1, 3, 5 and 7 turn about one axis; and without
// gravity compensation a PD leaves a static offset.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <utility>

#include <Eigen/Core>

#include "engine/algorithms/rnea.h"
#include "engine/model/data.h"

namespace hilsim::examples {

/// A view of contiguous doubles (a protobuf repeated field, a std::vector, an Eigen vector).
template <typename Container>
std::span<const double> asSpan(const Container& values) {
  return {values.data(), static_cast<std::size_t>(values.size())};
}

class PdGravityLaw {
 public:
  /// `model`: the same model the server simulates, with one coordinate per joint (nq = nv: a
  /// fixed-base arm). `target`: the posture to hold (nv angles [rad]). `bandwidth_hz`: keep it
  /// well below the control rate (10 Hz at 1 kHz) so that the loop's one-cycle delay does not
  /// matter.
  PdGravityLaw(std::shared_ptr<const Model> model, Eigen::VectorXd target, double bandwidth_hz)
      : model_(std::move(model)),
        data_(*model_),
        target_(std::move(target)),
        omega_(2.0 * std::numbers::pi * bandwidth_hz) {
    if (model_->nq != model_->nv) {
      throw std::invalid_argument("PdGravityLaw: a model with one coordinate per joint is needed");
    }
    if (target_.size() != model_->nv) {
      throw std::invalid_argument("PdGravityLaw: the target needs one angle per joint");
    }
    q_.setZero(model_->nv);
    v_.setZero(model_->nv);
    acceleration_.setZero(model_->nv);
  }

  /// τ for the measured q and v (nv values each) [N·m]. Allocation-free.
  const Eigen::VectorXd& torques(std::span<const double> q, std::span<const double> v) {
    for (int k = 0; k < model_->nv; ++k) {
      q_[k] = q[k];
      v_[k] = v[k];
      acceleration_[k] = omega_ * omega_ * (target_[k] - q[k]) - 2.0 * omega_ * v[k];
    }
    return rnea(*model_, data_, q_, v_, acceleration_);
  }

  /// The largest |q*_i − q_i| over the joints [rad].
  double maxError(std::span<const double> q) const {
    double worst = 0.0;
    for (int k = 0; k < model_->nv; ++k) worst = std::max(worst, std::abs(target_[k] - q[k]));
    return worst;
  }

  double bandwidth() const { return omega_; }  ///< ω [rad/s]
  const Eigen::VectorXd& target() const { return target_; }

 private:
  std::shared_ptr<const Model> model_;
  Data data_;
  Eigen::VectorXd target_;
  double omega_;
  Eigen::VectorXd q_, v_, acceleration_;  // reused every cycle
};

}  // namespace hilsim::examples
