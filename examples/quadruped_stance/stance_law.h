// The control law of the quadruped_stance and humanoid_stance examples: a joint-space PD on every
// actuated joint of a floating-base robot around its standing posture (the model's initial
// configuration),
//
//   τ_j = k (q*_j − q_j) − c v_j,
//
// nothing on the free joint (the base is not actuated: the feet on the ground carry it). The legs
// then behave as springs that hold the base up; the ground contacts (docs/CONTACT.md) do the rest.
// A PD without gravity compensation leaves a sag of about m g l / (4 k) at each knee: a few
// centimetres of crouch for the bundled Solo 12 at k = 3 N·m/rad, which it holds; a lean of 0.12°
// for the 131 kg humanoid at k = 5000 N·m/rad, on its ankles.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

#include "engine/model/model.h"

namespace hilsim::examples {

class StanceLaw {
 public:
  /// `stiffness` k [N·m/rad], `damping` c [N·m·s/rad] of every actuated joint (the revolute and
  /// prismatic ones). The damping acts on the state of the previous cycle, explicitly: keep
  /// h c λ_max(M⁻¹) below 2 for the control step h (the humanoid's legs have λ_max = 2.16, so
  /// c < 927 at 1 kHz).
  StanceLaw(const Model& model, double stiffness, double damping)
      : stiffness_(stiffness), damping_(damping), nq_(model.nq), nv_(model.nv) {
    const Eigen::VectorXd posture = model.initialConfiguration();
    for (int i = 1; i < model.nbodies; ++i) {
      if (model.nv_joint[i] != 1) continue;  // the free joint, and any other unactuated one
      joints_.push_back({model.idx_q[i], model.idx_v[i], posture[model.idx_q[i]]});
    }
  }

  /// τ (nv) from the state q (nq), v (nv): zero on the unactuated dofs.
  void torques(std::span<const double> q, std::span<const double> v, std::span<double> tau) const {
    if (static_cast<int>(q.size()) != nq_ || static_cast<int>(v.size()) != nv_ ||
        static_cast<int>(tau.size()) != nv_)
      throw std::invalid_argument("StanceLaw: q, v and tau must have the model's nq, nv, nv");
    for (double& t : tau) t = 0.0;
    for (const Joint& j : joints_)
      tau[j.v] = stiffness_ * (j.target - q[j.q]) - damping_ * v[j.v];
  }

 private:
  struct Joint {
    int q, v;
    double target;  // [rad or m]
  };
  double stiffness_, damping_;
  int nq_, nv_;
  std::vector<Joint> joints_;
};

/// How the bundled legged robots stand (docs/CONTACT.md): the stance law's gains, and a push on
/// the base that the stance takes and recovers from (0.1 s of a force in W at the base's origin).
struct StanceSetting {
  std::string_view model;     ///< the bundled model's name
  double stiffness, damping;  ///< the law's k [N·m/rad] and c [N·m·s/rad]
  std::array<double, 3> push;  ///< [N], in W
  std::string_view push_direction;  ///< how it pushes, for people
};

inline constexpr std::array<StanceSetting, 2> kStanceSettings = {{
    {"quadruped", 3.0, 0.05, {0.0, 10.0, 0.0}, "sideways"},
    // forward: the ankles catch 675 N; sideways its feet slide (docs/CONTACT.md)
    {"humanoid", 5000.0, 700.0, {600.0, 0.0, 0.0}, "forward"},
}};

/// The setting of a bundled model; nullptr for one without.
inline const StanceSetting* stanceSetting(std::string_view model) {
  for (const StanceSetting& s : kStanceSettings)
    if (s.model == model) return &s;
  return nullptr;
}

}  // namespace hilsim::examples
