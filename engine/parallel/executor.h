// The executor the engine's parallel formulations run their independent work items on. The engine
// declares it; rt/ implements it with a fixed pool of worker threads created once (with a session
// or a command-line run), never per step. docs/HDCA.md, "Threads".
#pragma once

namespace hilsim {

/// Runs `count` independent work items on a fixed set of threads, the calling thread one of them,
/// and returns when all are done. Implementations must not allocate, block on a lock or throw in
/// parallelFor (it runs inside a real-time step); which thread runs which item is theirs to choose,
/// so an item may read only what earlier parallelFor calls and its own index determine: results are
/// then the same for every thread count, bit for bit.
class Executor {
 public:
  /// An item range [begin, end) of one call; `context` as passed to parallelFor.
  using Task = void (*)(void* context, int begin, int end);

  virtual ~Executor() = default;

  /// Threads that run items, the caller included (≥ 1).
  virtual int concurrency() const = 0;

  /// task(context, begin, end) over disjoint ranges covering [0, count); returns after the last.
  virtual void parallelFor(int count, Task task, void* context) = 0;

  /// task(context, t, t + 1) on every thread t ∈ [0, concurrency()) at the same time, the caller
  /// as thread 0; returns after the last. Unlike parallelFor's, these items may wait for each
  /// other (spinning on what another one publishes): each has a thread of its own.
  virtual void runOnEveryThread(Task task, void* context) = 0;
};

/// parallelFor on `executor`, or on the calling thread alone when it is null or has one thread
/// (or there is one item): the sequential path has no synchronisation at all.
template <typename Body>
inline void parallelFor(Executor* executor, int count, Body& body) {
  if (count <= 0) return;
  if (executor == nullptr || executor->concurrency() == 1 || count == 1) {
    body(0, count);
    return;
  }
  executor->parallelFor(
      count, [](void* context, int begin, int end) { (*static_cast<Body*>(context))(begin, end); },
      &body);
}

/// runOnEveryThread on `executor`: body(t, t + 1) for each of its threads t, concurrently; on the
/// calling thread alone, as body(0, 1), when it is null or has one thread.
template <typename Body>
inline void runOnEveryThread(Executor* executor, Body& body) {
  if (executor == nullptr || executor->concurrency() == 1) {
    body(0, 1);
    return;
  }
  executor->runOnEveryThread(
      [](void* context, int begin, int end) { (*static_cast<Body*>(context))(begin, end); },
      &body);
}

/// Tells the CPU that this is a spin-wait loop (x86 PAUSE, Arm YIELD): saves power and the
/// pipeline flush on exit, and leaves a sibling hyper-thread more room.
inline void spinPause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace hilsim
