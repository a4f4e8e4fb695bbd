// SensorModels: what a controller reads instead of the simulated truth (docs/REALISM.md, "Sensor
// models"). Once per control cycle, from the published truth:
//
//   joint encoders   q̃ = r ⌊(q + b + n) / r⌋     (1-DoF joints: resolution r, bias b, noise n)
//   joint velocities ṽ = v + b + n
//   torque sensors   τ̃ = τ + b + n              (the torque the joint got, State.tau)
//   IMU (floating base, in the base's frame B)
//     orientation           the base's quaternion turned by a rotation of noise n (rad per axis)
//     angular velocity      ω_B + b + n
//     linear acceleration   R_WBᵀ (ā_W − g) + b + n, ā_W the base origin's mean acceleration over
//                           the cycle (Δv / Δt: an IMU's delta-velocity output)
//   contact forces   f̃ = f + n (per component, world frame)
//
// then all of it `delay_cycles` control cycles late. Noise is Gaussian with the configured
// standard deviation, drawn from one generator per session seeded by `seed`: the same seed gives
// the same readings, bit for bit, on one binary.
#pragma once

#include <Eigen/Core>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "rt/capacity.h"

namespace hilsim::rt {

/// Longest sensor delay [control cycles].
constexpr int kMaxSensorDelayCycles = 1000;

/// One joint's sensors (every DoF of it).
struct JointSensorConfig {
  /// A joint's name (Model::joint_names), or "*" for every joint no other entry names.
  std::string joint;
  double position_resolution = 0.0;  ///< encoder quantum [rad or m] (0: none); 1-DoF joints
  double position_noise = 0.0;       ///< standard deviation [rad or m]; 1-DoF joints
  double position_bias = 0.0;        ///< [rad or m]; 1-DoF joints
  double velocity_noise = 0.0;       ///< standard deviation [rad/s or m/s]
  double velocity_bias = 0.0;        ///< [rad/s or m/s]
  double torque_noise = 0.0;         ///< joint torque sensor: standard deviation [N·m or N]
  double torque_bias = 0.0;          ///< [N·m or N]
};

/// The floating base's IMU (models whose first joint is free).
struct ImuConfig {
  bool enabled = false;
  double orientation_noise = 0.0;          ///< per axis, standard deviation [rad]
  double angular_velocity_noise = 0.0;     ///< per axis [rad/s]
  Eigen::Vector3d angular_velocity_bias = Eigen::Vector3d::Zero();     ///< in B [rad/s]
  double linear_acceleration_noise = 0.0;  ///< per axis [m/s²]
  Eigen::Vector3d linear_acceleration_bias = Eigen::Vector3d::Zero();  ///< in B [m/s²]
};

struct SensorsConfig {
  std::vector<JointSensorConfig> joints;
  ImuConfig imu;
  double contact_force_noise = 0.0;  ///< per component, standard deviation [N]
  int delay_cycles = 0;              ///< readings this many control cycles late, 0 … 1000
  std::uint64_t seed = 0;            ///< the noise generator's seed
  /// Some sensor differs from the truth (else the readings are the truth and are not modelled).
  bool any() const;
};

/// What the sensors read in one cycle. Fixed size: copies never allocate.
struct SensorReadings {
  std::array<double, kMaxCoordinates> q{}, v{}, tau{};  ///< nq, nv, nv values
  std::array<double, 4> imu_orientation{1.0, 0.0, 0.0, 0.0};  ///< quaternion w, x, y, z: B in W
  std::array<double, 3> imu_angular_velocity{};               ///< in B [rad/s]
  std::array<double, 3> imu_linear_acceleration{};            ///< specific force in B [m/s²]
  std::array<double, 3 * kMaxContacts> contact_force{};       ///< per sphere, W [N]
};

/// A Gaussian noise source that is the same on every library version: xoshiro256** seeded by
/// splitmix64, Box–Muller.
class GaussianNoise {
 public:
  explicit GaussianNoise(std::uint64_t seed) { reseed(seed); }
  void reseed(std::uint64_t seed);
  /// A standard normal sample.
  double next();
  std::uint64_t nextBits();

 private:
  std::array<std::uint64_t, 4> state_{};
  double spare_ = 0.0;
  bool has_spare_ = false;
};

class SensorModels {
 public:
  /// Resolves `config` against the model (an unknown joint, a joint named twice, a negative
  /// deviation or resolution, a non-finite value, an IMU without a floating base, a delay out of
  /// range: std::invalid_argument naming the field). `cycle_time`: the control period [s].
  SensorModels(const Model& model, const SensorsConfig& config, double cycle_time);

  /// No sensor is modelled: the readings would be the truth.
  bool ideal() const { return ideal_; }
  bool hasImu() const { return config_.imu.enabled; }
  int delayCycles() const { return config_.delay_cycles; }

  /// One control cycle: reads the truth (q: nq, v and tau: nv, contact_force: 3 per sphere) and
  /// returns the readings of `delay_cycles` cycles ago (the oldest there is, right after a reset).
  /// Allocation-free.
  const SensorReadings& read(const double* q, const double* v, const double* tau,
                             const double* contact_force, int contacts);
  /// Back to the seed and an empty delay line, at rest (the next read is the first).
  void reset();

 private:
  double gaussian(double deviation) { return deviation > 0.0 ? deviation * noise_.next() : 0.0; }

  const Model& model_;
  SensorsConfig config_;
  double cycle_time_;
  bool ideal_ = true;
  // per DoF
  std::vector<int> q_index_;  // its coordinate, −1 unless a 1-DoF joint's
  Eigen::VectorXd resolution_, position_noise_, position_bias_, velocity_noise_, velocity_bias_,
      torque_noise_, torque_bias_;
  GaussianNoise noise_;
  std::vector<SensorReadings> line_;  // delay_cycles + 1 readings, a ring
  std::size_t head_ = 0;
  std::uint64_t reads_ = 0;
  Eigen::Vector3d previous_base_velocity_ = Eigen::Vector3d::Zero();  // in W
};

}  // namespace hilsim::rt
