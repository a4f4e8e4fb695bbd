// `hilsim latency` in process against a live in-process server, for about a second per run: over
// UDP and over the gRPC Control stream, in LOCKSTEP and REALTIME. On loopback in lockstep no
// command may be lost; every round trip is positive, every command age and one-way time ≥ 0, the
// drift is measured, the server's statistics agree with the client's counts, and the CSV and SVG
// files are written. Also the command line's errors.
#include "client/cli/latency.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/app.h"
#include "client/simulation_client.h"
#include "server/server.h"
#include "server/session_registry.h"
#include "tests/support/loopback_server.h"

namespace hilsim::cli {
namespace {

namespace fs = std::filesystem;

// The owner secret `session create` printed, as HILSIM_OWNER_SECRET for the commands that follow
// (as a shell user would export it) until the guard goes.
class OwnerSecretFrom {
 public:
  explicit OwnerSecretFrom(const std::string& created) {
    std::istringstream lines(created);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string first, secret;
      words >> first >> secret;
      if (first == "owner") ::setenv("HILSIM_OWNER_SECRET", secret.c_str(), 1);
    }
  }
  ~OwnerSecretFrom() { ::unsetenv("HILSIM_OWNER_SECRET"); }
  OwnerSecretFrom(const OwnerSecretFrom&) = delete;
  OwnerSecretFrom& operator=(const OwnerSecretFrom&) = delete;
};

class LatencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<server::Server>(test::loopbackServerConfig());
    server_->start();
  }
  void TearDown() override { server_->shutdown(); }

  LatencyOptions options(const std::string& transport, const std::string& mode) const {
    LatencyOptions o;
    o.server = server_->grpcTarget();
    o.transport = transport;
    o.mode = mode;
    o.rate = 1000;
    o.duration = 1.0;
    return o;
  }

  std::unique_ptr<server::Server> server_;
};

/// A CLI run that must fail: its arguments, exit code and a part of its one-line message.
struct ErrorCase {
  std::vector<std::string> args;
  int code;
  std::string message;
};

/// Each case exits with its code and prints one line holding its message.
void expectOneLineErrors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    std::ostringstream out, err;
    EXPECT_EQ(run(c.args, out, err), c.code) << err.str();
    const std::string message = err.str();
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  }
}

/// The text report, to show with a failure.
std::string text(const client::LatencyReport& r) {
  std::ostringstream out;
  client::writeLatencyText(r, out);
  int shown = 0;
  for (const client::CommandRecord& c : r.commands) {
    if (c.answered() || shown++ >= 5) continue;
    out << "lost: sequence " << c.sequence << ", sent "
        << c.send_time_ns - r.commands[0].send_time_ns << " ns after the first\n";
  }
  return out.str();
}

/// What every run must show, whatever the transport and mode.
void expectSaneReport(const client::LatencyReport& r) {
  // every planned period either sent a command or was skipped because this thread was late
  EXPECT_EQ(r.counts.sent + r.info.loop_overruns, 1000u);
  EXPECT_GT(r.counts.sent, 500u);
  EXPECT_GT(r.round_trip.count, 0u);
  EXPECT_GT(r.round_trip.min, 0.0);
  EXPECT_GE(r.command_age.min, 0.0);
  EXPECT_GT(r.command_age.count, 0u);
  ASSERT_TRUE(r.info.same_host);  // the server is on 127.0.0.1
  EXPECT_GT(r.one_way.count, 0u);
  EXPECT_GE(r.one_way.min, 0.0);
  // one way is part of the round trip, and so is the command age (same clock)
  EXPECT_LE(r.one_way.p50, r.round_trip.p50);
  EXPECT_LE(r.command_age.p50, r.round_trip.p50);
  EXPECT_EQ(r.info.model, "iiwa14");  // the server's default model
  ASSERT_TRUE(r.server_stats.has_value());
  EXPECT_FALSE(r.server_stats->has_fault()) << r.server_stats->fault().reason();
  EXPECT_GT(r.simulated_s, 0.5);
  EXPECT_GT(r.wall_s, 0.5);
}

TEST_F(LatencyTest, UdpLockstepLosesNothing) {
  const client::LatencyReport r = runLatency(options("udp", "lockstep"));
  SCOPED_TRACE(text(r));
  expectSaneReport(r);
  EXPECT_EQ(r.info.mode, "lockstep");
  EXPECT_EQ(r.counts.lost, 0u);
  EXPECT_EQ(r.counts.answered, r.counts.sent);
  EXPECT_EQ(r.counts.superseded, 0u);
  EXPECT_EQ(r.states.missing_cycles, 0u);
  // the server saw every command (and the sync) over UDP, none rejected
  EXPECT_EQ(r.server_stats->udp().accepted(), r.counts.sent + 1);
  EXPECT_EQ(r.server_stats->udp().received(), r.server_stats->udp().accepted());
  EXPECT_EQ(r.server_stats->commands().applied(), r.counts.sent);
  // lockstep: one cycle of 1 ms per command at 1 kHz, so simulated and wall time match to within
  // the controller's scheduling (generous on a loaded machine)
  EXPECT_NEAR(r.simulated_s, (r.counts.sent - 1) * 1e-3, 1e-9);
  EXPECT_NEAR(r.real_time_factor, 1.0, 0.2);
}

TEST_F(LatencyTest, GrpcLockstepLosesNothing) {
  const client::LatencyReport r = runLatency(options("grpc", "lockstep"));
  SCOPED_TRACE(text(r));
  expectSaneReport(r);
  EXPECT_EQ(r.counts.lost, 0u);
  EXPECT_EQ(r.counts.answered, r.counts.sent);
  EXPECT_EQ(r.states.missing_cycles, 0u);
  EXPECT_EQ(r.server_stats->grpc().accepted(), r.counts.sent + 1);
  EXPECT_EQ(r.server_stats->udp().received(), 0u);
}

TEST_F(LatencyTest, UdpRealtimeAnswersAlmostEveryCommand) {
  const client::LatencyReport r = runLatency(options("udp", "realtime"));
  SCOPED_TRACE(text(r));
  expectSaneReport(r);
  EXPECT_EQ(r.info.mode, "realtime");
  // loopback loses nothing, but a command whose answer is still in flight when the run ends may
  // be counted lost; superseded commands are answered
  EXPECT_LE(r.counts.lost, r.counts.sent / 100);
  // realtime: the States of every cycle stream in (a loaded machine may skip a few)
  EXPECT_GT(r.states.received, r.counts.sent / 2);
  EXPECT_GT(r.real_time_factor, 0.5);
  EXPECT_LT(r.real_time_factor, 1.5);
}

TEST_F(LatencyTest, CommandLineOverGrpcRealtimeWritesTheFiles) {
  const fs::path dir = fs::temp_directory_path() / ("hilsim_latency_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string csv = (dir / "latency.csv").string(), svg = (dir / "latency.svg").string();
  std::ostringstream out, err;
  const int code = run({"latency", "--server", server_->grpcTarget(), "--transport", "grpc",
                        "--mode", "realtime", "--duration", "1", "--csv", csv, "--svg", svg},
                       out, err);
  ASSERT_EQ(code, 0) << err.str();
  EXPECT_TRUE(err.str().empty()) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("hilsim latency: GRPC, 1000 Hz, iiwa14 (realtime 1000 Hz)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("round trip"), std::string::npos);
  EXPECT_NE(text.find("server statistics (GetStats)"), std::string::npos);

  std::ifstream csv_file(csv);
  std::string line;
  int rows = -1;  // the header
  while (std::getline(csv_file, line)) ++rows;
  EXPECT_GT(rows, 500);
  std::ifstream svg_file(svg);
  std::stringstream svg_text;
  svg_text << svg_file.rdbuf();
  EXPECT_NE(svg_text.str().find("<svg"), std::string::npos);
  EXPECT_NE(svg_text.str().find("</svg>"), std::string::npos);
  fs::remove_all(dir);
}

TEST_F(LatencyTest, AttachesToAnExistingSessionAndPrintsJson) {
  std::ostringstream created, err;
  ASSERT_EQ(run({"session", "create", "--server", server_->grpcTarget(), "--model", "iiwa14",
                 "--mode", "lockstep", "--start"},
                created, err),
            0)
      << err.str();
  // "session    <id>" and "udp key    <hex>  (…)" (MAC, the server's default)
  std::istringstream lines(created.str());
  std::string line, id, key;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string first, value;
    words >> first;
    if (first == "session") words >> id;
    if (first == "udp") {
      words >> value >> key;
      if (value != "key") key.clear();
    }
  }
  ASSERT_FALSE(id.empty()) << created.str();
  ASSERT_EQ(key.size(), 64u) << created.str();
  const OwnerSecretFrom owner(created.str());
  EXPECT_NE(std::getenv("HILSIM_OWNER_SECRET"), nullptr) << created.str();
  std::ostringstream out;
  ASSERT_EQ(run({"latency", "--server", server_->grpcTarget(), "--session", id, "--udp-key",
                 key, "--duration", "0.5", "--json"},
                out, err),
            0)
      << err.str();
  EXPECT_NE(out.str().find("\"session_id\": " + id), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"mode\": \"lockstep\""), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"server_stats\": {"), std::string::npos) << out.str();
  // the session was not created by the run, so it is still there
  const std::string target = server_->grpcTarget();
  std::ostringstream listed;
  ASSERT_EQ(run({"session", "list", "--server", target}, listed, err), 0);
  EXPECT_NE(listed.str().find("RUNNING"), std::string::npos) << listed.str();
  // the other session commands on it
  std::ostringstream stats;
  ASSERT_EQ(run({"session", "stats", id, "--server", target}, stats, err), 0) << err.str();
  EXPECT_NE(stats.str().find("compute time"), std::string::npos) << stats.str();
  EXPECT_NE(stats.str().find("states_sent"), std::string::npos) << stats.str();
  std::ostringstream info;
  ASSERT_EQ(run({"session", "get", id, "--server", target, "--json"}, info, err), 0) << err.str();
  EXPECT_NE(info.str().find("\"session_id\": \"" + id + "\""), std::string::npos) << info.str();
  EXPECT_EQ(info.str().find("udp_token"), std::string::npos) << "GetSession never shows it";
  EXPECT_EQ(info.str().find("udp_key"), std::string::npos) << "nor the key";
  EXPECT_EQ(info.str().find(key), std::string::npos);
  std::ostringstream paused, closed, gone, gone_err;
  ASSERT_EQ(run({"session", "pause", id, "--server", target}, paused, err), 0) << err.str();
  EXPECT_NE(paused.str().find("PAUSED"), std::string::npos) << paused.str();
  ASSERT_EQ(run({"session", "close", id, "--server", target}, closed, err), 0) << err.str();
  EXPECT_NE(closed.str().find("closed; final statistics"), std::string::npos) << closed.str();
  EXPECT_EQ(run({"session", "get", id, "--server", target}, gone, gone_err), kExitFailure);
  EXPECT_EQ(gone_err.str().rfind("hilsim: error: GetSession: NOT_FOUND", 0), 0u) << gone_err.str();
  // a word is a name: no session has it
  std::ostringstream unnamed_err;
  EXPECT_EQ(run({"session", "get", "abc", "--server", target}, gone, unnamed_err), kExitFailure);
  EXPECT_NE(unnamed_err.str().find("no session named 'abc'"), std::string::npos)
      << unnamed_err.str();
}

// A model file of the user's sent as text, a session named and addressed by its name, stepped in
// lockstep; a second session of that name, a file that cannot be read and one that does not load
// are one-line errors (the last with the file's line).
TEST_F(LatencyTest, ASessionFromAModelFileIsAddressedByItsName) {
  const std::string target = server_->grpcTarget();
  const std::string file = std::string(HILSIM_MODEL_DIR) + "/ur5.urdf";
  std::ostringstream created, err;
  ASSERT_EQ(run({"session", "create", "--server", target, "--model", file, "--name", "arm",
                 "--mode", "lockstep", "--start"},
                created, err),
            0)
      << err.str();
  EXPECT_NE(created.str().find("(arm)"), std::string::npos) << created.str();
  EXPECT_NE(created.str().find("model      ur5, lockstep"), std::string::npos) << created.str();
  const OwnerSecretFrom owner(created.str());
  std::ostringstream stepped;
  ASSERT_EQ(run({"session", "step", "arm", "10", "--server", target}, stepped, err), 0) << err.str();
  EXPECT_NE(stepped.str().find("cycle 10, t 0.01 s"), std::string::npos) << stepped.str();
  ASSERT_EQ(run({"session", "step", "arm", "5", "--tau", "1,0,0,0,0,0", "--server", target},
                stepped, err),
            0)
      << err.str();
  EXPECT_NE(stepped.str().find("cycle 15"), std::string::npos) << stepped.str();
  std::ostringstream stats;
  ASSERT_EQ(run({"session", "stats", "arm", "--server", target}, stats, err), 0) << err.str();
  EXPECT_NE(stats.str().find("compute time"), std::string::npos) << stats.str();

  namespace fs = std::filesystem;
  const fs::path bad = fs::temp_directory_path() / ("hilsim_bad_" + std::to_string(::getpid()) + ".urdf");
  {
    std::ofstream out(bad);
    out << "<robot name=\"x\">\n<link name=\"a\"/>\n<joint name=\"j\" type=\"fixed\">\n"
           "<parent link=\"a\"/><child link=\"b\"/></joint></robot>\n";
  }
  const std::vector<ErrorCase> cases = {
      {{"session", "create", "--server", target, "--model", "pendulum", "--name", "arm"},
       kExitFailure, "ALREADY_EXISTS: config.name: session"},
      {{"session", "create", "--server", target, "--model", "./no/such.urdf"}, kExitFailure,
       "cannot read ./no/such.urdf"},
      {{"session", "create", "--server", target, "--model", bad.string()}, kExitFailure,
       bad.string() + ":3:"},
      {{"session", "create", "--server", target, "--model", "pendulum", "--name", "42"},
       kExitUsage, "--name"},
      {{"session", "step", "arm", "2", "--tau", "1,2", "--server", target}, kExitUsage,
       "--tau: expected 6"},
  };
  expectOneLineErrors(cases);
  fs::remove(bad);
  std::ostringstream closed;
  ASSERT_EQ(run({"session", "close", "arm", "--server", target}, closed, err), 0) << err.str();
}

// Command interfaces from the CLI: --drive on create, --position and --velocity on step; a
// malformed --drive is a usage error before anything is sent, a bad gain the server's refusal.
TEST_F(LatencyTest, SessionCreateTakesDrivesAndStepTakesSetPoints) {
  const std::string target = server_->grpcTarget();
  std::ostringstream created, err;
  ASSERT_EQ(run({"session", "create", "--server", target, "--model", "pendulum", "--name", "pd",
                 "--mode", "lockstep", "--drive", "*=position:kp=200,kd=20", "--start"},
                created, err),
            0)
      << err.str();
  const OwnerSecretFrom owner(created.str());
  std::ostringstream stepped;
  // the gravity torque 9.81 sin 0.5 as feed-forward: the drive settles on its set-point
  ASSERT_EQ(run({"session", "step", "pd", "3000", "--position", "0.5", "--tau",
                 "4.703164533707231", "--server", target},
                stepped, err),
            0)
      << err.str();
  EXPECT_NE(stepped.str().find("cycle 3000"), std::string::npos) << stepped.str();
  EXPECT_NE(stepped.str().find("  q 0.5\n"), std::string::npos) << stepped.str();
  std::ostringstream info;
  ASSERT_EQ(run({"session", "get", "pd", "--server", target, "--json"}, info, err), 0);
  EXPECT_NE(info.str().find("COMMAND_INTERFACE_POSITION"), std::string::npos) << info.str();

  const std::vector<ErrorCase> cases = {
      {{"session", "create", "--server", target, "--model", "pendulum", "--drive", "hinge"},
       kExitUsage, "--drive 'hinge': no JOINT="},
      {{"session", "create", "--server", target, "--model", "pendulum", "--drive",
        "hinge=torque"},
       kExitUsage, "--drive interface: unknown value 'torque'"},
      {{"session", "create", "--server", target, "--model", "pendulum", "--drive",
        "hinge=position:kp=1,kx=2"},
       kExitUsage, "unknown gain 'kx'"},
      {{"session", "create", "--server", target, "--model", "pendulum", "--drive",
        "hinge=position:kp=1,kd=abc"},
       kExitUsage, "'abc' is not a number"},
      {{"session", "create", "--server", target, "--model", "pendulum", "--drive",
        "hinge=position:kp=100"},
       kExitFailure, "INVALID_ARGUMENT: session config: drives[0] (joint 'hinge')"},
      {{"session", "step", "pd", "2", "--server", target}, kExitFailure,
       "carries nv positions"},
  };
  expectOneLineErrors(cases);
  std::ostringstream closed;
  ASSERT_EQ(run({"session", "close", "pd", "--server", target}, closed, err), 0) << err.str();
}

// Faults from the CLI: a schedule on create (--fault, --fault-seed), one injected with `session
// fault`, both seen in `session stats`, ended with `session clear-faults`; a malformed spec is a
// usage error before anything is sent, a bad joint the server's refusal.
TEST_F(LatencyTest, SessionFaultsAreScheduledInjectedShownAndCleared) {
  const std::string target = server_->grpcTarget();
  std::ostringstream created, err;
  ASSERT_EQ(run({"session", "create", "--server", target, "--model", "pendulum", "--name", "flt",
                 "--mode", "lockstep", "--fault", "drop_states:start=0.01,duration=0.01,rate=0.5",
                 "--fault-seed", "4", "--start"},
                created, err),
            0)
      << err.str();
  const OwnerSecretFrom owner(created.str());
  std::ostringstream injected;
  ASSERT_EQ(run({"session", "fault", "flt", "cut_drive@hinge:value=0.25", "--server", target},
                injected, err),
            0)
      << err.str();
  EXPECT_EQ(injected.str(),
            "session 1: fault cut_drive on hinge (id 2), torque × 0.25, from the next cycle "
            "until cleared\n");
  std::ostringstream stepped;
  ASSERT_EQ(run({"session", "step", "flt", "30", "--tau", "2", "--server", target}, stepped, err), 0)
      << err.str();
  EXPECT_NE(stepped.str().find("  tau 0.5\n"), std::string::npos) << stepped.str();
  std::ostringstream stats;
  ASSERT_EQ(run({"session", "stats", "flt", "--server", target}, stats, err), 0) << err.str();
  EXPECT_NE(stats.str().find("faults     started 2, ended 1, commands lost 0, delayed 0, "
                             "states withheld "),
            std::string::npos)
      << stats.str();
  EXPECT_NE(stats.str().find("  acting   cut_drive on hinge (id 2)\n"),
            std::string::npos)
      << stats.str();
  std::ostringstream cleared;
  ASSERT_EQ(run({"session", "clear-faults", "flt", "--server", target}, cleared, err), 0)
      << err.str();
  EXPECT_EQ(cleared.str(), "session 1: every fault ends at the next cycle\n");
  ASSERT_EQ(run({"session", "step", "flt", "1", "--tau", "2", "--server", target}, stepped, err), 0);
  EXPECT_NE(stepped.str().find("  tau 2\n"), std::string::npos) << stepped.str();

  const std::vector<ErrorCase> cases = {
      {{"session", "fault", "flt", "explode", "--server", target}, kExitUsage,
       "fault 'explode': unknown type 'explode' (drop_commands, delay_commands"},
      {{"session", "fault", "flt", "lock_joint@", "--server", target}, kExitUsage,
       "no joint after '@'"},
      {{"session", "fault", "flt", "drop_states:burst=1.5", "--server", target}, kExitUsage,
       "burst must be a whole number"},
      {{"session", "fault", "flt", "drop_states:when=1", "--server", target}, kExitUsage,
       "unknown setting 'when'"},
      {{"session", "fault", "flt", "lock_joint@knee", "--server", target}, kExitFailure,
       "INVALID_ARGUMENT: fault (lock_joint): the model 'pendulum' has no joint 'knee'"},
      {{"session", "create", "--server", target, "--model", "pendulum", "--fault",
        "delay_states:cycles=2000"},
       kExitFailure, "faults.schedule[0] (delay_states): cycles 2000 is outside"},
  };
  expectOneLineErrors(cases);
  std::ostringstream closed;
  ASSERT_EQ(run({"session", "close", "flt", "--server", target}, closed, err), 0) << err.str();
}

// Ctrl-C on a run: the loop stops, the session it created is closed, the CSV and the report
// cover what was measured, and the exit code is the shell's for SIGINT (130).
TEST_F(LatencyTest, ASignalClosesTheSessionAndReportsWhatWasMeasured) {
  namespace fs = std::filesystem;
  const fs::path csv = fs::temp_directory_path() / ("hilsim_sigint_" + std::to_string(::getpid()) + ".csv");
  std::ostringstream out, err;
  int code = -1;
  std::thread run_thread([&] {
    code = run({"latency", "--server", server_->grpcTarget(), "--duration", "30", "--csv",
                csv.string()},
               out, err);
  });
  // the guard is in place once the run's session exists; then half a second of commands
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server_->sessions().list().empty() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(::getpid(), SIGINT);
  run_thread.join();
  EXPECT_EQ(code, 130) << err.str();
  EXPECT_NE(err.str().find("interrupted by SIGINT after"), std::string::npos) << err.str();
  EXPECT_NE(out.str().find("round trip"), std::string::npos) << out.str();
  EXPECT_TRUE(server_->sessions().list().empty()) << "the run's session is closed";
  std::ifstream file(csv);
  std::string line;
  int rows = -1;  // the header
  while (std::getline(file, line)) ++rows;
  EXPECT_GT(rows, 100) << "half a second at 1 kHz";
  EXPECT_LT(rows, 10000) << "not the 30 s planned";
  fs::remove(csv);
}

// An output file that cannot be written is found before the run, not after it: no session is
// created, nothing is written.
TEST_F(LatencyTest, AnUnwritableOutputFileIsRefusedBeforeTheRun) {
  std::ostringstream out, err;
  EXPECT_EQ(run({"latency", "--server", server_->grpcTarget(), "--duration", "3", "--svg",
                 "/nonexistent-dir/x.svg"},
                out, err),
            kExitFailure);
  EXPECT_EQ(err.str(), "hilsim: error: cannot open '/nonexistent-dir/x.svg' for writing: No such "
                       "file or directory\n");
  EXPECT_TRUE(out.str().empty());
  v1::CreateSessionResponse response =
      client::SimulationClient(server_->grpcTarget()).createSession("pendulum", {});
  EXPECT_EQ(response.session().session_id(), 1u) << "the run created no session";
}

TEST_F(LatencyTest, BadOptionsAndUnknownSessionsAreOneLineErrors) {
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::string target = server_->grpcTarget();
  const std::vector<Case> cases = {
      {{"latency", "--server", target, "--transport", "tcp"}, kExitUsage, "--transport"},
      {{"latency", "--server", target, "--rate", "0"}, kExitUsage, "--rate"},
      {{"latency", "--server", target, "--duration", "-1"}, kExitUsage, "--duration"},
      {{"latency", "--server", target, "--mode", "free"}, kExitUsage, "--mode"},
      {{"latency", "--server", target, "--session", "7"}, kExitUsage, "--udp-token"},
      {{"latency", "--server", target, "--session", "7", "--udp-token", "xyz"}, kExitUsage,
       "32 hex digits"},
      {{"latency", "--server", target, "--session", "7", "--udp-key", "ab"}, kExitUsage,
       "64 hex digits"},
      {{"latency", "--server", target, "--session", "99", "--transport", "grpc"}, kExitFailure,
       "GetSession: NOT_FOUND"},
      {{"latency", "--server", target, "--model", "nope", "--duration", "0.1"}, kExitFailure,
       "CreateSession: NOT_FOUND"},
  };
  for (const Case& c : cases) {
    std::ostringstream out, err;
    EXPECT_EQ(run(c.args, out, err), c.code) << err.str();
    const std::string message = err.str();
    EXPECT_TRUE(out.str().empty()) << out.str();
    EXPECT_EQ(message.rfind("hilsim: error: ", 0), 0u) << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  }
}

}  // namespace
}  // namespace hilsim::cli
