// No client can take the server (docs/SERVER.md, "Bounded work per request" and "Isolation
// between clients"): each case is one way a local client once could, tried against a real server
// on loopback, and bounded in time. The suite runs alone (SERIAL): its floods and its wake-up
// figures must not share the machine with other suites.
#include <arpa/inet.h>
#include <civetweb.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "hilsim/v1/service.grpc.pb.h"
#include "rt/realtime_setup.h"
#include "server/log_format.h"
#include "server/server.h"
#include "server/session_registry.h"
#include "tests/support/captured_log.h"
#include "tests/support/loopback_server.h"

namespace hilsim::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using grpc::StatusCode;

constexpr const char* kOperator = "isolation-test-operator";

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// --- raw sockets: what a misbehaving client does ---

/// A TCP connection from `source` (a loopback address) to 127.0.0.1:`port`; −1 on failure.
int connectFrom(std::uint16_t port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &peer.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&peer), sizeof peer) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// Whether the peer closed `fd` (a read returned end of file or a reset) within `timeout`.
bool closedByPeerWithin(int fd, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
  }
  return false;
}

struct HttpAnswer {
  std::string text;  // status line, headers and body; empty when nothing came
  double seconds = 0.0;
  int status() const {
    if (text.rfind("HTTP/1.", 0) != 0 || text.size() < 12) return -1;
    return std::atoi(text.c_str() + 9);
  }
};

/// One HTTP/1.1 request on a fresh connection; what came back within `timeout`.
HttpAnswer http(std::uint16_t port, const std::string& method, const std::string& path,
                const std::string& headers = "", std::chrono::milliseconds timeout = 5000ms) {
  HttpAnswer answer;
  const auto start = Clock::now();
  const int fd = connectFrom(port);
  if (fd < 0) return answer;
  const std::string request = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                              std::to_string(port) + "\r\nConnection: close\r\n" + headers +
                              "\r\n";
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  const auto until = start + timeout;
  char buffer[8192];
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  answer.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return answer;
}

bool hasHeader(const std::string& response, const std::string& name) {
  std::string lower = response.substr(0, response.find("\r\n\r\n"));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string wanted = "\r\n" + name + ":";
  for (char& c : wanted) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find(wanted) != std::string::npos;
}

// --- the server ---

ServerConfig isolationConfig() {
  ServerConfig config = test::loopbackServerConfig();
  config.metrics_enabled = true;
  config.metrics_port = 0;
  config.viewer_enabled = true;
  config.viewer_port = 0;
  config.operator_secret = kOperator;
  config.session_defaults.mutable_thread()->set_lock_memory(false);
  return config;
}

class IsolationTest : public ::testing::Test {
 protected:
  void startServer(ServerConfig config) {
    if (server_) server_->shutdown();
    server_ = std::make_unique<Server>(std::move(config));
    server_->start();
    stub_ = v1::Simulation::NewStub(
        grpc::CreateChannel(server_->grpcTarget(), grpc::InsecureChannelCredentials()));
  }
  void SetUp() override { startServer(isolationConfig()); }
  void TearDown() override {
    if (server_) server_->shutdown();
  }

  /// A call context presenting `owner` as hilsim-owner (empty: none).
  static std::unique_ptr<grpc::ClientContext> as(const std::string& owner,
                                                 std::chrono::milliseconds deadline = 10000ms) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + deadline);
    if (!owner.empty()) c->AddMetadata("hilsim-owner", owner);
    return c;
  }

  v1::CreateSessionResponse create(const std::string& model, v1::SessionMode mode,
                                   int substeps = 1, const std::string& name = "") {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name(model);
    request.mutable_config()->set_mode(mode);
    request.mutable_config()->set_substeps(static_cast<std::uint32_t>(substeps));
    request.mutable_config()->set_name(name);
    v1::CreateSessionResponse response;
    const grpc::Status status = stub_->CreateSession(as("").get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.owner_secret().size(), 32u);
    return response;
  }

  grpc::Status start(std::uint64_t id, const std::string& owner) {
    v1::SessionRequest request;
    request.set_session_id(id);
    v1::SessionInfo info;
    return stub_->StartSession(as(owner).get(), request, &info);
  }

  v1::SessionStats stats(std::uint64_t id) {
    v1::SessionRequest request;
    request.set_session_id(id);
    v1::SessionStats out;
    EXPECT_TRUE(stub_->GetStats(as("").get(), request, &out).ok());
    return out;
  }

  /// Waits up to `timeout` for `done`.
  template <typename Predicate>
  static bool eventually(Predicate done, std::chrono::milliseconds timeout = 5000ms) {
    const auto until = Clock::now() + timeout;
    while (!done()) {
      if (Clock::now() >= until) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<v1::Simulation::Stub> stub_;
};

v1::Command zeroTorques(std::uint64_t id, int nv, std::uint32_t steps) {
  v1::Command command;
  command.set_session_id(id);
  command.set_sequence(1);
  command.set_steps(steps);
  for (int k = 0; k < nv; ++k) command.add_tau(0.0);
  return command;
}

// 1. One Step of 10⁴ cycles of a humanoid at 1000 substeps once cost minutes of CPU, and 64 UDP
// commands like it hours: a request's cycles × the measured cost of a cycle is held to
// limits.max_request_cpu_s before anything is queued, the session's queue to max_queued_cpu_s.
TEST_F(IsolationTest, LockstepWorkIsBoundedByWhatItCosts) {
  const v1::CreateSessionResponse created =
      create("talos_full_v2", v1::SESSION_MODE_LOCKSTEP, 1000, "heavy");
  const std::uint64_t id = created.session().session_id();
  const int nv = static_cast<int>(created.session().model().nv());
  ASSERT_TRUE(start(id, created.owner_secret()).ok());
  const double cycle_s = stats(id).placement().cycle_cost_ns() * 1e-9;
  ASSERT_GT(cycle_s, 0.0) << "measured when the session was made";
  ASSERT_GT(10000 * cycle_s, 1.0) << "the request must cost more than a second to test the bound";

  v1::State state;
  const auto asked = Clock::now();
  grpc::Status status =
      stub_->Step(as(created.owner_secret()).get(), zeroTorques(id, nv, 10000), &state);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("limits.max_request_cpu_s"), std::string::npos)
      << status.error_message();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), 1.0) << "refused at once";

  // the same 64 times over UDP: each refused, none queued, nothing run
  client::UdpController udp("127.0.0.1", created);
  const std::vector<double> tau(static_cast<std::size_t>(nv), 0.0);
  for (int k = 0; k < 64; ++k) ASSERT_NE(udp.send(tau, 10000), 0u);
  ASSERT_TRUE(eventually([&] { return stats(id).udp().too_costly() == 64; }))
      << stats(id).udp().DebugString();
  EXPECT_EQ(server_->sessions().find(id)->session().queuedCycles(), 0u);
  EXPECT_EQ(stats(id).cycles(), 0u);
}

TEST_F(IsolationTest, ASessionsQueueIsBoundedToo) {
  ServerConfig config = isolationConfig();
  config.max_request_cpu_s = 0.1;
  config.max_queued_cpu_s = 0.2;
  startServer(config);
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
  request.mutable_config()->set_substeps(1000);
  request.mutable_config()->set_command_capacity(64);
  v1::CreateSessionResponse created;
  ASSERT_TRUE(stub_->CreateSession(as("").get(), request, &created).ok());
  const std::uint64_t id = created.session().session_id();
  ASSERT_TRUE(start(id, created.owner_secret()).ok());
  ServerSession& session = *server_->sessions().find(id);
  // each command asks for about half of a request's budget: a few fit in the queue, no more
  const double cycle_s = session.cpuSeconds(1);
  const auto steps = static_cast<std::uint32_t>(std::max(1.0, 0.05 / cycle_s));
  client::UdpController udp("127.0.0.1", created);
  const std::vector<double> tau = {0.0};
  double most_queued_s = 0.0;
  for (int k = 0; k < 64; ++k) {
    ASSERT_NE(udp.send(tau, steps), 0u);
    most_queued_s = std::max(most_queued_s, session.cpuSeconds(session.session().queuedCycles()));
  }
  ASSERT_TRUE(eventually([&] {
    const v1::TransportStats u = stats(id).udp();
    return u.accepted() + u.over_budget() + u.too_costly() == 64;
  }));
  const v1::TransportStats u = stats(id).udp();
  EXPECT_GT(u.over_budget(), 0u) << u.DebugString();
  EXPECT_EQ(u.too_costly(), 0u);
  // the queue never held more than its budget (at the cost measured then; it is re-measured
  // as the session runs, hence the margin) and drains within a bounded time
  EXPECT_LE(most_queued_s, 2 * config.max_queued_cpu_s);
  EXPECT_TRUE(eventually([&] { return session.session().queuedCycles() == 0; }, 10000ms));
}

// A Step whose deadline passes, or a Control stream that ends, leaves nothing running for nobody:
// every cycle it asked for either ran or was dropped, and the session serves the next call.
TEST_F(IsolationTest, QueuedWorkIsDroppedWhenItsCallerGoes) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->set_mode(v1::SESSION_MODE_LOCKSTEP);
  request.mutable_config()->set_substeps(1000);
  v1::CreateSessionResponse created;
  ASSERT_TRUE(stub_->CreateSession(as("").get(), request, &created).ok());
  const std::uint64_t id = created.session().session_id();
  const std::string& owner = created.owner_secret();
  ASSERT_TRUE(start(id, owner).ok());
  ServerSession& session = *server_->sessions().find(id);
  // about 0.6 s of work: within the request's budget, far beyond the call's 100 ms deadline
  const auto steps = static_cast<std::uint32_t>(
      std::min<double>(kDefaultMaxStepCycles, 0.6 / session.cpuSeconds(1)));
  ASSERT_GT(steps, 20u);  // fewer under ThreadSanitizer, whose cycles cost more
  v1::State state;
  grpc::Status status = stub_->Step(as(owner, 100ms).get(), zeroTorques(id, 1, steps), &state);
  EXPECT_EQ(status.error_code(), StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  ASSERT_TRUE(eventually([&] { return session.session().queuedCycles() == 0; }, 2000ms));
  v1::SessionStats s = stats(id);
  EXPECT_GT(s.commands().cycles_dropped(), 0u);
  EXPECT_EQ(s.cycles() + s.commands().cycles_dropped(), steps) << "each cycle ran or was dropped";
  // the next call is served at once, from where the session stopped
  v1::Command next = zeroTorques(id, 1, 1);
  next.set_sequence(2);
  status = stub_->Step(as(owner).get(), next, &state);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(state.cycle(), s.cycles() + 1);

  // the same through a Control stream that is cancelled with its work queued
  const std::uint64_t ran = state.cycle();
  const std::uint64_t dropped = s.commands().cycles_dropped();
  client::SimulationClient client(server_->grpcTarget());
  client.setOwnerSecret(id, owner);
  auto control = client.openControl(id);
  ASSERT_NE(control->sync(), 0u);
  ASSERT_TRUE(control->read(state));
  const std::vector<double> tau = {0.0};
  ASSERT_NE(control->send(tau, steps), 0u);
  std::this_thread::sleep_for(50ms);
  control->cancel();
  control.reset();
  ASSERT_TRUE(eventually([&] { return session.session().queuedCycles() == 0; }, 2000ms));
  s = stats(id);
  EXPECT_GT(s.commands().cycles_dropped(), dropped);
  EXPECT_EQ(s.cycles() + s.commands().cycles_dropped(), ran + dropped + steps);
}

// 2. One idle connection once held the exporter's only worker for 30 s, and a few that sent a
// byte a second held every scrape.
TEST_F(IsolationTest, SlowAndIdleConnectionsDoNotHoldTheMetrics) {
  const std::uint16_t port = server_->metricsPort();
  std::vector<int> idle;
  for (int k = 0; k < 4; ++k) {
    const int fd = connectFrom(port);
    ASSERT_GE(fd, 0);
    const std::string partial = "GET /metrics HTTP/1.1\r\nHost: x\r\n";  // never finished
    (void)::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    std::vector<int> slow;
    for (int k = 0; k < 3; ++k) slow.push_back(connectFrom(port));
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    for (std::size_t i = 0; !stop && i < request.size(); ++i) {
      for (const int fd : slow) (void)::send(fd, &request[i], 1, MSG_NOSIGNAL);
      for (int t = 0; t < 20 && !stop; ++t) std::this_thread::sleep_for(50ms);  // a byte a second
    }
    for (const int fd : slow) ::close(fd);
  });
  double slowest = 0.0;
  for (int k = 0; k < 5; ++k) {
    const HttpAnswer scrape = http(port, "GET", "/metrics", "", 3000ms);
    EXPECT_EQ(scrape.status(), 200) << scrape.text.substr(0, 200);
    EXPECT_LT(scrape.seconds, 1.5) << "scrape " << k;
    slowest = std::max(slowest, scrape.seconds);
    std::this_thread::sleep_for(300ms);
  }
  std::cout << "slowest scrape beside idle and slow connections: " << slowest * 1e3 << " ms\n";
  stop = true;
  trickle.join();
  // the idle ones were closed by the server after its request timeout
  for (const int fd : idle) {
    EXPECT_TRUE(closedByPeerWithin(fd, 3000ms));
    ::close(fd);
  }
}

// 3. Idle connections opened at 40 a second once made the viewer's API miss three answers in four.
TEST_F(IsolationTest, IdleConnectionsDoNotStarveTheViewer) {
  const std::uint16_t port = server_->viewerPort();
  std::atomic<bool> stop{false};
  std::vector<int> idle;
  std::thread flood([&] {
    while (!stop) {
      const int fd = connectFrom(port, "127.0.0.2");
      if (fd >= 0) idle.push_back(fd);
      std::this_thread::sleep_for(25ms);  // 40 a second, kept open
    }
  });
  std::this_thread::sleep_for(500ms);
  int answered = 0;
  double slowest = 0.0;
  for (int k = 0; k < 8; ++k) {
    const HttpAnswer listed = http(port, "GET", "/api/sessions", "", 5000ms);
    if (listed.status() == 200 && listed.seconds < 2.0) ++answered;
    slowest = std::max(slowest, listed.seconds);
    std::this_thread::sleep_for(250ms);
  }
  stop = true;
  flood.join();
  std::cout << "slowest /api/sessions beside " << idle.size() << " idle connections: "
            << slowest * 1e3 << " ms\n";
  EXPECT_GT(idle.size(), 80u) << "the flood ran";
  EXPECT_EQ(answered, 8);
  for (const int fd : idle) ::close(fd);
}

// 4. Each start locked the whole process's memory again (mlockall, ~21 ms for a large server):
// a create-start-close loop beside a running session raised its p99 wake-up latency from 242 µs
// to 3.1 ms. Memory is locked once, at the server's start.
TEST_F(IsolationTest, StartingSessionsDoesNotDisturbARunningOne) {
  ServerConfig config = isolationConfig();
  config.session_defaults.mutable_thread()->set_lock_memory(true);
  startServer(config);
  const auto run = [&](const std::string& name, bool churn) {
    const v1::CreateSessionResponse created = create("iiwa14", v1::SESSION_MODE_REALTIME, 1, name);
    const std::uint64_t id = created.session().session_id();
    EXPECT_TRUE(start(id, created.owner_secret()).ok());
    std::this_thread::sleep_for(200ms);  // past the first cycles
    const int calls_before = rt::mlockallCalls();
    const auto until = Clock::now() + 1500ms;
    int churned = 0;
    while (Clock::now() < until) {
      if (!churn) {
        std::this_thread::sleep_for(20ms);
        continue;
      }
      const v1::CreateSessionResponse other =
          create("pendulum", v1::SESSION_MODE_REALTIME, 1, "churn-" + std::to_string(churned++));
      EXPECT_TRUE(start(other.session().session_id(), other.owner_secret()).ok());
      v1::SessionRequest close;
      close.set_session_id(other.session().session_id());
      v1::CloseSessionResponse closed;
      EXPECT_TRUE(stub_->CloseSession(as(other.owner_secret()).get(), close, &closed).ok());
      // paced, so that the loop's own CPU stays small beside the running session: what is
      // measured is what a start does to it, not two cores shared by three busy threads
      std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(rt::mlockallCalls(), calls_before) << "memory was locked at the server's start";
    const v1::SessionStats s = stats(id);
    v1::SessionRequest close;
    close.set_session_id(id);
    v1::CloseSessionResponse closed;
    EXPECT_TRUE(stub_->CloseSession(as(created.owner_secret()).get(), close, &closed).ok());
    if (churn) {
      EXPECT_GT(churned, 10);
    }
    return s;
  };
  if (kSanitized) {
    run("quiet", false);
    run("churned", true);
    GTEST_SKIP() << "wake-up figures mean nothing under a sanitizer";
  }
  // The bound: the quiet run's p99 three times over plus 1 ms, and misses within 50 of its. A
  // stall like mlockall's (tens of ms, on every start) lands in the top percent of a 1.5 s run at
  // 1 kHz with ~100 starts; the loop's own CPU (creating, starting, closing sessions on the
  // machine's other core) does not reach it on an idle two-core machine (measured:
  // docs/SERVER.md, "Isolation between clients"). A VM stalls now and then on its own (one quiet
  // run in five had a p99 of 2 ms here): the best of three attempts is taken, and a stall at
  // every start fails all three.
  double quiet_p99 = 0.0, churned_p99 = 0.0;
  std::uint64_t quiet_misses = 0, churned_misses = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const v1::SessionStats quiet = run("quiet-" + std::to_string(attempt), false);
    const v1::SessionStats churned = run("churned-" + std::to_string(attempt), true);
    quiet_p99 = quiet.timing().wakeup_latency().p99_ns() * 1e-6;
    churned_p99 = churned.timing().wakeup_latency().p99_ns() * 1e-6;
    quiet_misses = quiet.timing().deadline_misses();
    churned_misses = churned.timing().deadline_misses();
    std::cout << "wake-up p99: quiet " << quiet_p99 << " ms, beside the loop " << churned_p99
              << " ms; misses " << quiet_misses << " and " << churned_misses << "\n";
    if (churned_p99 <= 3 * quiet_p99 + 1.0 && churned_misses <= quiet_misses + 50) break;
  }
  EXPECT_LE(churned_p99, 3 * quiet_p99 + 1.0);
  EXPECT_LE(churned_misses, quiet_misses + 50);
}

// 5. Any client could drive any session, the start-up ones included, and take every slot.
TEST_F(IsolationTest, OnlyTheOwnerOrTheOperatorDrivesASession) {
  const v1::CreateSessionResponse mine = create("pendulum", v1::SESSION_MODE_LOCKSTEP);
  const std::uint64_t id = mine.session().session_id();
  const std::string& secret = mine.owner_secret();
  v1::SessionRequest session;
  session.set_session_id(id);
  v1::SessionInfo info;
  for (const std::string& stranger : {std::string(), std::string("guessed"),
                                      std::string(secret.size(), '0')}) {
    SCOPED_TRACE("stranger '" + stranger + "'");
    EXPECT_EQ(stub_->StartSession(as(stranger).get(), session, &info).error_code(),
              StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(stub_->StopSession(as(stranger).get(), session, &info).error_code(),
              StatusCode::PERMISSION_DENIED);
    v1::ResetSessionRequest reset;
    reset.set_session_id(id);
    EXPECT_EQ(stub_->ResetSession(as(stranger).get(), reset, &info).error_code(),
              StatusCode::PERMISSION_DENIED);
    v1::CloseSessionResponse closed;
    EXPECT_EQ(stub_->CloseSession(as(stranger).get(), session, &closed).error_code(),
              StatusCode::PERMISSION_DENIED);
    v1::InjectFaultRequest fault;
    fault.set_session_id(id);
    fault.mutable_fault()->set_type(v1::FAULT_TYPE_DROP_COMMANDS);
    v1::InjectedFault injected;
    EXPECT_EQ(stub_->InjectFault(as(stranger).get(), fault, &injected).error_code(),
              StatusCode::PERMISSION_DENIED);
    v1::ClearFaultsRequest clear;
    clear.set_session_id(id);
    v1::ClearFaultsResponse cleared;
    EXPECT_EQ(stub_->ClearFaults(as(stranger).get(), clear, &cleared).error_code(),
              StatusCode::PERMISSION_DENIED);
  }
  // reading needs nothing
  EXPECT_TRUE(stub_->GetSession(as("").get(), session, &info).ok());
  // the owner drives it; a stranger can neither step it nor take its Control slot
  ASSERT_TRUE(start(id, secret).ok());
  v1::State state;
  EXPECT_EQ(stub_->Step(as("").get(), zeroTorques(id, 1, 1), &state).error_code(),
            StatusCode::PERMISSION_DENIED);
  client::SimulationClient stranger(server_->grpcTarget());
  auto taken = stranger.openControl(id);
  taken->sync();
  EXPECT_FALSE(taken->read(state));
  EXPECT_EQ(taken->finish().error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(stub_->Step(as(secret).get(), zeroTorques(id, 1, 1), &state).ok());
  client::SimulationClient owner(server_->grpcTarget());
  owner.setOwnerSecret(id, secret);
  auto control = owner.openControl(id);
  control->sync();
  EXPECT_TRUE(control->read(state)) << "the slot was still free";
  control.reset();
  // the operator drives every session
  EXPECT_TRUE(stub_->PauseSession(as(kOperator).get(), session, &info).ok());
  EXPECT_EQ(info.state(), v1::SESSION_STATE_PAUSED);
}

TEST_F(IsolationTest, StartupSessionsAreTheOperators) {
  ServerConfig config = isolationConfig();
  StartupSession arm;
  arm.model = "pendulum";
  arm.config.set_name("arm");
  config.startup_sessions.push_back(arm);
  startServer(config);
  v1::SessionRequest session;
  session.set_session_id(1);
  v1::SessionInfo info;
  grpc::Status status = stub_->PauseSession(as("").get(), session, &info);
  EXPECT_EQ(status.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_NE(status.error_message().find("operator"), std::string::npos) << status.error_message();
  const v1::CreateSessionResponse other = create("pendulum", v1::SESSION_MODE_REALTIME);
  EXPECT_EQ(stub_->PauseSession(as(other.owner_secret()).get(), session, &info).error_code(),
            StatusCode::PERMISSION_DENIED)
      << "another session's secret is not this one's";
  EXPECT_TRUE(stub_->PauseSession(as(kOperator).get(), session, &info).ok());
}

TEST_F(IsolationTest, OneClientGetsOnlyItsShareOfSessionsReadersAndPages) {
  ServerConfig config = isolationConfig();
  config.max_sessions_per_client = 3;
  config.max_stream_readers_per_client = 2;
  config.max_viewer_pages_per_client = 2;
  startServer(config);
  std::vector<v1::CreateSessionResponse> held;
  for (int k = 0; k < 3; ++k) held.push_back(create("pendulum", v1::SESSION_MODE_REALTIME));
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  v1::CreateSessionResponse refused;
  grpc::Status status = stub_->CreateSession(as("").get(), request, &refused);
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("limits.max_sessions_per_client"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(server_->sessions().list().size(), 3u) << "the server has room; the client has none";

  const std::uint64_t id = held.front().session().session_id();
  ASSERT_TRUE(start(id, held.front().owner_secret()).ok());
  client::SimulationClient reader(server_->grpcTarget());
  // One at a time: the server admits streams in the order it sees them, which for calls
  // started together need not be the order they were made in.
  v1::State state;
  auto first = reader.streamStates(id);
  EXPECT_TRUE(first->read(state));
  auto second = reader.streamStates(id);
  EXPECT_TRUE(second->read(state));
  auto third = reader.streamStates(id);
  EXPECT_FALSE(third->read(state));
  status = third->finish();
  EXPECT_EQ(status.error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("limits.max_stream_readers_per_client"), std::string::npos)
      << status.error_message();

  const std::uint16_t port = server_->viewerPort();
  const std::string path = "/ws/sessions/" + std::to_string(id);
  const auto page = [&] {
    char error[256] = "";
    return mg_connect_websocket_client("127.0.0.1", port, 0, error, sizeof error, path.c_str(),
                                       nullptr, nullptr, nullptr, nullptr);
  };
  mg_connection* page1 = page();
  mg_connection* page2 = page();
  mg_connection* page3 = page();
  EXPECT_NE(page1, nullptr);
  EXPECT_NE(page2, nullptr);
  EXPECT_EQ(page3, nullptr) << "a third page of the same client";
  for (mg_connection* c : {page1, page2, page3}) {
    if (c != nullptr) mg_close_connection(c);
  }
}

// 6. Any client got SCHED_FIFO 90, and a FREE session at that priority took a whole CPU.
TEST_F(IsolationTest, RealTimePrivilegesAreOnlyWhatTheConfigurationGrants) {
  const auto effective = [&](v1::SessionMode mode, std::uint32_t priority, std::int32_t cpu) {
    v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name("pendulum");
    request.mutable_config()->set_mode(mode);
    request.mutable_config()->mutable_thread()->set_fifo_priority(priority);
    request.mutable_config()->mutable_thread()->set_cpu(cpu);
    v1::CreateSessionResponse response;
    const grpc::Status status = stub_->CreateSession(as("").get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    v1::SessionRequest close;
    close.set_session_id(response.session().session_id());
    v1::CloseSessionResponse closed;
    EXPECT_TRUE(stub_->CloseSession(as(response.owner_secret()).get(), close, &closed).ok());
    return response.session().config().thread();
  };
  // the defaults grant nothing: the session runs as the server does, where the kernel puts it
  v1::RtThreadConfig thread = effective(v1::SESSION_MODE_REALTIME, 90, 0);
  EXPECT_EQ(thread.fifo_priority(), 0u);
  EXPECT_EQ(thread.cpu(), -1);
  ServerConfig config = isolationConfig();
  config.max_fifo_priority = 40;
  config.allowed_cpus = {0};
  startServer(config);
  thread = effective(v1::SESSION_MODE_REALTIME, 90, 0);
  EXPECT_EQ(thread.fifo_priority(), 40u);
  EXPECT_EQ(thread.cpu(), 0);
  thread = effective(v1::SESSION_MODE_REALTIME, 30, 1);
  EXPECT_EQ(thread.fifo_priority(), 30u);
  EXPECT_EQ(thread.cpu(), -1) << "CPU 1 is not granted";
  thread = effective(v1::SESSION_MODE_FREE, 30, -1);
  EXPECT_EQ(thread.fifo_priority(), 0u) << "FREE never at a real-time priority";
}

// 7. A session name with a line feed or terminal escapes went raw into the text log, and the
// start-up session's UDP token was logged.
TEST(LogFormat, ControlCharactersAreEscapedInEveryLine) {
  EXPECT_EQ(escapeLogText("arm\n2026-01-01 fake line\x1b[31m\t\\"),
            "arm\\n2026-01-01 fake line\\x1b[31m\\t\\\\");
  EXPECT_EQ(escapeLogText("ünïcode stays"), "ünïcode stays");
  for (const std::string format : {"text", "json"}) {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger logger("escape-" + format, sink);
    logger.set_formatter(makeLogFormatter(format));
    logger.info("session 'a\nb\x1b[2J' \"quoted\"\x7f");
    const std::string line = out.str();
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
    EXPECT_EQ(line.find('\x7f'), std::string::npos) << line;
  }
}

TEST_F(IsolationTest, NamesWithControlCharactersAreRefusedAndSecretsNeverLogged) {
  v1::CreateSessionRequest request;
  request.mutable_model()->set_bundled_name("pendulum");
  request.mutable_config()->set_name("arm\n\x1b[31mfake");
  v1::CreateSessionResponse response;
  const grpc::Status status = stub_->CreateSession(as("").get(), request, &response);
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("control character"), std::string::npos);

  test::CapturedLog log;
  ServerConfig config = isolationConfig();
  config.udp_authentication = v1::UDP_AUTHENTICATION_TOKEN;
  StartupSession arm;
  arm.model = "pendulum";
  arm.config.set_name("arm");
  config.startup_sessions.push_back(arm);
  startServer(config);
  server_->shutdown();
  std::string text;
  for (const std::string& line : log.lines()) text += line + "\n";
  EXPECT_NE(text.find("start-up session 1 'arm'"), std::string::npos) << text;
  EXPECT_FALSE(std::regex_search(text, std::regex("[0-9a-f]{32}"))) << text;
  EXPECT_EQ(text.find(kOperator), std::string::npos);
}

// 8. civetweb approved any site's CORS preflight (Access-Control-Allow-Origin: *).
TEST_F(IsolationTest, NoCrossOriginApprovalFromTheViewerOrTheMetrics) {
  const std::string preflight =
      "Origin: http://evil.example\r\nAccess-Control-Request-Method: POST\r\n"
      "Access-Control-Request-Headers: X-Hilsim-Viewer, X-Hilsim-Owner\r\n";
  const HttpAnswer viewer = http(server_->viewerPort(), "OPTIONS", "/api/sessions/1/pause",
                                 preflight);
  ASSERT_GT(viewer.status(), 0) << viewer.text;
  EXPECT_GE(viewer.status(), 400) << viewer.text;
  EXPECT_FALSE(hasHeader(viewer.text, "Access-Control-Allow-Origin")) << viewer.text;
  EXPECT_FALSE(hasHeader(viewer.text, "Access-Control-Allow-Methods")) << viewer.text;
  EXPECT_FALSE(hasHeader(viewer.text, "Access-Control-Allow-Headers")) << viewer.text;
  const HttpAnswer api =
      http(server_->viewerPort(), "GET", "/api/sessions", "Origin: http://evil.example\r\n");
  EXPECT_EQ(api.status(), 200) << api.text;
  EXPECT_FALSE(hasHeader(api.text, "Access-Control-Allow-Origin")) << api.text;
  const HttpAnswer metrics =
      http(server_->metricsPort(), "OPTIONS", "/metrics", preflight);
  EXPECT_FALSE(hasHeader(metrics.text, "Access-Control-Allow-Origin")) << metrics.text;
}

// 9. Connections that never sent the HTTP/2 preface were kept for over 30 s each.
TEST_F(IsolationTest, GrpcConnectionsWithoutAHandshakeAreClosed) {
  ServerConfig config = isolationConfig();
  config.handshake_timeout_s = 0.5;
  startServer(config);
  std::vector<int> silent;
  for (int k = 0; k < 20; ++k) {
    const int fd = connectFrom(server_->grpcPort());
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  // while they are open, calls are served as ever
  v1::ListModelsResponse models;
  const auto asked = Clock::now();
  EXPECT_TRUE(stub_->ListModels(as("").get(), {}, &models).ok());
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - asked).count(), 1.0);
  for (const int fd : silent) {
    EXPECT_TRUE(closedByPeerWithin(fd, 3000ms));
    ::close(fd);
  }
  EXPECT_TRUE(stub_->ListModels(as("").get(), {}, &models).ok());
}

}  // namespace
}  // namespace hilsim::server
