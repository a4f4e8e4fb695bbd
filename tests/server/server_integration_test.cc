// hilsim-server end to end: a real Server on loopback with ephemeral ports, driven through the
// generated gRPC stub exactly as a remote client would.

#include "server/server.h"

#include <gtest/gtest.h>

#include <grpcpp/grpcpp.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>

#include "client/simulation_client.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/rnea.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/model/data.h"
#include "hilsim/v1/service.grpc.pb.h"
#include "rt/clock.h"
#include "server/conversions.h"
#include "server/session_registry.h"

namespace hilsim::server {
namespace {

using grpc::StatusCode;

constexpr const char* kOperatorSecret = "operator-secret-of-the-tests";

client::ClientOptions operatorOptions() {
  client::ClientOptions options;
  options.owner_secret = kOperatorSecret;
  return options;
}

ServerConfig testConfig() {
  ServerConfig config;
  config.grpc_port = 0;
  config.udp_port_first = 0;
  config.udp_port_last = 0;
  config.metrics_enabled = false;
  config.viewer_enabled = false;
  config.session_defaults.mutable_thread()->set_lock_memory(false);  // unprivileged runs
  // the tests below act as the operator, who may drive every session (the isolation between
  // clients has its own tests, which call without it)
  config.operator_secret = kOperatorSecret;
  // The CPU budgets of lockstep requests have their own suite (isolation_test); here a humanoid's
  // 200 cycles must pass in a sanitizer build too, whose cycles cost ten times more.
  config.max_request_cpu_s = 60.0;
  config.max_queued_cpu_s = 120.0;
  return config;
}

class ServerTest : public ::testing::Test {
 protected:
  void startServer(ServerConfig config = testConfig()) {
    server_ = std::make_unique<Server>(std::move(config));
    server_->start();
    channel_ = grpc::CreateChannel(server_->grpcTarget(), grpc::InsecureChannelCredentials());
    stub_ = v1::Simulation::NewStub(channel_);
  }
  void SetUp() override { startServer(); }
  void TearDown() override {
    if (server_) server_->shutdown();
  }

  std::unique_ptr<grpc::ClientContext> context(int seconds = 5) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
    if (!token_.empty()) c->AddMetadata("authorization", "Bearer " + token_);
    if (!owner_.empty()) c->AddMetadata("hilsim-owner", owner_);
    return c;
  }

  grpc::Status create(const v1::CreateSessionRequest& request, v1::CreateSessionResponse* out) {
    return stub_->CreateSession(context().get(), request, out);
  }

  v1::SessionInfo createBundled(const std::string& model, v1::SessionMode mode,
                                double rate = 1000.0) {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name(model);
    request.mutable_config()->set_mode(mode);
    request.mutable_config()->set_control_rate_hz(rate);
    v1::CreateSessionResponse response;
    const grpc::Status status = create(request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.session();
  }

  grpc::Status start(std::uint64_t id) {
    v1::SessionRequest request;
    request.set_session_id(id);
    v1::SessionInfo info;
    return stub_->StartSession(context().get(), request, &info);
  }

  v1::SessionStats stats(std::uint64_t id) {
    v1::SessionRequest request;
    request.set_session_id(id);
    v1::SessionStats out;
    EXPECT_TRUE(stub_->GetStats(context().get(), request, &out).ok());
    return out;
  }

  std::unique_ptr<Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Simulation::Stub> stub_;
  std::string token_;
  std::string owner_ = kOperatorSecret;  // sent as hilsim-owner
};

TEST_F(ServerTest, ListsBundledModelsDefaultFirst) {
  v1::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(context().get(), {}, &models).ok());
  ASSERT_GE(models.models_size(), 5);
  EXPECT_EQ(models.models(0).name(), defaultModelName());
  EXPECT_TRUE(models.models(0).is_default());
  EXPECT_EQ(models.models(0).info().nv(), 7u);
  EXPECT_EQ(models.models(0).info().v_labels_size(), 7);
}

// A vendor URDF text whose link breaks the triangle inequality: loaded as given with its warning
// in ModelInfo, balanced, or refused on request; the policy is for URDF sources only.
TEST_F(ServerTest, AUrdfTextTakesTheInertiaPolicy) {
  const std::string vendor =
      "<robot name='vendor'><link name='a'/><joint name='j' type='continuous'><parent link='a'/>"
      "<child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial><mass value='1'/>"
      "<inertia ixx='1' iyy='1' izz='3' ixy='0' ixz='0' iyz='0'/></inertial></link></robot>";
  v1::CreateSessionRequest request;
  request.mutable_model()->set_urdf(vendor);
  request.mutable_model()->set_source_name("vendor.urdf");
  v1::CreateSessionResponse response;
  grpc::Status status = create(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.session().model().warnings_size(), 1);
  EXPECT_NE(response.session().model().warnings(0).find("vendor.urdf:1: link 'b'"),
            std::string::npos)
      << response.session().model().warnings(0);
  request.mutable_model()->set_inertia(v1::INERTIA_POLICY_BALANCE);
  ASSERT_TRUE(create(request, &response).ok());
  EXPECT_NE(response.session().model().warnings(0).find("balanced"), std::string::npos);
  request.mutable_model()->set_inertia(v1::INERTIA_POLICY_STRICT);
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("triangle inequality"), std::string::npos);
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_model()->set_inertia(v1::INERTIA_POLICY_BALANCE);
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("'pendulum' is a YAML model"), std::string::npos)
      << status.error_message();
}

// The URDF options reach a model the server has by name when it is a URDF: solo12 floats.
TEST_F(ServerTest, AModelByNameTakesTheUrdfOptions) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("solo12");
  v1::CreateSessionResponse response;
  ASSERT_TRUE(create(request, &response).ok());
  EXPECT_EQ(response.session().model().nq(), 12);
  request.mutable_model()->set_floating_base(true);
  grpc::Status status = create(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nq(), 19);
  EXPECT_EQ(response.session().model().nv(), 18);
  // the options are checked whatever the source
  request.mutable_model()->set_massless(v1::MASSLESS_POLICY_ARMATURE);
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("model.massless_armature"), std::string::npos);
  request.mutable_model()->set_massless_armature(1e-3);
  EXPECT_TRUE(create(request, &response).ok());
  request.mutable_model()->set_massless(v1::MASSLESS_POLICY_WELD);
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("without massless = MASSLESS_POLICY_ARMATURE"),
            std::string::npos);
}

// A gripper whose finger has no mass: refused by default with the options named; welded, or
// given the armature asked for.
// One pendulum written in SDFormat and in MJCF: both texts run in sessions, swing alike, and a
// text that names a file is refused.
TEST_F(ServerTest, SdformatAndMjcfTextsRunInSessions) {
  const std::string sdf =
      "<sdf version='1.9'><model name='pendulum'><link name='rod'><inertial><pose>0 0 -0.5 0 0 "
      "0</pose><mass>1</mass><inertia><ixx>0.01</ixx><iyy>0.01</iyy><izz>0.01</izz><ixy>0</ixy>"
      "<ixz>0</ixz><iyz>0</iyz></inertia></inertial></link><joint name='hinge' type='revolute'>"
      "<parent>world</parent><child>rod</child><axis><xyz>0 1 0</xyz></axis></joint></model>"
      "</sdf>";
  const std::string mjcf =
      "<mujoco model='pendulum'><worldbody><body name='rod'><joint name='hinge' type='hinge' "
      "axis='0 1 0'/><inertial pos='0 0 -0.5' mass='1' diaginertia='0.01 0.01 0.01'/></body>"
      "</worldbody></mujoco>";
  std::vector<double> swings;
  for (const bool use_sdf : {true, false}) {
    SCOPED_TRACE(use_sdf ? "sdf" : "mjcf");
    v1::CreateSessionRequest request;
    if (use_sdf) request.mutable_model()->set_sdf(sdf);
    else request.mutable_model()->set_mjcf(mjcf);
    request.mutable_model()->set_source_name(use_sdf ? "pendulum.sdf" : "pendulum.xml");
    request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
    request.mutable_config()->add_initial_q(0.5);
    v1::CreateSessionResponse response;
    const grpc::Status status = create(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.session().model().name(), "pendulum");
    EXPECT_EQ(response.session().model().nv(), 1u);
    const std::uint64_t id = response.session().session_id();
    ASSERT_TRUE(start(id).ok());
    v1::Command command;
    command.set_session_id(id);
    command.set_steps(200);
    command.add_tau(0.0);
    v1::State state;
    ASSERT_TRUE(stub_->Step(context().get(), command, &state).ok());
    swings.push_back(state.q(0));
    // ω² = m g l / I_pivot = 9.81 · 0.5 / 0.26; at 0.5 rad the swing lags the small-angle
    // cosine by under 2 % of its period, far less than 0.01 rad this early
    EXPECT_NEAR(state.q(0), 0.5 * std::cos(std::sqrt(9.81 * 0.5 / 0.26) * state.time()), 0.01);
  }
  // the same pendulum in both files: the same numbers to round-off
  EXPECT_NEAR(swings[0], swings[1], 1e-12);

  v1::CreateSessionRequest include;
  include.mutable_model()->set_mjcf("<mujoco><include file='/etc/passwd'/></mujoco>");
  v1::CreateSessionResponse response;
  grpc::Status status = create(include, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  include.mutable_model()->set_sdf("<sdf version='1.9'><model name='m'><include><uri>/etc"
                                   "</uri></include></model></sdf>");
  status = create(include, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("include"), std::string::npos) << status.error_message();
  // the URDF options are refused for an MJCF text, honoured for SDFormat
  v1::CreateSessionRequest floating;
  floating.mutable_model()->set_mjcf(mjcf);
  floating.mutable_model()->set_floating_base(true);
  status = create(floating, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("MJCF"), std::string::npos) << status.error_message();
}

TEST_F(ServerTest, AUrdfTextTakesTheMasslessPolicy) {
  const std::string gripper =
      "<robot name='gripper'><link name='palm'/>"
      "<joint name='wrist' type='continuous'><parent link='palm'/><child link='hand'/>"
      "<axis xyz='0 0 1'/></joint><link name='hand'><inertial><mass value='1'/>"
      "<inertia ixx='0.01' iyy='0.01' izz='0.01' ixy='0' ixz='0' iyz='0'/></inertial></link>"
      "<joint name='finger_joint' type='prismatic'><parent link='hand'/><child link='finger'/>"
      "<axis xyz='1 0 0'/><limit lower='0' upper='0.04' effort='10' velocity='1'/></joint>"
      "<link name='finger'/></robot>";
  v1::CreateSessionRequest request;
  request.mutable_model()->set_urdf(gripper);
  v1::CreateSessionResponse response;
  grpc::Status status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("massless: weld"), std::string::npos)
      << status.error_message();
  request.mutable_model()->set_massless(v1::MASSLESS_POLICY_WELD);
  status = create(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nv(), 1);
  request.mutable_model()->set_massless(v1::MASSLESS_POLICY_ARMATURE);
  request.mutable_model()->set_massless_armature(1e-3);
  status = create(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nv(), 2);
  ASSERT_EQ(response.session().model().warnings_size(), 1);
  EXPECT_NE(response.session().model().warnings(0).find("finger_joint"), std::string::npos);
}

TEST_F(ServerTest, BadRequestsGetClearStatusCodes) {
  v1::CreateSessionResponse response;
  v1::CreateSessionRequest request;

  request.mutable_model()->set_bundled_name("no_such_robot");
  grpc::Status status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("iiwa14"), std::string::npos);  // lists the bundled

  request.mutable_model()->set_urdf("<robot name='broken'><link name='a'>");
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(status.error_message().empty());

  request.mutable_model()->set_bundled_name("iiwa14");
  request.mutable_config()->add_initial_q(0.1);  // 1 value for nq = 7
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("initial_q"), std::string::npos);

  request.mutable_config()->clear_initial_q();
  request.mutable_config()->set_control_rate_hz(20000.0);
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("control_rate_hz"), std::string::npos);

  request.mutable_model()->set_yaml("urdf: /etc/passwd\n");
  request.mutable_config()->clear_control_rate_hz();
  status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("model directory"), std::string::npos);

  v1::SessionRequest unknown;
  unknown.set_session_id(987654);
  v1::SessionInfo info;
  EXPECT_EQ(stub_->GetSession(context().get(), unknown, &info).error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(stub_->StartSession(context().get(), unknown, &info).error_code(),
            StatusCode::NOT_FOUND);
  unknown.set_session_id(0);
  EXPECT_EQ(stub_->GetSession(context().get(), unknown, &info).error_code(),
            StatusCode::INVALID_ARGUMENT);

  // Nothing was created by the failed calls.
  v1::ListSessionsResponse sessions;
  ASSERT_TRUE(stub_->ListSessions(context().get(), {}, &sessions).ok());
  EXPECT_EQ(sessions.sessions_size(), 0);

  // A lockstep session: Step with the wrong number of torques, StartSession twice.
  const v1::SessionInfo lockstep = createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);
  ASSERT_TRUE(start(lockstep.session_id()).ok());
  EXPECT_EQ(start(lockstep.session_id()).error_code(), StatusCode::FAILED_PRECONDITION);
  v1::Command step;
  step.set_session_id(lockstep.session_id());
  step.set_sequence(1);
  step.add_tau(1.0);
  step.add_tau(2.0);
  v1::State state;
  status = stub_->Step(context().get(), step, &state);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("nv = 1"), std::string::npos);
  // Step on a realtime session
  const v1::SessionInfo realtime = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  step.set_session_id(realtime.session_id());
  step.clear_tau();
  step.add_tau(0.0);
  EXPECT_EQ(stub_->Step(context().get(), step, &state).error_code(),
            StatusCode::FAILED_PRECONDITION);
}

// What a controller reads of its drives and stops: iiwa14's joint 1 asked for 10⁴ N·m gets its
// URDF effort limit (300 N·m), runs into the velocity limit (10 rad/s), then into its upper stop
// (2.967 rad), where the stop's force balances the drive's; the state says commanded and
// applied torque and the stop's force, the statistics count every cut. (The other joints are
// limp: the arm folds under gravity onto other stops of its own.)
TEST_F(ServerTest, DrivesSaturateAndStopsPushAsTheStateAndStatisticsSay) {
  const v1::SessionInfo info = createBundled("iiwa14", v1::SESSION_MODE_LOCKSTEP);
  EXPECT_TRUE(info.model().actuator_limits());
  EXPECT_TRUE(info.model().position_limits());
  EXPECT_FALSE(info.model().floating_base());
  ASSERT_EQ(info.model().effort_limit_size(), 7);
  EXPECT_DOUBLE_EQ(info.model().effort_limit(0), 300.0);
  EXPECT_DOUBLE_EQ(info.model().velocity_limit(0), 10.0);
  EXPECT_EQ(info.model().contacts_size(), 0);
  ASSERT_TRUE(start(info.session_id()).ok());

  v1::Command step;
  step.set_session_id(info.session_id());
  step.set_sequence(1);
  for (int k = 0; k < 7; ++k) step.add_tau(k == 0 ? 1e4 : 0.0);
  step.set_steps(1);
  v1::State state;
  ASSERT_TRUE(stub_->Step(context().get(), step, &state).ok());
  ASSERT_EQ(state.tau_size(), 7);
  EXPECT_DOUBLE_EQ(state.tau(0), 300.0);
  ASSERT_EQ(state.tau_commanded_size(), 7);
  EXPECT_DOUBLE_EQ(state.tau_commanded(0), 1e4);
  EXPECT_EQ(state.limit_force_size(), 0) << "clear of the stops: not sent";

  step.set_sequence(2);
  step.set_steps(2999);
  ASSERT_TRUE(stub_->Step(context().get(), step, &state).ok());
  const double upper = 2.96705972839;
  EXPECT_GT(state.q(0), upper - 1e-3);
  EXPECT_LT(state.q(0), upper + 0.05);  // the stop's static give under 300 N·m (docs/CONTACT.md)
  EXPECT_LT(std::abs(state.v(0)), 1e-3) << "at rest against the stop";
  ASSERT_EQ(state.limit_force_size(), 7);
  // the axis is vertical: no gravity about it, so the stop alone balances the drive
  EXPECT_NEAR(state.limit_force(0), -300.0, 3.0);
  int pushing = 0;
  for (int k = 0; k < 7; ++k) pushing += state.limit_force(k) != 0.0 ? 1 : 0;

  const v1::ConstraintStats counts = stats(info.session_id()).constraints();
  ASSERT_EQ(counts.effort_saturations_size(), 7);
  EXPECT_EQ(counts.effort_saturations(0), 3000u);
  EXPECT_GT(counts.velocity_cuts(0), 0u);
  EXPECT_GT(counts.limit_cycles(0), 2500u);
  for (int k = 1; k < 7; ++k) {
    EXPECT_EQ(counts.effort_saturations(k), 0u);
    EXPECT_EQ(counts.velocity_cuts(k), 0u);
  }
  EXPECT_EQ(counts.limits_active(), static_cast<std::uint32_t>(pushing));
  EXPECT_GT(counts.solver_max_iterations(), 0u);
  EXPECT_EQ(counts.solver_unconverged(), 0u);

  // a push needs a floating base; a wrench of the wrong size or not finite is refused
  step.set_sequence(3);
  step.set_steps(1);
  for (int k = 0; k < 6; ++k) step.add_base_wrench(1.0);
  grpc::Status status = stub_->Step(context().get(), step, &state);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("no floating base"), std::string::npos)
      << status.error_message();
  const v1::SessionInfo quadruped = createBundled("quadruped", v1::SESSION_MODE_LOCKSTEP);
  EXPECT_TRUE(quadruped.model().floating_base());
  EXPECT_EQ(quadruped.model().contacts_size(), 12);
  // docs/PROTOCOL.md: 528 bytes of q, v, tau and stamps, 391 of twelve contact spheres, 147
  // each for tau_commanded and limit_force; 28 of the MAC frame (the server's default)
  EXPECT_EQ(quadruped.udp_authentication(), v1::UDP_AUTHENTICATION_MAC);
  EXPECT_EQ(quadruped.udp_state_max_bytes(), 1213u + 28u);
  // iiwa14: the 256-byte bound less a byte per array length under 128 bytes, plus 2 + 56 bytes
  // each for tau_commanded and limit_force
  EXPECT_EQ(info.udp_state_max_bytes(), 256u - 3u + 2u * 58u + 28u);
  ASSERT_TRUE(start(quadruped.session_id()).ok());
  v1::Command push;
  push.set_session_id(quadruped.session_id());
  push.set_sequence(1);
  for (int k = 0; k < 18; ++k) push.add_tau(0.0);
  for (int k = 0; k < 5; ++k) push.add_base_wrench(1.0);
  status = stub_->Step(context().get(), push, &state);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("base_wrench has 5 values"), std::string::npos)
      << status.error_message();
  push.add_base_wrench(std::nan(""));
  status = stub_->Step(context().get(), push, &state);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("base_wrench[5] is not finite"), std::string::npos)
      << status.error_message();
  const v1::TransportStats grpc_counts = stats(quadruped.session_id()).grpc();
  EXPECT_EQ(grpc_counts.wrong_size(), 1u);
  EXPECT_EQ(grpc_counts.non_finite(), 1u);
}

// Lockstep through Step reproduces the offline simulation bit for bit (same binary, same
// machine): same model, same integrator, same torques, same step. On the default arm and on the
// flexible arm (its modal coordinates travel in q and v like any others) under sines on every
// joint, and on the two closed-loop models (assembled at the start, the constraint stage in every
// step) held inside their workspace: their motors track a slow swing about the start by PD
// control on the state Step answered (the delta's arms between 0.2 and 0.8 rad, within their
// limits, the four-bar's crank ±0.4 rad), so that no run depends on the last bit of a chaotic
// trajectory through a singular configuration (docs/TESTING.md).
// Command interfaces over gRPC: a session whose joints take positions (one a velocity) steps to
// the set-points; commands whose arrays do not fit the session's interfaces are refused with the
// reason, and the effective configuration and the UDP size figure show the drives.
TEST_F(ServerTest, PositionAndVelocityInterfacesFollowTheirSetPoints) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("iiwa14");
  request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
  request.mutable_config()->set_substeps(2);
  // stiff on the heavy shoulder and elbow, soft on the light wrist (the stability bound
  // kd·dt < 2 I: iiwa_link_7 has I ≈ 0.001 kg·m²)
  const auto add_drive = [&](const std::string& joint, v1::CommandInterface interface, double kp,
                             double kd) {
    v1::JointDrive* drive = request.mutable_config()->add_drives();
    drive->set_joint(joint);
    drive->set_interface(interface);
    drive->set_kp(kp);
    drive->set_kd(kd);
  };
  // (the smallest inertias at the initial pose: 0.059, 0.89, 0.020, 0.125, 0.0077, 0.011 and
  // 0.00091 kg·m², so at dt = 0.5 ms kd stays below 235, 3580, 81, 500, 31, 43 and 3.6)
  add_drive("*", v1::COMMAND_INTERFACE_POSITION, 2000.0, 60.0);
  add_drive("iiwa_joint_2", v1::COMMAND_INTERFACE_POSITION, 3000.0, 300.0);
  add_drive("iiwa_joint_4", v1::COMMAND_INTERFACE_POSITION, 2000.0, 150.0);
  add_drive("iiwa_joint_5", v1::COMMAND_INTERFACE_POSITION, 300.0, 10.0);
  add_drive("iiwa_joint_6", v1::COMMAND_INTERFACE_POSITION, 300.0, 10.0);
  add_drive("iiwa_joint_7", v1::COMMAND_INTERFACE_POSITION, 50.0, 0.5);
  v1::CreateSessionResponse created;
  grpc::Status status = create(request, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::SessionInfo& info = created.session();
  const std::string wrist = info.model().joints(6).name();
  ASSERT_EQ(info.config().drives_size(), 6);
  EXPECT_EQ(info.config().drives(0).interface(), v1::COMMAND_INTERFACE_POSITION);
  // positions and velocities ride along with the torques: 2 × (8·7 + 2) bytes more, and the
  // command's length takes a second byte past 127
  const Model iiwa = loadModel("iiwa14");
  const bool mac = info.udp_authentication() == v1::UDP_AUTHENTICATION_MAC;
  EXPECT_EQ(info.udp_command_max_bytes(),
            udpCommandMaxBytes(iiwa, {.mac = mac, .positions = true, .velocities = true}));
  EXPECT_EQ(info.udp_command_max_bytes(), udpCommandMaxBytes(iiwa, {.mac = mac}) + 2 * (8 * 7 + 2) + 1);
  ASSERT_TRUE(start(info.session_id()).ok());

  v1::Command step;
  step.set_session_id(info.session_id());
  step.set_steps(3000);
  const double target[7] = {0.4, -0.3, 0.2, 0.5, -0.2, 0.3, 0.1};
  for (const double q : target) step.add_position(q);
  v1::State state;
  status = stub_->Step(context().get(), step, &state);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int k = 0; k < 7; ++k) {
    // the sag under gravity is g(q)/kp: under 0.03 rad with the arm's torques at these poses
    EXPECT_NEAR(state.q(k), target[k], 0.03) << "joint " << k;
    EXPECT_NEAR(state.v(k), 0.0, 1e-3) << "settled, joint " << k;
  }

  // refused, each with its reason
  const auto refused = [&](const v1::Command& command, const std::string& why) {
    v1::State out;
    const grpc::Status s = stub_->Step(context().get(), command, &out);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << why;
    EXPECT_NE(s.error_message().find(why), std::string::npos) << s.error_message();
  };
  v1::Command torques_only;
  torques_only.set_session_id(info.session_id());
  for (int k = 0; k < 7; ++k) torques_only.add_tau(0.0);
  refused(torques_only, "every command but a sync carries nv positions");
  v1::Command short_position = step;
  short_position.mutable_position()->RemoveLast();
  refused(short_position, "position has 6 values");
  v1::Command nan_velocity = step;
  for (int k = 0; k < 7; ++k) nan_velocity.add_velocity(k == 3 ? NAN : 0.0);
  refused(nan_velocity, "velocity[3] is not finite");
  EXPECT_EQ(stats(info.session_id()).grpc().wrong_size(), 2u);

  // an effort-only session reads no positions
  const v1::SessionInfo effort = createBundled("iiwa14", v1::SESSION_MODE_LOCKSTEP);
  ASSERT_TRUE(start(effort.session_id()).ok());
  v1::Command stray = step;
  stray.set_session_id(effort.session_id());
  refused(stray, "no joint of this session has a position interface");

  // a velocity interface on the wrist, positions elsewhere: both arrays, each read where it
  // belongs
  request.mutable_config()->set_name("mixed");
  v1::JointDrive* wrist_drive = request.mutable_config()->mutable_drives(5);
  ASSERT_EQ(wrist_drive->joint(), wrist);
  wrist_drive->set_interface(v1::COMMAND_INTERFACE_VELOCITY);
  wrist_drive->set_kp(0.0);
  wrist_drive->set_kd(0.5);
  // the joint's own damping (0.5 N·m·s/rad) would leave a P loop at half its set-point: the
  // integral takes that load
  wrist_drive->set_ki(10.0);
  ASSERT_TRUE(create(request, &created).ok());
  const std::uint64_t mixed = created.session().session_id();
  ASSERT_TRUE(start(mixed).ok());
  step.set_session_id(mixed);
  refused(step, "every command but a sync carries nv velocities");
  for (int k = 0; k < 7; ++k) step.add_velocity(k == 6 ? 0.8 : 0.0);
  status = stub_->Step(context().get(), step, &state);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NEAR(state.v(6), 0.8, 1e-3) << "the wrist turns at its set-point";
  EXPECT_NEAR(state.q(0), target[0], 0.03);

  // gains the physics step cannot hold are refused at creation, naming the joint
  request.mutable_config()->set_name("unstable");
  request.mutable_config()->mutable_drives(5)->set_kd(1e5);
  status = create(request, &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("unstable"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find(wrist), std::string::npos) << status.error_message();
}

// Sensor models over gRPC: Step answers with what the sensors read (State.measured, an IMU on the
// quadruped's floating base), StreamStates with ground_truth with the simulated truth of the
// same cycle; the two differ by the noise and no more.
TEST_F(ServerTest, ControllersReadTheSensorsAndAGroundTruthStreamTheTruth) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("quadruped");
  request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
  v1::SensorsConfig* sensors = request.mutable_config()->mutable_sensors();
  v1::JointSensor* joints = sensors->add_joints();
  joints->set_joint("*");
  joints->set_position_noise(1e-3);
  joints->set_velocity_noise(1e-2);
  sensors->mutable_imu()->set_enabled(true);
  sensors->mutable_imu()->set_linear_acceleration_noise(0.05);
  sensors->set_seed(9);
  v1::CreateSessionResponse created;
  grpc::Status status = create(request, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::SessionInfo& info = created.session();
  const std::uint64_t id = info.session_id();
  EXPECT_EQ(info.config().sensors().seed(), 9u);
  // a state carries the flag (3 bytes: fields above 15 take two-byte tags) and the IMU
  // (3 + (2 + 8·4) + 2 × (2 + 8·3) bytes)
  const bool mac = info.udp_authentication() == v1::UDP_AUTHENTICATION_MAC;
  const Model quadruped = loadModel("quadruped");
  EXPECT_EQ(info.udp_state_max_bytes(),
            udpStateMaxBytes(quadruped, {.mac = mac, .measured = true, .imu = true}));
  EXPECT_EQ(info.udp_state_max_bytes(), udpStateMaxBytes(quadruped, {.mac = mac}) + 3 + 89);
  ASSERT_TRUE(start(id).ok());

  auto watch = context(10);
  v1::StreamStatesRequest truth_request;
  truth_request.set_session_id(id);
  truth_request.set_ground_truth(true);
  auto truth = stub_->StreamStates(watch.get(), truth_request);

  v1::Command step;
  step.set_session_id(id);
  step.set_steps(200);
  for (std::uint32_t k = 0; k < info.model().nv(); ++k) step.add_tau(0.0);
  v1::State measured;
  status = stub_->Step(context().get(), step, &measured);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(measured.cycle(), 200u);
  EXPECT_TRUE(measured.measured());
  ASSERT_TRUE(measured.has_imu());
  ASSERT_EQ(measured.imu().orientation_size(), 4);
  ASSERT_EQ(measured.imu().linear_acceleration_size(), 3);

  v1::State actual;
  while (truth->Read(&actual) && actual.cycle() < 200) {
  }
  ASSERT_EQ(actual.cycle(), 200u);
  EXPECT_FALSE(actual.measured());
  EXPECT_FALSE(actual.has_imu());
  ASSERT_EQ(actual.q_size(), measured.q_size());
  // the base's q (7 coordinates: no encoder) is the truth; each joint within 6 σ of it
  for (int k = 0; k < 7; ++k) EXPECT_EQ(measured.q(k), actual.q(k)) << k;
  int differ = 0;
  for (int k = 7; k < actual.q_size(); ++k) {
    EXPECT_NEAR(measured.q(k), actual.q(k), 6e-3) << k;
    differ += measured.q(k) != actual.q(k) ? 1 : 0;
  }
  EXPECT_EQ(differ, actual.q_size() - 7);
  // the IMU's attitude is the base's quaternion (no attitude noise configured)
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(measured.imu().orientation(k), actual.q(3 + k), 1e-12);
  watch->TryCancel();
  truth->Finish();
}

// Fault injection over the wire: a scheduled drop_states loses the answers of its cycles on a
// lockstep Control stream (the others arrive), an injected fault shows in the ground-truth
// stream with its id, type and joint until cleared, and bad faults are refused naming the field.
TEST_F(ServerTest, InjectedFaultsReachTheControllerAndShowInTheGroundTruth) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
  v1::InjectedFault* drop = request.mutable_config()->mutable_faults()->add_schedule();
  drop->set_type(v1::FAULT_TYPE_DROP_STATES);
  drop->set_start_s(0.010);
  drop->set_duration_s(0.010);
  v1::CreateSessionResponse created;
  grpc::Status status = create(request, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::uint64_t id = created.session().session_id();
  const v1::InjectedFault& effective = created.session().config().faults().schedule(0);
  EXPECT_EQ(effective.id(), 1u);
  EXPECT_EQ(effective.rate(), 1.0) << "the default filled in";
  EXPECT_EQ(effective.burst(), 1u);
  ASSERT_TRUE(start(id).ok());

  auto call = context(10);
  auto stream = stub_->Control(call.get());
  v1::Command command;
  command.set_session_id(id);
  command.set_sequence(1);
  ASSERT_TRUE(stream->Write(command));  // sync: binds the stream, answered at once
  v1::State state;
  ASSERT_TRUE(stream->Read(&state));
  // commands of one cycle each; the states of cycle indices 10 … 19 (cycles 11 … 20) are lost:
  // each command up to the 10th is answered, the next ten are not, the 21st is again
  // (a sync in the window is not answered either: the next state read is cycle 21's)
  for (std::uint64_t k = 1; k <= 21; ++k) {
    if (k == 21) {
      // once cycle 20 ran (its state withheld), a sync: it would be answered with that state
      v1::SessionRequest get;
      get.set_session_id(id);
      v1::SessionInfo info;
      const rt::Nanoseconds give_up = rt::monotonicNow() + 5 * rt::kNanosecondsPerSecond;
      do {
        ASSERT_TRUE(stub_->GetSession(context().get(), get, &info).ok());
      } while (info.latest_state().cycle() < 20 && rt::monotonicNow() < give_up);
      ASSERT_EQ(info.latest_state().cycle(), 20u);
      command.clear_tau();
      command.set_sequence(10 * k - 5);
      ASSERT_TRUE(stream->Write(command));
    }
    command.clear_tau();
    command.add_tau(0.5);
    command.set_sequence(10 * k);
    ASSERT_TRUE(stream->Write(command));
    if (k > 10 && k <= 20) continue;
    ASSERT_TRUE(stream->Read(&state));
    EXPECT_EQ(state.cycle(), k);
    EXPECT_EQ(state.command_sequence(), 10 * k);
  }
  call->TryCancel();
  stream->Finish();
  v1::SessionStats s = stats(id);
  EXPECT_EQ(s.faults().states_withheld(), 10u);
  EXPECT_EQ(s.faults().started(), 1u);
  EXPECT_EQ(s.faults().ended(), 1u);

  // on demand: a lock on the hinge, seen in the ground truth with its id until cleared
  v1::InjectFaultRequest inject;
  inject.set_session_id(id);
  inject.mutable_fault()->set_type(v1::FAULT_TYPE_LOCK_JOINT);
  inject.mutable_fault()->set_joint("hinge");
  v1::InjectedFault injected;
  status = stub_->InjectFault(context().get(), inject, &injected);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(injected.id(), 2u);
  auto watch = context(10);
  v1::StreamStatesRequest truth_request;
  truth_request.set_session_id(id);
  truth_request.set_ground_truth(true);
  auto truth = stub_->StreamStates(watch.get(), truth_request);
  v1::Command step;
  step.set_session_id(id);
  step.set_sequence(100);
  step.set_steps(5);
  step.add_tau(0.5);
  v1::State after;
  ASSERT_TRUE(stub_->Step(context().get(), step, &after).ok());
  EXPECT_EQ(after.faults_size(), 0) << "a controller is not told";
  v1::State actual;
  while (truth->Read(&actual) && actual.cycle() < after.cycle()) {
  }
  ASSERT_EQ(actual.faults_size(), 1);
  EXPECT_EQ(actual.faults(0).id(), 2u);
  EXPECT_EQ(actual.faults(0).type(), v1::FAULT_TYPE_LOCK_JOINT);
  EXPECT_EQ(actual.faults(0).joint(), "hinge");
  s = stats(id);
  ASSERT_EQ(s.faults().active_size(), 1);
  EXPECT_EQ(s.faults().active(0).joint(), "hinge");
  v1::ClearFaultsRequest clear;
  clear.set_session_id(id);
  clear.set_id(2);
  v1::ClearFaultsResponse cleared;
  ASSERT_TRUE(stub_->ClearFaults(context().get(), clear, &cleared).ok());
  step.set_sequence(101);
  step.set_steps(1);
  ASSERT_TRUE(stub_->Step(context().get(), step, &after).ok());
  while (truth->Read(&actual) && actual.cycle() < after.cycle()) {
  }
  EXPECT_EQ(actual.faults_size(), 0);
  EXPECT_EQ(stats(id).faults().ended(), 2u);
  watch->TryCancel();
  truth->Finish();

  // refused, naming what is wrong
  const auto refused = [&](const v1::InjectedFault& fault, const std::string& why) {
    v1::InjectFaultRequest bad;
    bad.set_session_id(id);
    *bad.mutable_fault() = fault;
    v1::InjectedFault out;
    const grpc::Status answer = stub_->InjectFault(context().get(), bad, &out);
    EXPECT_EQ(answer.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << why;
    EXPECT_NE(answer.error_message().find(why), std::string::npos) << answer.error_message();
  };
  v1::InjectedFault bad;
  refused(bad, "type: unset");
  bad.set_type(v1::FAULT_TYPE_FREEZE_SENSOR);
  bad.set_joint("knee");
  refused(bad, "no joint 'knee'");
  bad.set_type(v1::FAULT_TYPE_DELAY_STATES);
  bad.clear_joint();
  bad.set_cycles(3);
  refused(bad, "faults.max_delay_cycles");
  bad.set_type(v1::FAULT_TYPE_DROP_COMMANDS);
  bad.set_rate(2.0);
  refused(bad, "rate 2 is outside (0, 1]");
  bad.set_start_s(-1.0);
  refused(bad, "start_s");
  v1::InjectFaultRequest unknown;
  unknown.set_session_id(id + 1000);
  unknown.mutable_fault()->set_type(v1::FAULT_TYPE_STALL);
  EXPECT_EQ(stub_->InjectFault(context().get(), unknown, &injected).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServerTest, LockstepStepReproducesOfflineSimulation) {
  struct Case {
    const char* name;
    int motors;  // > 0: PD tracking on the first `motors` dofs, the others free; 0: sines
  };
  for (const Case c : {Case{"iiwa14", 0}, Case{"flexible_arm", 0}, Case{"four_bar", 1},
                       Case{"delta", 3}}) {
    SCOPED_TRACE(c.name);
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name(c.name);
    request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
    request.mutable_config()->set_control_rate_hz(500.0);
    request.mutable_config()->set_substeps(2);
    v1::CreateSessionResponse created;
    ASSERT_TRUE(create(request, &created).ok());
    const std::uint64_t id = created.session().session_id();
    ASSERT_TRUE(start(id).ok());

    auto model = std::make_shared<const Model>(loadModel(c.name));
    Simulator offline(model, Formulation::kAba, Integrator::kRk4, 1.0 / 1000.0);
    const Eigen::VectorXd q_start = offline.q();
    Eigen::VectorXd tau(model->nv);
    double farthest = 0.0;  // from the start, on the tracked motors [rad]
    for (int cycle = 1; cycle <= 200; ++cycle) {
      v1::Command command;
      command.set_session_id(id);
      command.set_sequence(static_cast<std::uint64_t>(cycle));
      for (int k = 0; k < model->nv; ++k) {
        if (c.motors == 0) {
          // joint torques; no modal forces (an unloaded structure)
          const bool modal = k >= model->idxModesV(model->dof_body[k]);
          tau[k] = modal ? 0.0 : 5.0 * std::sin(0.05 * cycle + k);
        } else if (k < c.motors) {
          // the offline state is the one Step answered last (asserted equal below)
          const double reference = q_start[k] + 0.3 * std::sin(0.02 * cycle + 2.0 * k);
          tau[k] = 20.0 * (reference - offline.q()[k]) - 1.0 * offline.v()[k];
        } else {
          tau[k] = 0.0;
        }
        command.add_tau(tau[k]);
      }
      const std::uint32_t steps = cycle % 3 == 0 ? 3 : 1;
      command.set_steps(steps);
      v1::State state;
      const grpc::Status status = stub_->Step(context().get(), command, &state);
      ASSERT_TRUE(status.ok()) << status.error_message();
      for (std::uint32_t s = 0; s < steps * 2; ++s) offline.step(tau);
      ASSERT_EQ(state.command_sequence(), static_cast<std::uint64_t>(cycle));
      ASSERT_EQ(state.q_size(), model->nq);
      for (int k = 0; k < model->nq; ++k) ASSERT_EQ(state.q(k), offline.q()[k]) << "cycle " << cycle;
      for (int k = 0; k < model->nv; ++k) ASSERT_EQ(state.v(k), offline.v()[k]) << "cycle " << cycle;
      ASSERT_EQ(state.time(), offline.time());
      for (int k = 0; k < c.motors; ++k)
        farthest = std::max(farthest, std::abs(offline.q()[k] - q_start[k]));
    }
    // the loop models moved, and stayed where their loops are far from singular
    if (c.motors > 0) {
      EXPECT_GT(farthest, 0.1);
      EXPECT_LT(farthest, 0.5);
    }
    const v1::SessionStats s = stats(id);
    EXPECT_EQ(s.grpc().accepted(), 200u);
    EXPECT_EQ(s.commands().applied(), 200u);
  }
}

// Gravity torques of the arm at q, from the engine (the controller's model-based feed-forward).
Eigen::VectorXd gravity(const Model& model, Data& data, const Eigen::VectorXd& q) {
  return nonLinearEffects(model, data, q, Eigen::VectorXd::Zero(model.nv));
}

// PD control with gravity feed-forward over the Control stream, realtime at 1 kHz, brings the
// arm from its neutral posture to a target posture.
TEST_F(ServerTest, PdControlOverControlStreamConverges) {
  const v1::SessionInfo info = createBundled("iiwa14", v1::SESSION_MODE_REALTIME);
  const std::uint64_t id = info.session_id();
  ASSERT_TRUE(start(id).ok());
  auto model = std::make_shared<const Model>(loadModel("iiwa14"));
  Data data(*model);
  Eigen::VectorXd target(7);
  target << 0.4, 0.3, -0.2, -0.8, 0.1, 0.5, 0.0;
  // Joint-space PD scaled by the mass matrix diagonal at the target: every joint gets the
  // same 10 rad/s critically damped response, whatever its inertia (a plain PD tuned for the
  // heavy shoulder would make the light wrist unstable with a cycle or two of delay).
  const Eigen::VectorXd inertia = crba(*model, data, target).diagonal();
  const double kp = 100.0, kd = 20.0;

  auto call = context(30);
  auto stream = stub_->Control(call.get());
  v1::Command command;
  command.set_session_id(id);
  std::uint64_t sequence = 1;
  command.set_sequence(sequence);
  ASSERT_TRUE(stream->Write(command));  // sync: binds the stream, answered at once
  v1::State state;
  Eigen::VectorXd q(7), v(7);
  double error = 1e9;
  std::uint64_t answered = 0;
  // 3 s of simulated time: on a loaded machine the session skips cycles and runs slower than the
  // wall clock, so the wall clock only bounds the wait
  const rt::Nanoseconds give_up = rt::monotonicNow() + 20 * rt::kNanosecondsPerSecond;
  while (rt::monotonicNow() < give_up && state.time() < 3.0 && stream->Read(&state)) {
    ASSERT_EQ(state.q_size(), 7);
    for (int k = 0; k < 7; ++k) {
      q[k] = state.q(k);
      v[k] = state.v(k);
    }
    if (state.command_sequence() > 1) ++answered;
    error = (q - target).cwiseAbs().maxCoeff();
    const Eigen::VectorXd tau =
        gravity(*model, data, q) + inertia.cwiseProduct(kp * (target - q) - kd * v);
    command.set_sequence(++sequence);
    command.clear_tau();
    for (int k = 0; k < 7; ++k) command.add_tau(tau[k]);
    if (!stream->Write(command)) break;
  }
  stream->WritesDone();
  while (stream->Read(&state)) {  // the States still on their way, until the server ends it
  }
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  // Critically damped-ish joint loops settle in well under a second; 2 s more of holding.
  EXPECT_LT(error, 2e-3) << "max joint error [rad]";
  EXPECT_GT(answered, 1000u);
  const v1::SessionStats s = stats(id);
  EXPECT_GT(s.grpc().accepted(), 1000u);
  EXPECT_EQ(s.grpc().malformed() + s.grpc().stale() + s.grpc().duplicate() + s.grpc().wrong_size(),
            0u);
}

TEST_F(ServerTest, ControlStreamRejectsBadCommandsWithInvalidArgument) {
  const v1::SessionInfo info = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  ASSERT_TRUE(start(info.session_id()).ok());
  {
    auto call = context();
    auto stream = stub_->Control(call.get());
    v1::Command command;
    command.set_session_id(info.session_id());
    command.set_sequence(5);
    ASSERT_TRUE(stream->Write(command));
    v1::State state;
    ASSERT_TRUE(stream->Read(&state));
    // A second controller on the same session is refused.
    {
      auto call2 = context();
      auto second = stub_->Control(call2.get());
      second->Write(command);
      v1::State ignored;
      while (second->Read(&ignored)) {
      }
      EXPECT_EQ(second->Finish().error_code(), StatusCode::FAILED_PRECONDITION);
    }
    command.set_sequence(4);  // stale
    command.add_tau(0.0);
    stream->Write(command);
    while (stream->Read(&state)) {
    }
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("sequence 4"), std::string::npos);
  }
  {
    auto call = context();
    auto stream = stub_->Control(call.get());
    v1::Command command;
    command.set_session_id(info.session_id());
    command.set_sequence(1);
    command.add_tau(std::nan(""));
    stream->Write(command);
    v1::State state;
    while (stream->Read(&state)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
  }
  const v1::SessionStats s = stats(info.session_id());
  EXPECT_EQ(s.grpc().stale(), 1u);
  EXPECT_EQ(s.grpc().non_finite(), 1u);
  EXPECT_EQ(s.state(), v1::SESSION_STATE_RUNNING);  // untouched
}

// Bounded work per request: a Step call or a Control-stream command asking for more cycles than
// limits.max_step_cycles is refused, naming the limit, and the session serves on.
TEST_F(ServerTest, StepsAboveTheLimitAreRefusedAndTheSessionServesOn) {
  const std::uint32_t limit = ServerConfig{}.max_step_cycles;
  ASSERT_EQ(limit, 10000u);
  const v1::SessionInfo info = createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);
  const std::uint64_t id = info.session_id();
  ASSERT_TRUE(start(id).ok());
  v1::Command step;
  step.set_session_id(id);
  step.set_sequence(1);
  step.add_tau(0.0);
  v1::State state;
  for (const std::uint32_t steps : {4'000'000'000u, limit + 1}) {
    step.set_steps(steps);
    const auto started = std::chrono::steady_clock::now();
    const grpc::Status status = stub_->Step(context().get(), step, &state);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("steps = " + std::to_string(steps)), std::string::npos)
        << status.error_message();
    EXPECT_NE(status.error_message().find("at most 10000 cycles per command "
                                          "(limits.max_step_cycles)"),
              std::string::npos)
        << status.error_message();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));
  }
  step.clear_tau();  // a sync that asks for cycles: the same limit
  step.set_steps(limit + 1);
  EXPECT_EQ(stub_->Step(context().get(), step, &state).error_code(), StatusCode::INVALID_ARGUMENT);
  // nothing ran; the session serves on, up to the limit
  v1::SessionInfo now;
  v1::SessionRequest which;
  which.set_session_id(id);
  ASSERT_TRUE(stub_->GetSession(context().get(), which, &now).ok());
  EXPECT_EQ(now.latest_state().cycle(), 0u);
  EXPECT_EQ(now.state(), v1::SESSION_STATE_RUNNING);
  step.add_tau(0.0);
  step.set_steps(limit);
  grpc::Status status = stub_->Step(context(30).get(), step, &state);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(state.cycle(), limit);

  // The Control stream: the same rule ends the stream with INVALID_ARGUMENT.
  {
    auto call = context();
    auto stream = stub_->Control(call.get());
    v1::Command command;
    command.set_session_id(id);
    command.set_sequence(1);
    ASSERT_TRUE(stream->Write(command));  // sync: binds the stream
    ASSERT_TRUE(stream->Read(&state));
    command.set_sequence(2);
    command.add_tau(0.0);
    command.set_steps(limit + 1);
    stream->Write(command);
    while (stream->Read(&state)) {
    }
    status = stream->Finish();
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("limits.max_step_cycles"), std::string::npos)
        << status.error_message();
  }
  {
    // a new stream is served: a step request of 3 cycles is answered after them
    auto call = context();
    auto stream = stub_->Control(call.get());
    v1::Command command;
    command.set_session_id(id);
    command.set_sequence(1);
    ASSERT_TRUE(stream->Write(command));
    ASSERT_TRUE(stream->Read(&state));
    EXPECT_EQ(state.cycle(), limit);
    command.set_sequence(2);
    command.set_steps(3);
    ASSERT_TRUE(stream->Write(command));
    ASSERT_TRUE(stream->Read(&state));
    EXPECT_EQ(state.cycle(), limit + 3);
    stream->WritesDone();
    while (stream->Read(&state)) {
    }
    EXPECT_TRUE(stream->Finish().ok());
  }
  const v1::SessionStats s = stats(id);
  EXPECT_EQ(s.grpc().too_many_steps(), 4u);
  EXPECT_EQ(s.grpc().received(), s.grpc().accepted() + s.grpc().too_many_steps());
  EXPECT_EQ(s.state(), v1::SESSION_STATE_RUNNING);

  // REALTIME ignores steps: any value is accepted.
  const v1::SessionInfo realtime = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  ASSERT_TRUE(start(realtime.session_id()).ok());
  auto call = context();
  auto stream = stub_->Control(call.get());
  v1::Command command;
  command.set_session_id(realtime.session_id());
  command.set_sequence(1);
  command.add_tau(0.0);
  command.set_steps(4'000'000'000u);
  ASSERT_TRUE(stream->Write(command));
  ASSERT_TRUE(stream->Read(&state));
  call->TryCancel();
  while (stream->Read(&state)) {
  }
  stream->Finish();
  EXPECT_EQ(stats(realtime.session_id()).grpc().too_many_steps(), 0u);
}

// Bounded work per request: a model text above one of the server's limits is refused before the
// work it would cost, with a message naming the limit; the server serves on.
TEST_F(ServerTest, ModelsAboveTheLimitsAreRefusedNamingTheLimit) {
  const auto refused = [&](const std::string& yaml, const std::string& part) {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_yaml(yaml);
    v1::CreateSessionResponse response;
    const grpc::Status status = create(request, &response);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT) << yaml.substr(0, 200);
    EXPECT_NE(status.error_message().find(part), std::string::npos) << status.error_message();
    EXPECT_LE(status.error_message().size(), 1100u);
  };
  const std::string beam =
      "bodies:\n"
      "  - name: link\n"
      "    joint: {type: revolute, axis: [0, 0, 1]}\n"
      "    flexible: {beam: {youngs_modulus: 70.0e9, area_moment: 1.0e-8, density: 2700,\n"
      "                      area: 4.0e-4, length: 1.0, modes: MODES, elements: ELEMENTS}}\n";
  const auto withBeam = [&](const std::string& modes, const std::string& elements) {
    std::string text = beam;
    text.replace(text.find("MODES"), 5, modes);
    text.replace(text.find("ELEMENTS"), 8, elements);
    return text;
  };
  refused(withBeam("2", "101"), "101 is above the limit of 100 elements per beam");
  refused(withBeam("33", "100"), "33 is above the limit of 32 modes per flexible body");
  // 2001 bodies, all one alias
  std::string bodies = "bodies: [&b {name: a, joint: {type: fixed}}";
  for (int k = 1; k < 2001; ++k) bodies += ",*b";
  refused(bodies + "]\n", "2001 bodies exceed the limit of 2000");
  // the same beam on 100 bodies: the model reaches 128 degrees of freedom before the 43rd beam
  std::string chain = withBeam("2", "100");
  chain.replace(chain.find("flexible: {"), 11, "flexible: &f {");
  std::string parent = "link";
  for (int k = 1; k < 100; ++k) {
    std::string name = "l";  // (not "l" + …: GCC 12 warns falsely, -Wrestrict)
    name += std::to_string(k);
    chain += "  - {name: " + name + ", parent: " + parent +
             ", parent_node: tip, joint: {type: revolute, axis: [0, 0, 1]}, flexible: *f}\n";
    parent = name;
  }
  refused(chain, "above the limit of 128");
  refused("bodies: " + std::string(100'000, '[') + std::string(100'000, ']') + "\n",
          "nested deeper than 499 levels");
  refused(std::string(512 << 10, '#') + "\n", "this server accepts at most 524288");
  refused("bodies:\n  - {name: a, joint: {type: revolute, axis: [0, 0, 1]}, flexible: "
          "{file: /dev/zero}}\n",
          "body 'a': flexible.file: '/dev/zero' is outside the model directory");
  refused("bodies:\n  - {name: a, joint: {type: revolute, axis: [0, 0, 1]}, flexible: "
          "{file: ../../x.yaml}}\n",
          "'../../x.yaml' is outside the model directory");
  {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name("pendulum");
    request.mutable_config()->set_name(std::string(257, 'n'));
    v1::CreateSessionResponse response;
    const grpc::Status status = create(request, &response);
    EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("config.name: 257 bytes, allowed at most 256"),
              std::string::npos)
        << status.error_message();
  }
  // within the limits: served
  v1::CreateSessionRequest request;
  request.mutable_model()->set_yaml(withBeam("32", "100"));
  v1::CreateSessionResponse response;
  const grpc::Status status = create(request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nv(), 33u);
}

// The controller goes silent: after missed_cycles_limit cycles the watchdog applies its policy.
TEST_F(ServerTest, WatchdogTripsWhenTheControllerGoesSilent) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->mutable_watchdog()->set_policy(v1::WATCHDOG_POLICY_ZERO);
  // 100 ms of silence: far beyond any scheduling hiccup of the ping-pong phase, even under the
  // sanitizers.
  request.mutable_config()->mutable_watchdog()->set_missed_cycles_limit(100);
  v1::CreateSessionResponse created;
  ASSERT_TRUE(create(request, &created).ok());
  const std::uint64_t id = created.session().session_id();
  ASSERT_TRUE(start(id).ok());

  auto call = context(10);
  auto stream = stub_->Control(call.get());
  v1::Command command;
  command.set_session_id(id);
  v1::State state;
  for (std::uint64_t sequence = 1; sequence <= 50; ++sequence) {
    command.set_sequence(sequence);
    command.clear_tau();
    command.add_tau(0.75);
    ASSERT_TRUE(stream->Write(command));
    ASSERT_TRUE(stream->Read(&state));
  }
  EXPECT_FALSE(state.watchdog_tripped());
  // Silence: states keep coming; the watchdog trips and applies zero torque.
  bool tripped = false;
  for (int i = 0; i < 2000 && !tripped; ++i) {
    ASSERT_TRUE(stream->Read(&state));
    tripped = state.watchdog_tripped();
  }
  ASSERT_TRUE(tripped);
  ASSERT_EQ(state.tau_size(), 1);
  EXPECT_EQ(state.tau(0), 0.0);
  call->TryCancel();
  stream->Finish();
  const v1::SessionStats s = stats(id);
  EXPECT_EQ(s.watchdog().trips(), 1u);
  EXPECT_TRUE(s.watchdog().tripped());
}

// Two sessions run at once; ten viewers watch one of them without disturbing it.
TEST_F(ServerTest, TwoSessionsAndTenSubscribers) {
  ServerConfig config = testConfig();
  config.max_stream_readers_per_client = 10;  // the ten subscribers come from one address
  server_->shutdown();
  startServer(config);
  const v1::SessionInfo a = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  const v1::SessionInfo b = createBundled("iiwa14", v1::SESSION_MODE_REALTIME);
  ASSERT_TRUE(start(a.session_id()).ok());
  ASSERT_TRUE(start(b.session_id()).ok());

  constexpr int kViewers = 10;
  std::vector<std::thread> viewers;
  std::vector<int> received(kViewers, 0);
  std::vector<std::uint64_t> last_cycle(kViewers, 0);
  std::vector<bool> ordered(kViewers, true);
  std::vector<std::unique_ptr<grpc::ClientContext>> calls;
  for (int i = 0; i < kViewers; ++i) calls.push_back(context(10));
  for (int i = 0; i < kViewers; ++i) {
    viewers.emplace_back([&, i] {
      v1::StreamStatesRequest request;
      request.set_session_id(b.session_id());
      request.set_decimation(10);
      auto reader = stub_->StreamStates(calls[i].get(), request);
      v1::State state;
      while (reader->Read(&state)) {
        if (received[i] > 0 && state.cycle() <= last_cycle[i]) ordered[i] = false;
        last_cycle[i] = state.cycle();
        ++received[i];
      }
      reader->Finish();
    });
  }
  // about a second of running; counted in cycles, since a loaded machine runs slower than real time
  const rt::Nanoseconds give_up = rt::monotonicNow() + 20 * rt::kNanosecondsPerSecond;
  while (rt::monotonicNow() < give_up &&
         (stats(b.session_id()).cycles() < 1000 || stats(a.session_id()).cycles() < 1000))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  v1::SessionRequest close;
  close.set_session_id(b.session_id());
  v1::CloseSessionResponse closed;
  ASSERT_TRUE(stub_->CloseSession(context().get(), close, &closed).ok());
  for (std::thread& t : viewers) t.join();
  for (int i = 0; i < kViewers; ++i) {
    // one state per 10 cycles at decimation 10 (≥ 100 here); far fewer would mean a stalled feed
    EXPECT_GT(received[i], 50) << "viewer " << i;
    EXPECT_TRUE(ordered[i]) << "viewer " << i;
  }
  EXPECT_GT(closed.final_stats().cycles(), 800u);
  // The other session ran on.
  const v1::SessionStats other = stats(a.session_id());
  EXPECT_EQ(other.state(), v1::SESSION_STATE_RUNNING);
  EXPECT_GT(other.cycles(), 800u);
}

// Every StreamStates reader costs the session's publisher a state per cycle: beyond
// limits.max_stream_readers a session's next reader is refused with RESOURCE_EXHAUSTED, and a
// reader that ends makes room at once.
TEST_F(ServerTest, StreamStatesReadersAreBoundedPerSession) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.max_stream_readers = 2;
  startServer(config);
  const v1::SessionInfo a = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  const v1::SessionInfo b = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  const auto open = [&](std::uint64_t id, std::unique_ptr<grpc::ClientContext>& call) {
    call = context();
    v1::StreamStatesRequest request;
    request.set_session_id(id);
    return stub_->StreamStates(call.get(), request);
  };
  std::unique_ptr<grpc::ClientContext> c1, c2, c3, c4;
  v1::State state;
  auto r1 = open(a.session_id(), c1);
  ASSERT_TRUE(r1->Read(&state));  // the state on opening: the stream is served
  auto r2 = open(a.session_id(), c2);
  ASSERT_TRUE(r2->Read(&state));
  auto r3 = open(a.session_id(), c3);
  EXPECT_FALSE(r3->Read(&state));
  const grpc::Status refused = r3->Finish();
  EXPECT_EQ(refused.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("2 StreamStates readers, this server's limit "
                                         "(limits.max_stream_readers)"),
            std::string::npos)
      << refused.error_message();
  // per session: the other one has room
  auto r4 = open(b.session_id(), c4);
  ASSERT_TRUE(r4->Read(&state));
  EXPECT_EQ(state.session_id(), b.session_id());
  // a reader that ends frees its place
  c1->TryCancel();
  while (r1->Read(&state)) {
  }
  r1->Finish();
  bool served = false;
  const rt::Nanoseconds give_up = rt::monotonicNow() + 5 * rt::kNanosecondsPerSecond;
  while (!served && rt::monotonicNow() < give_up) {
    std::unique_ptr<grpc::ClientContext> c5;
    auto r5 = open(a.session_id(), c5);
    served = r5->Read(&state);
    c5->TryCancel();
    while (r5->Read(&state)) {
    }
    r5->Finish();
  }
  EXPECT_TRUE(served);
  for (auto* c : {c2.get(), c4.get()}) c->TryCancel();
  while (r2->Read(&state)) {
  }
  r2->Finish();
  while (r4->Read(&state)) {
  }
  r4->Finish();
}

// A small model text, loaded under the lock of model texts.
v1::CreateSessionRequest yamlRequest() {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_yaml(
      "bodies:\n"
      "  - {name: a, joint: {type: revolute, axis: [0, 0, 1]},\n"
      "     inertia: {mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}}\n");
  return request;
}

v1::CreateSessionRequest bundledRequest(const std::string& model) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name(model);
  return request;
}

// Bundled models are loaded once, at start-up: their sessions share one Model and never wait for
// the load of a model text.
TEST_F(ServerTest, BundledModelsAreLoadedOnceAndShared) {
  const auto held = server_->sessions().holdTextLoads();
  const v1::SessionInfo a = createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);
  const v1::SessionInfo b = createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);
  const v1::SessionInfo c = createBundled("iiwa14", v1::SESSION_MODE_LOCKSTEP);
  SessionRegistry& sessions = server_->sessions();
  ASSERT_TRUE(sessions.find(a.session_id()) && sessions.find(b.session_id()) &&
              sessions.find(c.session_id()));
  EXPECT_EQ(&sessions.find(a.session_id())->model(), &sessions.find(b.session_id())->model());
  EXPECT_NE(&sessions.find(a.session_id())->model(), &sessions.find(c.session_id())->model());
}

// models.directory: its files are offered by name beside the bundled models (one of a bundled
// name replaces it), a file that does not load is refused with the loader's message (file and
// line), and a file put there after start-up loads when a session asks for it.
TEST_F(ServerTest, TheModelDirectorysFilesAreOfferedByName) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("hilsim_models_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(bundledModelPath("ur5"), dir / "mybot.urdf");
  fs::copy_file(bundledModelPath("double_pendulum"), dir / "pendulum.yaml");  // replaces it
  {
    std::ofstream broken(dir / "broken.urdf");
    broken << "<robot name=\"broken\">\n<link name=\"a\"/>\n<joint name=\"j\" type=\"fixed\">"
              "<parent link=\"a\"/><child link=\"nowhere\"/></joint></robot>\n";
    // loads only with a massless policy: not offered, but created with one
    std::ofstream finger(dir / "finger.urdf");
    finger << "<robot name='finger'><link name='a'/><joint name='j' type='continuous'><parent "
              "link='a'/><child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial>"
              "<mass value='1'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/>"
              "</inertial></link><joint name='f' type='continuous'><parent link='b'/><child "
              "link='c'/></joint><link name='c'/></robot>\n";
  }
  server_->shutdown();
  ServerConfig config = testConfig();
  config.model_directory = dir.string();
  startServer(config);

  v1::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(context().get(), {}, &models).ok());
  std::map<std::string, std::uint32_t> offered;  // name → nv
  for (const v1::BundledModel& m : models.models()) offered[m.name()] = m.info().nv();
  EXPECT_EQ(models.models(0).name(), defaultModelName());
  EXPECT_EQ(offered.count("iiwa14"), 1u);  // the bundled ones stay
  EXPECT_EQ(offered["mybot"], 6u);
  EXPECT_EQ(offered["pendulum"], 2u);  // the directory's file, not the bundled pendulum (nv 1)
  EXPECT_EQ(offered.count("broken"), 0u);

  EXPECT_EQ(createBundled("mybot", v1::SESSION_MODE_LOCKSTEP).model().nv(), 6u);
  v1::CreateSessionResponse response;
  grpc::Status status = create(bundledRequest("broken"), &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("model 'broken' does not load: " +
                                        (dir / "broken.urdf").string() + ":3:"),
            std::string::npos)
      << status.error_message();
  EXPECT_EQ(offered.count("finger"), 0u);
  v1::CreateSessionRequest finger = bundledRequest("finger");
  EXPECT_EQ(create(finger, &response).error_code(), StatusCode::INVALID_ARGUMENT);
  finger.mutable_model()->set_massless(v1::MASSLESS_POLICY_WELD);
  status = create(finger, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nv(), 1u);
  // mybot (ur5) is fixed to a 'world' link: floating it is refused with the loader's reason
  v1::CreateSessionRequest floating = bundledRequest("mybot");
  floating.mutable_model()->set_floating_base(true);
  status = create(floating, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("floating_base needs a root link other than 'world'"),
            std::string::npos)
      << status.error_message();
  status = create(bundledRequest("later"), &response);
  EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("mybot"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find(dir.string()), std::string::npos) << status.error_message();
  fs::copy_file(bundledModelPath("pendulum"), dir / "later.yaml");
  EXPECT_EQ(createBundled("later", v1::SESSION_MODE_LOCKSTEP).model().nv(), 1u);
  fs::remove_all(dir);
}

// Every model the server offers runs at the defaults a user asks for (1 kHz, substeps left to the
// server): 200 lockstep cycles without a fault. talos_full_v2's gripper needs RK4 steps under
// 0.52 ms: the server takes 3 substeps for it, and refuses substeps 1 when a request insists.
TEST_F(ServerTest, EveryOfferedModelRunsAtTheDefaults) {
  v1::ListModelsResponse models;
  ASSERT_TRUE(stub_->ListModels(context().get(), {}, &models).ok());
  for (const v1::BundledModel& m : models.models()) {
    SCOPED_TRACE(m.name());
    v1::CreateSessionRequest request = bundledRequest(m.name());
    request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
    v1::CreateSessionResponse created;
    const grpc::Status status = create(request, &created);
    ASSERT_TRUE(status.ok()) << status.error_message();
    const std::uint64_t id = created.session().session_id();
    if (m.name() == "talos_full_v2") {
      EXPECT_EQ(created.session().config().substeps(), 3u);
    }
    ASSERT_TRUE(start(id).ok());
    v1::Command command;
    command.set_session_id(id);
    command.set_steps(200);
    for (std::uint32_t k = 0; k < m.info().nv(); ++k) command.add_tau(0.0);
    v1::State state;
    const grpc::Status stepped = stub_->Step(context().get(), command, &state);
    EXPECT_TRUE(stepped.ok()) << stepped.error_message();
    EXPECT_EQ(state.cycle(), 200u);
    v1::SessionRequest close;
    close.set_session_id(id);
    v1::CloseSessionResponse closed;
    ASSERT_TRUE(stub_->CloseSession(context().get(), close, &closed).ok());
    EXPECT_FALSE(closed.final_stats().has_fault()) << closed.final_stats().fault().reason();
  }
  v1::CreateSessionRequest insisting = bundledRequest("talos_full_v2");
  insisting.mutable_config()->set_substeps(1);
  v1::CreateSessionResponse refused;
  const grpc::Status status = create(insisting, &refused);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("set by joint 'gripper_"), std::string::npos)
      << status.error_message();
  EXPECT_NE(status.error_message().find("use substeps ≥ 3 at 1000 Hz"), std::string::npos)
      << status.error_message();
}

// A lease: a session nobody uses for longer than its idle_timeout_s is closed by the server; one
// whose client keeps stepping it stays, and so does one with an open Control stream. ListSessions
// shows who created each one and how long ago.
TEST_F(ServerTest, ASessionNobodyUsesIsClosedWhenItsLeaseRunsOut) {
  const auto create_leased = [&](const std::string& name) {
    v1::CreateSessionRequest request = bundledRequest("pendulum");
    request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
    request.mutable_config()->set_name(name);
    request.mutable_config()->set_idle_timeout_s(0.5);
    v1::CreateSessionResponse response;
    EXPECT_TRUE(create(request, &response).ok());
    EXPECT_EQ(response.session().config().idle_timeout_s(), 0.5);
    return response.session().session_id();
  };
  const std::uint64_t forgotten = create_leased("forgotten");
  const std::uint64_t stepped = create_leased("stepped");
  const std::uint64_t streamed = create_leased("streamed");
  const v1::SessionInfo lasting = createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);  // none
  ASSERT_TRUE(start(stepped).ok());
  ASSERT_TRUE(start(streamed).ok());
  client::SimulationClient client(server_->grpcTarget(), operatorOptions());
  auto control = client.openControl(streamed);  // open, silent
  control->sync();
  v1::ListSessionsResponse listed;
  ASSERT_TRUE(stub_->ListSessions(context().get(), {}, &listed).ok());
  ASSERT_EQ(listed.sessions_size(), 4);
  EXPECT_EQ(listed.sessions(0).owner().rfind("ipv", 0), 0u) << listed.sessions(0).owner();
  EXPECT_GE(listed.sessions(0).age_s(), 0.0);
  EXPECT_LT(listed.sessions(0).age_s(), 5.0);
  // 1.5 s: three leases' worth; the stepped one is stepped every 100 ms
  for (int k = 0; k < 15; ++k) {
    v1::Command command;
    command.set_session_id(stepped);
    command.add_tau(0.0);
    v1::State state;
    ASSERT_TRUE(stub_->Step(context().get(), command, &state).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  SessionRegistry& sessions = server_->sessions();
  EXPECT_EQ(sessions.find(forgotten), nullptr) << "its lease ran out";
  EXPECT_NE(sessions.find(stepped), nullptr);
  EXPECT_NE(sessions.find(streamed), nullptr) << "a Control stream is open on it";
  EXPECT_NE(sessions.find(lasting.session_id()), nullptr) << "no lease";
  control.reset();  // the stream ends: the lease counts from there
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  // the stream's session and the one no longer stepped went too
  ASSERT_EQ(sessions.list().size(), 1u);
  EXPECT_EQ(sessions.list().front()->id(), lasting.session_id());
}

// A server-wide default lease: a request that says 0 keeps its session for good; an open
// StreamStates is a use (a viewer or a logger watching); a session on the default goes.
TEST_F(ServerTest, ALeaseOfZeroIsNeverAndAWatchedSessionIsInUse) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.session_defaults.set_idle_timeout_s(0.4);
  startServer(config);
  const auto create_named = [&](const std::string& name, std::optional<double> lease) {
    v1::CreateSessionRequest request = bundledRequest("pendulum");
    request.mutable_config()->set_name(name);
    if (lease) request.mutable_config()->set_idle_timeout_s(*lease);
    v1::CreateSessionResponse response;
    EXPECT_TRUE(create(request, &response).ok());
    return response.session().session_id();
  };
  const std::uint64_t kept = create_named("kept", 0.0);
  const std::uint64_t watched = create_named("watched", std::nullopt);
  const std::uint64_t left = create_named("left", std::nullopt);
  ASSERT_TRUE(start(watched).ok());
  client::SimulationClient client(server_->grpcTarget(), operatorOptions());
  auto stream = client.streamStates(watched);
  v1::State state;
  ASSERT_TRUE(stream->read(state));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  std::vector<std::uint64_t> open;
  for (const auto& session : server_->sessions().list()) open.push_back(session->id());
  EXPECT_EQ(open, (std::vector<std::uint64_t>{kept, watched})) << "'left' (id " << left << ") went";
  stream->cancel();
  stream->finish();
  // the server's own names are not a client's to take
  v1::CreateSessionRequest request = bundledRequest("pendulum");
  request.mutable_config()->set_name("session-42");
  v1::CreateSessionResponse response;
  const grpc::Status status = create(request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("the name the server gives an unnamed session"),
            std::string::npos)
      << status.error_message();
}

// Session names are unique among the open sessions: the CLI and start-up sessions address
// sessions by name. A closed session's name is free again.
TEST_F(ServerTest, ASessionNameIsUniqueAmongTheOpenSessions) {
  v1::CreateSessionRequest request = bundledRequest("pendulum");
  request.mutable_config()->set_name("arm");
  v1::CreateSessionResponse first, second;
  ASSERT_TRUE(create(request, &first).ok());
  EXPECT_EQ(first.session().name(), "arm");
  const grpc::Status status = create(request, &second);
  EXPECT_EQ(status.error_code(), StatusCode::ALREADY_EXISTS);
  EXPECT_NE(status.error_message().find("session " + std::to_string(first.session().session_id()) +
                                        " is named 'arm'"),
            std::string::npos)
      << status.error_message();
  v1::SessionRequest close;
  close.set_session_id(first.session().session_id());
  v1::CloseSessionResponse closed;
  ASSERT_TRUE(stub_->CloseSession(context().get(), close, &closed).ok());
  EXPECT_TRUE(create(request, &second).ok());
}

// A full server refuses CreateSession before it loads a model: neither a bundled name nor a model
// text waits for the lock of model texts (a text would otherwise wait, then be UNAVAILABLE).
TEST_F(ServerTest, AFullServerRefusesBeforeLoadingAModel) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.max_sessions = 1;
  startServer(config);
  createBundled("pendulum", v1::SESSION_MODE_LOCKSTEP);
  const auto held = server_->sessions().holdTextLoads();
  for (const v1::CreateSessionRequest& request : {bundledRequest("iiwa14"), yamlRequest()}) {
    v1::CreateSessionResponse response;
    const grpc::Status status = stub_->CreateSession(context(30).get(), request, &response);
    EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_NE(status.error_message().find("session limit (1) is reached"), std::string::npos)
        << status.error_message();
  }
}

// Model texts load one at a time, but a CreateSession waits for another text's load at most
// SessionRegistry::kTextLoadWait, then answers UNAVAILABLE instead of holding a gRPC thread.
TEST_F(ServerTest, AModelTextWaitsForAnotherLoadOnlySoLong) {
  v1::CreateSessionResponse response;
  {
    const auto held = server_->sessions().holdTextLoads();
    const grpc::Status status = stub_->CreateSession(context(30).get(), yamlRequest(), &response);
    EXPECT_EQ(status.error_code(), StatusCode::UNAVAILABLE) << status.error_message();
    EXPECT_EQ(status.error_message(), "another model is being loaded; retry");
  }
  const grpc::Status status = create(yamlRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.session().model().nv(), 1u);
}

TEST_F(ServerTest, AccessTokenIsRequiredWhenConfigured) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.access_token = "s3cret";
  startServer(config);
  v1::ListModelsResponse models;
  grpc::Status status = stub_->ListModels(context().get(), {}, &models);
  EXPECT_EQ(status.error_code(), StatusCode::UNAUTHENTICATED);
  token_ = "wrong";
  EXPECT_EQ(stub_->ListModels(context().get(), {}, &models).error_code(),
            StatusCode::UNAUTHENTICATED);
  token_ = "s3cret";
  EXPECT_TRUE(stub_->ListModels(context().get(), {}, &models).ok());
}

// TLS with the test certificate of tests/data/tls (self-signed for localhost and 127.0.0.1): a
// client that checks the certificate against it gets through, together with the access token; a
// plaintext client and a client that trusts only the system's roots do not.
TEST_F(ServerTest, TlsServesClientsThatTrustItsCertificate) {
  server_->shutdown();
  const std::string tls_dir = HILSIM_TEST_DATA_DIR "/tls/";
  ServerConfig config = testConfig();
  config.tls_certificate_file = tls_dir + "server.crt";
  config.tls_key_file = tls_dir + "server.key";
  config.access_token = "s3cret";
  startServer(config);
  const std::string target = server_->grpcTarget();

  client::ClientOptions trusting;
  trusting.tls = true;
  trusting.tls_root_ca_file = tls_dir + "server.crt";
  trusting.access_token = "s3cret";
  trusting.deadline = std::chrono::milliseconds(5000);
  client::SimulationClient client(target, trusting);
  const v1::ListModelsResponse models = client.listModels();
  ASSERT_GT(models.models_size(), 0);
  EXPECT_EQ(models.models(0).name(), defaultModelName());
  // the same certificate checked under its DNS name
  trusting.tls_server_name = "localhost";
  client::SimulationClient by_name(target, trusting);
  EXPECT_GT(by_name.listModels().models_size(), 0);

  // TLS still requires the token
  client::ClientOptions no_token = trusting;
  no_token.access_token.clear();
  try {
    client::SimulationClient(target, no_token).listModels();
    ADD_FAILURE() << "a TLS client without the token was served";
  } catch (const client::RpcError& e) {
    EXPECT_EQ(e.code(), StatusCode::UNAUTHENTICATED) << e.what();
  }

  // plaintext against a TLS port, and TLS with a root store that does not hold the certificate,
  // never reach the service
  client::ClientOptions short_deadline;
  short_deadline.access_token = "s3cret";
  short_deadline.deadline = std::chrono::milliseconds(1500);
  client::ClientOptions untrusting = short_deadline;
  untrusting.tls = true;
  for (const client::ClientOptions& options : {short_deadline, untrusting}) {
    SCOPED_TRACE(options.tls ? "TLS with the system's roots" : "plaintext");
    try {
      client::SimulationClient(target, options).listModels();
      ADD_FAILURE() << "served";
    } catch (const client::RpcError& e) {
      EXPECT_TRUE(e.code() == StatusCode::UNAVAILABLE || e.code() == StatusCode::DEADLINE_EXCEEDED)
          << e.what();
    }
  }
}

// A plain HTTP GET on loopback: the body.
std::string httpGet(std::uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    ::send(fd, request.data(), request.size(), 0);
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  }
  ::close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : response.substr(body + 4);
}

// The running server's /metrics shows its sessions' figures, sampled at scrape time.
TEST_F(ServerTest, MetricsEndpointShowsTheRunningSessions) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.metrics_enabled = true;
  config.metrics_port = 0;
  startServer(config);
  ASSERT_NE(server_->metricsPort(), 0);
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->set_name("swing");
  v1::CreateSessionResponse created;
  ASSERT_TRUE(create(request, &created).ok());
  ASSERT_TRUE(start(created.session().session_id()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  const std::string text = httpGet(server_->metricsPort(), "/metrics");
  const std::string labels = "session_id=\"" + std::to_string(created.session().session_id()) +
                             "\",session=\"swing\",model=\"pendulum\"";
  const std::size_t cycles = text.find("hilsim_cycles_total{" + labels + "}");
  ASSERT_NE(cycles, std::string::npos) << text;
  const double value = std::stod(text.substr(text.find('}', cycles) + 1));
  EXPECT_GT(value, 50.0);  // ~200 cycles at 1 kHz
  EXPECT_NE(text.find("# TYPE hilsim_wakeup_latency_seconds histogram"), std::string::npos);
}

// Shared workers (rt.workers): sessions go to the least-loaded worker, a dedicated one runs on a
// thread of its own, a session past the utilisation bound is refused with the loads, lockstep
// runs on a worker too, and ListSessions, GetStats and the metrics say where each one runs.
TEST_F(ServerTest, SharedWorkersRunSessionsPlaceThemAndRefuseWhatWouldOverloadThem) {
  server_->shutdown();
  ServerConfig config = testConfig();
  config.workers.count = 2;
  config.workers.lock_memory = false;
  // placement here, the bound below: no session is to be refused here, and the arm at 4 kHz
  // takes about 80 % of a core under ThreadSanitizer, 146 % measured once on a slow host
  config.workers.max_utilisation = 4.0;
  config.metrics_enabled = true;
  config.metrics_port = 0;
  startServer(config);
  const v1::SessionInfo a = createBundled("iiwa14", v1::SESSION_MODE_REALTIME, 4000.0);
  const v1::SessionInfo b = createBundled("pendulum", v1::SESSION_MODE_REALTIME, 1000.0);
  const v1::SessionInfo c = createBundled("iiwa14", v1::SESSION_MODE_LOCKSTEP);
  v1::CreateSessionRequest own;
  own.mutable_model()->set_bundled_name("pendulum");
  own.mutable_config()->mutable_thread()->set_dedicated(true);
  v1::CreateSessionResponse own_created;
  ASSERT_TRUE(create(own, &own_created).ok());
  EXPECT_TRUE(own_created.session().config().thread().dedicated());
  for (const std::uint64_t id : {a.session_id(), b.session_id(), c.session_id(),
                                 own_created.session().session_id()}) {
    ASSERT_TRUE(start(id).ok());
  }
  // the lockstep session advances on its worker
  v1::Command step;
  step.set_session_id(c.session_id());
  step.set_sequence(1);
  step.set_steps(25);
  v1::State after;
  ASSERT_TRUE(stub_->Step(context().get(), step, &after).ok());
  EXPECT_EQ(after.cycle(), 25u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  const v1::SessionStats arm = stats(a.session_id());
  const v1::SessionStats pendulum = stats(b.session_id());
  EXPECT_GE(arm.placement().worker(), 0);
  EXPECT_GE(pendulum.placement().worker(), 0);
  EXPECT_NE(arm.placement().worker(), pendulum.placement().worker())
      << "the second session goes to the worker the first left empty";
  EXPECT_EQ(stats(own_created.session().session_id()).placement().worker(), -1);
  EXPECT_GT(arm.placement().cycle_cost_ns(), 0u);
  EXPECT_GT(arm.placement().load(), 0.0);
  EXPECT_GT(arm.cycles(), 500u);
  EXPECT_GT(pendulum.cycles(), 100u);

  v1::ListSessionsResponse listed;
  ASSERT_TRUE(stub_->ListSessions(context().get(), {}, &listed).ok());
  ASSERT_EQ(listed.workers_size(), 2);
  EXPECT_EQ(listed.workers(0).sessions() + listed.workers(1).sessions(), 3u);
  EXPECT_GT(listed.workers(arm.placement().worker()).load(), 0.0);
  EXPECT_GT(listed.workers(0).cycles() + listed.workers(1).cycles(), 600u);

  // the worker's publisher forwards the states of its sessions as its rounds run them (once a
  // cycle here; a slow reader gets the newest), not at its 20 ms poll
  auto watch = context(10);
  v1::StreamStatesRequest watch_request;
  watch_request.set_session_id(b.session_id());
  auto reader = stub_->StreamStates(watch.get(), watch_request);
  v1::State state;
  std::uint64_t first = 0, previous = 0;
  int states = 0;
  bool ordered = true;
  while (states < 200 && reader->Read(&state)) {
    if (states == 0) first = state.cycle();
    if (states > 0 && state.cycle() <= previous) ordered = false;
    previous = state.cycle();
    ++states;
  }
  watch->TryCancel();
  reader->Finish();
  EXPECT_EQ(states, 200);
  EXPECT_TRUE(ordered);
  EXPECT_LE(previous - first, 2u * 199u) << "states " << first << " … " << previous;

  const std::string text = httpGet(server_->metricsPort(), "/metrics");
  EXPECT_NE(text.find("hilsim_worker_load{worker=\"0\""), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE hilsim_session_cycle_cost_seconds gauge"), std::string::npos);

  // a bound of 1.5 arms at 4 kHz: an arm at 4 kHz with 20 substeps (about 20 times one) is
  // refused, naming the loads; the light sessions beside it are not
  server_->shutdown();
  config = testConfig();
  config.workers.count = 1;
  config.workers.lock_memory = false;
  config.workers.max_utilisation = 1.5 * arm.placement().load();
  startServer(config);
  createBundled("pendulum", v1::SESSION_MODE_REALTIME, 100.0);
  v1::CreateSessionRequest heavy;
  heavy.mutable_model()->set_bundled_name("iiwa14");
  heavy.mutable_config()->set_control_rate_hz(4000.0);
  heavy.mutable_config()->set_substeps(20);
  v1::CreateSessionResponse refused;
  const grpc::Status status = create(heavy, &refused);
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("worker 0 at"), std::string::npos)
      << status.error_message();
  createBundled("pendulum", v1::SESSION_MODE_REALTIME, 100.0);
}

// Shutdown with a controller and a viewer attached: both streams end, nothing hangs.
TEST_F(ServerTest, GracefulShutdownEndsStreams) {
  const v1::SessionInfo info = createBundled("pendulum", v1::SESSION_MODE_REALTIME);
  ASSERT_TRUE(start(info.session_id()).ok());
  auto control_call = context(10);
  auto control = stub_->Control(control_call.get());
  v1::Command command;
  command.set_session_id(info.session_id());
  command.set_sequence(1);
  ASSERT_TRUE(control->Write(command));
  v1::State state;
  ASSERT_TRUE(control->Read(&state));
  auto viewer_call = context(10);
  v1::StreamStatesRequest request;
  request.set_session_id(info.session_id());
  auto viewer = stub_->StreamStates(viewer_call.get(), request);
  ASSERT_TRUE(viewer->Read(&state));

  const rt::Nanoseconds before = rt::monotonicNow();
  server_->shutdown();
  EXPECT_LT(rt::monotonicNow() - before, 3 * rt::kNanosecondsPerSecond);
  while (control->Read(&state)) {
  }
  while (viewer->Read(&state)) {
  }
  EXPECT_EQ(control->Finish().error_code(), StatusCode::CANCELLED);
  EXPECT_EQ(viewer->Finish().error_code(), StatusCode::CANCELLED);
  server_.reset();
}

}  // namespace
}  // namespace hilsim::server
