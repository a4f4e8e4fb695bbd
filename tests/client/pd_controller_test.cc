// The control law of examples/pd_controller (pd_law.h) driving the iiwa14 arm of a live
// in-process server over UDP: it converges to the target posture and stays there, in LOCKSTEP
// (deterministic: every command is one cycle) and in REALTIME at 1 kHz as the example runs it.
#include "examples/pd_controller/pd_law.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <numbers>
#include <span>

#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "engine/algorithms/crba.h"
#include "engine/io/model_loader.h"
#include "server/server.h"
#include "tests/support/loopback_server.h"

namespace hilsim::examples {
namespace {

using namespace std::chrono_literals;

/// Bandwidth 10 Hz → time constant 1/ω = 16 ms. After 1 s (60 time constants) a critically
/// damped joint has decayed by far more than 1e-9 of its 1.2 rad step; what is left is set by the
/// integrator and the one-cycle command delay, both of which vanish at rest since gravity is
/// compensated exactly (same model on both sides). 1e-4 rad (0.006°) leaves room for rounding.
constexpr double kLockstepTolerance = 1e-4;
/// In REALTIME a loaded machine may make the controller miss cycles (the watchdog holds the last
/// torques meanwhile); the arm still settles, to within 1e-3 rad (0.06°).
constexpr double kRealtimeTolerance = 1e-3;

struct Outcome {
  double final_error = 0.0;  ///< max |q* − q| at the end [rad]
  double final_speed = 0.0;  ///< max |v| at the end [rad/s]
  double peak_error = 0.0;   ///< largest error seen [rad]
};

Outcome holdPosture(v1::SessionMode mode, int cycles) {
  server::Server server(test::loopbackServerConfig());
  server.start();
  client::SimulationClient client(server.grpcTarget());

  v1::SessionConfig session;
  session.set_mode(mode);
  session.set_control_rate_hz(1000);
  session.mutable_thread()->set_lock_memory(false);
  const v1::CreateSessionResponse created = client.createSession("iiwa14", session);
  const std::uint64_t id = created.session().session_id();
  client.startSession(id);

  auto model = std::make_shared<const Model>(loadModel("iiwa14"));
  Eigen::VectorXd target(7);
  target << 0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0;  // the example's posture
  PdGravityLaw law(model, target, 10.0);

  client::UdpController udp("127.0.0.1", created);
  v1::State state;
  udp.sync();
  for (int attempt = 0; attempt < 20 && !udp.receive(state, 100ms); ++attempt) udp.sync();
  EXPECT_GT(state.q_size(), 0) << "no State from the server";
  if (state.q_size() == 0) return {};

  Outcome run;
  const std::uint64_t end = state.cycle() + static_cast<std::uint64_t>(cycles);
  int timeouts = 0;
  while (state.cycle() < end && timeouts < 100) {
    const Eigen::VectorXd& tau = law.torques(asSpan(state.q()), asSpan(state.v()));
    udp.send(asSpan(tau));
    if (!udp.receive(state, 50ms)) {
      ++timeouts;
      udp.sync();
      continue;
    }
    run.peak_error = std::max(run.peak_error, law.maxError(asSpan(state.q())));
  }
  EXPECT_LT(timeouts, 100) << "the server stopped answering";
  EXPECT_EQ(state.state(), v1::SESSION_STATE_RUNNING);
  run.final_error = law.maxError(asSpan(state.q()));
  for (const double v : state.v()) run.final_speed = std::max(run.final_speed, std::abs(v));
  const v1::CloseSessionResponse closed = client.closeSession(id);
  EXPECT_FALSE(closed.final_stats().has_fault()) << closed.final_stats().fault().reason();
  server.shutdown();
  return run;
}

TEST(PdController, LockstepConvergesToTheTargetPosture) {
  const Outcome run = holdPosture(v1::SESSION_MODE_LOCKSTEP, 1000);
  // the arm starts at the neutral posture: 1.2 rad from the target at joint 4
  EXPECT_GE(run.peak_error, 1.1);
  EXPECT_LT(run.final_error, kLockstepTolerance);
  EXPECT_LT(run.final_speed, kLockstepTolerance);
}

TEST(PdController, RealtimeConvergesAndHolds) {
  const Outcome run = holdPosture(v1::SESSION_MODE_REALTIME, 1500);
  EXPECT_LT(run.final_error, kRealtimeTolerance);
  EXPECT_LT(run.final_speed, 10 * kRealtimeTolerance);
}

TEST(PdController, TheLawIsComputedTorque) {
  auto model = std::make_shared<const Model>(loadModel("iiwa14"));
  Eigen::VectorXd target(7);
  target << 0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0;
  PdGravityLaw law(model, target, 10.0);
  const double omega = 2.0 * std::numbers::pi * 10.0;
  EXPECT_DOUBLE_EQ(law.bandwidth(), omega);
  Data data(*model);
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(7);
  // at rest at the target: exactly the gravity torques
  const Eigen::VectorXd gravity = rnea(*model, data, target, zero, zero);
  const Eigen::VectorXd at_rest = law.torques(asSpan(target), asSpan(zero));
  EXPECT_TRUE(at_rest.isApprox(gravity, 1e-12));
  // off the target and moving: the bias forces (gravity, velocity product, damping) +
  // M(q) (ω² e − 2ω v)
  Eigen::VectorXd q = target, v = zero;
  q[3] += 0.1;
  v[6] = 2.0;
  const Eigen::VectorXd tau = law.torques(asSpan(q), asSpan(v));
  const Eigen::MatrixXd M = crba(*model, data, q);
  const Eigen::VectorXd expected = rnea(*model, data, q, v, zero) +
                                   M * (omega * omega * (target - q) - 2.0 * omega * v);
  EXPECT_TRUE(tau.isApprox(expected, 1e-12)) << tau.transpose() << "\n" << expected.transpose();
  EXPECT_THROW(PdGravityLaw(model, Eigen::VectorXd::Zero(3), 10.0), std::invalid_argument);
}

}  // namespace
}  // namespace hilsim::examples
