// The stance law of examples/quadruped_stance (stance_law.h) holding the bundled quadruped up on
// the ground of a live in-process server over UDP, as the example runs it: in LOCKSTEP
// (deterministic: every command is one cycle) for 3 s it stands in its crouch, level, and comes
// to rest; the law itself is a PD on the twelve joints and nothing on the base.
#include "examples/quadruped_stance/stance_law.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <optional>
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

// A LOCKSTEP session on the bundled quadruped of a live in-process server at 1 kHz, a UDP
// controller bound to it, and its first State.
struct StanceSession {
  StanceSession() : server(test::loopbackServerConfig()) {
    server.start();
    client.emplace(server.grpcTarget());
    v1::SessionConfig session;
    session.set_mode(v1::SESSION_MODE_LOCKSTEP);
    session.set_control_rate_hz(1000);
    session.mutable_thread()->set_lock_memory(false);
    created = client->createSession("quadruped", session);
    id = created.session().session_id();
    client->startSession(id);
    udp.emplace("127.0.0.1", created);
    udp->sync();
    for (int attempt = 0; attempt < 20 && !udp->receive(state, 100ms); ++attempt) udp->sync();
  }
  ~StanceSession() { server.shutdown(); }

  server::Server server;
  std::optional<client::SimulationClient> client;
  v1::CreateSessionResponse created;
  std::uint64_t id = 0;
  std::optional<client::UdpController> udp;
  v1::State state;
};

TEST(QuadrupedStance, StandsOverUdpInLockstep) {
  StanceSession run;
  client::SimulationClient& client = *run.client;
  client::UdpController& udp = *run.udp;
  v1::State& state = run.state;
  const std::uint64_t id = run.id;
  const Model model = loadModel("quadruped");
  const StanceLaw law(model, 3.0, 0.05);
  std::vector<double> tau(static_cast<std::size_t>(model.nv));
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
}

// A push: 10 N sideways on the base for 0.1 s (an impulse of 1 N·s on the 2.5 kg robot) after
// it has settled, sent as the commands' base wrench over UDP. The legs give (the base sways about
// 4 cm in the engine's run) and spring back: 4 s later the base is within 5 mm of where it stood,
// level, its feet still on the ground carrying its weight, and the state reports each foot's
// force and depth all along.
TEST(QuadrupedStance, RecoversFromAPushOnItsBase) {
  StanceSession run;
  client::SimulationClient& client = *run.client;
  client::UdpController& udp = *run.udp;
  v1::State& state = run.state;
  const std::uint64_t id = run.id;
  ASSERT_EQ(run.created.session().model().contacts_size(), 12);  // feet, knees, body
  const Model model = loadModel("quadruped");
  const double weight = model.totalMass() * 9.81;
  const StanceLaw law(model, 3.0, 0.05);
  std::vector<double> tau(static_cast<std::size_t>(model.nv));
  ASSERT_EQ(state.q_size(), model.nq) << "no State from the server";

  const std::uint64_t first = state.cycle();
  const std::uint64_t push_start = first + 1000, push_end = push_start + 100,
                      end = push_end + 4000;
  double y_before = 0.0, largest_sway = 0.0, deepest = 0.0;
  int timeouts = 0;
  bool pushing = false;
  while (state.cycle() < end && timeouts < 100) {
    if (state.cycle() == push_start) y_before = state.q(1);
    const bool push = state.cycle() >= push_start && state.cycle() < push_end;
    if (push != pushing) {
      const std::array<double, 6> wrench = {0.0, 10.0, 0.0, 0.0, 0.0, 0.0};
      udp.setBaseWrench(push ? std::span<const double>(wrench) : std::span<const double>());
      pushing = push;
    }
    law.torques(view(state.q()), view(state.v()), tau);
    udp.send(tau);
    if (!udp.receive(state, 50ms)) {
      ++timeouts;
      udp.sync();
      continue;
    }
    ASSERT_EQ(state.contact_force_size(), 3 * 12);
    ASSERT_EQ(state.contact_depth_size(), 12);
    if (state.cycle() > push_start) largest_sway = std::max(largest_sway, state.q(1) - y_before);
    for (const double depth : state.contact_depth()) deepest = std::max(deepest, depth);
  }
  EXPECT_LT(timeouts, 100) << "the server stopped answering";
  ASSERT_EQ(state.state(), v1::SESSION_STATE_RUNNING);
  EXPECT_GT(largest_sway, 0.02) << "the push moved the base";
  EXPECT_LT(std::abs(state.q(1) - y_before), 5e-3) << "back where it stood";
  EXPECT_LT(std::hypot(state.q(4), state.q(5)), std::sin(0.5 * M_PI / 180.0 / 2.0)) << "level";
  EXPECT_LT(deepest, 5e-3);
  double normal = 0.0;
  for (int sphere = 0; sphere < 12; ++sphere) {
    // the first four are the feet: on the ground; the knees and the body's underside are not
    if (sphere < 4) {
      EXPECT_GT(state.contact_force(3 * sphere + 2), 0.0) << "foot " << sphere;
    } else {
      EXPECT_EQ(state.contact_force(3 * sphere + 2), 0.0) << "sphere " << sphere;
    }
    normal += state.contact_force(3 * sphere + 2);
  }
  EXPECT_NEAR(normal, weight, 0.01 * weight);
  const v1::ConstraintStats counts = client.getStats(id).constraints();
  EXPECT_EQ(counts.contacts_active(), 4u);
  EXPECT_GT(counts.solver_iterations(), 0u);
  EXPECT_LE(counts.solver_max_iterations(),
            static_cast<std::uint32_t>(model.contact_settings.max_iterations));
  client.closeSession(id);
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
