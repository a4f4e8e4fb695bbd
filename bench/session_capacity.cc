// How many sessions one core runs: N sessions of one model at one rate, either on one shared
// worker pinned to a CPU or each on a dedicated thread (all pinned to the same CPU), for a while;
// prints the deadline misses over all their cycles, the measured cost of one cycle and the
// physical bound (period / cost). scripts/session-capacity searches the largest N under a miss
// budget (docs/REALTIME.md, "How many sessions per core").
//
// Usage: hilsim_session_capacity --model iiwa14 --sessions 250 --seconds 60 [--dedicated]
//          [--rate 1000] [--cpu 1] [--fifo 0] [--hold KP,KD] [--json]
// Without --hold the arms have no controller and come to rest on their joint stops, whose rows
// the constraint stage then solves every step; --hold gives every joint a position drive that
// holds where the arm starts, as a controller holding a pose would.

#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/io/model_loader.h"
#include "rt/session.h"
#include "rt/worker_set.h"

namespace {

using hilsim::rt::Nanoseconds;

// resident and locked memory of the process [KiB] (/proc/self/status)
void memory(long& rss_kib, long& locked_kib) {
  rss_kib = locked_kib = 0;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) rss_kib = std::stol(line.substr(6));
    if (line.rfind("VmLck:", 0) == 0) locked_kib = std::stol(line.substr(6));
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sessions per core: deadline misses of N sessions on one CPU"};
  std::string model_name = "iiwa14";
  int sessions = 100;
  double seconds = 10.0;
  double rate = 1000.0;
  bool dedicated = false;
  int cpu = 0;
  int fifo = 0;
  bool lock_memory = false;
  bool json = false;
  std::vector<double> hold;  // kp, kd of a position drive on every joint; empty: none
  app.add_option("--model", model_name, "bundled model");
  app.add_option("--sessions", sessions, "sessions")->check(CLI::Range(1, 4096));
  app.add_option("--seconds", seconds, "measured time [s]")->check(CLI::PositiveNumber);
  app.add_option("--rate", rate, "control rate [Hz]")->check(CLI::Range(100.0, 10000.0));
  app.add_flag("--dedicated", dedicated, "a thread per session instead of one shared worker");
  app.add_option("--cpu", cpu, "the CPU to run on (−1: any)");
  app.add_option("--fifo", fifo, "SCHED_FIFO priority (0: SCHED_OTHER)")->check(CLI::Range(0, 99));
  app.add_flag("--lock-memory", lock_memory, "mlockall, as a server does");
  app.add_flag("--json", json, "one JSON line instead of text");
  app.add_option("--hold", hold, "KP,KD: position drives holding the initial pose")
      ->delimiter(',')
      ->expected(2);
  CLI11_PARSE(app, argc, argv);

  const auto model = std::make_shared<const hilsim::Model>(hilsim::loadModel(model_name));
  hilsim::rt::WorkersConfig workers_config;
  workers_config.count = dedicated ? 0 : 1;
  if (cpu >= 0) workers_config.cpus = {cpu};
  workers_config.fifo_priority = fifo;
  workers_config.lock_memory = lock_memory;
  workers_config.max_utilisation = 1.0;
  workers_config.capacity = sessions;
  hilsim::rt::WorkerSet workers(workers_config);

  long rss_before, locked_before;
  memory(rss_before, locked_before);
  std::vector<std::unique_ptr<hilsim::rt::Session>> all;
  for (int k = 0; k < sessions; ++k) {
    hilsim::rt::SessionConfig c;
    c.model = model;
    c.control_rate = rate;
    c.name = "cap-" + std::to_string(k);
    c.thread.lock_memory = lock_memory && k == 0;
    c.thread.cpu = cpu;
    c.thread.fifo_priority = fifo;
    c.dedicated_thread = dedicated;
    if (!hold.empty())
      c.drives = {{"*", hilsim::rt::CommandInterface::kPosition, hold[0], hold[1], 0.0}};
    all.push_back(std::make_unique<hilsim::rt::Session>(c, nullptr, dedicated ? nullptr : &workers));
  }
  const Nanoseconds cost = all.front()->measureCycleCost(200);
  for (auto& s : all) s->start();
  // a second of warm-up (page faults, caches, the first stats), then the measured interval
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::vector<std::uint64_t> cycles0(all.size()), misses0(all.size()), skipped0(all.size());
  for (std::size_t k = 0; k < all.size(); ++k) {
    cycles0[k] = all[k]->monitor().cycles();
    misses0[k] = all[k]->monitor().deadlineMisses();
    skipped0[k] = all[k]->monitor().skippedCycles();
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  std::uint64_t cycles = 0, misses = 0, skipped = 0;
  Nanoseconds mean_cost = 0;
  for (std::size_t k = 0; k < all.size(); ++k) {
    cycles += all[k]->monitor().cycles() - cycles0[k];
    misses += all[k]->monitor().deadlineMisses() - misses0[k];
    skipped += all[k]->monitor().skippedCycles() - skipped0[k];
    mean_cost += all[k]->cycleCost();
  }
  mean_cost /= static_cast<Nanoseconds>(all.size());
  // where a cycle's time goes: the engine's substeps, and the rest (intake, watchdog, checks,
  // publishing), medians averaged over the sessions
  double step_p50 = 0.0, overhead_p50 = 0.0;
  for (auto& s : all) {
    step_p50 += static_cast<double>(s->stepTime().snapshot().summary().p50);
    overhead_p50 += static_cast<double>(s->cycleOverhead().snapshot().summary().p50);
  }
  step_p50 /= static_cast<double>(all.size());
  overhead_p50 /= static_cast<double>(all.size());
  long rss, locked;
  memory(rss, locked);
  const double utilisation = dedicated ? 0.0 : workers.stats()[0].utilisation;
  for (auto& s : all) s->stop();

  const double period_ns = 1e9 / rate;
  // misses over the cycles that were due: run ones and skipped ones
  const double due = static_cast<double>(cycles + skipped);
  const double miss_fraction = due > 0 ? static_cast<double>(misses + skipped) / due : 1.0;
  const double bound = period_ns / static_cast<double>(std::max<Nanoseconds>(mean_cost, 1));
  const double rss_per_session = static_cast<double>(rss - rss_before) / sessions;
  if (json) {
    std::printf(
        "{\"model\":\"%s\",\"rate\":%.0f,\"sessions\":%d,\"dedicated\":%s,\"seconds\":%.1f,"
        "\"cycles\":%llu,\"misses\":%llu,\"skipped\":%llu,\"miss_fraction\":%.6g,"
        "\"cycle_cost_ns\":%lld,\"cycle_cost_alone_ns\":%lld,\"bound\":%.1f,\"utilisation\":%.4f,"
        "\"rss_kib\":%ld,\"locked_kib\":%ld,\"rss_per_session_kib\":%.1f,"
        "\"step_p50_ns\":%.0f,\"overhead_p50_ns\":%.0f}\n",
        model_name.c_str(), rate, sessions, dedicated ? "true" : "false", seconds,
        static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(misses),
        static_cast<unsigned long long>(skipped), miss_fraction, static_cast<long long>(mean_cost),
        static_cast<long long>(cost), bound, utilisation, rss, locked, rss_per_session, step_p50,
        overhead_p50);
  } else {
    std::printf("%d %s sessions at %.0f Hz on %s, %.0f s: %llu cycles, %llu misses, %llu skipped "
                "(%.4f %% of due cycles); a cycle costs %.2f µs in the run (%.2f µs alone), bound "
                "%.0f sessions; worker utilisation %.1f %%; RSS %ld MiB (%.0f KiB per session), "
                "locked %ld MiB; engine p50 %.2f µs, rest of the cycle p50 %.2f µs\n",
                sessions, model_name.c_str(), rate,
                dedicated ? "dedicated threads" : "one shared worker", seconds,
                static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(misses),
                static_cast<unsigned long long>(skipped), 100.0 * miss_fraction,
                1e-3 * static_cast<double>(mean_cost), 1e-3 * static_cast<double>(cost), bound,
                100.0 * utilisation, rss / 1024, rss_per_session, locked / 1024, 1e-3 * step_p50,
                1e-3 * overhead_p50);
  }
  return 0;
}
