// SensorModels: the noise's mean and variance against the configured bias and deviation (with
// bounds of five standard errors of the estimates), the encoder's truncation, the delay as an
// exact shift by whole cycles, the IMU's specific force in free fall and at rest, reproducibility
// from the seed, and the configuration errors.

#include "rt/sensor_models.h"

#include <gtest/gtest.h>

#include <Eigen/Geometry>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <vector>

#include "engine/builder/model_builder.h"

namespace hilsim::rt {
namespace {

constexpr double kCycle = 1e-3;

/// Two revolute joints "shoulder", "elbow" on a fixed base.
Model arm() {
  ModelBuilder builder("arm");
  const Inertia link(1.0, Vector3(0.2, 0, 0), 0.01 * Matrix3::Identity());
  builder.addBody("upper", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link);
  builder.addBody("lower", "upper", Joint::revolute(Vector3::UnitZ()),
                  Transform(Matrix3::Identity(), Vector3(0.4, 0, 0)), link);
  return builder.build();
}

/// A free-floating box: q = (p, w x y z), v = (ṗ in W, ω in B).
Model floatingBox() {
  ModelBuilder builder("box");
  builder.addBody("base", "world", Joint::freeFlyer(), Transform(),
                  Inertia(2.0, Vector3::Zero(), 0.1 * Matrix3::Identity()));
  return builder.build();
}

/// Sample mean and (unbiased) variance.
struct Moments {
  double mean = 0.0, variance = 0.0;
};
Moments moments(const std::vector<double>& x) {
  Moments m;
  for (const double value : x) m.mean += value;
  m.mean /= static_cast<double>(x.size());
  for (const double value : x) m.variance += (value - m.mean) * (value - m.mean);
  m.variance /= static_cast<double>(x.size() - 1);
  return m;
}

// A sample of n normal values has a mean within 5 σ/√n of the true one and a variance within
// 5 σ² √(2/(n−1)) of it, but for a chance of about 10⁻⁶ each: the bounds every check here uses.
void expectNormal(const std::vector<double>& x, double mean, double deviation,
                  const std::string& what) {
  const double n = static_cast<double>(x.size());
  const Moments m = moments(x);
  EXPECT_NEAR(m.mean, mean, 5.0 * deviation / std::sqrt(n)) << what;
  EXPECT_NEAR(m.variance, deviation * deviation,
              5.0 * deviation * deviation * std::sqrt(2.0 / (n - 1.0)))
      << what;
}

TEST(GaussianNoise, IsStandardNormalAndReproducibleFromItsSeed) {
  GaussianNoise noise(7);
  std::vector<double> x(200'000);
  for (double& value : x) value = noise.next();
  expectNormal(x, 0.0, 1.0, "N(0, 1)");
  // tails: P(|x| > 3) = 0.0027
  const auto beyond = std::count_if(x.begin(), x.end(), [](double v) { return std::abs(v) > 3.0; });
  EXPECT_NEAR(static_cast<double>(beyond) / x.size(), 0.0027, 5.0 * std::sqrt(0.0027 / x.size()));
  noise.reseed(7);
  for (int k = 0; k < 1000; ++k) ASSERT_EQ(noise.next(), x[k]) << k;
  GaussianNoise other(8);
  EXPECT_NE(other.next(), x[0]);
}

TEST(SensorModels, NoiseAndBiasHaveTheConfiguredMomentsOnEveryReading) {
  const Model model = arm();
  SensorsConfig config;
  config.joints = {{"*", 0.0, 0.01, 0.002, 0.05, -0.01, 0.3, 0.1}};
  config.seed = 42;
  SensorModels sensors(model, config, kCycle);
  ASSERT_FALSE(sensors.ideal());
  const double q[2] = {0.5, -1.0}, v[2] = {0.2, 0.0}, tau[2] = {3.0, -2.0};
  constexpr int kReads = 20'000;
  std::vector<std::vector<double>> errors(6);
  for (int n = 0; n < kReads; ++n) {
    const SensorReadings& r = sensors.read(q, v, tau, nullptr, 0);
    for (int dof = 0; dof < 2; ++dof) {
      errors[dof].push_back(r.q[dof] - q[dof]);
      errors[2 + dof].push_back(r.v[dof] - v[dof]);
      errors[4 + dof].push_back(r.tau[dof] - tau[dof]);
    }
  }
  for (int dof = 0; dof < 2; ++dof) {
    expectNormal(errors[dof], 0.002, 0.01, "position");
    expectNormal(errors[2 + dof], -0.01, 0.05, "velocity");
    expectNormal(errors[4 + dof], 0.1, 0.3, "torque");
  }
  // the two joints' noises are independent
  double covariance = 0.0;
  for (int n = 0; n < kReads; ++n) {
    covariance += (errors[0][n] - 0.002) * (errors[1][n] - 0.002);
  }
  EXPECT_NEAR(covariance / kReads, 0.0, 5.0 * 0.01 * 0.01 / std::sqrt(kReads));
}

TEST(SensorModels, AnEncoderTruncatesToWholeCounts) {
  const Model model = arm();
  SensorsConfig config;
  config.joints = {{"upper", 0.001}};
  SensorModels sensors(model, config, kCycle);
  const double v[2] = {0, 0}, tau[2] = {0, 0};
  for (const auto& [angle, count] : {std::pair{0.12345, 0.123}, {-0.12345, -0.124},
                                     {0.0, 0.0}, {2.0, 2.0}}) {
    const double q[2] = {angle, angle};
    const SensorReadings& r = sensors.read(q, v, tau, nullptr, 0);
    EXPECT_NEAR(r.q[0], count, 1e-12) << angle;
    EXPECT_EQ(r.q[1], angle) << "the elbow has no encoder model";
  }
}

TEST(SensorModels, ADelayIsAnExactShiftByWholeCycles) {
  const Model model = arm();
  SensorsConfig config;
  config.delay_cycles = 4;
  SensorModels sensors(model, config, kCycle);
  ASSERT_FALSE(sensors.ideal()) << "a delay alone is a model";
  const double v[2] = {0, 0}, tau[2] = {0, 0};
  for (int n = 0; n < 30; ++n) {
    const double q[2] = {1.0 * n, -1.0 * n};
    const SensorReadings& r = sensors.read(q, v, tau, nullptr, 0);
    EXPECT_EQ(r.q[0], std::max(0, n - 4)) << "cycle " << n << ": the first reading until then";
    EXPECT_EQ(r.q[1], -std::max(0, n - 4));
  }
  sensors.reset();
  const double q[2] = {99.0, 99.0};
  EXPECT_EQ(sensors.read(q, v, tau, nullptr, 0).q[0], 99.0) << "a reset starts the line again";
}

// The IMU's accelerometer reads the specific force: zero in free fall whatever the attitude, and
// the reaction to gravity, (0, 0, 9.81) turned into the base frame, at rest.
TEST(SensorModels, TheImuReadsTheSpecificForceAndTheAttitude) {
  const Model model = floatingBox();
  SensorsConfig config;
  config.imu.enabled = true;
  config.imu.angular_velocity_bias = Eigen::Vector3d(0.01, -0.02, 0.03);
  SensorModels sensors(model, config, kCycle);
  ASSERT_TRUE(sensors.hasImu());
  const Eigen::Quaterniond attitude(Eigen::AngleAxisd(std::numbers::pi / 2, Vector3::UnitX()));
  double q[7] = {0, 0, 5, attitude.w(), attitude.x(), attitude.y(), attitude.z()};
  double v[6] = {0, 0, 0, 0.3, 0.0, -0.1};
  const double tau[6] = {};
  // free fall: v_z drops by g·T every cycle
  for (int n = 0; n < 5; ++n) {
    v[2] = -9.81 * kCycle * n;
    const SensorReadings& r = sensors.read(q, v, tau, nullptr, 0);
    if (n == 0) continue;  // no cycle behind the first reading
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(r.imu_linear_acceleration[k], 0.0, 1e-9) << n;
    EXPECT_NEAR(r.imu_orientation[0], attitude.w(), 1e-15);
    EXPECT_NEAR(r.imu_orientation[1], attitude.x(), 1e-15);
    EXPECT_NEAR(r.imu_angular_velocity[0], 0.31, 1e-15);
    EXPECT_NEAR(r.imu_angular_velocity[2], -0.07, 1e-15);
  }
  // at rest, turned 90° about x: the reaction to gravity, 9.81 m/s² up in W, lies along B's y
  v[2] = 0.0;
  sensors.read(q, v, tau, nullptr, 0);
  const SensorReadings& rest = sensors.read(q, v, tau, nullptr, 0);
  const Eigen::Vector3d expected = attitude.conjugate() * Eigen::Vector3d(0, 0, 9.81);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(rest.imu_linear_acceleration[k], expected[k], 1e-12);
  EXPECT_NEAR(expected.norm(), 9.81, 1e-12);
  EXPECT_NEAR(std::abs(expected[1]), 9.81, 1e-12) << "gravity along B's y after the turn";
}

TEST(SensorModels, ImuNoiseHasTheConfiguredDeviation) {
  const Model model = floatingBox();
  SensorsConfig config;
  config.imu.enabled = true;
  config.imu.orientation_noise = 0.01;
  config.imu.angular_velocity_noise = 0.02;
  config.imu.linear_acceleration_noise = 0.5;
  config.seed = 3;
  SensorModels sensors(model, config, kCycle);
  const double q[7] = {0, 0, 0, 1, 0, 0, 0}, v[6] = {}, tau[6] = {};
  std::vector<double> tilt, rate, accel;
  for (int n = 0; n < 20'000; ++n) {
    const SensorReadings& r = sensors.read(q, v, tau, nullptr, 0);
    // a small rotation of angle θ about a random axis: its quaternion's x is sin(θ_x / 2)
    tilt.push_back(2.0 * std::asin(r.imu_orientation[1]));
    rate.push_back(r.imu_angular_velocity[1]);
    accel.push_back(r.imu_linear_acceleration[0]);
    EXPECT_NEAR(Eigen::Vector4d(r.imu_orientation.data()).norm(), 1.0, 1e-12);
  }
  // the x component of the rotation vector is N(0, σ²) to O(σ³)
  expectNormal(tilt, 0.0, 0.01, "orientation");
  expectNormal(rate, 0.0, 0.02, "angular velocity");
  expectNormal(accel, 0.0, 0.5, "linear acceleration");
}

TEST(SensorModels, TheSameSeedGivesTheSameReadingsAfterAReset) {
  const Model model = arm();
  SensorsConfig config;
  config.joints = {{"*", 0.0, 0.01, 0.0, 0.01}};
  config.contact_force_noise = 1.0;
  config.delay_cycles = 2;
  config.seed = 11;
  SensorModels sensors(model, config, kCycle);
  const double q[2] = {0.1, 0.2}, v[2] = {0, 0}, tau[2] = {0, 0}, force[3] = {0, 0, 50};
  std::vector<double> first;
  for (int n = 0; n < 100; ++n) {
    const SensorReadings& r = sensors.read(q, v, tau, force, 1);
    first.insert(first.end(), {r.q[0], r.q[1], r.v[0], r.contact_force[2]});
  }
  sensors.reset();
  for (int n = 0; n < 100; ++n) {
    const SensorReadings& r = sensors.read(q, v, tau, force, 1);
    ASSERT_EQ(r.q[0], first[4 * n]) << n;
    ASSERT_EQ(r.q[1], first[4 * n + 1]) << n;
    ASSERT_EQ(r.v[0], first[4 * n + 2]) << n;
    ASSERT_EQ(r.contact_force[2], first[4 * n + 3]) << n;
  }
  EXPECT_NE(first[4 * 50 + 3], 50.0) << "the contact force sensor is noisy";
}

TEST(SensorModels, ConfigurationErrorsNameTheFieldAndTheReason) {
  const Model model = arm();
  const auto refused = [&](const Model& m, const SensorsConfig& config, const std::string& why) {
    try {
      SensorModels s(m, config, kCycle);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  SensorsConfig c;
  c.joints = {{"knee"}};
  refused(model, c, "sensors.joints[0] (joint 'knee'): the model 'arm' has no such joint");
  c.joints = {{"upper"}, {"upper"}};
  refused(model, c, "sensors.joints[1] (joint 'upper'): named twice");
  c.joints = {{"upper", 0.0, -0.1}};
  refused(model, c, "position_noise -0.1 must be finite and ≥ 0");
  c.joints = {{"upper", 0.0, 0.0, NAN}};
  refused(model, c, "position_bias must be finite");
  c.joints = {};
  c.imu.enabled = true;
  refused(model, c, "has no floating base to carry an IMU");
  c.imu.enabled = false;
  c.delay_cycles = 1001;
  refused(model, c, "delay_cycles 1001 is outside 0 … 1000");
  SensorsConfig encoder_on_base;
  encoder_on_base.joints = {{"base", 0.001}};
  refused(floatingBox(), encoder_on_base, "a free joint has no encoder coordinates");
  EXPECT_TRUE(SensorModels(model, SensorsConfig{}, kCycle).ideal());
}

}  // namespace
}  // namespace hilsim::rt
