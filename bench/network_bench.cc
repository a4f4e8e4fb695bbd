// The network path of a control cycle, each against its bare baseline in the same run:
//
//   udp/bare_echo        a thread answers each datagram with a datagram of the size of the
//                        session's UdpState (recvfrom → sendto, nothing else): the kernel's
//                        loopback round trip and two thread wake-ups
//   udp/bare_echo_mac    the same with the MAC frame both ways (proto/udp_frame.h): the echo
//                        verifies each command frame and seals its reply, the controller seals
//                        each command and verifies each reply
//   udp/lockstep         hilsim-server in process, a LOCKSTEP iiwa14 session driven through
//                        client::UdpController: command → decode, checks, command channel → RT
//                        thread runs one control cycle (RK4, 1 ms) → publisher → UdpState back;
//                        the server's default scheme, MAC
//   udp/lockstep_token   the same session on a server with listen.udp.authentication: token
//   mac/tag/<bytes>      the MAC alone: BLAKE2b-128 of a 100-byte and a 1 kB payload, and the
//   mac/open/<bytes>     check of a frame around it (tag in constant time), per call [ns]
//   grpc/bare_echo       a gRPC callback service (bench/echo.proto) answering each Command on a
//                        bidirectional stream with a State of the same size, with a read
//                        pending while it writes (as the Control reaction)
//   grpc/control_lockstep  the real Control stream of the same LOCKSTEP session
//
// Each iteration is one round trip, timed on CLOCK_MONOTONIC; the counters are the median and
// 99th percentile over the iterations [µs]. After the run the program prints each pair's p50
// ratio (the target is ≤ 1.3), and what the MAC adds to the UDP round trip. Loopback, one host:
// docs/PERFORMANCE.md has the figures.
//
//   build/bench/hilsim_network_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/udp_controller.h"
#include "echo.grpc.pb.h"
#include "hilsim/v1/service.grpc.pb.h"
#include "hilsim/v1/udp.pb.h"
#include "proto/udp_frame.h"
#include "rt/clock.h"
#include "server/server.h"

namespace {

using hilsim::rt::monotonicNow;
using hilsim::rt::Nanoseconds;

constexpr int kNq = 7, kNv = 7;  // iiwa14

std::map<std::string, double>& medians() {
  static std::map<std::string, double> values;
  return values;
}

// Round-trip samples of one benchmark → p50/p99 counters, the p50 kept for the ratios.
class RoundTrips {
 public:
  void add(Nanoseconds ns) { samples_.push_back(ns); }
  void report(benchmark::State& state, const std::string& name) {
    if (samples_.empty()) return;
    std::sort(samples_.begin(), samples_.end());
    auto at = [&](double p) {
      return static_cast<double>(samples_[static_cast<std::size_t>(p * (samples_.size() - 1))]) *
             1e-3;
    };
    state.counters["p50_us"] = at(0.5);
    state.counters["p99_us"] = at(0.99);
    medians()[name] = at(0.5);
  }

 private:
  std::vector<Nanoseconds> samples_;
};

// A State of the model's size with every field set, as the server sends.
hilsim::v1::State typicalState() {
  hilsim::v1::State s;
  s.set_session_id(1);
  s.set_cycle(123456);
  s.set_time(123.456);
  s.set_state(hilsim::v1::SESSION_STATE_RUNNING);
  for (int i = 0; i < kNq; ++i) s.add_q(0.1 * i + 0.01);
  for (int i = 0; i < kNv; ++i) s.add_v(0.2 * i + 0.01);
  for (int i = 0; i < kNv; ++i) s.add_tau(1.5 * i + 0.01);
  s.set_command_sequence(1000);
  s.set_command_client_send_time_ns(monotonicNow());
  s.set_command_receive_time_ns(monotonicNow());
  s.set_publish_time_ns(monotonicNow());
  s.set_send_time_ns(monotonicNow());
  return s;
}

// ---------------------------------------------------------------------------------------------
// The server under test: one in-process hilsim-server with a LOCKSTEP iiwa14 session.

struct LockstepServer {
  std::unique_ptr<hilsim::server::Server> server;
  std::unique_ptr<hilsim::v1::Simulation::Stub> stub;
  std::uint64_t session_id = 0;
  hilsim::v1::CreateSessionResponse created;  // port and UDP credentials of the newest session

  explicit LockstepServer(hilsim::v1::UdpAuthentication authentication) {
    hilsim::server::ServerConfig config;
    config.udp_authentication = authentication;
    config.grpc_port = 0;
    config.udp_port_first = config.udp_port_last = 0;
    config.metrics_enabled = false;
    config.viewer_enabled = false;
    config.session_defaults.mutable_thread()->set_lock_memory(false);
    server = std::make_unique<hilsim::server::Server>(config);
    server->start();
    stub = hilsim::v1::Simulation::NewStub(
        grpc::CreateChannel(server->grpcTarget(), grpc::InsecureChannelCredentials()));
  }
  // A fresh session per benchmark: sequence numbers and streams start clean.
  void newSession() {
    hilsim::v1::CreateSessionRequest request;
    request.mutable_model()->set_bundled_name("iiwa14");
    request.mutable_config()->set_mode(hilsim::v1::SESSION_MODE_LOCKSTEP);
    grpc::ClientContext create;
    if (!stub->CreateSession(&create, request, &created).ok()) std::abort();
    session_id = created.session().session_id();
    hilsim::v1::SessionRequest start;
    start.set_session_id(session_id);
    hilsim::v1::SessionInfo info;
    grpc::ClientContext started;
    if (!stub->StartSession(&started, start, &info).ok()) std::abort();
  }
};

LockstepServer& lockstepServer() {
  static LockstepServer server(hilsim::v1::UDP_AUTHENTICATION_MAC);
  return server;
}

LockstepServer& tokenServer() {
  static LockstepServer server(hilsim::v1::UDP_AUTHENTICATION_TOKEN);
  return server;
}

/// The frame's test key (any key costs the same).
const hilsim::udp::Key& benchKey() {
  static const hilsim::udp::Key key = [] {
    if (!hilsim::udp::initialize()) std::abort();
    return hilsim::udp::Key::random();
  }();
  return key;
}

// ---------------------------------------------------------------------------------------------
// UDP

void udpBareEcho(benchmark::State& state, bool mac) {
  namespace udp = hilsim::udp;
  const int server_fd = ::socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(server_fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(server_fd, reinterpret_cast<sockaddr*>(&address), &length);

  hilsim::v1::UdpState reply_message;
  *reply_message.mutable_state() = typicalState();
  const std::string reply = reply_message.SerializeAsString();
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    std::uint8_t buffer[2048];
    std::array<std::uint8_t, 2048> out{};
    std::copy(reply.begin(), reply.end(), out.begin() + (mac ? udp::kHeaderBytes : 0));
    udp::ReplayWindow window;
    std::uint64_t counter = 0;
    sockaddr_in peer{};
    while (!stop.load(std::memory_order_relaxed)) {
      socklen_t peer_length = sizeof peer;
      const ssize_t n = ::recvfrom(server_fd, buffer, sizeof buffer, 0,
                                   reinterpret_cast<sockaddr*>(&peer), &peer_length);
      if (n <= 0) continue;
      std::size_t size = reply.size();
      if (mac) {  // what the server's screen and sender add: check, window, seal
        udp::Opened frame;
        if (udp::open(benchKey(), udp::Direction::kCommand,
                      {buffer, static_cast<std::size_t>(n)}, &frame) != udp::Check::kOk ||
            window.check(frame.counter) != udp::ReplayWindow::Verdict::kFresh) {
          continue;
        }
        window.accept(frame.counter);
        size = udp::seal(benchKey(), udp::Direction::kState, ++counter, out, reply.size());
      }
      ::sendto(server_fd, out.data(), size, 0, reinterpret_cast<sockaddr*>(&peer), peer_length);
    }
  });

  // The client side is the same class a controller uses, so both sides of the pair pay the
  // same client costs (serialize the command, parse the state; under MAC seal and check).
  const std::uint16_t port = ntohs(address.sin_port);
  std::unique_ptr<hilsim::client::UdpController> controller =
      mac ? std::make_unique<hilsim::client::UdpController>("127.0.0.1", port, 1, benchKey())
          : std::make_unique<hilsim::client::UdpController>(
                "127.0.0.1", port, 1, hilsim::client::UdpController::Token{});
  hilsim::client::UdpController& client = *controller;
  std::vector<double> tau(kNv, 0.5);
  hilsim::v1::State received;
  RoundTrips trips;
  for (auto _ : state) {
    const Nanoseconds start = monotonicNow();
    client.send(tau);
    if (!client.receive(received, std::chrono::seconds(1))) state.SkipWithError("lost");
    trips.add(monotonicNow() - start);
  }
  trips.report(state, mac ? "udp/bare_echo_mac" : "udp/bare_echo");
  stop = true;
  client.sync();  // wakes the echo thread
  echo.join();
  ::close(server_fd);
}
BENCHMARK_CAPTURE(udpBareEcho, plain, false)->Name("udp/bare_echo")->UseRealTime();
BENCHMARK_CAPTURE(udpBareEcho, mac, true)->Name("udp/bare_echo_mac")->UseRealTime();

void udpLockstep(benchmark::State& state, bool mac) {
  LockstepServer& server = mac ? lockstepServer() : tokenServer();
  server.newSession();
  hilsim::client::UdpController client("127.0.0.1", server.created);
  hilsim::v1::State received;
  client.sync();
  if (!client.receive(received, std::chrono::seconds(1))) state.SkipWithError("no sync answer");
  std::vector<double> tau(kNv, 0.0);
  RoundTrips trips;
  for (auto _ : state) {
    const Nanoseconds start = monotonicNow();
    const std::uint64_t sequence = client.send(tau, 1);
    do {
      if (!client.receive(received, std::chrono::seconds(1))) {
        state.SkipWithError("lost");
        break;
      }
    } while (received.command_sequence() != sequence);
    trips.add(monotonicNow() - start);
  }
  trips.report(state, mac ? "udp/lockstep" : "udp/lockstep_token");
}
BENCHMARK_CAPTURE(udpLockstep, mac, true)->Name("udp/lockstep")->UseRealTime();
BENCHMARK_CAPTURE(udpLockstep, token, false)->Name("udp/lockstep_token")->UseRealTime();

// The MAC alone, on a payload of `bytes` bytes: the tag (what seal() costs) and the check of a
// frame around it (what open() costs: the tag again, compared in constant time).
void macTag(benchmark::State& state) {
  namespace udp = hilsim::udp;
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::uint8_t> frame(bytes + udp::kFrameOverheadBytes, 0x5a);
  std::array<std::uint8_t, udp::kTagBytes> tag;
  for (auto _ : state) {
    udp::computeTag(benchKey(), {frame.data(), udp::kHeaderBytes + bytes}, tag);
    benchmark::DoNotOptimize(tag.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * (bytes + 12)));
}
BENCHMARK(macTag)->Name("mac/tag")->Arg(100)->Arg(1000);

void macOpen(benchmark::State& state) {
  namespace udp = hilsim::udp;
  const std::size_t bytes = static_cast<std::size_t>(state.range(0));
  std::vector<std::uint8_t> frame(bytes + udp::kFrameOverheadBytes, 0x5a);
  udp::seal(benchKey(), udp::Direction::kCommand, 1, frame, bytes);
  udp::Opened opened;
  for (auto _ : state) {
    if (udp::open(benchKey(), udp::Direction::kCommand, frame, &opened) != udp::Check::kOk) {
      state.SkipWithError("the frame does not verify");
      break;
    }
    benchmark::DoNotOptimize(opened.counter);
  }
}
BENCHMARK(macOpen)->Name("mac/open")->Arg(100)->Arg(1000);

// ---------------------------------------------------------------------------------------------
// gRPC

// The echo keeps a read pending while it writes, as the Control reaction does: the next command
// is taken in as soon as it arrives, and a reply that is ready while the previous one is still
// being written waits in `pending_` (at most one; reading pauses until it is out). A baseline
// that read only after each write had completed would add a callback hop the server does not
// pay, and flatter the ratio.
class EchoService final : public hilsim::bench::Echo::CallbackService {
  grpc::ServerBidiReactor<hilsim::v1::Command, hilsim::v1::State>* Chat(
      grpc::CallbackServerContext*) override {
    class Reactor final : public grpc::ServerBidiReactor<hilsim::v1::Command, hilsim::v1::State> {
     public:
      Reactor() : in_flight_(typicalState()), pending_(typicalState()) { StartRead(&command_); }
      void OnReadDone(bool ok) override {
        std::lock_guard lock(mutex_);
        if (!ok) {  // the client half-closed: finish once the last reply is out
          reads_done_ = true;
          if (!writing_) finishLocked(grpc::Status::OK);
          return;
        }
        if (!writing_) {
          in_flight_.set_command_sequence(command_.sequence());
          startWriteLocked();
        } else {
          pending_.set_command_sequence(command_.sequence());
          has_pending_ = true;
        }
        if (has_pending_) {
          read_paused_ = true;  // one reply queued: the next read waits for the write
        } else {
          StartRead(&command_);
        }
      }
      void OnWriteDone(bool ok) override {
        std::lock_guard lock(mutex_);
        writing_ = false;
        if (!ok) {
          finishLocked(grpc::Status::CANCELLED);
          return;
        }
        if (has_pending_) {
          in_flight_.Swap(&pending_);
          has_pending_ = false;
          startWriteLocked();
        } else if (reads_done_) {
          finishLocked(grpc::Status::OK);
          return;
        }
        if (read_paused_ && !reads_done_) {
          read_paused_ = false;
          StartRead(&command_);
        }
      }
      void OnDone() override { delete this; }

     private:
      void startWriteLocked() {
        in_flight_.set_send_time_ns(monotonicNow());
        writing_ = true;
        StartWrite(&in_flight_);
      }
      void finishLocked(const grpc::Status& status) {
        if (finished_) return;
        finished_ = true;
        Finish(status);
      }

      std::mutex mutex_;
      hilsim::v1::Command command_;
      hilsim::v1::State in_flight_;
      hilsim::v1::State pending_;
      bool writing_ = false;
      bool has_pending_ = false;
      bool read_paused_ = false;
      bool reads_done_ = false;
      bool finished_ = false;
    };
    return new Reactor;
  }
};

template <typename Stream>
void controlLoop(benchmark::State& state, Stream& stream, std::uint64_t session_id,
                 const std::string& name) {
  hilsim::v1::Command command;
  command.set_session_id(session_id);
  for (int i = 0; i < kNv; ++i) command.add_tau(0.0);
  command.set_steps(1);
  hilsim::v1::State received;
  std::uint64_t sequence = 1;  // 1 was the binding sync
  RoundTrips trips;
  for (auto _ : state) {
    const Nanoseconds start = monotonicNow();
    command.set_sequence(++sequence);
    command.set_client_send_time_ns(start);
    if (!stream.Write(command) || !stream.Read(&received)) {
      state.SkipWithError("stream ended");
      break;
    }
    trips.add(monotonicNow() - start);
  }
  trips.report(state, name);
}

void grpcBareEcho(benchmark::State& state) {
  EchoService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = hilsim::bench::Echo::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  {
    grpc::ClientContext context;
    auto stream = stub->Chat(&context);
    hilsim::v1::Command sync;
    sync.set_sequence(1);
    hilsim::v1::State received;
    stream->Write(sync);
    stream->Read(&received);
    controlLoop(state, *stream, 1, "grpc/bare_echo");
    stream->WritesDone();
    stream->Finish();
  }
  server->Shutdown();
}
BENCHMARK(grpcBareEcho)->Name("grpc/bare_echo")->UseRealTime();

void grpcControlLockstep(benchmark::State& state) {
  LockstepServer& server = lockstepServer();
  server.newSession();
  grpc::ClientContext context;
  auto stream = server.stub->Control(&context);
  hilsim::v1::Command sync;
  sync.set_session_id(server.session_id);
  sync.set_sequence(1);
  hilsim::v1::State received;
  if (!stream->Write(sync) || !stream->Read(&received)) state.SkipWithError("no sync answer");
  controlLoop(state, *stream, server.session_id, "grpc/control_lockstep");
  stream->WritesDone();
  stream->Finish();
}
BENCHMARK(grpcControlLockstep)->Name("grpc/control_lockstep")->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const auto& p50 = medians();
  auto ratio = [&](const char* what, const char* baseline, const char* label) {
    if (p50.count(what) && p50.count(baseline)) {
      std::printf("%s: p50 %.1f µs vs bare echo %.1f µs: ratio %.2f (target <= 1.3)\n", label,
                  p50.at(what), p50.at(baseline), p50.at(what) / p50.at(baseline));
    }
  };
  ratio("udp/lockstep", "udp/bare_echo_mac", "UDP control round trip (lockstep, MAC)");
  ratio("udp/lockstep_token", "udp/bare_echo", "UDP control round trip (lockstep, token)");
  auto added = [&](const char* with, const char* without, const char* label) {
    if (p50.count(with) && p50.count(without)) {
      std::printf("%s: p50 %.1f µs with the MAC vs %.1f µs without: %+.1f µs\n", label,
                  p50.at(with), p50.at(without), p50.at(with) - p50.at(without));
    }
  };
  added("udp/bare_echo_mac", "udp/bare_echo", "MAC on the bare UDP echo");
  added("udp/lockstep", "udp/lockstep_token", "MAC on the UDP control round trip (lockstep)");
  ratio("grpc/control_lockstep", "grpc/bare_echo", "gRPC Control round trip (lockstep)");
  // The in-process server stops with the process; its sessions end here.
  lockstepServer().server->shutdown();
  tokenServer().server->shutdown();
  return 0;
}
