// The control law of the delta_pick_place example, for the bundled `delta` model
// (config/models/delta.yaml): the platform follows a pick-and-place path in Cartesian space.
//
//  1. Inverse kinematics, closed form: arm k's angle θ_k puts its elbow E_k at the rod length Lb
//     from the platform's attachment P_k. In the arm's frame (x radial, z up), with the platform
//     centre p' = Rz(−φ_k) p and A = R − r − p'_x:
//         (A + La cos θ)² + p'_y² + (La sin θ + p'_z)² = Lb²
//       ⇔ A cos θ + p'_z sin θ = K / (2 La),   K = Lb² − A² − La² − p'_y² − p'_z²
//       ⇒ θ = atan2(p'_z, A) + acos(K / (2 La √(A² + p'_z²)))   (the elbow-out branch)
//  2. A PD on the three motors around those angles and their rates (the rates by differencing the
//     inverse kinematics along the path: without them the platform lags by v / ω).
//  3. Gravity compensation through the loops, from the engine: at rest the motors' torques τ_m
//     and the rods' forces λ balance gravity, g(q) = B τ_m + Jᵀ λ (B selects the motor
//     coordinates, J is the closure Jacobian), nine equations in nine unknowns; g(q) = rnea(q, 0, 0).
//     A PD alone would sag by g / Kp.
#pragma once

#include <cmath>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <utility>

#include <Eigen/Core>
#include <Eigen/LU>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/rnea.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/model/data.h"

namespace hilsim::examples {

/// Geometry of config/models/delta.yaml [m].
struct DeltaGeometry {
  double base_radius = 0.15;     ///< R: arm hinges from the centre
  double platform_radius = 0.04; ///< r: rod-pair centres on the platform
  double upper_arm = 0.25;       ///< La
  double rod = 0.6;              ///< Lb
};

/// Motor angles [rad] that put the platform centre at `p` (world frame), or NaN where the point
/// is out of reach.
inline Eigen::Vector3d deltaInverseKinematics(const Eigen::Vector3d& p, const DeltaGeometry& g = {}) {
  Eigen::Vector3d theta;
  for (int k = 0; k < 3; ++k) {
    const double phi = 2.0 * std::numbers::pi * k / 3.0;
    // the platform centre in arm k's frame
    const double x = std::cos(phi) * p.x() + std::sin(phi) * p.y();
    const double y = -std::sin(phi) * p.x() + std::cos(phi) * p.y();
    const double z = p.z();
    const double A = g.base_radius - g.platform_radius - x;
    const double K = g.rod * g.rod - A * A - g.upper_arm * g.upper_arm - y * y - z * z;
    const double c = K / (2.0 * g.upper_arm * std::hypot(A, z));
    theta[k] = std::abs(c) <= 1.0 ? std::atan2(z, A) + std::acos(c) : std::nan("");
  }
  return theta;
}

class DeltaLaw {
 public:
  /// `model`: the bundled delta (motors are coordinates 0–2, the platform's free joint 3–9 of
  /// q). `bandwidth_hz`: the motors' PD bandwidth, with `inertia` the motor-side inertia it is
  /// scaled by [kg·m²].
  DeltaLaw(std::shared_ptr<const Model> model, double bandwidth_hz, double inertia = 0.05)
      : model_(std::move(model)),
        data_(*model_),
        omega_(2.0 * std::numbers::pi * bandwidth_hz),
        inertia_(inertia),
        q_(model_->nq),
        zero_(Eigen::VectorXd::Zero(model_->nv)),
        jacobian_(model_->nconstraints, model_->nv),
        balance_(model_->nv, model_->nv),
        solution_(model_->nv),
        lu_(model_->nv),
        tau_(Eigen::VectorXd::Zero(model_->nv)) {
    if (model_->nv != 9 || model_->nconstraints != 6)
      throw std::invalid_argument("DeltaLaw: needs the bundled delta model (nv 9, 6 rods)");
  }

  /// Joint forces (nv; only the motors' are non-zero) that drive the motors to `target` angles
  /// at `target_rate` [rad/s], at the measured q (nq) and v (nv) [N·m]. Allocation-free.
  const Eigen::VectorXd& torques(const Eigen::Vector3d& target, const Eigen::Vector3d& target_rate,
                                 std::span<const double> q, std::span<const double> v) {
    for (int k = 0; k < model_->nq; ++k) q_[k] = q[k];
    // gravity balanced by the motors and the rods: [B  Jᵀ] [τ_m; λ] = g(q)
    const Eigen::VectorXd& gravity = rnea(*model_, data_, q_, zero_, zero_);
    forwardKinematics(*model_, data_, q_);
    evaluateClosures(*model_, data_, {nullptr, &jacobian_, nullptr});
    balance_.setZero();
    for (int k = 0; k < 3; ++k) balance_(k, k) = 1.0;
    balance_.rightCols(6) = jacobian_.transpose();
    lu_.compute(balance_);
    solution_ = lu_.solve(gravity);
    tau_.setZero();
    for (int k = 0; k < 3; ++k)
      tau_[k] = solution_[k] +
                inertia_ * (omega_ * omega_ * (target[k] - q[k]) +
                            2.0 * omega_ * (target_rate[k] - v[k]));
    return tau_;
  }

 private:
  std::shared_ptr<const Model> model_;
  Data data_;
  double omega_, inertia_;
  Eigen::VectorXd q_, zero_;
  Eigen::MatrixXd jacobian_, balance_;
  Eigen::VectorXd solution_;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu_;
  Eigen::VectorXd tau_;
};

/// Motor angles and rates for the platform on `path` at time t (rates by central differences
/// over ±1 ms).
template <typename Path>
std::pair<Eigen::Vector3d, Eigen::Vector3d> deltaMotorTargets(const Path& path, double t) {
  constexpr double h = 1e-3;
  const Eigen::Vector3d rate =
      (deltaInverseKinematics(path(t + h)) - deltaInverseKinematics(path(t - h))) / (2.0 * h);
  return {deltaInverseKinematics(path(t)), rate};
}

/// The pick-and-place path: the platform centre at time t [s], between two bins 0.2 m apart at
/// z = −0.65 m, lifting to z = −0.58 m between them; one cycle every `period` seconds, smooth
/// (cosine) blends.
inline Eigen::Vector3d pickAndPlacePath(double t, double period = 2.0) {
  const double phase = std::fmod(t, period) / period;  // 0 … 1
  const double s = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * phase);  // 0 → 1 → 0
  const double x = -0.1 + 0.2 * s;
  const double lift = std::sin(std::numbers::pi * std::fmod(2.0 * phase, 1.0));
  return {x, 0.0, -0.65 + 0.07 * lift};
}

}  // namespace hilsim::examples
