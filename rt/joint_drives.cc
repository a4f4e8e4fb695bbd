#include "rt/joint_drives.h"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/flexible_dynamics.h"
#include "engine/model/data.h"
#include "rt/joint_entries.h"

namespace hilsim::rt {

const char* commandInterfaceName(CommandInterface interface) {
  switch (interface) {
    case CommandInterface::kEffort: return "effort";
    case CommandInterface::kPosition: return "position";
    case CommandInterface::kVelocity: return "velocity";
  }
  return "?";
}

bool takesSetPoints(JointType type) {
  return type == JointType::kRevolute || type == JointType::kPrismatic ||
         type == JointType::kPlanar;
}

Eigen::VectorXd smallestInertias(const Model& model, const Eigen::VectorXd& q) {
  Data data(model, DataWorkspace::kJointSpaceInertia);
  const Eigen::MatrixXd& mass =
      model.has_flexible_bodies ? flexibleCrba(model, data, q) : crba(model, data, q);
  const Eigen::LLT<Eigen::MatrixXd> factor(mass);
  if (factor.info() != Eigen::Success) return {};
  return factor.solve(Eigen::MatrixXd::Identity(model.nv, model.nv)).diagonal().cwiseInverse();
}

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

std::string describeGains(const DriveConfig& d) {
  std::ostringstream s;
  s << "kp = " << d.kp << ", kd = " << d.kd << ", ki = " << d.ki;
  return s.str();
}

void checkGains(const DriveConfig& d, const std::string& where) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(where + ": " + why + " (" + describeGains(d) + ")");
  };
  if (!std::isfinite(d.kp) || !std::isfinite(d.kd) || !std::isfinite(d.ki)) {
    fail("gains must be finite");
  }
  switch (d.interface) {
    case CommandInterface::kEffort:
      if (d.kp != 0.0 || d.kd != 0.0 || d.ki != 0.0) fail("an effort interface takes no gains");
      break;
    case CommandInterface::kPosition:
      if (!(d.kp > 0.0) || !(d.kd > 0.0)) fail("a position interface needs kp > 0 and kd > 0");
      if (d.ki != 0.0) fail("a position interface takes no ki");
      break;
    case CommandInterface::kVelocity:
      if (!(d.kd > 0.0) || d.ki < 0.0) fail("a velocity interface needs kd > 0 and ki ≥ 0");
      if (d.kp != 0.0) fail("a velocity interface takes no kp (its gain is kd)");
      break;
  }
}

}  // namespace

JointDrives::JointDrives(const Model& model, const std::vector<DriveConfig>& drives, double dt)
    : model_(model),
      dt_(dt),
      interface_(static_cast<std::size_t>(model.nv), CommandInterface::kEffort),
      kp_(Eigen::VectorXd::Zero(model.nv)),
      kd_(Eigen::VectorXd::Zero(model.nv)),
      ki_(Eigen::VectorXd::Zero(model.nv)),
      integral_(Eigen::VectorXd::Zero(model.nv)),
      q_index_(static_cast<std::size_t>(model.nv), -1) {
  const JointEntries<DriveConfig> entries = resolveJointEntries(
      model, drives, "drives", [&](const DriveConfig& d, int body, const std::string& where) {
        checkGains(d, where);
        if (body >= 0 && d.interface != CommandInterface::kEffort &&
            !takesSetPoints(model.joint_type[body])) {
          throw std::invalid_argument(where + ": a " +
                                      std::string(jointTypeName(model.joint_type[body])) +
                                      " joint takes efforts only (position and velocity "
                                      "interfaces are for revolute, prismatic and planar joints)");
        }
      });
  for (int body = 1; body < model.nbodies; ++body) {
    const DriveConfig* d = entries.named[static_cast<std::size_t>(body)];
    // "*" gives the joints it can drive its interface; the others keep efforts
    if (d == nullptr && takesSetPoints(model.joint_type[body])) d = entries.fallback;
    if (d == nullptr || d->interface == CommandInterface::kEffort) continue;
    for (int k = 0; k < model.nv_joint[body]; ++k) {
      const int dof = model.idx_v[body] + k;
      const auto at = static_cast<std::size_t>(dof);
      interface_[at] = d->interface;
      kp_[dof] = d->kp;
      kd_[dof] = d->kd;
      ki_[dof] = d->ki;
      q_index_[at] = model.idx_q[body] + k;
      effort_only_ = false;
      any_position_ = any_position_ || d->interface == CommandInterface::kPosition;
      any_velocity_ = any_velocity_ || d->interface == CommandInterface::kVelocity;
    }
  }
}

void JointDrives::compute(const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                          const DriveReference& ref, Eigen::VectorXd& tau) {
  for (int dof = 0; dof < model_.nv; ++dof) {
    const double feed_forward = ref.tau != nullptr ? ref.tau[dof] : 0.0;
    switch (interface_[static_cast<std::size_t>(dof)]) {
      case CommandInterface::kEffort: tau[dof] = feed_forward; break;
      case CommandInterface::kPosition: {
        const double v_ref = ref.velocity != nullptr ? ref.velocity[dof] : 0.0;
        const double q_err = ref.position[dof] - q[q_index_[static_cast<std::size_t>(dof)]];
        tau[dof] = feed_forward + kp_[dof] * q_err + kd_[dof] * (v_ref - v[dof]);
        break;
      }
      case CommandInterface::kVelocity: {
        const double v_err = ref.velocity[dof] - v[dof];
        if (ki_[dof] != 0.0) {
          // the integral term never asks more than the drive can give (anti-wind-up)
          const double limit = model_.effort_limit[dof];
          const double bound = limit > 0.0 ? limit : kInfinity;  // 0: no limit (Simulator)
          integral_[dof] = std::clamp(integral_[dof] + ki_[dof] * v_err * dt_, -bound, bound);
        }
        tau[dof] = feed_forward + kd_[dof] * v_err + integral_[dof];
        break;
      }
    }
  }
}

void JointDrives::holdAt(const Eigen::VectorXd& q, double* position) const {
  for (int dof = 0; dof < model_.nv; ++dof) {
    if (interface_[static_cast<std::size_t>(dof)] == CommandInterface::kPosition) {
      position[dof] = q[q_index_[static_cast<std::size_t>(dof)]];
    }
  }
}

void JointDrives::resetIntegrals() { integral_.setZero(); }

std::string JointDrives::stabilityProblem(const Eigen::VectorXd& q) const {
  if (effort_only_) return "";
  // A PD loop under a zero-order hold on inertia I, the plant stepped exactly over dt:
  // e' = e + dt·v + dt²/2·u, v' = v + dt·u, u = −(kp e + kd v)/I. With a = kp dt²/I, b = kd dt/I
  // its characteristic polynomial is λ² − (2 − a/2 − b) λ + (1 − b + a/2); Jury's conditions
  // give a/2 < b < 2, i.e. kp·dt/2 < kd and kd·dt < 2 I (a velocity loop: a = 0).
  // a massless body's DoF has no inertia to bound: only the first condition applies then
  const Eigen::VectorXd inertias = smallestInertias(model_, q);
  for (int dof = 0; dof < model_.nv; ++dof) {
    const CommandInterface interface = interface_[static_cast<std::size_t>(dof)];
    if (interface == CommandInterface::kEffort) continue;
    std::ostringstream why;
    const std::string& joint = model_.joint_names[static_cast<std::size_t>(model_.dof_body[dof])];
    if (interface == CommandInterface::kPosition && !(kp_[dof] * dt_ / 2.0 < kd_[dof])) {
      why << "joint '" << joint << "' (DoF " << dof << "): position loop kp = " << kp_[dof]
          << ", kd = " << kd_[dof] << " is unstable at dt = " << dt_
          << " s (a sampled PD loop needs kd > kp·dt/2 = " << kp_[dof] * dt_ / 2.0 << ")";
      return why.str();
    }
    if (inertias.size() == model_.nv && std::isfinite(inertias[dof])) {
      const double inertia = inertias[dof];
      if (!(kd_[dof] * dt_ < 2.0 * inertia)) {
        why << "joint '" << joint << "' (DoF " << dof << "): " << commandInterfaceName(interface)
            << " loop kd = " << kd_[dof] << " is unstable at dt = " << dt_
            << " s on its inertia " << inertia << " (a sampled loop needs kd·dt < 2·inertia: dt < "
            << 2.0 * inertia / kd_[dof] << " s, more substeps, or a lower kd)";
        return why.str();
      }
    }
  }
  return "";
}

}  // namespace hilsim::rt
