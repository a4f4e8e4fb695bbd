// A fixed pool of worker threads that runs the engine's parallel work (engine/parallel/executor.h):
// created once with a session or a command-line run, never per step. Each parallelFor hands the
// workers their share through one atomic epoch (futex wake only for a worker that has gone to
// sleep), runs the caller's share, and spins until the workers are done: no allocation, no lock,
// no system call while the workers are busy. docs/HDCA.md, "Threads".
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/parallel/executor.h"
#include "rt/clock.h"

namespace hilsim::rt {

class WorkerPool final : public Executor {
 public:
  static constexpr Nanoseconds kDefaultSpin = 200'000;  ///< see the constructor
  /// `threads` ≥ 1 runs items (the caller and threads − 1 workers). A worker with nothing to do
  /// spins for `spin` [ns], then sleeps on a futex until the next call. The default covers the
  /// caller's sequential work between two passes of one evaluation (the kinematics and the
  /// refinement's sweep of a 4096-body tree, about 100 µs here), so that a step hands over without
  /// a system call; a wake costs tens of microseconds.
  /// `cpus`: the CPUs the workers are pinned to, worker w (1 … threads − 1) to cpus[(w − 1) mod
  /// size] — the server's rt.workers.cpus, so that a parallel session's helpers and the shared
  /// workers draw on one configured set; empty: no pinning (the caller's thread is its own).
  explicit WorkerPool(int threads, Nanoseconds spin = kDefaultSpin, std::vector<int> cpus = {});
  ~WorkerPool() override;
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int concurrency() const override { return threads_; }
  void parallelFor(int count, Task task, void* context) override;
  /// parallelFor with one item per thread: its shares are then one item each, all running.
  void runOnEveryThread(Task task, void* context) override { parallelFor(threads_, task, context); }

  /// parallelFor calls so far, and how many of them found a worker asleep (a futex wake).
  std::uint64_t calls() const { return calls_.load(std::memory_order_relaxed); }
  std::uint64_t wakes() const { return wakes_.load(std::memory_order_relaxed); }

 private:
  void work(int worker);
  // worker w's share [begin, end) of count items among threads_
  void share(int worker, int count, int& begin, int& end) const;

  const int threads_;
  const Nanoseconds spin_;
  std::vector<std::thread> workers_;
  // the published call: written by the caller before epoch_ moves, read by workers after
  Task task_ = nullptr;
  void* context_ = nullptr;
  int count_ = 0;
  alignas(64) std::atomic<std::uint32_t> epoch_{0};
  alignas(64) std::atomic<int> remaining_{0};
  alignas(64) std::atomic<int> sleeping_{0};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> calls_{0}, wakes_{0};
};

}  // namespace hilsim::rt
