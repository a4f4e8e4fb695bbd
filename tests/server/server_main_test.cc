// The hilsim-server executable: starts from a configuration file, creates its start-up session,
// and on SIGTERM or SIGINT stops every session, logs the final statistics and exits 0; a broken
// configuration is one clear line and exit code 2.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

struct Process {
  pid_t pid = -1;
  fs::path log;
};

std::string readAll(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class ServerMainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hilsim_server_main_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path writeConfig(const std::string& text) {
    const fs::path path = dir_ / "server.yaml";
    std::ofstream(path) << text;
    return path;
  }

  // Starts hilsim-server with stderr and stdout into a log file.
  Process launch(const fs::path& config) {
    Process p;
    p.log = dir_ / "server.log";
    p.pid = ::fork();
    if (p.pid == 0) {
      std::FILE* out = std::freopen(p.log.c_str(), "w", stderr);
      if (out == nullptr) ::_exit(127);
      ::dup2(::fileno(stderr), ::fileno(stdout));
      ::execl(HILSIM_SERVER_EXE, HILSIM_SERVER_EXE, "--config", config.c_str(), nullptr);
      ::_exit(127);
    }
    return p;
  }

  // Polls the log until it contains `text` (or the process ended, or 10 s passed).
  bool waitForLog(const Process& p, const std::string& text) {
    for (int i = 0; i < 1000; ++i) {
      if (readAll(p.log).find(text) != std::string::npos) return true;
      int status = 0;
      if (::waitpid(p.pid, &status, WNOHANG) == p.pid) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  int waitExit(const Process& p) {
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(p.pid, &status, WNOHANG) == p.pid) {
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(p.pid, SIGKILL);
    ::waitpid(p.pid, &status, 0);
    return -1;  // hung
  }

  fs::path dir_;
};

constexpr const char* kConfig = R"(listen:
  address: 127.0.0.1
  grpc_port: 0
  udp: {enabled: true, ports: [0, 0]}
  metrics: {enabled: false}
session_defaults:
  thread: {lock_memory: false}
sessions:
  - {name: arm, model: iiwa14, start: true}
)";

TEST_F(ServerMainTest, StopsCleanlyOnSigtermAndSigint) {
  for (const int signal_number : {SIGTERM, SIGINT}) {
    const Process p = launch(writeConfig(kConfig));
    ASSERT_TRUE(waitForLog(p, "start-up session 1 'arm'")) << readAll(p.log);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it run some cycles
    ::kill(p.pid, signal_number);
    EXPECT_EQ(waitExit(p), 0) << readAll(p.log);
    const std::string log = readAll(p.log);
    EXPECT_NE(log.find(signal_number == SIGTERM ? "SIGTERM received" : "SIGINT received"),
              std::string::npos)
        << log;
    // The final statistics of the session, then the last line.
    EXPECT_NE(log.find("session 1 'arm' closed: "), std::string::npos) << log;
    EXPECT_NE(log.find("hilsim-server stopped"), std::string::npos) << log;
  }
}

TEST_F(ServerMainTest, BrokenConfigurationIsOneLineAndExitCode2) {
  const Process p = launch(writeConfig("listen:\n  grpc_prot: 50051\n"));
  EXPECT_EQ(waitExit(p), 2);
  const std::string log = readAll(p.log);
  EXPECT_NE(log.find("grpc_prot"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

}  // namespace
