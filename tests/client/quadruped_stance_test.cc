// The stance law of examples/quadruped_stance (stance_law.h) holding the bundled quadruped up on
// the ground of a live in-process server over UDP, as the example runs it: in LOCKSTEP
// (deterministic: every command is one cycle) for 3 s it stands in its crouch, level, and comes
// to rest; the law itself is a PD on the twelve joints and nothing on the base.
#include "examples/quadruped_stance/stance_law.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "engine/io/model_loader.h"
#include "server/server.h"
#include "tests/support/loopback_server.h"

namespace hilsim::examples {
namespace {

using namespace std::chrono_literals;

std::span<const double> view(const google::protobuf::RepeatedField<double>& values) {
  return {values.data(), static_cast<std::size_t>(values.size())};
}

TEST(QuadrupedStance, StandsOverUdpInLockstep) {
  server::Server server(test::loopbackServerConfig());
  server.start();
  client::SimulationClient client(server.grpcTarget());
  v1::SessionConfig session;
  session.set_mode(v1::SESSION_MODE_LOCKSTEP);
  session.set_control_rate_hz(1000);
  session.mutable_thread()->set_lock_memory(false);
  const v1::CreateSessionResponse created = client.createSession("quadruped", session);
  const std::uint64_t id = created.session().session_id();
  client.startSession(id);

  const Model model = loadModel("quadruped");
  const StanceLaw law(model, 3.0, 0.05);
  std::vector<double> tau(static_cast<std::size_t>(model.nv));
  client::UdpController udp("127.0.0.1", static_cast<std::uint16_t>(created.session().udp_port()),
                            id, created.udp_token());
  v1::State state;
  udp.sync();
  for (int attempt = 0; attempt < 20 && !udp.receive(state, 100ms); ++attempt) udp.sync();
  ASSERT_EQ(state.q_size(), model.nq) << "no State from the server";
  const double start_height = state.q(2);
  double lowest = start_height, largest_tilt_sin = 0.0;
  const std::uint64_t end = state.cycle() + 3000;
  int timeouts = 0;
  while (state.cycle() < end && timeouts < 100) {
    law.torques(view(state.q()), view(state.v()), tau);
    udp.send(tau);
    if (!udp.receive(state, 50ms)) {
      ++timeouts;
      udp.sync();
      continue;
    }
    lowest = std::min(lowest, state.q(2));
    // sin of the tilt bound: |(x, y)| of the quaternion is sin(tilt / 2)
    largest_tilt_sin = std::max(largest_tilt_sin, std::hypot(state.q(4), state.q(5)));
  }
  EXPECT_LT(timeouts, 100) << "the server stopped answering";
  EXPECT_EQ(state.state(), v1::SESSION_STATE_RUNNING);
  // it sags into its crouch (the PD has no gravity compensation: 2.2 cm in the engine's run,
  // docs/CONTACT.md) and holds there, far above its knees (a fallen Solo's base is below 0.1 m)
  EXPECT_GT(lowest, start_height - 0.05);
  EXPECT_LT(largest_tilt_sin, std::sin(0.5 * M_PI / 180.0 / 2.0));  // level within 0.5°
  double speed = 0.0;
  for (const double v : state.v()) speed = std::max(speed, std::abs(v));
  EXPECT_LT(speed, 1e-3) << "at rest after 3 s";
  const v1::CloseSessionResponse closed = client.closeSession(id);
  EXPECT_FALSE(closed.final_stats().has_fault()) << closed.final_stats().fault().reason();
  server.shutdown();
}

TEST(QuadrupedStance, TheLawIsAPdOnTheJointsAndNothingOnTheBase) {
  const Model model = loadModel("quadruped");
  const StanceLaw law(model, 3.0, 0.05);
  Eigen::VectorXd q = model.initialConfiguration(), v = Eigen::VectorXd::Zero(model.nv);
  q[8] += 0.1;   // FL_HFE off its posture
  v[7] = 2.0;    // FL_HFE moving (dofs: 6 of the base, then the joints)
  v[0] = 5.0;    // the base moving: no torque for it
  Eigen::VectorXd tau(model.nv);
  law.torques({q.data(), static_cast<std::size_t>(model.nq)},
              {v.data(), static_cast<std::size_t>(model.nv)},
              {tau.data(), static_cast<std::size_t>(model.nv)});
  EXPECT_TRUE(tau.head<6>().isZero(0.0));
  EXPECT_DOUBLE_EQ(tau[7], 3.0 * -0.1 - 0.05 * 2.0);
  tau[7] = 0.0;
  EXPECT_TRUE(tau.isZero(0.0));
  EXPECT_THROW(law.torques({q.data(), 3}, {v.data(), static_cast<std::size_t>(model.nv)},
                           {tau.data(), static_cast<std::size_t>(model.nv)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace hilsim::examples
