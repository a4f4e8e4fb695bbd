// A LOCKSTEP session driven through Step reproduces the offline `hilsim simulate` trajectory bit
// for bit: same model, formulation, integrator, step, initial state and (zero) torques. The CLI
// writes shortest round-trip decimals, so the CSV holds the exact doubles.

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "client/cli/app.h"
#include "client/cli/csv.h"
#include "hilsim/v1/service.grpc.pb.h"
#include "server/server.h"

namespace {

namespace fs = std::filesystem;

TEST(LockstepMatchesSimulate, StepReproducesTheOfflineTrajectoryExactly) {
  const std::vector<double> q0 = {0.3, -0.5, 0.2, 1.1, -0.4, 0.6, 0.1};
  std::string q0_text;
  for (const double q : q0) {
    // appended piecewise: `"," + std::string&&` trips a GCC 12 -Wrestrict false positive
    if (!q0_text.empty()) q0_text.push_back(',');
    q0_text.append(std::to_string(q));
  }
  const fs::path csv = fs::temp_directory_path() / ("hilsim_lockstep_" +
                                                    std::to_string(::getpid()) + ".csv");
  std::ostringstream out, err;
  ASSERT_EQ(hilsim::cli::run({"simulate", "--model", "iiwa14", "--solver", "aba", "--integrator",
                              "rk4", "--dt", "0.001", "--duration", "0.3", "--q0", q0_text,
                              "--output", csv.string()},
                             out, err),
            0)
      << err.str();
  std::vector<std::string> labels(1 + 7 + 7 + 1, "c");
  const hilsim::cli::NumericTable trajectory = hilsim::cli::readNumericCsv(csv.string(), labels);
  fs::remove(csv);
  ASSERT_EQ(trajectory.rows(), 301);

  hilsim::server::ServerConfig config;
  config.grpc_port = 0;
  config.udp_enabled = false;
  config.metrics_enabled = false;
  config.viewer_enabled = false;
  config.session_defaults.mutable_thread()->set_lock_memory(false);
  hilsim::server::Server server(config);
  server.start();
  auto stub = hilsim::v1::Simulation::NewStub(
      grpc::CreateChannel(server.grpcTarget(), grpc::InsecureChannelCredentials()));
  std::string owner;  // the session's owner secret, once created
  auto context = [&owner] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!owner.empty()) c->AddMetadata("hilsim-owner", owner);
    return c;
  };

  hilsim::v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("iiwa14");
  hilsim::v1::SessionConfig* session = request.mutable_config();
  session->set_mode(hilsim::v1::SESSION_MODE_LOCKSTEP);
  session->set_control_rate_hz(1000.0);
  session->set_formulation(hilsim::v1::FORMULATION_ABA);
  session->set_integrator(hilsim::v1::INTEGRATOR_RK4);
  for (const double q : q0) {
    // the CLI parsed the same decimal text
    session->add_initial_q(std::stod(std::to_string(q)));
  }
  hilsim::v1::CreateSessionResponse created;
  ASSERT_TRUE(stub->CreateSession(context().get(), request, &created).ok());
  owner = created.owner_secret();
  hilsim::v1::SessionRequest start;
  start.set_session_id(created.session().session_id());
  hilsim::v1::SessionInfo info;
  ASSERT_TRUE(stub->StartSession(context().get(), start, &info).ok());

  // Steps of 1, 2 and 3 cycles with zero torques, to row 300.
  int row = 0;
  std::uint64_t sequence = 0;
  while (row < 300) {
    const int steps = std::min(1 + row % 3, 300 - row);
    hilsim::v1::Command command;
    command.set_session_id(created.session().session_id());
    command.set_sequence(++sequence);
    for (int k = 0; k < 7; ++k) command.add_tau(0.0);
    command.set_steps(static_cast<std::uint32_t>(steps));
    hilsim::v1::State state;
    const grpc::Status status = stub->Step(context().get(), command, &state);
    ASSERT_TRUE(status.ok()) << status.error_message();
    row += steps;
    const double* expected = trajectory.row(row);
    // The trajectory file writes t = k·dt; the simulator accumulates t += dt (a few ulps apart).
    ASSERT_NEAR(state.time(), expected[0], 1e-12) << "row " << row;
    for (int k = 0; k < 7; ++k) {
      ASSERT_EQ(state.q(k), expected[1 + k]) << "row " << row << " q" << k;
      ASSERT_EQ(state.v(k), expected[8 + k]) << "row " << row << " v" << k;
    }
  }
  server.shutdown();
}

}  // namespace
