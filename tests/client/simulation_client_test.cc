// SimulationClient against a live in-process server on ephemeral ports: the session life cycle
// through every unary rpc, the documented status codes for bad requests (as RpcError with a
// readable what()), the access token in the metadata, and the Control and StreamStates streams.
#include "client/simulation_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "rt/clock.h"
#include "server/server.h"

namespace hilsim::client {
namespace {

using namespace std::chrono_literals;

server::ServerConfig testConfig(const std::string& access_token = "") {
  server::ServerConfig config;
  config.grpc_port = 0;
  config.udp_port_first = 0;
  config.udp_port_last = 0;
  config.metrics_enabled = false;
  config.viewer_enabled = false;
  config.model_directory = HILSIM_MODEL_DIR;
  config.access_token = access_token;
  config.log_level = "warn";
  return config;
}

v1::SessionConfig sessionConfig(v1::SessionMode mode) {
  v1::SessionConfig config;
  config.set_mode(mode);
  config.set_control_rate_hz(1000);
  config.mutable_thread()->set_lock_memory(false);  // tests run unprivileged as well
  return config;
}

/// Runs `call` and returns the RpcError it throws (a test failure if it does not).
template <typename Call>
RpcError expectRpcError(Call call) {
  try {
    call();
  } catch (const RpcError& e) {
    return e;
  }
  ADD_FAILURE() << "the call did not fail";
  return RpcError("none", grpc::Status::OK);
}

class SimulationClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<server::Server>(testConfig());
    server_->start();
    client_ = std::make_unique<SimulationClient>(server_->grpcTarget());
  }
  void TearDown() override {
    client_.reset();
    server_->shutdown();
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<SimulationClient> client_;
};

TEST_F(SimulationClientTest, SessionLifeCycleRoundTrip) {
  const v1::ListModelsResponse models = client_->listModels();
  ASSERT_GT(models.models_size(), 0);
  EXPECT_TRUE(models.models(0).is_default());

  const v1::CreateSessionResponse created =
      client_->createSession("pendulum", sessionConfig(v1::SESSION_MODE_REALTIME));
  const std::uint64_t id = created.session().session_id();
  ASSERT_NE(id, 0u);
  EXPECT_EQ(created.session().state(), v1::SESSION_STATE_CREATED);
  EXPECT_EQ(created.udp_key().size(), 32u) << "MAC by default";
  EXPECT_TRUE(created.udp_token().empty());
  EXPECT_EQ(created.session().udp_authentication(), v1::UDP_AUTHENTICATION_MAC);
  EXPECT_NE(created.session().udp_port(), 0u);
  EXPECT_EQ(created.session().model().nv(), 1u);

  EXPECT_EQ(client_->startSession(id).state(), v1::SESSION_STATE_RUNNING);
  // the loop runs at 1 kHz: after 100 ms it has surely completed a few cycles, even on a busy VM
  std::this_thread::sleep_for(100ms);
  const v1::SessionInfo running = client_->getSession(id);
  EXPECT_EQ(running.state(), v1::SESSION_STATE_RUNNING);
  EXPECT_GT(running.latest_state().cycle(), 0u);
  EXPECT_EQ(running.session_id(), id);

  const v1::ListSessionsResponse sessions = client_->listSessions();
  ASSERT_EQ(sessions.sessions_size(), 1);
  EXPECT_EQ(sessions.sessions(0).session_id(), id);

  const v1::SessionStats stats = client_->getStats(id);
  EXPECT_EQ(stats.session_id(), id);
  EXPECT_GT(stats.cycles(), 0u);
  EXPECT_EQ(stats.mode(), v1::SESSION_MODE_REALTIME);

  EXPECT_EQ(client_->pauseSession(id).state(), v1::SESSION_STATE_PAUSED);
  EXPECT_EQ(client_->startSession(id).state(), v1::SESSION_STATE_RUNNING);
  EXPECT_EQ(client_->stopSession(id).state(), v1::SESSION_STATE_STOPPED);
  EXPECT_EQ(client_->resetSession(id).state(), v1::SESSION_STATE_CREATED);

  const v1::CloseSessionResponse closed = client_->closeSession(id);
  EXPECT_EQ(closed.final_stats().session_id(), id);
  EXPECT_EQ(client_->listSessions().sessions_size(), 0);
  EXPECT_EQ(expectRpcError([&] { client_->getSession(id); }).code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(SimulationClientTest, ErrorsMapToTheDocumentedCodes) {
  const RpcError unknown_model =
      expectRpcError([&] { client_->createSession("no_such_robot"); });
  EXPECT_EQ(unknown_model.code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(unknown_model.rpc(), "CreateSession");
  EXPECT_EQ(std::string(unknown_model.what()).rfind("CreateSession: NOT_FOUND: ", 0), 0u)
      << unknown_model.what();
  EXPECT_NE(unknown_model.serverMessage().find("iiwa14"), std::string::npos)
      << "the message lists the bundled names: " << unknown_model.serverMessage();

  v1::CreateSessionRequest broken;
  broken.mutable_model()->set_urdf(
      "<robot name='r'><link name='a'/><joint name='j' type='revolute'>"
      "<parent link='a'/><child link='missing'/></joint></robot>");
  EXPECT_EQ(expectRpcError([&] { client_->createSession(broken); }).code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::SessionConfig too_fast = sessionConfig(v1::SESSION_MODE_REALTIME);
  too_fast.set_control_rate_hz(50'000);
  const RpcError rate = expectRpcError([&] { client_->createSession("pendulum", too_fast); });
  EXPECT_EQ(rate.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(rate.serverMessage().find("control_rate_hz"), std::string::npos) << rate.what();

  EXPECT_EQ(expectRpcError([&] { client_->getSession(424242); }).code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(expectRpcError([&] { client_->startSession(424242); }).code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(expectRpcError([&] { client_->getStats(424242); }).code(),
            grpc::StatusCode::NOT_FOUND);

  // wrong vector sizes: reset q, Step τ (a lockstep arm with nv = 7)
  const std::uint64_t id =
      client_->createSession("iiwa14", sessionConfig(v1::SESSION_MODE_LOCKSTEP))
          .session()
          .session_id();
  v1::ResetSessionRequest reset;
  reset.set_session_id(id);
  reset.add_q(0.1);
  EXPECT_EQ(expectRpcError([&] { client_->resetSession(reset); }).code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  client_->startSession(id);
  v1::Command step;
  step.set_session_id(id);
  step.set_sequence(1);
  for (int k = 0; k < 3; ++k) step.add_tau(0.0);
  EXPECT_EQ(expectRpcError([&] { client_->step(step); }).code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // …and with the right size it steps
  step.clear_tau();
  for (int k = 0; k < 7; ++k) step.add_tau(0.0);
  step.set_steps(3);
  EXPECT_EQ(client_->step(step).cycle(), 3u);
  // a failed call changed nothing: the session still runs
  EXPECT_EQ(client_->getSession(id).state(), v1::SESSION_STATE_RUNNING);
}

TEST(SimulationClientToken, TheAccessTokenIsSentWithEveryCall) {
  server::Server server(testConfig("s3cret-token"));
  server.start();

  SimulationClient anonymous(server.grpcTarget());
  const RpcError missing = expectRpcError([&] { anonymous.listModels(); });
  EXPECT_EQ(missing.code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(std::string(missing.what()).rfind("ListModels: UNAUTHENTICATED", 0), 0u);

  ClientOptions wrong_options;
  wrong_options.access_token = "guess";
  SimulationClient wrong(server.grpcTarget(), wrong_options);
  EXPECT_EQ(expectRpcError([&] { wrong.listSessions(); }).code(),
            grpc::StatusCode::UNAUTHENTICATED);

  ClientOptions options;
  options.access_token = "s3cret-token";
  SimulationClient authorized(server.grpcTarget(), options);
  EXPECT_GT(authorized.listModels().models_size(), 0);
  const std::uint64_t id =
      authorized.createSession("pendulum", sessionConfig(v1::SESSION_MODE_LOCKSTEP))
          .session()
          .session_id();
  authorized.startSession(id);
  // streams carry it too: a Control stream without it ends UNAUTHENTICATED, with it works
  {
    auto stream = anonymous.openControl(id);
    stream->sync();
    v1::State state;
    EXPECT_FALSE(stream->read(state));
    EXPECT_EQ(stream->finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  auto stream = authorized.openControl(id);
  ASSERT_NE(stream->sync(), 0u);
  v1::State state;
  ASSERT_TRUE(stream->read(state));
  EXPECT_EQ(state.session_id(), id);
  EXPECT_TRUE(stream->finish().ok());
  server.shutdown();
}

TEST_F(SimulationClientTest, ControlStreamNumbersAndStampsEveryCommand) {
  const std::uint64_t id =
      client_->createSession("pendulum", sessionConfig(v1::SESSION_MODE_LOCKSTEP))
          .session()
          .session_id();
  client_->startSession(id);
  auto stream = client_->openControl(id);
  EXPECT_EQ(stream->sessionId(), id);

  ASSERT_EQ(stream->sync(), 1u);
  v1::State state;
  std::int64_t received = 0;
  ASSERT_TRUE(stream->read(state, &received));
  EXPECT_EQ(state.cycle(), 0u);
  EXPECT_EQ(state.command_sequence(), 0u);  // no command applied yet

  const std::vector<double> tau = {0.5};
  for (std::uint64_t k = 1; k <= 5; ++k) {
    const std::uint64_t sequence = stream->send(tau);
    ASSERT_EQ(sequence, k + 1);  // the sync used 1
    const std::int64_t sent = stream->lastSendTime();
    ASSERT_TRUE(stream->read(state, &received));
    EXPECT_EQ(state.cycle(), k);  // lockstep: one cycle per command
    EXPECT_EQ(state.command_sequence(), sequence);
    EXPECT_EQ(state.command_client_send_time_ns(), sent);  // echoed untouched
    ASSERT_EQ(state.tau_size(), 1);
    EXPECT_EQ(state.tau(0), 0.5);
    // same host, same clock: the server received it after it was sent, and the State came back
    // after that
    EXPECT_GE(state.command_receive_time_ns(), sent);
    EXPECT_GE(received, state.send_time_ns());
  }
  // a command the contract rejects (wrong size) ends the stream with INVALID_ARGUMENT
  const std::vector<double> wrong = {1.0, 2.0};
  stream->send(wrong);
  while (stream->read(state)) {
  }
  const grpc::Status status = stream->finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_EQ(stream->send(tau), 0u) << "no writes after the end";
}

TEST_F(SimulationClientTest, StateStreamFollowsARunningSessionUntilCancelled) {
  const std::uint64_t id =
      client_->createSession("pendulum", sessionConfig(v1::SESSION_MODE_REALTIME))
          .session()
          .session_id();
  client_->startSession(id);
  auto feed = client_->streamStates(id, 10);
  v1::State state;
  std::uint64_t previous = 0;
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(feed->read(state));
    EXPECT_EQ(state.session_id(), id);
    if (k > 0) {
      EXPECT_GT(state.cycle(), previous);
    }
    previous = state.cycle();
  }
  feed->cancel();
  EXPECT_EQ(feed->finish().error_code(), grpc::StatusCode::CANCELLED);

  // closing the session ends a feed with CANCELLED as well
  auto second = client_->streamStates(id);
  ASSERT_TRUE(second->read(state));
  client_->closeSession(id);
  while (second->read(state)) {
  }
  EXPECT_EQ(second->finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST(SimulationClientUnreachable, AFailedConnectionIsAnRpcErrorWithinTheDeadline) {
  ClientOptions options;
  options.deadline = 300ms;
  // port 1 on loopback: nothing listens there
  SimulationClient client("127.0.0.1:1", options);
  const std::int64_t start = rt::monotonicNow();
  const RpcError error = expectRpcError([&] { client.listSessions(); });
  EXPECT_TRUE(error.code() == grpc::StatusCode::UNAVAILABLE ||
              error.code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      << error.what();
  // the deadline bounds the wait (generous margin for a loaded machine)
  EXPECT_LT(rt::monotonicNow() - start, 5'000'000'000);
}

}  // namespace
}  // namespace hilsim::client
