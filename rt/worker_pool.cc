#include "rt/worker_pool.h"

#include <cassert>

#include "rt/futex.h"
#include "rt/realtime_setup.h"

namespace hilsim::rt {

WorkerPool::WorkerPool(int threads, Nanoseconds spin, std::vector<int> cpus)
    : threads_(threads < 1 ? 1 : threads), spin_(spin) {
  workers_.reserve(threads_ - 1);
  for (int w = 1; w < threads_; ++w) {
    const int cpu = cpus.empty() ? -1 : cpus[static_cast<std::size_t>(w - 1) % cpus.size()];
    workers_.emplace_back([this, w, cpu] {
      // a refused pinning (a CPU outside the process's set) leaves the helper unpinned: slower,
      // never wrong; the session's own thread reports its set-up steps
      if (cpu >= 0) (void)setCpuAffinity(cpu);
      work(w);
    });
  }
}

WorkerPool::~WorkerPool() {
  stop_.store(true, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);
  futexWakeAll(epoch_);
  for (std::thread& t : workers_) t.join();
}

void WorkerPool::share(int worker, int count, int& begin, int& end) const {
  begin = static_cast<int>(static_cast<long long>(count) * worker / threads_);
  end = static_cast<int>(static_cast<long long>(count) * (worker + 1) / threads_);
}

void WorkerPool::parallelFor(int count, Task task, void* context) {
  calls_.fetch_add(1, std::memory_order_relaxed);
  if (threads_ == 1 || count <= 1) {
    if (count > 0) task(context, 0, count);
    return;
  }
  task_ = task;
  context_ = context;
  count_ = count;
  remaining_.store(threads_ - 1, std::memory_order_relaxed);
  epoch_.fetch_add(1, std::memory_order_release);  // publishes the call
  if (sleeping_.load(std::memory_order_seq_cst) > 0) {
    wakes_.fetch_add(1, std::memory_order_relaxed);
    futexWakeAll(epoch_);
  }
  int begin = 0, end = 0;
  share(0, count, begin, end);
  if (begin < end) task(context, begin, end);
  while (remaining_.load(std::memory_order_acquire) != 0) cpuRelax();
}

void WorkerPool::work(int worker) {
  // epoch 0 is the pool's construction: a call published before this thread first looks at the
  // epoch must still count as new
  std::uint32_t seen = 0;
  for (;;) {
    // spin a while for the next call, then sleep until one comes
    const Nanoseconds until = monotonicNow() + spin_;
    std::uint32_t current = epoch_.load(std::memory_order_acquire);
    while (current == seen && monotonicNow() < until) {
      cpuRelax();
      current = epoch_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      sleeping_.fetch_add(1, std::memory_order_seq_cst);
      // re-checked after announcing the sleep: a call published before it is seen here, one
      // published after it finds sleeping_ > 0 and wakes
      if (epoch_.load(std::memory_order_seq_cst) == seen) futexWait(epoch_, seen, 100'000'000);
      sleeping_.fetch_sub(1, std::memory_order_seq_cst);
      current = epoch_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_relaxed)) return;
    int begin = 0, end = 0;
    share(worker, count_, begin, end);
    if (begin < end) task_(context_, begin, end);
    remaining_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace hilsim::rt
