// quadruped_stance, humanoid_stance: a bundled legged robot standing on the ground, held up over
// UDP — the Solo 12 `quadruped` or the `humanoid` (one source, the model chosen at build time:
// HILSIM_STANCE_MODEL).
//
// It creates a REALTIME session on the model at 1 kHz (contact spheres on its feet, a standing
// start: docs/CONTACT.md), starts it, and answers every State with the torques of a PD stance law
// on every joint (stance_law.h; nothing on the floating base, which the feet carry). Halfway
// through it pushes the base (the quadruped 10 N sideways, the humanoid 600 N forward, for 0.1 s:
// the commands' base wrench) and the legs take it. It prints the base's height, its offset from
// where it stood, its tilt and the feet's load once a second, then closes the session and prints
// the server's statistics of the run.
//
//   quadruped_stance [--server HOST:PORT] [--token TOKEN] [--duration SECONDS]
//   humanoid_stance  [the same]
//
// Defaults: HILSIM_SERVER or 127.0.0.1:50051, HILSIM_ACCESS_TOKEN, 10 s.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/interrupt.h"
#include "client/latency_report.h"
#include "client/simulation_client.h"
#include "client/udp_controller.h"
#include "engine/io/model_loader.h"
#include "examples/example_options.h"
#include "examples/quadruped_stance/stance_law.h"

namespace {

using namespace std::chrono_literals;
using hilsim::client::InterruptGuard;
namespace v1 = hilsim::v1;

std::span<const double> view(const google::protobuf::RepeatedField<double>& values) {
  return {values.data(), static_cast<std::size_t>(values.size())};
}

// The base's tilt from upright [rad]: the angle of its z axis from the world's, from the free
// joint's quaternion (w x y z at q[3..6])
double tilt(const v1::State& state) {
  const double x = state.q(4), y = state.q(5);
  return std::acos(std::clamp(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string model_name = HILSIM_STANCE_MODEL;
    const std::string program = model_name + "_stance";
    const hilsim::examples::StanceSetting& setting = *hilsim::examples::stanceSetting(model_name);
    const hilsim::examples::ExampleOptions options =
        hilsim::examples::parseExampleOptions(argc, argv, program, 10.0);
    if (options.help) {
      std::printf("%s\n", hilsim::examples::exampleUsage(program).c_str());
      return 0;
    }
    const InterruptGuard interrupts;
    hilsim::client::ClientOptions client_options;
    client_options.access_token = options.token;
    hilsim::client::SimulationClient client(options.server, client_options);

    // 1. A REALTIME session on the robot at 1 kHz; the watchdog holds the last torques if a
    //    command is late.
    v1::SessionConfig config;
    config.set_mode(v1::SESSION_MODE_REALTIME);
    config.set_control_rate_hz(1000);
    config.set_idle_timeout_s(10.0);
    config.set_name(model_name + "-stance-example");
    const v1::CreateSessionResponse created = client.createSession(model_name, config);
    const std::uint64_t id = created.session().session_id();
    hilsim::client::SessionCloser closer(client, id);
    client.startSession(id);
    std::printf("session %llu: %s, realtime 1 kHz, UDP port %u\n",
                static_cast<unsigned long long>(id), model_name.c_str(),
                created.session().udp_port());

    // 2. The stance law on the same model: its standing posture is the model's start.
    const hilsim::Model model = hilsim::loadModel(model_name);
    const hilsim::examples::StanceLaw law(model, setting.stiffness, setting.damping);
    std::vector<double> tau(static_cast<std::size_t>(model.nv));

    // 3. UDP: a sync makes this socket the session's peer; then one State per cycle arrives.
    hilsim::client::UdpController udp(hilsim::examples::hostOf(options.server), created);
    v1::State state;
    udp.sync();
    while (!udp.receive(state, 100ms) && !InterruptGuard::requested()) udp.sync();
    if (InterruptGuard::requested()) {
      closer.close();
      std::printf("interrupted by %s before the first State\n", InterruptGuard::signalName());
      return InterruptGuard::exitCode();
    }

    // 4. Answer every State with torques until the duration has passed.
    const auto cycles = static_cast<std::uint64_t>(options.duration * 1000.0);
    const std::uint64_t first_cycle = state.cycle();
    const std::uint64_t push_start = first_cycle + cycles / 2, push_end = push_start + 100;
    const std::array<double, 6> push = {setting.push[0], setting.push[1], setting.push[2],
                                        0.0, 0.0, 0.0};  // N, then N·m, in W
    bool pushing = false;
    const double x_start = state.q(0), y_start = state.q(1);
    std::uint64_t last_print = first_cycle;
    int silent = 0;
    while (state.cycle() < first_cycle + cycles && !InterruptGuard::requested()) {
      if (state.state() != v1::SESSION_STATE_RUNNING)
        throw std::runtime_error("the session is " + v1::SessionState_Name(state.state()));
      const bool push_now = state.cycle() >= push_start && state.cycle() < push_end;
      if (push_now != pushing) {
        udp.setBaseWrench(push_now ? std::span<const double>(push) : std::span<const double>());
        pushing = push_now;
        if (push_now) {
          std::printf("t = %5.2f s   push: %.0f N %s for 0.1 s\n", state.time(),
                      std::hypot(push[0], push[1], push[2]), std::string(setting.push_direction).c_str());
        }
      }
      law.torques(view(state.q()), view(state.v()), tau);
      udp.send(tau);  // applied at the next cycle
      if (!udp.receive(state, 20ms)) {
        if (++silent == 50) throw std::runtime_error("the server stopped answering");
        udp.sync();
        continue;
      }
      silent = 0;
      if (state.cycle() >= last_print + 1000) {
        last_print = state.cycle();
        double load = 0.0;  // the feet's normal forces [N]
        for (int foot = 0; foot < state.contact_depth_size(); ++foot)
          load += state.contact_force(3 * foot + 2);
        std::printf("t = %5.2f s   base height %.4f m, moved %.4f m, tilt %.3f°, feet carry "
                    "%.2f N\n",
                    state.time(), state.q(2), std::hypot(state.q(0) - x_start, state.q(1) - y_start),
                    tilt(state) * 180.0 / std::numbers::pi, load);
      }
    }

    // 5. Close the session; its final statistics tell how the run went on the server.
    const v1::CloseSessionResponse closed = closer.close();
    if (InterruptGuard::requested())
      std::printf("\ninterrupted by %s at t = %.3f s\n", InterruptGuard::signalName(), state.time());
    std::printf("\nbase height %.4f m at t = %.2f s; controller sent %llu datagrams, %llu timeouts\n",
                state.q(2), state.time(), static_cast<unsigned long long>(udp.stats().sent),
                static_cast<unsigned long long>(udp.stats().timeouts));
    std::cout << "server statistics:\n";
    hilsim::client::writeServerStatsSummary(closed.final_stats(), std::cout);
    return InterruptGuard::exitCode();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quadruped_stance: %s\n", e.what());
    return 1;
  }
}
