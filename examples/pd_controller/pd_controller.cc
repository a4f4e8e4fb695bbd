// pd_controller: a complete controller for hilsim-server in one file.
//
// It creates a REALTIME session on the bundled 7-DoF arm iiwa14 at 1 kHz, starts it, and holds
// the arm at a target posture over UDP: every cycle the server sends the arm's State, and the
// controller answers with joint torques from a PD law plus gravity compensation (pd_law.h). It
// prints the largest joint error once a second, then closes the session and prints the server's
// statistics of the run.
//
//   pd_controller [--server HOST:PORT] [--token TOKEN] [--duration SECONDS]
//
// Defaults: HILSIM_SERVER or 127.0.0.1:50051, HILSIM_ACCESS_TOKEN, 5 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>

#include "client/interrupt.h"
#include "client/latency_report.h"
#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "engine/io/model_loader.h"
#include "examples/example_options.h"
#include "examples/pd_controller/pd_law.h"

namespace {

using namespace std::chrono_literals;
using hilsim::client::InterruptGuard;
using hilsim::client::SimulationClient;
using hilsim::client::UdpController;
using hilsim::examples::asSpan;
namespace v1 = hilsim::v1;

}  // namespace

int main(int argc, char** argv) {
  try {
    const hilsim::examples::ExampleOptions options =
        hilsim::examples::parseExampleOptions(argc, argv, "pd_controller", 5.0);
    if (options.help) {
      std::printf("%s\n", hilsim::examples::exampleUsage("pd_controller").c_str());
      return 0;
    }
    // Ctrl-C or kill: the loop stops, the session is closed and the run reported
    const hilsim::client::InterruptGuard interrupts;
    hilsim::client::ClientOptions client_options;
    client_options.access_token = options.token;
    SimulationClient client(options.server, client_options);

    // 1. A REALTIME session on the arm at 1 kHz; the watchdog holds the last torques if a command
    //    is late.
    v1::SessionConfig config;
    config.set_mode(v1::SESSION_MODE_REALTIME);
    config.set_control_rate_hz(1000);
    config.set_idle_timeout_s(10.0);  // the server closes it if this program dies unannounced
    config.set_name("pd-example");
    const v1::CreateSessionResponse created = client.createSession("iiwa14", config);
    const std::uint64_t id = created.session().session_id();
    hilsim::client::SessionCloser closer(client, id);  // on every way out, errors included
    client.startSession(id);
    std::printf("session %llu: iiwa14, realtime 1 kHz, UDP port %u\n",
                static_cast<unsigned long long>(id), created.session().udp_port());

    // 2. The control law, on the same model the server simulates.
    const auto model = std::make_shared<const hilsim::Model>(hilsim::loadModel("iiwa14"));
    Eigen::VectorXd target(7);
    target << 0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0;  // [rad] elbow bent, flange pointing down
    hilsim::examples::PdGravityLaw law(model, target, /*bandwidth_hz=*/10.0);

    // 3. UDP: a sync makes this socket the session's peer; then one State per cycle arrives.
    // The port and credentials (the session's key, or a token server's token) from `created`.
    UdpController udp(hilsim::examples::hostOf(options.server), created);
    v1::State state;
    udp.sync();
    while (!udp.receive(state, 100ms) && !InterruptGuard::requested()) udp.sync();  // ask again until the server answers
    if (InterruptGuard::requested()) {  // before any State: nothing measured, nothing to show
      closer.close();
      std::printf("interrupted by %s before the first State\n", InterruptGuard::signalName());
      return InterruptGuard::exitCode();
    }

    // 4. Answer every State with torques until the duration has passed.
    const auto cycles = static_cast<std::uint64_t>(options.duration * 1000.0);
    std::printf("t = %5.2f s   max joint error %.5f rad (start)\n", state.time(),
                law.maxError(asSpan(state.q())));
    const std::uint64_t first_cycle = state.cycle();
    std::uint64_t last_print = first_cycle;
    int silent = 0;
    while (state.cycle() < first_cycle + cycles && !InterruptGuard::requested()) {
      if (state.state() != v1::SESSION_STATE_RUNNING) {
        throw std::runtime_error("the session is " + v1::SessionState_Name(state.state()));
      }
      const Eigen::VectorXd& tau = law.torques(asSpan(state.q()), asSpan(state.v()));
      udp.send(asSpan(tau));  // applied at the next cycle
      if (!udp.receive(state, 20ms)) {  // a lost State: ask for the newest one
        if (++silent == 50) throw std::runtime_error("the server stopped answering");
        udp.sync();
        continue;
      }
      silent = 0;
      if (state.cycle() >= last_print + 1000) {
        last_print = state.cycle();
        const double error = law.maxError(asSpan(state.q()));
        std::printf("t = %5.2f s   max joint error %.5f rad (%.3f°)\n", state.time(), error,
                    error * 180.0 / std::numbers::pi);
      }
    }

    // 5. Close the session; its final statistics tell how the run went on the server.
    const v1::CloseSessionResponse closed = closer.close();
    if (InterruptGuard::requested()) {
      std::printf("\ninterrupted by %s at t = %.3f s\n", InterruptGuard::signalName(), state.time());
    }
    std::printf("\nfinal joint error %.2e rad; controller sent %llu datagrams, %llu timeouts\n",
                law.maxError(asSpan(state.q())), static_cast<unsigned long long>(udp.stats().sent),
                static_cast<unsigned long long>(udp.stats().timeouts));
    std::cout << "server statistics:\n";
    hilsim::client::writeServerStatsSummary(closed.final_stats(), std::cout);
    return InterruptGuard::exitCode();  // 0, or 130 / 143 after Ctrl-C / kill
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pd_controller: %s\n", e.what());
    return 1;
  }
}
