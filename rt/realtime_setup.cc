#include "rt/realtime_setup.h"

#include <sys/prctl.h>

#include <alloca.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4  // Linux 4.4; older C libraries do not name it
#endif

namespace hilsim::rt {
namespace {

constexpr std::size_t kKiB = 1024;

// With a finite RLIMIT_MEMLOCK and no CAP_IPC_LOCK, MCL_FUTURE makes every later mapping count
// against the limit: a thread stack (8 MiB), a malloc arena (64 MiB reserved), stack growth. Lock
// only when the limit leaves this much above what the process maps now, rather than fail later.
constexpr std::uint64_t kLockHeadroomBytes = std::uint64_t{1} << 30;

// Sanitizers reserve terabytes of shadow memory that MCL_CURRENT would try to fault in.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::string_view kSanitizerName = "AddressSanitizer";
#elif defined(__SANITIZE_THREAD__)
constexpr std::string_view kSanitizerName = "ThreadSanitizer";
#else
constexpr std::string_view kSanitizerName;
#endif

constexpr const char* kMemlockRemedy =
    "raise the limit: '<user> - memlock unlimited' in /etc/security/limits.conf, "
    "LimitMEMLOCK=infinity under systemd, --ulimit memlock=-1 in Docker, or grant CAP_IPC_LOCK";

std::string errnoText(int error) {
  char buffer[256];
  return strerror_r(error, buffer, sizeof buffer);  // GNU variant: may return a static string
}

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

std::optional<std::string> readFirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return trimmed(line);
}

// The value after "<key>:" in /proc/self/status, e.g. "VmLck" → "0 kB".
std::optional<std::string> procStatusField(std::string_view key) {
  std::ifstream file("/proc/self/status");
  std::string line;
  while (std::getline(file, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ':') {
      return trimmed(std::string_view(line).substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

// A "<key>: <n> kB" field of /proc/self/status, e.g. VmLck or VmSize [KiB].
std::optional<std::uint64_t> statusKiB(std::string_view key) {
  const std::optional<std::string> field = procStatusField(key);
  if (!field) return std::nullopt;
  return std::strtoull(field->c_str(), nullptr, 10);
}

// Effective capability of the calling thread, from capget(2) (no libcap needed).
std::optional<bool> capabilityEffective(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return std::nullopt;
  return ((data[capability / 32].effective >> (capability % 32)) & 1u) != 0;
}

std::string capabilityText(const char* name, int capability) {
  const std::optional<bool> effective = capabilityEffective(capability);
  if (!effective) return fmt::format("{} unknown", name);
  return fmt::format("{} {}", name, *effective ? "effective" : "not effective");
}

// What RLIMIT_MEMLOCK still allows to lock [bytes] when memory is locked under it (VmLck > 0,
// finite limit, no CAP_IPC_LOCK); nullopt when nothing bounds locked memory.
std::optional<std::size_t> lockBudgetLeft() {
  const std::uint64_t locked = statusKiB("VmLck").value_or(0) * kKiB;
  rlimit limit{};
  if (locked == 0 || getrlimit(RLIMIT_MEMLOCK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      capabilityEffective(CAP_IPC_LOCK).value_or(false)) {
    return std::nullopt;
  }
  return limit.rlim_cur > locked ? limit.rlim_cur - locked : 0;
}

// RLIMIT_MEMLOCK is in bytes, shown in KiB as `ulimit -l` does; RLIMIT_RTPRIO is a priority.
std::string limitValueText(rlim_t value, bool in_bytes) {
  if (value == RLIM_INFINITY) return "unlimited";
  return in_bytes ? fmt::format("{} KiB", value / kKiB) : fmt::format("{}", value);
}

// "RLIMIT_RTPRIO 0", with the hard limit when it differs (a user may raise the soft one to it).
std::string limitText(const char* name, int resource, bool in_bytes) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0) return fmt::format("{} unknown", name);
  std::string text = fmt::format("{} {}", name, limitValueText(limit.rlim_cur, in_bytes));
  if (limit.rlim_max != limit.rlim_cur) {
    text += fmt::format(" (hard {})", limitValueText(limit.rlim_max, in_bytes));
  }
  return text;
}

// Parses a kernel CPU list such as "0-3,6" (empty: no CPU).
std::set<int> parseCpuList(std::string_view list) {
  std::set<int> cpus;
  std::stringstream stream{std::string(list)};
  std::string range;
  while (std::getline(stream, range, ',')) {
    int first = 0;
    int last = 0;
    const int fields = std::sscanf(range.c_str(), "%d-%d", &first, &last);
    if (fields < 1) continue;
    if (fields == 1) last = first;
    for (int cpu = first; cpu <= last; ++cpu) cpus.insert(cpu);
  }
  return cpus;
}

std::string cpuListText(const std::set<int>& cpus) {
  std::string text;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int first = *it;
    int last = first;
    for (++it; it != cpus.end() && *it == last + 1; ++it) last = *it;
    if (!text.empty()) text += ',';
    text += first == last ? fmt::format("{}", first) : fmt::format("{}-{}", first, last);
  }
  return text.empty() ? "none" : text;
}

int configuredCpuCount() {
  const long count = sysconf(_SC_NPROCESSORS_CONF);
  return count > 0 ? static_cast<int>(count) : 1;
}

// The CPUs the process's cgroup cpuset allows (v1 cpuset controller or v2 unified hierarchy),
// which is what the kernel checks an affinity request against.
std::optional<std::string> cgroupCpuset() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  std::vector<std::string> candidates;
  while (std::getline(cgroups, line)) {
    const auto first_colon = line.find(':');
    const auto second_colon = line.find(':', first_colon + 1);
    if (first_colon == std::string::npos || second_colon == std::string::npos) continue;
    const std::string controllers = line.substr(first_colon + 1, second_colon - first_colon - 1);
    const std::string path = line.substr(second_colon + 1);
    if (("," + controllers + ",").find(",cpuset,") != std::string::npos) {
      candidates.insert(candidates.begin(),
                        "/sys/fs/cgroup/cpuset" + path + "/cpuset.effective_cpus");
    } else if (controllers.empty()) {
      candidates.push_back("/sys/fs/cgroup" + path + "/cpuset.cpus.effective");
    }
  }
  for (const std::string& candidate : candidates) {
    if (auto cpus = readFirstLine(candidate); cpus && !cpus->empty()) return cpus;
  }
  return std::nullopt;
}

std::set<int> threadAffinity() {
  const int count = configuredCpuCount();
  cpu_set_t* set = CPU_ALLOC(count);
  const std::size_t size = CPU_ALLOC_SIZE(count);
  std::set<int> cpus;
  if (set != nullptr && pthread_getaffinity_np(pthread_self(), size, set) == 0) {
    for (int cpu = 0; cpu < count; ++cpu) {
      if (CPU_ISSET_S(cpu, size, set)) cpus.insert(cpu);
    }
  }
  CPU_FREE(set);
  return cpus;
}

// Writes one byte per page of a fresh `bytes`-long block below this frame. noinline so that the
// block is carved below the caller's frame and released on return; volatile so that the writes
// stay.
__attribute__((noinline)) void touchStack(std::size_t bytes, std::size_t page_size) {
  auto* block = static_cast<volatile unsigned char*>(alloca(bytes));
  for (std::size_t offset = 0; offset < bytes; offset += page_size) block[offset] = 0;
  block[bytes - 1] = 0;
}

}  // namespace

namespace {
// mlockall is process-wide and, with MCL_CURRENT, walks every mapping (tens of milliseconds in a
// large server, stalling the other threads' page faults): done once, then only reported.
std::mutex lock_memory_mutex;
std::optional<SetupResult> memory_locked;  // the successful call's outcome
std::atomic<int> mlockall_calls{0};
SetupResult lockMemoryOnce();
}  // namespace

int mlockallCalls() { return mlockall_calls.load(std::memory_order_relaxed); }

SetupResult lockMemory() {
  const std::lock_guard lock(lock_memory_mutex);
  if (memory_locked) {
    return {true, "already locked for the whole process: " + memory_locked->detail};
  }
  SetupResult result = lockMemoryOnce();
  if (result.ok) memory_locked = result;
  return result;
}

namespace {
SetupResult lockMemoryOnce() {
  if (!kSanitizerName.empty()) {
    return {false, fmt::format("mlockall(MCL_CURRENT | MCL_FUTURE) not attempted: built with {}, "
                               "whose terabytes of reserved shadow memory cannot be locked",
                               kSanitizerName)};
  }
  rlimit limit{};
  const bool limited = getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                       !capabilityEffective(CAP_IPC_LOCK).value_or(false);
  if (limited) {
    const std::uint64_t mapped = statusKiB("VmSize").value_or(0) * kKiB;
    if (limit.rlim_cur < mapped + kLockHeadroomBytes) {
      return {false, fmt::format("mlockall(MCL_CURRENT | MCL_FUTURE) not attempted: {} with {} "
                                 "leaves less than {} MiB above the {} KiB mapped now, and once "
                                 "locked every later thread stack, allocation and stack growth "
                                 "must fit in it ({})",
                                 limitText("RLIMIT_MEMLOCK", RLIMIT_MEMLOCK, true),
                                 capabilityText("CAP_IPC_LOCK", CAP_IPC_LOCK),
                                 kLockHeadroomBytes / kKiB / kKiB, mapped / kKiB,
                                 kMemlockRemedy)};
    }
  }
  // MCL_ONFAULT (Linux 4.4): pages are locked as they are first touched, so that the 8 MiB
  // reserved for each later thread's stack, and malloc's reserved arenas, take no RAM until used
  // (locking them whole took over a gigabyte for a server of many sessions). The RT paths touch
  // their memory before their first cycle (the stack pre-fault, buffers written when built).
  bool on_fault = true;
  mlockall_calls.fetch_add(1, std::memory_order_relaxed);
  int locked = mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT);
  if (locked != 0 && errno == EINVAL) {
    on_fault = false;  // a kernel without MCL_ONFAULT
    locked = mlockall(MCL_CURRENT | MCL_FUTURE);
  }
  if (locked != 0) {
    const int error = errno;
    return {false, fmt::format("mlockall(MCL_CURRENT | MCL_FUTURE) refused: {} ({}, {}; {})",
                               errnoText(error), limitText("RLIMIT_MEMLOCK", RLIMIT_MEMLOCK, true),
                               capabilityText("CAP_IPC_LOCK", CAP_IPC_LOCK), kMemlockRemedy)};
  }
  std::string detail = fmt::format(
      "locked all current and future pages in RAM{} (VmLck {} KiB)",
      on_fault ? " as they are first touched (MCL_ONFAULT)" : "", statusKiB("VmLck").value_or(0));
  if (limited) {
    detail += fmt::format("; RLIMIT_MEMLOCK is {}: mappings beyond it will fail",
                          limitValueText(limit.rlim_cur, true));
  }
  return {true, std::move(detail)};
}
}  // namespace

SetupResult prefaultStack(std::size_t bytes) {
  if (bytes == 0) return {true, "nothing to pre-fault (0 bytes requested)"};

  pthread_attr_t attributes;
  if (const int error = pthread_getattr_np(pthread_self(), &attributes); error != 0) {
    return {false, fmt::format("stack not pre-faulted: pthread_getattr_np failed: {}",
                               errnoText(error))};
  }
  void* stack_low = nullptr;
  std::size_t stack_size = 0;
  const int error = pthread_attr_getstack(&attributes, &stack_low, &stack_size);
  pthread_attr_destroy(&attributes);
  if (error != 0) {
    return {false, fmt::format("stack not pre-faulted: pthread_attr_getstack failed: {}",
                               errnoText(error))};
  }

  // the stack grows down: what is left lies between its low end and this frame
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto low = reinterpret_cast<std::uintptr_t>(stack_low);
  const auto high = low + stack_size;
  if (frame <= low || frame > high) {
    return {false, fmt::format("stack not pre-faulted: this frame lies outside the stack that "
                               "pthread_getattr_np reports ({} KiB)",
                               stack_size / kKiB)};
  }
  const auto page_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto halfInPages = [page_size](std::size_t size) {
    return size / 2 / page_size * page_size;
  };

  // half of what is left keeps clear of the guard page, with room for the frames the caller will
  // still push before reaching the pre-faulted depth
  const std::size_t left = frame - low;
  std::size_t cap = halfInPages(left);
  std::string cap_reason =
      fmt::format("half of the {} KiB left below the caller (stack {} KiB)", left / kKiB,
                  stack_size / kKiB);
  // with memory locked under a finite limit, growing the main thread's stack past what the limit
  // still allows is a SIGSEGV
  if (const std::optional<std::size_t> budget = lockBudgetLeft();
      budget && halfInPages(*budget) < cap) {
    cap = halfInPages(*budget);
    cap_reason = fmt::format("half of the {} KiB that RLIMIT_MEMLOCK still allows to lock",
                             *budget / kKiB);
  }
  const std::size_t touched = std::min(bytes, cap);
  if (touched > 0) touchStack(touched, page_size);

  if (touched < bytes) {
    return {true, fmt::format("pre-faulted {} KiB of stack: the {} KiB requested was capped to {}",
                              touched / kKiB, bytes / kKiB, cap_reason)};
  }
  return {true, fmt::format("pre-faulted {} KiB of stack ({} KiB left below the caller, stack "
                            "{} KiB)",
                            touched / kKiB, left / kKiB, stack_size / kKiB)};
}

SetupResult setFifoPriority(int priority) {
  const int min_priority = sched_get_priority_min(SCHED_FIFO);
  const int max_priority = sched_get_priority_max(SCHED_FIFO);
  if (priority < min_priority || priority > max_priority) {
    return {false, fmt::format("SCHED_FIFO priority {} out of range {}..{}", priority,
                               min_priority, max_priority)};
  }
  sched_param parameters{};
  parameters.sched_priority = priority;
  const int error = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters);
  if (error == 0) return {true, fmt::format("SCHED_FIFO priority {} on this thread", priority)};

  std::string detail = fmt::format("SCHED_FIFO priority {} refused: {}", priority,
                                   errnoText(error));
  if (error == EPERM) {
    const bool has_sys_nice = capabilityEffective(CAP_SYS_NICE).value_or(false);
    detail += fmt::format(" (needs CAP_SYS_NICE or an rtprio limit in /etc/security/limits.conf; "
                          "in Docker --cap-add=SYS_NICE --ulimit rtprio=99; now {}, {}",
                          limitText("RLIMIT_RTPRIO", RLIMIT_RTPRIO, false),
                          capabilityText("CAP_SYS_NICE", CAP_SYS_NICE));
    if (has_sys_nice) {
      // with the capability, EPERM most likely comes from RT group scheduling (no RT budget)
      detail += "; with CAP_SYS_NICE the likely cause is a cgroup without a real-time budget "
                "(cpu.rt_runtime_us = 0; Docker --cpu-rt-runtime=950000)";
    }
    detail += ")";
  }
  return {false, std::move(detail)};
}

SetupResult setCpuAffinity(int cpu) {
  const int cpu_count = configuredCpuCount();
  if (cpu < 0 || cpu >= cpu_count) {
    return {false, fmt::format("CPU {} out of range: this host has {} CPUs (0..{})", cpu,
                               cpu_count, cpu_count - 1)};
  }
  cpu_set_t* set = CPU_ALLOC(cpu_count);
  if (set == nullptr) return {false, fmt::format("CPU {} not pinned: CPU_ALLOC failed", cpu)};
  const std::size_t size = CPU_ALLOC_SIZE(cpu_count);
  CPU_ZERO_S(size, set);
  CPU_SET_S(cpu, size, set);
  const int error = pthread_setaffinity_np(pthread_self(), size, set);
  CPU_FREE(set);

  if (error == 0) {
    std::string detail = fmt::format("pinned to CPU {}", cpu);
    const std::set<int> isolated =
        parseCpuList(readFirstLine("/sys/devices/system/cpu/isolated").value_or(""));
    if (isolated.count(cpu) == 0) {
      detail += " (not in isolcpus: other tasks and interrupts may share it)";
    }
    return {true, std::move(detail)};
  }
  std::string detail = fmt::format("CPU {} refused: {}", cpu, errnoText(error));
  if (error == EINVAL) {
    // the kernel checks the request against the cgroup cpuset and the online CPUs
    const std::optional<std::string> cpuset = cgroupCpuset();
    const std::string allowed = cpuset ? fmt::format("{} (cgroup cpuset)", *cpuset)
                                       : fmt::format("{} (this thread's affinity)",
                                                     cpuListText(threadAffinity()));
    detail += fmt::format(" (not among the CPUs allowed to this process: {}, online {}; the "
                          "cpuset comes from docker --cpuset-cpus, systemd AllowedCPUs= or "
                          "taskset)",
                          allowed,
                          readFirstLine("/sys/devices/system/cpu/online").value_or("unknown"));
  }
  return {false, std::move(detail)};
}

SetupResult setMinimalTimerSlack() {
  if (prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) != 0) {
    return {false, fmt::format("timer slack unchanged: {}", std::strerror(errno))};
  }
  const int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
  return {slack == 1, fmt::format("timer slack {} ns on this thread", slack)};
}

std::vector<SetupStep> applyThreadSetup(const ThreadSetup& setup) {
  std::vector<SetupStep> steps;
  if (setup.lock_memory) steps.push_back({"lock_memory", lockMemory()});
  if (setup.prefault_stack_bytes > 0) {
    steps.push_back({"prefault_stack", prefaultStack(setup.prefault_stack_bytes)});
  }
  if (setup.minimal_timer_slack) steps.push_back({"timer_slack", setMinimalTimerSlack()});
  if (setup.cpu != -1) steps.push_back({"cpu_affinity", setCpuAffinity(setup.cpu)});
  if (setup.fifo_priority != 0) {
    steps.push_back({"sched_fifo", setFifoPriority(setup.fifo_priority)});
  }

  // once per process per step and reason: every RT thread of every session would repeat it
  static std::mutex warned_mutex;
  static std::set<std::string> warned;
  for (const SetupStep& step : steps) {
    if (step.result.ok) {
      spdlog::debug("RT set-up {}: {}", step.name, step.result.detail);
      continue;
    }
    bool first_time = false;
    {
      const std::lock_guard lock(warned_mutex);
      first_time = warned.insert(step.name + '\n' + step.result.detail).second;
    }
    if (first_time) {
      spdlog::warn("RT set-up {} not applied, running on without it: {}", step.name,
                   step.result.detail);
    }
  }
  return steps;
}

bool realtimeKernel() { return readFirstLine("/sys/kernel/realtime").value_or("") == "1"; }

std::string describeHost() {
  utsname names{};
  const std::string release = uname(&names) == 0 ? names.release : "unknown";
  const std::string isolated =
      readFirstLine("/sys/devices/system/cpu/isolated").value_or("unknown");
  return fmt::format("kernel {}, PREEMPT_RT {}, {} CPUs (online {}), isolated CPUs {}, {}, {}, "
                     "{}, {}",
                     release, realtimeKernel() ? "yes" : "no", configuredCpuCount(),
                     readFirstLine("/sys/devices/system/cpu/online").value_or("unknown"),
                     isolated.empty() ? "none" : isolated,
                     limitText("RLIMIT_RTPRIO", RLIMIT_RTPRIO, false),
                     limitText("RLIMIT_MEMLOCK", RLIMIT_MEMLOCK, true),
                     capabilityText("CAP_SYS_NICE", CAP_SYS_NICE),
                     capabilityText("CAP_IPC_LOCK", CAP_IPC_LOCK));
}

}  // namespace hilsim::rt
