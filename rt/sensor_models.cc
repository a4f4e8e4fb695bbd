#include "rt/sensor_models.h"

#include <Eigen/Geometry>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>
#include <stdexcept>

#include "engine/integrators/simulator.h"
#include "rt/joint_entries.h"

namespace hilsim::rt {

namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// A deviation or resolution: finite and ≥ 0; a bias: finite.
void checkDeviation(double value, const std::string& where, const char* field) {
  if (!(value >= 0.0 && std::isfinite(value))) {
    std::ostringstream why;
    why << where << ": " << field << " " << value << " must be finite and ≥ 0";
    throw std::invalid_argument(why.str());
  }
}
void checkBias(double value, const std::string& where, const char* field) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(where + ": " + field + " must be finite");
  }
}

void check(const JointSensorConfig& s, const std::string& where) {
  checkDeviation(s.position_resolution, where, "position_resolution");
  checkDeviation(s.position_noise, where, "position_noise");
  checkBias(s.position_bias, where, "position_bias");
  checkDeviation(s.velocity_noise, where, "velocity_noise");
  checkBias(s.velocity_bias, where, "velocity_bias");
  checkDeviation(s.torque_noise, where, "torque_noise");
  checkBias(s.torque_bias, where, "torque_bias");
}

bool differs(const JointSensorConfig& s) {
  return s.position_resolution != 0.0 || s.position_noise != 0.0 || s.position_bias != 0.0 ||
         s.velocity_noise != 0.0 || s.velocity_bias != 0.0 || s.torque_noise != 0.0 ||
         s.torque_bias != 0.0;
}

}  // namespace

bool SensorsConfig::any() const {
  return std::any_of(joints.begin(), joints.end(), differs) || imu.enabled ||
         contact_force_noise != 0.0 || delay_cycles != 0;
}

void GaussianNoise::reseed(std::uint64_t seed) {
  for (std::uint64_t& word : state_) word = splitmix64(seed);
  has_spare_ = false;
}

std::uint64_t GaussianNoise::nextBits() {
  // xoshiro256** (Blackman, Vigna)
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double GaussianNoise::next() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // Box–Muller on two uniforms in (0, 1]: 53 random bits each, never 0 (log(0))
  const double u1 = (static_cast<double>(nextBits() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(nextBits() >> 11) * 0x1.0p-53;
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * std::numbers::pi * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

SensorModels::SensorModels(const Model& model, const SensorsConfig& config, double cycle_time)
    : model_(model),
      config_(config),
      cycle_time_(cycle_time),
      q_index_(static_cast<std::size_t>(model.nv), -1),
      resolution_(Eigen::VectorXd::Zero(model.nv)),
      position_noise_(Eigen::VectorXd::Zero(model.nv)),
      position_bias_(Eigen::VectorXd::Zero(model.nv)),
      velocity_noise_(Eigen::VectorXd::Zero(model.nv)),
      velocity_bias_(Eigen::VectorXd::Zero(model.nv)),
      torque_noise_(Eigen::VectorXd::Zero(model.nv)),
      torque_bias_(Eigen::VectorXd::Zero(model.nv)),
      noise_(config.seed) {
  const JointEntries<JointSensorConfig> entries = resolveJointEntries(
      model, config.joints, "sensors.joints",
      [&](const JointSensorConfig& s, int body, const std::string& where) {
        check(s, where);
        if (body >= 0 && model.nq_joint[body] != model.nv_joint[body] &&
            (s.position_resolution != 0.0 || s.position_noise != 0.0 || s.position_bias != 0.0)) {
          throw std::invalid_argument(where + ": a " +
                                      std::string(jointTypeName(model.joint_type[body])) +
                                      " joint has no encoder coordinates (position_* are for "
                                      "revolute, prismatic and planar joints; a floating base "
                                      "has an IMU)");
        }
      });
  for (int body = 1; body < model.nbodies; ++body) {
    const JointSensorConfig* s = entries.named[static_cast<std::size_t>(body)];
    if (s == nullptr) s = entries.fallback;
    if (s == nullptr) continue;
    const bool coordinates = model.nq_joint[body] == model.nv_joint[body];
    for (int k = 0; k < model.nv_joint[body]; ++k) {
      const int dof = model.idx_v[body] + k;
      if (coordinates) {
        q_index_[static_cast<std::size_t>(dof)] = model.idx_q[body] + k;
        resolution_[dof] = s->position_resolution;
        position_noise_[dof] = s->position_noise;
        position_bias_[dof] = s->position_bias;
      }
      velocity_noise_[dof] = s->velocity_noise;
      velocity_bias_[dof] = s->velocity_bias;
      torque_noise_[dof] = s->torque_noise;
      torque_bias_[dof] = s->torque_bias;
    }
  }
  const ImuConfig& imu = config.imu;
  checkDeviation(imu.orientation_noise, "sensors.imu", "orientation_noise");
  checkDeviation(imu.angular_velocity_noise, "sensors.imu", "angular_velocity_noise");
  checkDeviation(imu.linear_acceleration_noise, "sensors.imu", "linear_acceleration_noise");
  if (!imu.angular_velocity_bias.allFinite() || !imu.linear_acceleration_bias.allFinite()) {
    throw std::invalid_argument("sensors.imu: biases must be finite");
  }
  if (imu.enabled && !hasFloatingBase(model)) {
    throw std::invalid_argument("sensors.imu: the model '" + model.name +
                                "' has no floating base to carry an IMU (its first joint is not "
                                "a free joint)");
  }
  checkDeviation(config.contact_force_noise, "sensors", "contact_force_noise");
  if (config.delay_cycles < 0 || config.delay_cycles > kMaxSensorDelayCycles) {
    throw std::invalid_argument("sensors.delay_cycles " + std::to_string(config.delay_cycles) +
                                " is outside 0 … " + std::to_string(kMaxSensorDelayCycles));
  }
  ideal_ = !config.any();
  line_.resize(static_cast<std::size_t>(config.delay_cycles) + 1);
}

const SensorReadings& SensorModels::read(const double* q, const double* v, const double* tau,
                                         const double* contact_force, int contacts) {
  // the newest reading goes where the oldest was; the one delay_cycles back is returned
  head_ = (head_ + 1) % line_.size();
  SensorReadings& r = line_[head_];
  std::copy_n(q, model_.nq, r.q.begin());
  for (int dof = 0; dof < model_.nv; ++dof) {
    if (const int k = q_index_[static_cast<std::size_t>(dof)]; k >= 0) {
      const double sensed = q[k] + position_bias_[dof] + gaussian(position_noise_[dof]);
      // an encoder counts whole quanta: it truncates
      r.q[k] = resolution_[dof] > 0.0 ? resolution_[dof] * std::floor(sensed / resolution_[dof])
                                      : sensed;
    }
    r.v[dof] = v[dof] + velocity_bias_[dof] + gaussian(velocity_noise_[dof]);
    r.tau[dof] = tau[dof] + torque_bias_[dof] + gaussian(torque_noise_[dof]);
  }
  for (int k = 0; k < 3 * contacts; ++k) {
    r.contact_force[k] = contact_force[k] + gaussian(config_.contact_force_noise);
  }
  if (config_.imu.enabled) {
    // the free joint: q = (p, quaternion w x y z) in J, v = (ṗ in J, ω in B); J is fixed in W
    const int qi = model_.idx_q[1], vi = model_.idx_v[1];
    const Eigen::Quaterniond joint_frame(model_.joint_placement[1].rotation);
    const Eigen::Quaterniond base =
        joint_frame * Eigen::Quaterniond(q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6]).normalized();
    Eigen::Vector3d tilt(gaussian(config_.imu.orientation_noise), gaussian(config_.imu.orientation_noise),
                         gaussian(config_.imu.orientation_noise));
    Eigen::Quaterniond sensed = base;
    if (const double angle = tilt.norm(); angle > 0.0) {
      sensed = base * Eigen::Quaterniond(Eigen::AngleAxisd(angle, tilt / angle));
    }
    r.imu_orientation = {sensed.w(), sensed.x(), sensed.y(), sensed.z()};
    const Eigen::Vector3d velocity = joint_frame * Eigen::Vector3d(v[vi], v[vi + 1], v[vi + 2]);
    // the first reading after a reset has no cycle behind it: at rest
    const Eigen::Vector3d acceleration =
        reads_ == 0 ? Eigen::Vector3d::Zero()
                    : Eigen::Vector3d((velocity - previous_base_velocity_) / cycle_time_);
    previous_base_velocity_ = velocity;
    const Eigen::Vector3d specific_force =
        base.conjugate() * (acceleration - model_.gravity) + config_.imu.linear_acceleration_bias;
    const Eigen::Vector3d rate = Eigen::Vector3d(v[vi + 3], v[vi + 4], v[vi + 5]) +
                                 config_.imu.angular_velocity_bias;
    for (int k = 0; k < 3; ++k) {
      r.imu_angular_velocity[k] = rate[k] + gaussian(config_.imu.angular_velocity_noise);
      r.imu_linear_acceleration[k] =
          specific_force[k] + gaussian(config_.imu.linear_acceleration_noise);
    }
  }
  ++reads_;
  // right after a reset the line holds fewer readings than the delay: the oldest one
  const std::size_t back =
      static_cast<std::size_t>(std::min<std::uint64_t>(reads_ - 1, config_.delay_cycles));
  return line_[(head_ + line_.size() - back) % line_.size()];
}

void SensorModels::reset() {
  noise_.reseed(config_.seed);
  head_ = 0;
  reads_ = 0;
  previous_base_velocity_.setZero();
}

}  // namespace hilsim::rt
