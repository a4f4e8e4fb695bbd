// Process and thread set-up for the RT loop (ARCHITECTURE.md, "Real-time rules"): locked memory,
// a pre-faulted stack, CPU pinning and SCHED_FIFO. Every step reports what it did or why the OS
// refused, with the remedy; a refusal is never fatal: the service warns once and runs on.
// Modelled on ros2_control's realtime_helpers (lock_memory, configure_sched_fifo,
// set_current_thread_affinity), which return {ok, message} instead of throwing.
//
// None of this is RT-safe (it allocates, formats and may log): call it on the RT thread before its
// loop starts. Nothing here throws on refusal or aborts.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace hilsim::rt {

/// Outcome of one set-up step.
struct SetupResult {
  bool ok = false;
  /// What was done, or why not: the errno text, the limit or capability in the way, the remedy.
  std::string detail;
};

/// mlockall(MCL_CURRENT | MCL_FUTURE): every page of the process, present and future, stays in RAM
/// so that the RT loop never takes a major page fault. Process-wide. When refused, the detail
/// gives RLIMIT_MEMLOCK, whether CAP_IPC_LOCK is effective, and the remedy.
/// Not attempted (ok false) when RLIMIT_MEMLOCK is finite without CAP_IPC_LOCK and leaves less
/// than 1 GiB above what the process maps now (VmSize): with MCL_FUTURE every later thread stack,
/// malloc arena and stack growth must fit under the limit, and stack growth that does not is a
/// SIGSEGV. Not attempted either in AddressSanitizer/ThreadSanitizer builds (terabytes of shadow).
/// Called once per process: after a success it only reports that memory is locked (a session
/// starting later costs the running ones nothing); a refusal is tried again by the next caller.
SetupResult lockMemory();
/// How many times this process called mlockall (tests of the above).
int mlockallCalls();

/// Writes to `bytes` of the calling thread's stack below the caller's frame, so that later growth
/// of the stack (down to that depth) does not page-fault. With lockMemory() the pages then stay
/// resident. The request is capped at half of the stack left below the caller (from
/// pthread_getattr_np), never overrunning the guard page, and, when memory is locked under a finite
/// RLIMIT_MEMLOCK, at half of what the limit still allows to lock; the detail says when it was
/// capped and why (still ok). Fails only when the stack bounds cannot be read.
SetupResult prefaultStack(std::size_t bytes);

/// SCHED_FIFO at `priority` for the calling thread (pthread_setschedparam). The priority must be
/// within sched_get_priority_min/max(SCHED_FIFO) (1..99 on Linux), otherwise the detail says
/// "out of range" and nothing changes. When refused, the detail gives RLIMIT_RTPRIO, whether
/// CAP_SYS_NICE is effective and the remedy.
SetupResult setFifoPriority(int priority);

/// Sets the calling thread's timer slack to 1 ns (prctl PR_SET_TIMERSLACK). Linux lets a
/// SCHED_OTHER thread's timers expire up to its slack late (50 µs by default) to batch wake-ups;
/// SCHED_FIFO threads have none. Without the privilege for SCHED_FIFO this is the step that keeps
/// wake-ups near their deadline.
SetupResult setMinimalTimerSlack();

/// Pins the calling thread to `cpu` (pthread_setaffinity_np) and migrates it there. Fails with a
/// clear detail when `cpu` is negative or not below the number of configured CPUs, or when the
/// kernel refuses it (outside the process's cgroup cpuset, or offline): the detail then lists the
/// CPUs allowed. A success on a CPU that is not in isolcpus says so (other tasks may share it).
SetupResult setCpuAffinity(int cpu);

/// What applyThreadSetup() does on the calling thread.
struct ThreadSetup {
  bool lock_memory = true;
  std::size_t prefault_stack_bytes = 256 * 1024;  ///< 0: do not pre-fault
  int fifo_priority = 0;                          ///< 0: keep SCHED_OTHER
  int cpu = -1;                                   ///< −1: no pinning
  bool minimal_timer_slack = true;                ///< 1 ns timer slack (setMinimalTimerSlack)
};

/// One step applied by applyThreadSetup(). Names: "lock_memory", "prefault_stack",
/// "timer_slack", "cpu_affinity", "sched_fifo".
struct SetupStep {
  std::string name;
  SetupResult result;
};

/// Runs the requested steps on the calling thread, in this order, one SetupStep each:
/// lock_memory, prefault_stack, timer_slack, cpu_affinity (pinned before the priority rises, so the thread
/// never runs at RT priority on a CPU it is about to leave), sched_fifo. A refused step does not
/// stop the others. Each refusal is logged as a spdlog warning once per process for each distinct
/// step name and detail (a mutex-guarded registry: not for the RT path); successes log at debug.
std::vector<SetupStep> applyThreadSetup(const ThreadSetup& setup);

/// True when /sys/kernel/realtime reads 1 (a PREEMPT_RT kernel).
bool realtimeKernel();

/// One line describing what the host offers the RT loop: kernel release, PREEMPT_RT yes/no,
/// configured and online CPUs, isolated CPUs, RLIMIT_RTPRIO, RLIMIT_MEMLOCK, and whether
/// CAP_SYS_NICE and CAP_IPC_LOCK are effective for the calling thread.
std::string describeHost();

}  // namespace hilsim::rt
