// delta_pick_place: a controller for a parallel robot with closed loops, in one file.
//
// It creates a REALTIME session on the bundled delta robot (config/models/delta.yaml: three
// motors, a platform held by three rod parallelograms) at 1 kHz, starts it, and moves the
// platform between two bins over UDP: every cycle the server sends the State, and the controller
// answers with the three motor torques of delta_law.h (closed-form inverse kinematics of the
// path, a PD on the motors, gravity compensation through the loops). It prints the platform's
// tracking error once a second, then closes the session and prints the server's statistics.
//
//   delta_pick_place [--server HOST:PORT] [--token TOKEN] [--duration SECONDS]
//
// Defaults: HILSIM_SERVER or 127.0.0.1:50051, HILSIM_ACCESS_TOKEN, 6 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "client/interrupt.h"
#include "client/latency_report.h"
#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "engine/io/model_loader.h"
#include "examples/example_options.h"
#include "examples/delta_pick_place/delta_law.h"
#include "examples/pd_controller/pd_law.h"

namespace {

using namespace std::chrono_literals;
using hilsim::client::InterruptGuard;
using hilsim::client::SimulationClient;
using hilsim::client::UdpController;
using hilsim::examples::asSpan;
namespace v1 = hilsim::v1;

/// The platform centre: coordinates 3–5 of q (its free joint's position) [m].
Eigen::Vector3d platform(const v1::State& state) {
  return {state.q(3), state.q(4), state.q(5)};
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const hilsim::examples::ExampleOptions options =
        hilsim::examples::parseExampleOptions(argc, argv, "delta_pick_place", 6.0);
    if (options.help) {
      std::printf("%s\n", hilsim::examples::exampleUsage("delta_pick_place").c_str());
      return 0;
    }
    // Ctrl-C or kill: the loop stops, the session is closed and the run reported
    const hilsim::client::InterruptGuard interrupts;
    hilsim::client::ClientOptions client_options;
    client_options.access_token = options.token;
    SimulationClient client(options.server, client_options);

    v1::SessionConfig config;
    config.set_mode(v1::SESSION_MODE_REALTIME);
    config.set_control_rate_hz(1000);
    config.set_idle_timeout_s(10.0);  // the server closes it if this program dies unannounced
    config.set_name("delta-example");
    const v1::CreateSessionResponse created = client.createSession("delta", config);
    const std::uint64_t id = created.session().session_id();
    hilsim::client::SessionCloser closer(client, id);  // on every way out, errors included
    client.startSession(id);
    std::printf("session %llu: delta, realtime 1 kHz, UDP port %u\n",
                static_cast<unsigned long long>(id), created.session().udp_port());

    const auto model = std::make_shared<const hilsim::Model>(hilsim::loadModel("delta"));
    hilsim::examples::DeltaLaw law(model, /*bandwidth_hz=*/10.0);

    // the session's port and credentials (its key, or a token server's token) from `created`
    UdpController udp(hilsim::examples::hostOf(options.server), created);
    v1::State state;
    udp.sync();
    while (!udp.receive(state, 100ms) && !InterruptGuard::requested()) udp.sync();
    if (InterruptGuard::requested()) {  // before any State: nothing measured, nothing to show
      closer.close();
      std::printf("interrupted by %s before the first State\n", InterruptGuard::signalName());
      return InterruptGuard::exitCode();
    }

    const auto cycles = static_cast<std::uint64_t>(options.duration * 1000.0);
    const std::uint64_t first_cycle = state.cycle();
    std::uint64_t last_print = first_cycle;
    double worst = 0.0;
    int silent = 0;
    while (state.cycle() < first_cycle + cycles && !InterruptGuard::requested()) {
      if (state.state() != v1::SESSION_STATE_RUNNING)
        throw std::runtime_error("the session is " + v1::SessionState_Name(state.state()));
      const double t = state.time() + 1e-3;  // the torques act during the next cycle
      const auto [target, rate] = hilsim::examples::deltaMotorTargets(
          [](double s) { return hilsim::examples::pickAndPlacePath(s); }, t);
      udp.send(asSpan(law.torques(target, rate, asSpan(state.q()), asSpan(state.v()))));
      if (!udp.receive(state, 20ms)) {
        if (++silent == 50) throw std::runtime_error("the server stopped answering");
        udp.sync();
        continue;
      }
      silent = 0;
      const double error = (platform(state) - hilsim::examples::pickAndPlacePath(state.time())).norm();
      if (state.time() > 1.0) worst = std::max(worst, error);  // after the first approach
      if (state.cycle() >= last_print + 1000) {
        last_print = state.cycle();
        const Eigen::Vector3d p = platform(state);
        std::printf("t = %5.2f s   platform (%+.4f, %+.4f, %+.4f) m   tracking error %.2f mm\n",
                    state.time(), p.x(), p.y(), p.z(), 1e3 * error);
      }
    }

    const v1::CloseSessionResponse closed = closer.close();
    if (InterruptGuard::requested()) {
      std::printf("\ninterrupted by %s at t = %.3f s\n", InterruptGuard::signalName(), state.time());
    }
    std::printf("\nworst tracking error after 1 s: %.2f mm\n", 1e3 * worst);
    std::cout << "server statistics:\n";
    hilsim::client::writeServerStatsSummary(closed.final_stats(), std::cout);
    return InterruptGuard::exitCode();  // 0, or 130 / 143 after Ctrl-C / kill
  } catch (const std::exception& e) {
    std::fprintf(stderr, "delta_pick_place: %s\n", e.what());
    return 1;
  }
}
