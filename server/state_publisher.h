// StatePublisher: one thread that forwards the newest states of every session a shared worker
// runs to their sinks (UDP peer, Control and StreamStates streams, the viewer), woken once per
// round of the worker (rt::Worker::waitForRound) instead of once per session and cycle. A session
// with a thread of its own keeps a publisher thread of its own (ServerSession). docs/REALTIME.md,
// "Workers".
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rt/worker.h"
#include "rt/worker_set.h"

namespace hilsim::server {

class ServerSession;

class StatePublisher {
 public:
  explicit StatePublisher(rt::Worker& worker);  ///< starts the thread
  ~StatePublisher();
  StatePublisher(const StatePublisher&) = delete;
  StatePublisher& operator=(const StatePublisher&) = delete;

  void add(ServerSession* session);
  /// When it returns, no pass over `session` runs and none will.
  void remove(ServerSession* session);
  /// A control change or a new sink: a pass at once.
  void wake() { worker_.poke(); }

 private:
  void main();

  rt::Worker& worker_;
  std::mutex mutex_;  // the list, and a pass over it
  std::vector<ServerSession*> sessions_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// The shared workers of a server (rt.workers) and a StatePublisher for each.
struct SharedWorkers {
  explicit SharedWorkers(const rt::WorkersConfig& config);
  rt::WorkerSet workers;
  std::vector<std::unique_ptr<StatePublisher>> publishers;  // by worker index; go first
};

}  // namespace hilsim::server
