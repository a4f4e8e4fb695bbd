// Server configuration: the shipped file, defaults, a full example, the environment token,
// relative paths, and one ConfigError line naming the key for every kind of mistake.

#include "server/server_config.h"

#include "engine/formulations/formulations.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "engine/io/model_loader.h"

namespace hilsim::server {
namespace {

namespace fs = std::filesystem;

const std::string kShippedConfig = std::string(HILSIM_MODEL_DIR) + "/../server.yaml";
constexpr const char* kTokenVariable = "HILSIM_ACCESS_TOKEN";
constexpr const char* kPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr const char* kKeyPem = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

// Each test gets an empty directory and a clean HILSIM_ACCESS_TOKEN (restored afterwards).
class ServerConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hilsim_config_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (const char* token = std::getenv(kTokenVariable)) saved_token_ = token;
    ::unsetenv(kTokenVariable);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    if (saved_token_) {
      ::setenv(kTokenVariable, saved_token_->c_str(), 1);
    } else {
      ::unsetenv(kTokenVariable);
    }
  }

  fs::path write(const std::string& relative, const std::string& content) const {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
    return path;
  }

  /// Parses `yaml` as the file <dir>/server.yaml and returns the ConfigError message ("" if none).
  std::string errorOf(const std::string& yaml) const {
    try {
      parseServerConfig(yaml, (dir_ / "server.yaml").string());
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }

  /// The error names the file, the key path and the offending value, on one line.
  void expectError(const std::string& yaml, const std::string& key,
                   const std::string& also = "") const {
    const std::string message = errorOf(yaml);
    SCOPED_TRACE("yaml:\n" + yaml + "\nmessage: " + message);
    ASSERT_FALSE(message.empty()) << "no ConfigError";
    EXPECT_EQ(message.find('\n'), std::string::npos) << "more than one line";
    EXPECT_NE(message.find((dir_ / "server.yaml").string()), std::string::npos) << "no file";
    EXPECT_NE(message.find(key + ":"), std::string::npos) << "does not name " << key;
    if (!also.empty()) {
      EXPECT_NE(message.find(also), std::string::npos) << "lacks " << also;
    }
  }

  fs::path dir_;
  std::optional<std::string> saved_token_;
};

TEST_F(ServerConfigTest, ShippedFileHasTheDocumentedValues) {
  const ServerConfig c = loadServerConfig(kShippedConfig);
  EXPECT_EQ(c.source, kShippedConfig);
  EXPECT_EQ(c.bind_address, "127.0.0.1");
  EXPECT_EQ(c.grpc_port, 50051);
  EXPECT_TRUE(c.udp_enabled);
  EXPECT_EQ(c.udp_port_first, 50100);
  EXPECT_EQ(c.udp_port_last, 50199);
  EXPECT_TRUE(c.metrics_enabled);
  EXPECT_EQ(c.metrics_port, 9464);
  EXPECT_TRUE(c.viewer_enabled);
  EXPECT_EQ(c.viewer_port, 8088);
  EXPECT_EQ(c.viewer_rate_hz, 30.0);
  EXPECT_TRUE(c.tls_certificate_file.empty());
  EXPECT_TRUE(c.tls_key_file.empty());
  EXPECT_TRUE(c.access_token.empty());
  EXPECT_EQ(c.max_sessions, 16);
  EXPECT_EQ(c.max_control_rate_hz, 10000.0);
  EXPECT_EQ(c.max_substeps, 1000);
  EXPECT_EQ(c.max_fifo_priority, 0) << "no real-time priority unless the operator grants it";
  EXPECT_TRUE(c.allowed_cpus.empty());
  EXPECT_EQ(c.max_request_cpu_s, 1.0);
  EXPECT_EQ(c.max_queued_cpu_s, 2.0);
  EXPECT_EQ(c.max_sessions_per_client, 8);
  EXPECT_EQ(c.max_stream_readers_per_client, 4);
  EXPECT_EQ(c.max_viewer_pages_per_client, 4);
  EXPECT_EQ(c.handshake_timeout_s, 5.0);
  EXPECT_TRUE(c.operator_secret.empty());
  EXPECT_EQ(c.max_model_text_bytes, 512u << 10);
  EXPECT_EQ(c.max_model_bodies, 2000);
  EXPECT_EQ(c.max_model_modes, 32);
  EXPECT_EQ(c.max_beam_elements, 100);
  EXPECT_EQ(c.max_flexible_entries, 512);
  EXPECT_EQ(c.max_step_cycles, 10000u);
  EXPECT_EQ(c.max_stream_readers, 16);
  EXPECT_TRUE(c.model_directory.empty());
  EXPECT_EQ(c.default_model, "iiwa14");

  const v1::SessionConfig& d = c.session_defaults;
  EXPECT_EQ(d.mode(), v1::SESSION_MODE_REALTIME);
  EXPECT_EQ(d.control_rate_hz(), 1000.0);
  EXPECT_EQ(d.substeps(), 1u);
  EXPECT_EQ(d.formulation(), v1::FORMULATION_ABA);
  EXPECT_EQ(d.integrator(), v1::INTEGRATOR_RK4);
  EXPECT_EQ(d.watchdog().policy(), v1::WATCHDOG_POLICY_HOLD);
  EXPECT_EQ(d.watchdog().missed_cycles_limit(), 20u);
  EXPECT_EQ(d.watchdog().damping_gain(), 1.0);
  EXPECT_EQ(d.overrun().policy(), v1::OVERRUN_POLICY_SKIP);
  EXPECT_EQ(d.overrun().max_catch_up(), 10u);
  EXPECT_TRUE(d.thread().lock_memory());
  EXPECT_EQ(d.thread().prefault_stack_bytes(), 262144u);
  EXPECT_EQ(d.thread().fifo_priority(), 0u);
  EXPECT_EQ(d.thread().cpu(), -1);
  EXPECT_TRUE(d.thread().minimal_timer_slack());
  EXPECT_FALSE(d.thread().dedicated());
  EXPECT_EQ(d.max_speed(), 10000.0);
  EXPECT_EQ(c.workers.count, 0);
  EXPECT_TRUE(c.workers.cpus.empty());
  EXPECT_EQ(c.workers.fifo_priority, 0);
  EXPECT_TRUE(c.workers.lock_memory);
  EXPECT_EQ(c.workers.max_utilisation, 0.8);
  EXPECT_EQ(c.workers.capacity, 256);
  EXPECT_EQ(d.command_capacity(), 64u);

  ASSERT_EQ(c.startup_sessions.size(), 1u);
  const StartupSession& arm = c.startup_sessions[0];
  EXPECT_EQ(arm.config.name(), "arm");
  EXPECT_EQ(arm.model, defaultModelName());
  EXPECT_TRUE(arm.start);
  EXPECT_EQ(arm.udp_port, 0);
  EXPECT_EQ(arm.config.mode(), v1::SESSION_MODE_REALTIME);
  EXPECT_EQ(arm.config.control_rate_hz(), 1000.0);
  EXPECT_EQ(arm.config.watchdog().missed_cycles_limit(), 20u);  // from the defaults

  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.log_format, "text");
}

TEST_F(ServerConfigTest, DockerBridgeFileListensOnEveryInterface) {
  const ServerConfig c =
      loadServerConfig(std::string(HILSIM_MODEL_DIR) + "/../../docker/server-bridge.yaml");
  EXPECT_EQ(c.bind_address, "0.0.0.0");
  EXPECT_EQ(c.grpc_port, 50051);
  EXPECT_EQ(c.udp_port_first, 50100);
  EXPECT_EQ(c.udp_port_last, 50109);
  EXPECT_EQ(c.metrics_port, 9464);
  EXPECT_EQ(c.max_sessions, 10);
  ASSERT_EQ(c.startup_sessions.size(), 1u);
  EXPECT_EQ(c.startup_sessions[0].config.name(), "arm");
  EXPECT_EQ(c.startup_sessions[0].model, "iiwa14");
  EXPECT_TRUE(c.startup_sessions[0].start);
}

TEST_F(ServerConfigTest, AbsentKeysTakeTheDefaults) {
  const ServerConfig defaults;
  for (const std::string yaml : {"", "# nothing but a comment\n", "listen:\nlimits:\n"}) {
    SCOPED_TRACE(yaml);
    const ServerConfig c = parseServerConfig(yaml, "<test>");
    EXPECT_EQ(c.source, "<test>");
    EXPECT_EQ(c.bind_address, defaults.bind_address);
    EXPECT_EQ(c.grpc_port, defaults.grpc_port);
    EXPECT_EQ(c.udp_enabled, defaults.udp_enabled);
    EXPECT_EQ(c.udp_port_first, defaults.udp_port_first);
    EXPECT_EQ(c.udp_port_last, defaults.udp_port_last);
    EXPECT_EQ(c.metrics_enabled, defaults.metrics_enabled);
    EXPECT_EQ(c.metrics_port, defaults.metrics_port);
    EXPECT_EQ(c.viewer_enabled, defaults.viewer_enabled);
    EXPECT_EQ(c.viewer_port, defaults.viewer_port);
    EXPECT_EQ(c.viewer_rate_hz, defaults.viewer_rate_hz);
    EXPECT_EQ(c.max_sessions, defaults.max_sessions);
    EXPECT_EQ(c.max_control_rate_hz, defaults.max_control_rate_hz);
    EXPECT_EQ(c.max_substeps, defaults.max_substeps);
    EXPECT_EQ(c.max_fifo_priority, defaults.max_fifo_priority);
    EXPECT_EQ(c.max_model_text_bytes, defaults.max_model_text_bytes);
    EXPECT_EQ(c.max_model_bodies, defaults.max_model_bodies);
    EXPECT_EQ(c.max_model_modes, defaults.max_model_modes);
    EXPECT_EQ(c.max_beam_elements, defaults.max_beam_elements);
    EXPECT_EQ(c.max_flexible_entries, defaults.max_flexible_entries);
    EXPECT_EQ(c.max_step_cycles, defaults.max_step_cycles);
    EXPECT_EQ(c.max_step_cycles, kDefaultMaxStepCycles);
    EXPECT_EQ(c.max_stream_readers, defaults.max_stream_readers);
    EXPECT_TRUE(c.default_model.empty());
    EXPECT_TRUE(c.startup_sessions.empty());
    EXPECT_EQ(c.log_level, "info");
    EXPECT_EQ(c.log_format, "text");
    // the session defaults carry every contract default, filled in
    EXPECT_EQ(c.session_defaults.mode(), v1::SESSION_MODE_REALTIME);
    EXPECT_EQ(c.session_defaults.control_rate_hz(), 1000.0);
    EXPECT_EQ(c.session_defaults.substeps(), 1u);
    EXPECT_TRUE(c.session_defaults.watchdog().has_damping_gain());
    EXPECT_TRUE(c.session_defaults.overrun().has_max_catch_up());
    EXPECT_TRUE(c.session_defaults.thread().has_cpu());
    EXPECT_EQ(c.session_defaults.command_capacity(), 64u);
  }

  // a partial section keeps the defaults of its other keys, a session its name and defaults
  const ServerConfig c = parseServerConfig(
      "listen: {grpc_port: 6000}\n"
      "session_defaults: {watchdog: {policy: zero}}\n"
      "sessions: [{name: p, model: pendulum, config: {thread: {cpu: 1}}}]\n",
      "<test>");
  EXPECT_EQ(c.grpc_port, 6000);
  EXPECT_EQ(c.bind_address, "127.0.0.1");
  EXPECT_EQ(c.session_defaults.watchdog().policy(), v1::WATCHDOG_POLICY_ZERO);
  EXPECT_EQ(c.session_defaults.watchdog().missed_cycles_limit(), 20u);
  ASSERT_EQ(c.startup_sessions.size(), 1u);
  const StartupSession& s = c.startup_sessions[0];
  EXPECT_EQ(s.model, "pendulum");
  EXPECT_TRUE(s.start);
  EXPECT_EQ(s.config.watchdog().policy(), v1::WATCHDOG_POLICY_ZERO);  // from session_defaults
  EXPECT_EQ(s.config.thread().cpu(), 1);
  EXPECT_TRUE(s.config.thread().lock_memory());
  EXPECT_EQ(s.config.thread().prefault_stack_bytes(), 262144u);
}

TEST_F(ServerConfigTest, FullExampleRoundTrips) {
  write("tls/server.crt", kPem);
  write("tls/server.key", kKeyPem);
  write("secret/token", "s3cret-Token_1\n");
  const fs::path models = dir_ / "models";
  fs::create_directories(models);
  fs::copy_file(std::string(HILSIM_MODEL_DIR) + "/pendulum.yaml", models / "pendulum.yaml");
  fs::copy_file(std::string(HILSIM_MODEL_DIR) + "/iiwa14.urdf", models / "arm7.urdf");

  const fs::path file = write("server.yaml", R"(
listen:
  address: 0.0.0.0
  grpc_port: 6001
  udp: {enabled: true, ports: [7000, 7009]}
  metrics: {enabled: false, port: 6002}
  viewer: {enabled: false, port: 6003, rate_hz: 60}
security:
  tls: {certificate: tls/server.crt, key: tls/server.key}
  access_token_file: secret/token
limits:
  max_sessions: 3
  max_control_rate_hz: 4000
  max_substeps: 50
  max_fifo_priority: 80
  allowed_cpus: [2, 3]
  max_model_text_bytes: 65536
  max_model_bodies: 300
  max_model_modes: 12
  max_beam_elements: 40
  max_flexible_entries: 64
  max_step_cycles: 4294967295
  max_stream_readers: 2
models:
  directory: models
  default: arm7
session_defaults:
  mode: lockstep
  control_rate_hz: 2000
  substeps: 4
  formulation: crba
  integrator: euler
  watchdog: {policy: damping, missed_cycles_limit: 5, damping_gain: 2.5}
  overrun: {policy: catch_up, max_catch_up: 3}
  thread: {lock_memory: false, prefault_stack_bytes: 65536, fifo_priority: 70, cpu: 3,
           minimal_timer_slack: false}
  max_speed: 500.5
  command_capacity: 8
sessions:
  - name: first
    start: false
    udp_port: 7005
    config: {mode: free, control_rate_hz: 250.5, initial_q: [0.25], initial_v: [-1.5e-1]}
  - {name: second, model: pendulum, config: {overrun: {policy: fault}, thread: {cpu: 2}}}
log: {level: debug, format: json}
)");
  const ServerConfig c = loadServerConfig(file.string());
  EXPECT_EQ(c.bind_address, "0.0.0.0");
  EXPECT_EQ(c.grpc_port, 6001);
  EXPECT_TRUE(c.udp_enabled);
  EXPECT_EQ(c.udp_port_first, 7000);
  EXPECT_EQ(c.udp_port_last, 7009);
  EXPECT_FALSE(c.metrics_enabled);
  EXPECT_EQ(c.metrics_port, 6002);
  EXPECT_FALSE(c.viewer_enabled);
  EXPECT_EQ(c.viewer_port, 6003);
  EXPECT_EQ(c.viewer_rate_hz, 60.0);
  EXPECT_EQ(c.tls_certificate_file, (dir_ / "tls/server.crt").string());
  EXPECT_EQ(c.tls_key_file, (dir_ / "tls/server.key").string());
  EXPECT_EQ(c.access_token, "s3cret-Token_1");  // without the file's newline
  EXPECT_EQ(c.max_sessions, 3);
  EXPECT_EQ(c.max_control_rate_hz, 4000.0);
  EXPECT_EQ(c.max_substeps, 50);
  EXPECT_EQ(c.max_fifo_priority, 80);
  EXPECT_EQ(c.allowed_cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(c.max_model_text_bytes, 65536u);
  EXPECT_EQ(c.max_model_bodies, 300);
  EXPECT_EQ(c.max_model_modes, 12);
  EXPECT_EQ(c.max_beam_elements, 40);
  EXPECT_EQ(c.max_flexible_entries, 64);
  EXPECT_EQ(c.max_step_cycles, 4294967295u);
  EXPECT_EQ(c.max_stream_readers, 2);
  EXPECT_EQ(c.model_directory, models.string());
  EXPECT_EQ(c.default_model, "arm7");

  const v1::SessionConfig& d = c.session_defaults;
  EXPECT_EQ(d.mode(), v1::SESSION_MODE_LOCKSTEP);
  EXPECT_EQ(d.control_rate_hz(), 2000.0);
  EXPECT_EQ(d.substeps(), 4u);
  EXPECT_EQ(d.formulation(), v1::FORMULATION_CRBA);
  EXPECT_EQ(d.integrator(), v1::INTEGRATOR_EULER);
  EXPECT_EQ(d.watchdog().policy(), v1::WATCHDOG_POLICY_DAMPING);
  EXPECT_EQ(d.watchdog().missed_cycles_limit(), 5u);
  EXPECT_EQ(d.watchdog().damping_gain(), 2.5);
  EXPECT_EQ(d.overrun().policy(), v1::OVERRUN_POLICY_CATCH_UP);
  EXPECT_EQ(d.overrun().max_catch_up(), 3u);
  EXPECT_FALSE(d.thread().lock_memory());
  EXPECT_EQ(d.thread().prefault_stack_bytes(), 65536u);
  EXPECT_EQ(d.thread().fifo_priority(), 70u);
  EXPECT_EQ(d.thread().cpu(), 3);
  EXPECT_FALSE(d.thread().minimal_timer_slack());
  EXPECT_EQ(d.max_speed(), 500.5);
  EXPECT_EQ(d.command_capacity(), 8u);
  EXPECT_EQ(d.initial_q_size(), 0);

  ASSERT_EQ(c.startup_sessions.size(), 2u);
  const StartupSession& first = c.startup_sessions[0];
  EXPECT_EQ(first.config.name(), "first");
  EXPECT_EQ(first.model, "arm7");  // models.default
  EXPECT_FALSE(first.start);
  EXPECT_EQ(first.udp_port, 7005);
  EXPECT_EQ(first.config.mode(), v1::SESSION_MODE_FREE);
  EXPECT_EQ(first.config.control_rate_hz(), 250.5);
  EXPECT_EQ(first.config.substeps(), 4u);  // from session_defaults
  ASSERT_EQ(first.config.initial_q_size(), 1);
  EXPECT_EQ(first.config.initial_q(0), 0.25);
  ASSERT_EQ(first.config.initial_v_size(), 1);
  EXPECT_EQ(first.config.initial_v(0), -0.15);
  const StartupSession& second = c.startup_sessions[1];
  EXPECT_EQ(second.config.name(), "second");
  EXPECT_EQ(second.model, "pendulum");
  EXPECT_TRUE(second.start);
  EXPECT_EQ(second.udp_port, 0);
  EXPECT_EQ(second.config.overrun().policy(), v1::OVERRUN_POLICY_FAULT);
  EXPECT_EQ(second.config.overrun().max_catch_up(), 3u);  // from session_defaults
  EXPECT_EQ(second.config.thread().cpu(), 2);
  EXPECT_EQ(second.config.thread().fifo_priority(), 70u);

  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.log_format, "json");
}

TEST_F(ServerConfigTest, RelativePathsResolveAgainstTheFilesDirectory) {
  write("conf/certs/a.pem", kPem);
  write("conf/certs/a.key", kKeyPem);
  write("elsewhere/b.pem", kPem);
  const fs::path file = write("conf/server.yaml",
                              "security:\n  tls: {certificate: certs/a.pem, key: ./certs/a.key}\n");
  // from another working directory, too
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_ / "elsewhere");
  ServerConfig c;
  EXPECT_NO_THROW(c = loadServerConfig(file.string()));
  fs::current_path(cwd);
  EXPECT_EQ(c.tls_certificate_file, (dir_ / "conf/certs/a.pem").string());
  EXPECT_EQ(c.tls_key_file, (dir_ / "conf/certs/a.key").string());

  // absolute paths are kept; a relative one is not looked up in the working directory
  const std::string absolute =
      "security:\n  tls: {certificate: " + (dir_ / "elsewhere/b.pem").string() +
      ", key: " + (dir_ / "conf/certs/a.key").string() + "}\n";
  EXPECT_EQ(parseServerConfig(absolute, (dir_ / "server.yaml").string()).tls_certificate_file,
            (dir_ / "elsewhere/b.pem").string());
  expectError("security:\n  tls: {certificate: b.pem, key: conf/certs/a.key}\n",
              "security.tls.certificate", (dir_ / "b.pem").string());
}

TEST_F(ServerConfigTest, EnvironmentTokenAppliesWhenTheFileGivesNone) {
  ::setenv(kTokenVariable, "from-environment", 1);
  EXPECT_EQ(parseServerConfig("", "<test>").access_token, "from-environment");
  EXPECT_EQ(parseServerConfig("security: {access_token: from-file}\n", "<test>").access_token,
            "from-file");
  write("token", "from-token-file\n");
  EXPECT_EQ(errorOf("security: {access_token_file: token}\n"), "");
  EXPECT_EQ(
      parseServerConfig("security: {access_token_file: token}\n", (dir_ / "server.yaml").string())
          .access_token,
      "from-token-file");

  // an empty variable is no token; one with a space is refused, naming the variable
  ::setenv(kTokenVariable, "", 1);
  EXPECT_TRUE(parseServerConfig("", "<test>").access_token.empty());
  ::setenv(kTokenVariable, "two words", 1);
  try {
    parseServerConfig("", "<test>");
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(kTokenVariable), std::string::npos) << e.what();
  }
}

// What keeps clients apart (docs/SERVER.md, "Isolation between clients"): the operator's secret
// from the file, a secret file or the environment; the CPU budgets and the quotas per client.
TEST_F(ServerConfigTest, IsolationLimitsAndTheOperatorSecretAreRead) {
  ::unsetenv("HILSIM_OPERATOR_SECRET");
  const ServerConfig c = parseServerConfig(
      "security: {operator_secret: op-1}\n"
      "limits: {max_request_cpu_s: 0.5, max_queued_cpu_s: 4, max_sessions_per_client: 2,\n"
      "         max_stream_readers_per_client: 3, max_viewer_pages_per_client: 5,\n"
      "         handshake_timeout_s: 2.5}\n",
      (dir_ / "server.yaml").string());
  EXPECT_EQ(c.operator_secret, "op-1");
  EXPECT_EQ(c.max_request_cpu_s, 0.5);
  EXPECT_EQ(c.max_queued_cpu_s, 4.0);
  EXPECT_EQ(c.max_sessions_per_client, 2);
  EXPECT_EQ(c.max_stream_readers_per_client, 3);
  EXPECT_EQ(c.max_viewer_pages_per_client, 5);
  EXPECT_EQ(c.handshake_timeout_s, 2.5);
  write("operator", "op-from-file\n");
  EXPECT_EQ(parseServerConfig("security: {operator_secret_file: operator}\n",
                              (dir_ / "server.yaml").string())
                .operator_secret,
            "op-from-file");
  ::setenv("HILSIM_OPERATOR_SECRET", "op-from-environment", 1);
  EXPECT_EQ(parseServerConfig("", "<test>").operator_secret, "op-from-environment");
  EXPECT_EQ(parseServerConfig("security: {operator_secret: op-1}\n", "<test>").operator_secret,
            "op-1");
  ::unsetenv("HILSIM_OPERATOR_SECRET");
  expectError("security: {operator_secret: a, operator_secret_file: operator}\n",
              "security.operator_secret_file", "not both");
  expectError("security: {operator_secret: two words}\n", "security.operator_secret");
  expectError("limits: {max_request_cpu_s: 3, max_queued_cpu_s: 2}\n", "limits",
              "no request could be queued");
  expectError("limits: {max_request_cpu_s: 0}\n", "limits.max_request_cpu_s");
  expectError("limits: {max_viewer_pages_per_client: 17}\n",
              "limits.max_viewer_pages_per_client");
  expectError("limits: {handshake_timeout_s: 0.01}\n", "limits.handshake_timeout_s");
}

// A start-up session's hardware models: drives, actuators and sensors, keyed by the contract's
// field names; enumerations by their short names; mistakes named by their path.
TEST_F(ServerConfigTest, StartupSessionsTakeDrivesActuatorsAndSensors) {
  const ServerConfig c = parseServerConfig(R"(sessions:
  - name: arm
    model: iiwa14
    config:
      drives:
        - {joint: "*", interface: position, kp: 2000, kd: 60}
        - {joint: iiwa_joint_7, interface: velocity, kd: 0.5, ki: 10}
      actuators:
        - {joint: "*", time_constant_s: 2.0e-4, delay_s: 1.0e-3, resolution: 0.01}
      sensors:
        joints: [{joint: "*", position_resolution: 1.0e-5, torque_noise: 0.2}]
        imu: {enabled: true, angular_velocity_bias: [0.01, 0, 0]}
        contact_force_noise: 1.5
        delay_cycles: 2
        seed: 7
)",
                                           "<test>");
  ASSERT_EQ(c.startup_sessions.size(), 1u);
  const v1::SessionConfig& s = c.startup_sessions[0].config;
  ASSERT_EQ(s.drives_size(), 2);
  EXPECT_EQ(s.drives(0).joint(), "*");
  EXPECT_EQ(s.drives(0).interface(), v1::COMMAND_INTERFACE_POSITION);
  EXPECT_EQ(s.drives(0).kd(), 60.0);
  EXPECT_EQ(s.drives(1).interface(), v1::COMMAND_INTERFACE_VELOCITY);
  EXPECT_EQ(s.drives(1).ki(), 10.0);
  ASSERT_EQ(s.actuators_size(), 1);
  EXPECT_EQ(s.actuators(0).delay_s(), 1e-3);
  EXPECT_EQ(s.actuators(0).resolution(), 0.01);
  ASSERT_EQ(s.sensors().joints_size(), 1);
  EXPECT_EQ(s.sensors().joints(0).torque_noise(), 0.2);
  EXPECT_TRUE(s.sensors().imu().enabled());
  ASSERT_EQ(s.sensors().imu().angular_velocity_bias_size(), 3);
  EXPECT_EQ(s.sensors().contact_force_noise(), 1.5);
  EXPECT_EQ(s.sensors().delay_cycles(), 2u);
  EXPECT_EQ(s.sensors().seed(), 7u);

  expectError("sessions:\n  - {name: a, config: {drives: [{joint: x, interface: torque}]}}\n",
              "sessions[0].config.drives[0].interface", "effort, position, velocity");
  expectError("sessions:\n  - {name: a, config: {drives: [{joint: x, kq: 1}]}}\n",
              "sessions[0].config.drives[0].kq", "allowed here: joint, interface, kp, kd, ki");
  expectError("sessions:\n  - {name: a, config: {sensors: {imu: {enabled: maybe}}}}\n",
              "sessions[0].config.sensors.imu.enabled");
  expectError("sessions:\n  - {name: a, config: {actuators: {joint: x}}}\n",
              "sessions[0].config.actuators", "is not a list");
  // the model's joints: not in the defaults
  expectError("session_defaults: {drives: []}\n", "session_defaults.drives");
}

// A start-up session's fault schedule: types by their short names, absent fields left absent
// (the session fills the defaults), mistakes named by their path.
TEST_F(ServerConfigTest, StartupSessionsTakeAFaultSchedule) {
  const ServerConfig c = parseServerConfig(R"(sessions:
  - name: arm
    model: iiwa14
    config:
      faults:
        seed: 5
        max_delay_cycles: 20
        schedule:
          - {type: drop_commands, start_s: 1.0, duration_s: 0.5, rate: 0.1, burst: 3}
          - {type: lock_joint, joint: iiwa_joint_2, start_s: 2.0}
)",
                                           "<test>");
  ASSERT_EQ(c.startup_sessions.size(), 1u);
  const v1::FaultsConfig& f = c.startup_sessions[0].config.faults();
  EXPECT_EQ(f.seed(), 5u);
  EXPECT_EQ(f.max_delay_cycles(), 20u);
  ASSERT_EQ(f.schedule_size(), 2);
  EXPECT_EQ(f.schedule(0).type(), v1::FAULT_TYPE_DROP_COMMANDS);
  EXPECT_EQ(f.schedule(0).rate(), 0.1);
  EXPECT_EQ(f.schedule(0).burst(), 3u);
  EXPECT_EQ(f.schedule(0).duration_s(), 0.5);
  EXPECT_EQ(f.schedule(1).type(), v1::FAULT_TYPE_LOCK_JOINT);
  EXPECT_EQ(f.schedule(1).joint(), "iiwa_joint_2");
  EXPECT_FALSE(f.schedule(1).has_rate());

  expectError("sessions:\n  - {name: a, config: {faults: {schedule: [{type: explode}]}}}\n",
              "sessions[0].config.faults.schedule[0].type", "drop_commands");
  expectError("sessions:\n  - {name: a, config: {faults: {schedule: [{type: stall, at: 1}]}}}\n",
              "sessions[0].config.faults.schedule[0].at");
  expectError("sessions:\n  - {name: a, config: {faults: {seeds: 1}}}\n",
              "sessions[0].config.faults.seeds");
  expectError("session_defaults: {faults: {seed: 1}}\n", "session_defaults.faults");
}

TEST_F(ServerConfigTest, UnknownKeysAreErrors) {
  expectError("listen: {grpc_prot: 1}\n", "listen.grpc_prot", "allowed here: address, grpc_port");
  expectError("lsiten: {}\n", "lsiten", "allowed here: listen");
  expectError("session_defaults:\n  watchdog:\n    polcy: hold\n",
              "session_defaults.watchdog.polcy");
  expectError("sessions:\n  - {name: a, config: {thread: {pirority: 3}}}\n",
              "sessions[0].config.thread.pirority");
  // initial q and v belong to a model: not in the defaults
  expectError("session_defaults: {initial_q: [0]}\n", "session_defaults.initial_q");
  expectError("listen: {grpc_port: 1, grpc_port: 2}\n", "listen.grpc_port", "repeated");
}

TEST_F(ServerConfigTest, WrongTypesAreErrors) {
  expectError("listen: 5\n", "listen", "not a mapping");
  expectError("listen: {grpc_port: abc}\n", "listen.grpc_port", "'abc' is not an integer");
  expectError("listen: {grpc_port: \"8080\"}\n", "listen.grpc_port", "quoted");
  expectError("listen: {grpc_port: 80.5}\n", "listen.grpc_port", "not an integer");
  expectError("listen: {grpc_port: }\n", "listen.grpc_port", "no value");
  expectError("listen: {udp: {enabled: maybe}}\n", "listen.udp.enabled", "not true or false");
  expectError("listen: {address: localhost}\n", "listen.address", "'localhost'");
  expectError("listen: {address: \"::1\"}\n", "listen.address", "not an IPv4 address");
  expectError("limits: {allowed_cpus: 3}\n", "limits.allowed_cpus", "not a list");
  expectError("limits: {allowed_cpus: [1, x]}\n", "limits.allowed_cpus[1]", "'x'");
  expectError("session_defaults: {control_rate_hz: [1000]}\n", "session_defaults.control_rate_hz",
              "a list is not a number");
  expectError("session_defaults: {mode: fast}\n", "session_defaults.mode",
              "allowed: realtime, lockstep, free");
  expectError("session_defaults: {mode: REALTIME}\n", "session_defaults.mode");
  expectError("session_defaults:\n  mode: |\n    real\n    time\n", "session_defaults.mode",
              "'real\\ntime\\n'");  // still one line
  expectError("session_defaults: {mode: unspecified}\n", "session_defaults.mode");
  expectError("session_defaults: {watchdog: {policy: holdd}}\n", "session_defaults.watchdog.policy",
              "allowed: hold, zero, damping, fault");
  expectError("session_defaults: {overrun: {policy: catchup}}\n", "session_defaults.overrun.policy",
              "allowed: skip, catch_up, fault");
  expectError("session_defaults: {formulation: rnea}\n", "session_defaults.formulation",
              "allowed: " + formulationNames());
  expectError("session_defaults: {integrator: rk45}\n", "session_defaults.integrator",
              "allowed: rk4, euler");
  expectError("sessions: {name: a}\n", "sessions", "not a list");
  expectError("sessions: [{model: pendulum}]\n", "sessions[0]", "needs a name");
  expectError("listen: [\n", "", "not valid YAML");
}

TEST_F(ServerConfigTest, SharedWorkersAreReadAndCheckedAgainstTheLimits) {
  const ServerConfig c = parseServerConfig(
      "limits: {allowed_cpus: [2, 3], max_fifo_priority: 80}\n"
      "rt: {workers: {count: 2, cpus: [3, 2], fifo_priority: 70, lock_memory: false,\n"
      "               max_utilisation: 0.6, capacity: 300}}\n"
      "session_defaults: {thread: {dedicated: true}}\n",
      "inline");
  EXPECT_EQ(c.workers.count, 2);
  EXPECT_EQ(c.workers.cpus, (std::vector<int>{3, 2}));
  EXPECT_EQ(c.workers.fifo_priority, 70);
  EXPECT_FALSE(c.workers.lock_memory);
  EXPECT_EQ(c.workers.max_utilisation, 0.6);
  EXPECT_EQ(c.workers.capacity, 300);
  EXPECT_TRUE(c.session_defaults.thread().dedicated());
  expectError("limits: {allowed_cpus: [2]}\nrt: {workers: {cpus: [1]}}\n", "rt.workers.cpus[0]",
              "allowed_cpus");
  expectError("rt: {workers: {cpus: [1, 1]}}\n", "rt.workers.cpus[1]", "twice");
  expectError("limits: {max_fifo_priority: 10}\nrt: {workers: {fifo_priority: 20}}\n",
              "rt.workers.fifo_priority", "0 to 10");
  expectError("rt: {workers: {max_utilisation: 1.5}}\n", "rt.workers.max_utilisation");
  expectError("rt: {workers: {count: -1}}\n", "rt.workers.count");
  expectError("rt: {workers: {capacity: 0}}\n", "rt.workers.capacity");
  expectError("rt: {threads: 4}\n", "rt.threads");
}

TEST_F(ServerConfigTest, OutOfRangeValuesAreErrors) {
  expectError("listen: {grpc_port: 70000}\n", "listen.grpc_port", "0 to 65535");
  expectError("listen: {grpc_port: -1}\n", "listen.grpc_port", "0 to 65535");
  expectError("listen: {udp: {ports: [50199, 50100]}}\n", "listen.udp.ports", "not a port range");
  expectError("listen: {udp: {ports: [0, 50100]}}\n", "listen.udp.ports");
  expectError("listen: {udp: {ports: [50100]}}\n", "listen.udp.ports", "two ports");
  expectError("listen: {grpc_port: 9000, metrics: {port: 9000}}\n", "listen.metrics.port");
  expectError("listen: {grpc_port: 9000, viewer: {port: 9000}}\n", "listen.viewer.port");
  expectError("listen: {metrics: {port: 9000}, viewer: {port: 9000}}\n", "listen.viewer.port");
  expectError("listen: {viewer: {rate_hz: 0.5}}\n", "listen.viewer.rate_hz", "1 to 120");
  expectError("listen: {viewer: {rate_hz: 500}}\n", "listen.viewer.rate_hz");
  expectError("listen: {viewer: {colour: blue}}\n", "listen.viewer.colour");
  expectError("session_defaults: {control_rate_hz: 50}\n", "session_defaults.control_rate_hz",
              "100 to 10000");
  expectError("session_defaults: {control_rate_hz: 20000}\n", "session_defaults.control_rate_hz");
  expectError("session_defaults: {substeps: 0}\n", "session_defaults.substeps", "1 to 1000");
  expectError("session_defaults: {substeps: 1001}\n", "session_defaults.substeps");
  expectError("session_defaults: {thread: {fifo_priority: 100}}\n",
              "session_defaults.thread.fifo_priority", "0 to 99");
  expectError("session_defaults: {thread: {cpu: -2}}\n", "session_defaults.thread.cpu");
  expectError("session_defaults: {watchdog: {missed_cycles_limit: 0}}\n",
              "session_defaults.watchdog.missed_cycles_limit");
  expectError("session_defaults: {watchdog: {damping_gain: -1}}\n",
              "session_defaults.watchdog.damping_gain");
  expectError("session_defaults: {max_speed: 0}\n", "session_defaults.max_speed", "above 0");
  expectError("session_defaults: {command_capacity: 0}\n", "session_defaults.command_capacity");
  expectError("limits: {max_sessions: 0}\n", "limits.max_sessions");
  expectError("limits: {max_fifo_priority: 100}\n", "limits.max_fifo_priority");
  expectError("limits: {allowed_cpus: [1, 1]}\n", "limits.allowed_cpus[1]", "twice");
  // the request limits: never looser than the model loaders' own, never 0
  expectError("limits: {max_model_text_bytes: 1023}\n", "limits.max_model_text_bytes",
              "1024 to 268435456");
  expectError("limits: {max_model_bodies: 0}\n", "limits.max_model_bodies", "1 to 200000");
  expectError("limits: {max_model_bodies: 200001}\n", "limits.max_model_bodies");
  expectError("limits: {max_model_modes: 0}\n", "limits.max_model_modes", "1 to 64");
  expectError("limits: {max_model_modes: 65}\n", "limits.max_model_modes");
  expectError("limits: {max_beam_elements: 1}\n", "limits.max_beam_elements", "2 to 1000");
  expectError("limits: {max_beam_elements: 1001}\n", "limits.max_beam_elements");
  expectError("limits: {max_flexible_entries: 0}\n", "limits.max_flexible_entries",
              "1 to 4096");
  expectError("limits: {max_flexible_entries: 4097}\n", "limits.max_flexible_entries");
  expectError("limits: {max_step_cycles: 0}\n", "limits.max_step_cycles", "1 to 4294967295");
  expectError("limits: {max_step_cycles: 4294967296}\n", "limits.max_step_cycles");
  expectError("limits: {max_step_cycles: 1.5}\n", "limits.max_step_cycles", "not an integer");
  expectError("limits: {max_step_cycles: \"100\"}\n", "limits.max_step_cycles", "quoted");
  expectError("limits: {max_stream_readers: 0}\n", "limits.max_stream_readers", "1 to 1024");
  expectError("limits: {max_stream_readers: 1025}\n", "limits.max_stream_readers");
  // non-finite numbers, in every spelling YAML or C have for them
  for (const std::string value : {".nan", "nan", ".inf", "-.inf", "inf", "1e999"}) {
    expectError("session_defaults: {watchdog: {damping_gain: " + value + "}}\n",
                "session_defaults.watchdog.damping_gain", "finite");
    expectError("session_defaults: {max_speed: " + value + "}\n", "session_defaults.max_speed");
    expectError("sessions: [{name: a, config: {initial_q: [0, " + value + "]}}]\n",
                "sessions[0].config.initial_q[1]");
  }
}

TEST_F(ServerConfigTest, SessionsAreCheckedAgainstTheLimits) {
  expectError("limits: {max_control_rate_hz: 2000}\nsession_defaults: {control_rate_hz: 4000}\n",
              "session_defaults.control_rate_hz", "limits.max_control_rate_hz");
  // a built-in default above a lowered limit is caught too
  expectError("limits: {max_control_rate_hz: 500}\n", "session_defaults.control_rate_hz",
              "1000 Hz is above");
  expectError("limits: {max_substeps: 2}\nsessions: [{name: a, config: {substeps: 3}}]\n",
              "sessions[0].config.substeps", "limits.max_substeps");
  expectError("limits: {max_fifo_priority: 0}\nsession_defaults: {thread: {fifo_priority: 10}}\n",
              "session_defaults.thread.fifo_priority", "limits.max_fifo_priority");
  expectError("limits: {allowed_cpus: [2, 3]}\nsessions: [{name: a, config: {thread: {cpu: 1}}}]\n",
              "sessions[0].config.thread.cpu", "limits.allowed_cpus (2, 3)");
  expectError("limits: {max_sessions: 1}\nsessions: [{name: a}, {name: b}]\n", "sessions",
              "limits.max_sessions");
  expectError("sessions: [{name: a, udp_port: 40000}]\n", "sessions[0].udp_port",
              "outside listen.udp.ports");
  expectError("sessions: [{name: a, udp_port: 50100}, {name: b, udp_port: 50100}]\n",
              "sessions[1].udp_port", "session 'a'");
  expectError("listen: {udp: {enabled: false}}\nsessions: [{name: a, udp_port: 50100}]\n",
              "sessions[0].udp_port");
  EXPECT_EQ(errorOf("listen: {udp: {ports: [0, 0]}}\nsessions: [{name: a, udp_port: 40000}]\n"),
            "");
}

TEST_F(ServerConfigTest, UdpAuthenticationAndStartupKeys) {
  const std::string key_hex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
  write("arm.key", key_hex + "\n");
  write("short.key", key_hex.substr(2) + "\n");
  write("bad.key", "zz" + key_hex.substr(2));
  write("trailing.key", key_hex + " extra");
  const std::string dir = (dir_ / "server.yaml").string();
  EXPECT_EQ(parseServerConfig("", dir).udp_authentication, v1::UDP_AUTHENTICATION_MAC)
      << "MAC by default";
  EXPECT_EQ(parseServerConfig("listen: {udp: {authentication: token}}\n", dir).udp_authentication,
            v1::UDP_AUTHENTICATION_TOKEN);
  expectError("listen: {udp: {authentication: none}}\n", "listen.udp.authentication",
              "allowed: mac, token");
  const ServerConfig config =
      parseServerConfig("sessions: [{name: a, udp_key_file: arm.key}, {name: b}]\n", dir);
  ASSERT_EQ(config.startup_sessions.size(), 2u);
  ASSERT_EQ(config.startup_sessions[0].udp_key.size(), 32u);
  for (std::size_t k = 0; k < 32; ++k) {
    EXPECT_EQ(static_cast<std::uint8_t>(config.startup_sessions[0].udp_key[k]), k);
  }
  EXPECT_TRUE(config.startup_sessions[1].udp_key.empty());
  for (const char* file : {"short.key", "bad.key", "trailing.key"}) {
    const std::string yaml = std::string("sessions: [{name: a, udp_key_file: ") + file + "}]\n";
    expectError(yaml, "sessions[0].udp_key_file", "64 hexadecimal digits");
    EXPECT_EQ(errorOf(yaml).find("0405060708"), std::string::npos) << "never the key's digits";
  }
  expectError("sessions: [{name: a, udp_key_file: missing.key}]\n", "sessions[0].udp_key_file",
              "cannot read");
  expectError("listen: {udp: {authentication: token}}\nsessions: [{name: a, udp_key_file: "
              "arm.key}]\n",
              "sessions[0].udp_key_file", "authentication is token");
}

TEST_F(ServerConfigTest, SecurityMistakesAreErrors) {
  write("a.pem", kPem);
  write("a.key", kKeyPem);
  write("not-pem.txt", "hello\n");
  write("empty-token", "\n\n");
  expectError("security: {tls: {certificate: a.pem}}\n", "security.tls", "needs both");
  expectError("security: {tls: {key: a.key}}\n", "security.tls", "needs both");
  expectError("security: {tls: {certificate: missing.pem, key: a.key}}\n",
              "security.tls.certificate", "cannot read");
  expectError("security: {tls: {certificate: a.pem, key: missing.key}}\n", "security.tls.key",
              "cannot read");
  expectError("security: {tls: {certificate: not-pem.txt, key: a.key}}\n",
              "security.tls.certificate", "not a PEM certificate");
  expectError("security: {tls: {certificate: a.pem, key: .}}\n", "security.tls.key",
              "is a directory");
  expectError("security: {access_token_file: missing-token}\n", "security.access_token_file",
              "cannot read");
  expectError("security: {access_token_file: empty-token}\n", "security.access_token_file",
              "empty");
  expectError("security: {access_token: \"\"}\n", "security.access_token", "empty");
  expectError("security: {access_token: \"a b\"}\n", "security.access_token", "visible ASCII");
  expectError("security: {access_token: x, access_token_file: a.pem}\n",
              "security.access_token_file", "not both");
  // files that never end or never open: refused by kind and size, before any large read
  expectError("security: {access_token_file: /dev/zero}\n", "security.access_token_file",
              "is not a regular file");
  const fs::path fifo = dir_ / "token.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expectError("security: {access_token_file: token.fifo}\n", "security.access_token_file",
              "is not a regular file");
  write("huge-token", std::string((1 << 20) + 1, 'x'));
  expectError("security: {access_token_file: huge-token}\n", "security.access_token_file",
              "larger than 1048576 bytes");
  if (::geteuid() != 0) {  // root reads any file
    const fs::path locked = write("locked.key", kKeyPem);
    fs::permissions(locked, fs::perms::none);
    expectError("security: {tls: {certificate: a.pem, key: locked.key}}\n", "security.tls.key",
                "cannot read");
  }
}

TEST_F(ServerConfigTest, LogAndModelMistakesAreErrors) {
  expectError("log: {level: verbose}\n", "log.level",
              "allowed: trace, debug, info, warn, error, critical, off");
  expectError("log: {format: xml}\n", "log.format", "allowed: text, json");
  expectError("models: {default: iiwa15}\n", "models.default", "'iiwa15' is not a known model");
  expectError("sessions: [{name: a, model: ../iiwa14}]\n", "sessions[0].model");
  expectError("sessions: [{name: a}, {name: b}, {name: a}]\n", "sessions[2].name",
              "'a' names another");
  expectError("sessions: [{name: \"\"}]\n", "sessions[0].name", "empty");
  expectError("models: {directory: no-such-dir}\n", "models.directory", "not a directory");

  // with a directory, the names are its files' stems beside the bundled ones
  const fs::path models = dir_ / "models";
  fs::create_directories(models);
  fs::copy_file(std::string(HILSIM_MODEL_DIR) + "/pendulum.yaml", models / "mybot.yaml");
  EXPECT_EQ(errorOf("models: {directory: models, default: mybot}\n"), "");
  EXPECT_EQ(errorOf("models: {directory: models, default: iiwa14}\n"), "");
  EXPECT_EQ(errorOf("models: {directory: models}\nsessions: [{name: a, model: mybot}]\n"), "");
  expectError("models: {directory: models, default: mybot2}\n", "models.default",
              "known: anymal_b");
  expectError("models: {directory: models, default: mybot2}\n", "models.default", "mybot,");
}

TEST_F(ServerConfigTest, ErrorsGiveTheLine) {
  const std::string message = errorOf("listen:\n  grpc_port: 1\n  udp:\n    enabled: perhaps\n");
  EXPECT_NE(message.find("server.yaml:4: listen.udp.enabled:"), std::string::npos) << message;
}

TEST_F(ServerConfigTest, UnreadableFileIsAnError) {
  try {
    loadServerConfig((dir_ / "absent.yaml").string());
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("absent.yaml: cannot read"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(loadServerConfig(dir_.string()), ConfigError);
  try {
    loadServerConfig("/dev/zero");
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/dev/zero: cannot read: is not a regular file"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace hilsim::server
