#include "rt/worker_set.h"

#include <cstdio>

#include "rt/session.h"

namespace hilsim::rt {

WorkerSet::WorkerSet(const WorkersConfig& config) : config_(config) {
  for (int w = 0; w < config_.count; ++w) {
    WorkerConfig worker;
    worker.name = "rt-worker-" + std::to_string(w);
    worker.index = w;
    worker.capacity = config_.capacity;
    worker.on_start = config_.on_start;
    worker.on_cycle = config_.on_cycle;
    worker.thread.lock_memory = config_.lock_memory && w == 0;  // mlockall is process-wide
    worker.thread.fifo_priority = config_.fifo_priority;
    if (!config_.cpus.empty()) worker.thread.cpu = config_.cpus[w % config_.cpus.size()];
    workers_.push_back(std::make_unique<Worker>(std::move(worker)));
  }
}

Worker* WorkerSet::place(SessionCore& core) {
  std::lock_guard lock(place_mutex_);
  const double need = core.load();
  Worker* best = nullptr;
  double best_load = 0.0;
  std::string loads;
  for (const std::unique_ptr<Worker>& worker : workers_) {
    const double load = worker->load();
    char line[64];
    std::snprintf(line, sizeof line, "%sworker %d at %.1f %%", loads.empty() ? "" : ", ",
                  worker->index(), 100.0 * load);
    loads += line;
    if (load + need > config_.max_utilisation) continue;
    if (best == nullptr || load < best_load) {
      best = worker.get();
      best_load = load;
    }
  }
  if (best != nullptr && best->assign(core)) return best;
  char why[160];
  std::snprintf(why, sizeof why,
                "no worker can take the session: it needs %.2f %% of a core (%.1f µs per %.0f µs "
                "cycle), the bound is %.0f %%: ",
                100.0 * need, 1e-3 * static_cast<double>(core.cycleCost()),
                1e-3 * static_cast<double>(core.period()), 100.0 * config_.max_utilisation);
  throw AdmissionError(why + (workers_.empty() ? std::string("no workers") : loads) +
                       (best != nullptr ? " (full)" : ""));
}

std::vector<WorkerStats> WorkerSet::stats() const {
  std::vector<WorkerStats> out;
  for (const std::unique_ptr<Worker>& worker : workers_) out.push_back(worker->stats());
  return out;
}

}  // namespace hilsim::rt
