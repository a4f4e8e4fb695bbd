// ActuatorModels: each effect against its definition (the delay an exact shift by whole steps,
// the lag the exact step response 1 − e^(−t/T), the quantum, the ripple), their order, reset,
// and the configuration errors.

#include "rt/actuator_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <stdexcept>

#include "engine/builder/model_builder.h"

namespace hilsim::rt {
namespace {

/// A revolute joint "shoulder" and a spherical joint "wrist" on a chain.
Model arm() {
  ModelBuilder builder("arm");
  const Inertia link(1.0, Vector3(0.2, 0, 0), 0.01 * Matrix3::Identity());
  builder.addBody("shoulder", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link);
  builder.addBody("wrist", "shoulder", Joint::spherical(),
                  Transform(Matrix3::Identity(), Vector3(0.4, 0, 0)), link);
  return builder.build();
}

constexpr double kDt = 1e-3;

TEST(ActuatorModels, NoModelPassesTheCommandThrough) {
  const Model model = arm();
  ActuatorModels none(model, {}, kDt);
  EXPECT_TRUE(none.ideal());
  ActuatorModels zeros(model, {{"*", 0.0, 0.0, 0.0, 0.0, 0.0}}, kDt);
  EXPECT_TRUE(zeros.ideal());
  Eigen::VectorXd out(4);
  const Eigen::Vector4d in(1e20, -3.0, 0.1, 7.0);
  zeros.apply(Eigen::VectorXd::Zero(5), in, out);
  EXPECT_EQ(out, in) << "bit for bit";
}

TEST(ActuatorModels, ADelayIsAnExactShiftByWholeSteps) {
  const Model model = arm();
  // 3.4 ms at 1 ms steps: 3 steps on the shoulder; the wrist's three DoFs 0
  ActuatorModels delayed(model, {{"shoulder", 0.0, 3.4e-3, 0.0, 0.0, 0.0}}, kDt);
  EXPECT_EQ(delayed.delaySteps(0), 3);
  EXPECT_EQ(delayed.delaySteps(1), 0);
  Eigen::VectorXd out(4);
  for (int n = 0; n < 50; ++n) {
    const Eigen::Vector4d in(n + 1.0, -(n + 1.0), 0.5 * n, 2.0);
    delayed.apply(Eigen::VectorXd::Zero(5), in, out);
    EXPECT_EQ(out[0], n >= 3 ? n - 2.0 : 0.0) << "step " << n << ": nothing before the first";
    EXPECT_EQ(out[1], in[1]);
  }
  delayed.reset();
  delayed.apply(Eigen::VectorXd::Zero(5), Eigen::Vector4d(9, 9, 9, 9), out);
  EXPECT_EQ(out[0], 0.0) << "a reset empties the line";
}

TEST(ActuatorModels, ALagIsTheExactFirstOrderStepResponse) {
  const Model model = arm();
  constexpr double kT = 0.02;
  ActuatorModels lag(model, {{"*", kT, 0.0, 0.0, 0.0, 0.0}}, kDt);
  Eigen::VectorXd out(4);
  const Eigen::Vector4d in(10.0, -4.0, 1.0, 0.0);
  for (int n = 1; n <= 200; ++n) {
    lag.apply(Eigen::VectorXd::Zero(5), in, out);
    // a held input through y' = y + (1 − e^(−h/T)) (u − y) from 0 is u (1 − e^(−n h/T)) exactly
    const double response = -std::expm1(-n * kDt / kT);
    for (int dof = 0; dof < 4; ++dof) {
      EXPECT_NEAR(out[dof], in[dof] * response, 1e-13 * std::abs(in[dof])) << "step " << n;
    }
  }
  // one time constant: 63.2 %
  ActuatorModels fresh(model, {{"*", kT, 0.0, 0.0, 0.0, 0.0}}, kDt);
  for (int n = 0; n < 20; ++n) fresh.apply(Eigen::VectorXd::Zero(5), in, out);
  EXPECT_NEAR(out[0] / in[0], 1.0 - std::exp(-1.0), 1e-12);
}

TEST(ActuatorModels, QuantisationRoundsToTheNearestQuantum) {
  const Model model = arm();
  ActuatorModels quantised(model, {{"shoulder", 0.0, 0.0, 0.25, 0.0, 0.0}}, kDt);
  Eigen::VectorXd out(4);
  for (const auto& [in, expected] : {std::pair{0.12, 0.0}, {0.13, 0.25}, {-0.38, -0.5},
                                     {1.0, 1.0}, {-0.37, -0.25}}) {
    quantised.apply(Eigen::VectorXd::Zero(5), Eigen::Vector4d(in, in, 0, 0), out);
    EXPECT_EQ(out[0], expected) << in;
    EXPECT_EQ(out[1], in) << "the wrist has no quantum";
  }
}

TEST(ActuatorModels, RippleIsPeriodicInTheJointsPosition) {
  const Model model = arm();
  constexpr double kPeriod = 2.0 * std::numbers::pi / 48.0;  // 48 periods per turn
  ActuatorModels ripple(model, {{"shoulder", 0.0, 0.0, 0.0, 0.1, kPeriod}}, kDt);
  Eigen::VectorXd out(4), q = Eigen::VectorXd::Zero(5);
  q[1] = 1.0;  // the wrist's quaternion w
  for (const double angle : {0.0, kPeriod / 4.0, kPeriod * 0.75, 3.0 * kPeriod + kPeriod / 4.0}) {
    q[0] = angle;
    ripple.apply(q, Eigen::Vector4d(20.0, 1, 1, 1), out);
    EXPECT_NEAR(out[0], 20.0 * (1.0 + 0.1 * std::sin(2.0 * std::numbers::pi * angle / kPeriod)),
                1e-12);
  }
  q[0] = kPeriod / 4.0;
  ripple.apply(q, Eigen::Vector4d(20.0, 1, 1, 1), out);
  EXPECT_NEAR(out[0], 22.0, 1e-12) << "the crest: +10 %";
}

// delay → quantum → lag → ripple: the lag smooths the quantised, delayed command.
TEST(ActuatorModels, TheEffectsComposeInTheirDocumentedOrder) {
  const Model model = arm();
  constexpr double kT = 0.01, kPeriod = 0.5;
  ActuatorModels all(model, {{"shoulder", kT, 2e-3, 0.5, 0.2, kPeriod}}, kDt);
  EXPECT_FALSE(all.ideal());
  Eigen::VectorXd out(4), q = Eigen::VectorXd::Zero(5);
  q[0] = 0.125;  // sin(2π·0.125/0.5) = 1: +20 %
  q[1] = 1.0;
  double lagged = 0.0;
  const double gain = -std::expm1(-kDt / kT);
  const double inputs[] = {3.3, 3.3, 3.3, -1.1, -1.1, 0.7, 0.7, 0.7, 0.7, 0.7};
  for (int n = 0; n < 10; ++n) {
    all.apply(q, Eigen::Vector4d(inputs[n], 0, 0, 0), out);
    const double delayed = n >= 2 ? inputs[n - 2] : 0.0;
    lagged += gain * (0.5 * std::round(delayed / 0.5) - lagged);
    EXPECT_NEAR(out[0], lagged * 1.2, 1e-14) << "step " << n;
  }
}

TEST(ActuatorModels, ConfigurationErrorsNameTheEntryAndTheReason) {
  const Model model = arm();
  const auto refused = [&](const std::vector<ActuatorConfig>& actuators, const std::string& why) {
    try {
      ActuatorModels a(model, actuators, kDt);
      ADD_FAILURE() << "accepted; expected: " << why;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({{"elbow"}}, "has no such joint");
  refused({{"shoulder"}, {"shoulder"}}, "actuators[1] (joint 'shoulder'): named twice");
  refused({{"*"}, {"*"}}, "a second '*'");
  refused({{"shoulder", -1.0}}, "time_constant -1 s must be finite and ≥ 0");
  refused({{"shoulder", 0.0, 0.6}}, "delay 0.6 s is outside 0 … 0.5 s");
  refused({{"shoulder", 0.0, 0.0, -1.0}}, "resolution -1");
  refused({{"shoulder", 0.0, 0.0, 0.0, 0.6, 1.0}}, "ripple 0.6 is outside 0 … 0.5");
  refused({{"shoulder", 0.0, 0.0, 0.0, 0.1, 0.0}}, "a ripple needs ripple_period > 0");
  refused({{"wrist", 0.0, 0.0, 0.0, 0.1, 1.0}}, "1-DoF joints only");
  try {
    ActuatorModels too_long(model, {{"shoulder", 0.0, 0.2}}, 1e-6);
    ADD_FAILURE() << "200 000 steps of delay accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("at most 100000"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hilsim::rt
