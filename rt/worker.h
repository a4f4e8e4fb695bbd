// Worker: one real-time thread that runs the control cycles of the sessions attached to it
// (docs/REALTIME.md, "Workers"). It sleeps to the earliest release on one absolute-deadline
// timer, runs every REALTIME cycle that is due in earliest-deadline-first order, then the
// LOCKSTEP cycles that have a command and the FREE ones, and sleeps again. A dedicated session is
// a worker with one session; a shared worker runs hundreds.
//
// Isolation: cycles are not pre-empted, and a session whose last cycle missed its deadline waits
// for the due cycles of the sessions in time and runs at most one cycle per round (its catch-up
// cycles wait for the rounds after), so a slow, faulting or diverging session delays the others
// by at most one of its own cycles; its misses, skips and faults are its own (its overrun
// policy, its watchdog).
//
// Threads: attach, detach, assign, unassign and stats from any non-RT thread (a mutex among
// them, never taken by the worker); the worker's loop takes no lock and allocates nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rt/clock.h"
#include "rt/realtime_setup.h"

namespace hilsim::rt {

class SessionCore;

struct WorkerConfig {
  std::string name = "worker";  ///< the thread's name (the kernel keeps 15 characters)
  int index = 0;                ///< its number in a WorkerSet (statistics)
  ThreadSetup thread;           ///< memory lock, SCHED_FIFO priority, CPU
  int capacity = 256;           ///< sessions it can hold (slots allocated up front)
  /// Releases of a session on the multiples of its period (CLOCK_MONOTONIC), so that sessions of
  /// one rate, or of rates that divide each other, wake the worker once per period together.
  /// False: the first cycle one period after the start (a dedicated thread).
  bool align_releases = true;
  std::function<void()> on_start;  ///< run on the thread after its set-up (tests, tracing)
  /// Run on the thread before each REALTIME cycle with the session, the cycle's release and
  /// deadline, and when the worker chose it (every cycle due then was on its heap): tests,
  /// tracing; must not allocate or block.
  std::function<void(const SessionCore&, Nanoseconds release, Nanoseconds deadline,
                     Nanoseconds chosen)>
      on_cycle;
};

struct WorkerStats {
  int index = 0;
  int cpu = -1;                   ///< the CPU it is pinned to (−1: any)
  int sessions = 0;               ///< assigned (placed on it)
  int attached = 0;               ///< started and not stopped
  std::uint64_t cycles = 0;       ///< control cycles run
  std::uint64_t sleeps = 0;       ///< times it slept on its timer
  Nanoseconds busy = 0;           ///< time in cycles since it started [ns]
  double utilisation = 0.0;       ///< busy share of the last full second
  double load = 0.0;              ///< Σ of its REALTIME sessions' load (cycle cost / period)
};

class Worker {
 public:
  /// Starts the thread (its set-up runs on it at once).
  explicit Worker(WorkerConfig config);
  ~Worker();  ///< every session must have been detached
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Lets the worker run `core`'s cycles (while it is running). False when every slot is taken.
  bool attach(SessionCore& core);
  /// When it returns, the worker runs no cycle of `core` and will not touch it again.
  void detach(SessionCore& core);
  /// A session has work or changed state: the worker looks at once (a futex wake if it sleeps).
  void wake() noexcept;

  /// Moves after every round of the worker that ran a cycle: a thread that forwards the states of
  /// the worker's sessions (the server's StatePublisher) waits on it, one wake per round instead
  /// of one per session and cycle.
  std::uint32_t rounds() const { return rounds_.load(std::memory_order_acquire); }
  /// Blocks until rounds() ≠ `seen`, poke(), or `timeout` [ns] (non-RT threads).
  void waitForRound(std::uint32_t seen, Nanoseconds timeout);
  /// Ends the waits of waitForRound at once (a control change to show).
  void poke() noexcept;

  /// The sessions placed on the worker, for its load; false when it holds `capacity` already.
  bool assign(SessionCore& core);
  void unassign(SessionCore& core);
  /// Σ of the assigned sessions' load (SessionCore::load).
  double load() const;

  int index() const { return config_.index; }
  const WorkerConfig& config() const { return config_; }
  WorkerStats stats() const;
  /// The thread's set-up steps (empty until they have run).
  std::vector<SetupStep> setupReport() const;

 private:
  struct Entry {
    SessionCore* core = nullptr;
    bool queued = false;          // on the heap of due cycles
    bool late = false;            // its last cycle ended after its deadline
    std::uint64_t ran_round = 0;  // the round its last cycle ran in
  };
  void main();
  void refreshEntries();
  // The heap's order: sessions whose last cycle was in time first, then by earliest deadline,
  // ties by slot. A late session (its last cycle missed its deadline) has the earliest deadlines
  // of all while it catches up: ordered by them alone, it would run again before a neighbour that
  // came due during its overrun, and delay that neighbour by two of its cycles or more.
  bool later(int a, int b) const;
  // Puts every REALTIME cycle due at `now` on the heap (not one already there, nor a late
  // session's that ran in this round) and returns the earliest release of the others.
  Nanoseconds queueDue(Nanoseconds now);
  Nanoseconds firstRelease(const SessionCore& core, Nanoseconds now) const;

  const WorkerConfig config_;
  std::vector<std::atomic<SessionCore*>> slots_;  // attached cores (null: free)
  mutable std::mutex mutex_;                      // attach, detach, assign, unassign
  std::vector<SessionCore*> assigned_;
  std::atomic<std::uint32_t> membership_{0};    // moves on every attach and detach
  std::atomic<std::uint32_t> acknowledged_{0};  // the membership the worker has taken in
  std::atomic<std::uint32_t> wake_word_{0};     // futex the worker sleeps on
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<std::uint32_t> rounds_{0};  // futex of waitForRound
  std::atomic<int> round_waiters_{0};

  // the worker thread's own, allocated up front
  std::vector<Entry> entries_;
  std::vector<int> heap_;    // due REALTIME entries, earliest deadline on top
  struct Later {  // later() as the heap algorithms' comparison, without an indirect call
    const Worker* worker;
    bool operator()(int a, int b) const { return worker->later(a, b); }
  };
  const Later later_{this};
  std::vector<int> others_;  // running LOCKSTEP and FREE entries
  std::uint64_t round_ = 0;

  std::atomic<std::uint64_t> cycles_{0}, sleeps_{0};
  std::atomic<Nanoseconds> busy_{0};
  std::atomic<double> utilisation_{0.0};
  std::atomic<int> attached_{0};
  std::vector<SetupStep> setup_report_;
  std::atomic<bool> setup_done_{false};
  std::thread thread_;
};

}  // namespace hilsim::rt
