// WorkerSet: the shared real-time workers of a server, one thread each on a configured set of
// CPUs, and the placement of sessions on them: the least-loaded worker by measured cycle cost,
// refused when it would pass the configured utilisation (docs/REALTIME.md, "Workers").
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rt/worker.h"

namespace hilsim::rt {

class SessionCore;

struct WorkersConfig {
  /// Shared workers; 0: none (every session on a thread of its own, as with dedicated_thread).
  int count = 0;
  /// CPUs to pin them to, worker i to cpus[i mod size]; empty: no pinning.
  std::vector<int> cpus;
  int fifo_priority = 0;     ///< SCHED_FIFO priority of the workers; 0: SCHED_OTHER
  bool lock_memory = true;   ///< mlockall from the first worker (as a session's ThreadSetup)
  /// The most of a core a worker's REALTIME sessions may take, by their measured cycle costs:
  /// placing a session that would pass it on every worker is refused.
  double max_utilisation = 0.8;
  int capacity = 256;  ///< sessions per worker
  std::function<void()> on_start;  ///< WorkerConfig::on_start of each worker (tests, tracing)
  /// WorkerConfig::on_cycle of each worker (tests, tracing)
  std::function<void(const SessionCore&, Nanoseconds, Nanoseconds, Nanoseconds)> on_cycle;
};

class WorkerSet {
 public:
  explicit WorkerSet(const WorkersConfig& config);
  WorkerSet(const WorkerSet&) = delete;
  WorkerSet& operator=(const WorkerSet&) = delete;

  /// Assigns `core` to the least-loaded worker, counting its cycle cost as measured so far
  /// (SessionCore::load). Throws AdmissionError (a SessionError) when every worker would pass
  /// max_utilisation or is full; the message gives the loads.
  Worker* place(SessionCore& core);

  int size() const { return static_cast<int>(workers_.size()); }
  Worker& worker(int index) { return *workers_[static_cast<std::size_t>(index)]; }
  const WorkersConfig& config() const { return config_; }
  std::vector<WorkerStats> stats() const;

 private:
  const WorkersConfig config_;
  std::mutex place_mutex_;  // one placement at a time: two sessions never take the same room
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace hilsim::rt
