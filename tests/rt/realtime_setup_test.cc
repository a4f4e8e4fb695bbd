// Process and thread set-up for the RT loop. CI runs these as root in Docker, with or without
// CAP_SYS_NICE: each test checks the observable effect when the OS grants a step (VmLck, the
// scheduling policy, the CPU the thread runs on, resident stack pages) and the reason when it
// refuses. Refusals are also forced in a forked child that drops the capability and lowers the
// limit, so the refusal messages are checked whatever the host grants; the stack pre-fault under a
// tight RLIMIT_MEMLOCK runs in a fresh process (small enough to lock) and skips where it cannot.
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "rt/realtime_setup.h"
#include "tests/support/captured_log.h"

namespace hilsim::rt {
namespace {

constexpr std::size_t kKiB = 1024;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // lockMemory() refuses: the shadow memory cannot be locked
#else
constexpr bool kSanitized = false;
#endif
constexpr int kCapSysNiceBit = 23;  // CAP_SYS_NICE in the CapEff mask of /proc/self/status

// Substring checks that print both strings on failure.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" lacks \"" << part << "\"";
}
::testing::AssertionResult lacks(const std::string& text, const std::string& part) {
  if (text.find(part) == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" contains \"" << part << "\"";
}

std::optional<std::string> procStatusField(const std::string& key) {
  std::ifstream file("/proc/self/status");
  std::string line;
  while (std::getline(file, line)) {
    if (line.rfind(key + ":", 0) == 0) return line.substr(key.size() + 1);
  }
  return std::nullopt;
}

long lockedKiB() { return std::stol(procStatusField("VmLck").value_or("-1")); }

// Read from /proc, independently of the capget(2) the implementation uses.
bool sysNiceEffective() {
  const std::uint64_t mask = std::stoull(procStatusField("CapEff").value_or("0"), nullptr, 16);
  return ((mask >> kCapSysNiceBit) & 1u) != 0;
}

rlim_t softLimit(int resource) {
  rlimit limit{};
  getrlimit(resource, &limit);
  return limit.rlim_cur;
}

std::vector<int> threadAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  pthread_getaffinity_np(pthread_self(), sizeof set, &set);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

int currentPolicy(int* priority = nullptr) {
  int policy = -1;
  sched_param parameters{};
  pthread_getschedparam(pthread_self(), &policy, &parameters);
  if (priority != nullptr) *priority = parameters.sched_priority;
  return policy;
}

// Runs `body` on a fresh thread, so that its policy, affinity and stack never leak into the
// test's main thread.
void runOnThread(const std::function<void()>& body) { std::thread(body).join(); }

// Same, with a stack of `stack_bytes`.
void runOnThreadWithStack(std::size_t stack_bytes, std::function<void()> body) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  ASSERT_EQ(pthread_attr_setstacksize(&attributes, stack_bytes), 0);
  pthread_t thread;
  auto trampoline = [](void* argument) -> void* {
    (*static_cast<std::function<void()>*>(argument))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attributes, trampoline, &body), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

// Pages of [begin, end) that are not resident in RAM (mincore).
std::size_t nonResidentPages(std::uintptr_t begin, std::uintptr_t end) {
  const auto page_size = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const std::uintptr_t start = begin / page_size * page_size;
  const std::size_t pages = (end - start + page_size - 1) / page_size;
  std::vector<unsigned char> residency(pages);
  if (mincore(reinterpret_cast<void*>(start), pages * page_size, residency.data()) != 0) {
    return pages;
  }
  std::size_t missing = 0;
  for (unsigned char page : residency) missing += (page & 1u) == 0 ? 1 : 0;
  return missing;
}

std::size_t prefaultedKiB(const std::string& detail) {
  std::size_t kib = 0;
  return std::sscanf(detail.c_str(), "pre-faulted %zu KiB", &kib) == 1 ? kib : 0;
}

bool dropEffectiveCapability(int capability) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  data[capability / 32].effective &= ~(1u << (capability % 32));
  return syscall(SYS_capset, &header, data) == 0;
}

bool setSoftLimit(int resource, rlim_t value) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0) return false;
  limit.rlim_cur = value;
  return setrlimit(resource, &limit) == 0;
}

// What a child process reports: "skip: <reason>", or a SetupResult as "1<detail>" / "0<detail>".
constexpr std::string_view kSkip = "skip: ";

std::string encode(const SetupResult& result) { return (result.ok ? "1" : "0") + result.detail; }

struct ChildReport {
  bool exited_cleanly = false;
  std::string message;
  bool skipped() const { return message.rfind(kSkip, 0) == 0; }
  SetupResult result() const {
    return {!message.empty() && message[0] == '1', message.empty() ? "" : message.substr(1)};
  }
};

void writeAll(int fd, const std::string& message) {
  for (std::size_t done = 0; done < message.size();) {
    const ssize_t n = write(fd, message.data() + done, message.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Runs `body` in a forked child, so that the capabilities it drops and the limits it lowers stay
// there; the child sends back what `body` returns through a pipe, whose write end `body` also gets.
ChildReport runInChild(const std::function<std::string(int fd)>& body) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    writeAll(fds[1], body(fds[1]));
    _exit(0);
  }
  close(fds[1]);
  ChildReport report;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) report.message.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  report.exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return report;
}

// Runs the current test again in a fresh process (the test binary, filtered to this test) with
// `fd_variable` naming the pipe to report on: a process that maps only what gtest needs.
ChildReport rerunInFreshProcess(const char* fd_variable) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter =
      std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name();
  return runInChild([&](int fd) {
    setenv(fd_variable, std::to_string(fd).c_str(), 1);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    execl("/proc/self/exe", "realtime_setup_test", filter.c_str(), nullptr);
    return std::string(kSkip) + "cannot re-run the test binary";
  });
}

using test::CapturedLog;

TEST(LockMemory, LocksPagesOrNamesTheLimit) {
  const SetupResult result = lockMemory();
  if (result.ok) {
    EXPECT_GT(lockedKiB(), 0) << result.detail;
    EXPECT_TRUE(contains(result.detail, "locked all current and future pages"));
    munlockall();  // the rest of the suite runs unlocked
    EXPECT_EQ(lockedKiB(), 0);
  } else {
    EXPECT_TRUE(contains(result.detail, kSanitized ? "Sanitizer" : "RLIMIT_MEMLOCK"));
    EXPECT_EQ(lockedKiB(), 0);
  }
}

TEST(LockMemory, RefusalNamesLimitAndRemedyAndLeavesTheStackUsable) {
  const ChildReport report = runInChild([](int) {
    if (!dropEffectiveCapability(CAP_IPC_LOCK) || !setSoftLimit(RLIMIT_MEMLOCK, 0)) {
      return std::string(kSkip) + "cannot drop CAP_IPC_LOCK or lower RLIMIT_MEMLOCK";
    }
    const SetupResult result = lockMemory();
    // growing the main thread's stack would be a SIGSEGV had memory been locked under the limit
    prefaultStack(std::size_t{1} << 30);
    return encode({result.ok, result.detail + "\nVmLck " + std::to_string(lockedKiB())});
  });
  ASSERT_TRUE(report.exited_cleanly) << report.message;
  if (report.skipped()) GTEST_SKIP() << report.message;
  const SetupResult result = report.result();
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.detail, "\nVmLck 0"));
  if (!kSanitized) {
    EXPECT_TRUE(contains(result.detail, "mlockall(MCL_CURRENT | MCL_FUTURE) not attempted: "));
    EXPECT_TRUE(contains(result.detail, "RLIMIT_MEMLOCK 0 KiB"));
    EXPECT_TRUE(contains(result.detail, "CAP_IPC_LOCK not effective"));
    EXPECT_TRUE(contains(result.detail, "--ulimit memlock=-1"));
  }
}

TEST(SetFifoPriority, AppliesOrNamesCapabilityAndRtprio) {
  runOnThread([] {
    const SetupResult result = setFifoPriority(50);
    int priority = -1;
    const int policy = currentPolicy(&priority);
    if (result.ok) {
      EXPECT_EQ(policy, SCHED_FIFO);
      EXPECT_EQ(priority, 50);
      // granted only with the capability or a high enough rtprio limit
      EXPECT_TRUE(sysNiceEffective() || softLimit(RLIMIT_RTPRIO) >= 50);
      sched_param normal{};
      ASSERT_EQ(pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal), 0);
      EXPECT_EQ(currentPolicy(), SCHED_OTHER);
    } else {
      EXPECT_TRUE(contains(result.detail, "CAP_SYS_NICE"));
      EXPECT_TRUE(contains(result.detail, "rtprio"));
      EXPECT_EQ(policy, SCHED_OTHER);
    }
  });
}

TEST(SetFifoPriority, RefusalNamesCapabilityLimitAndRemedy) {
  const ChildReport report = runInChild([](int) {
    if (!dropEffectiveCapability(CAP_SYS_NICE) || !setSoftLimit(RLIMIT_RTPRIO, 0)) {
      return std::string(kSkip) + "cannot drop CAP_SYS_NICE or lower RLIMIT_RTPRIO";
    }
    return encode(setFifoPriority(50));
  });
  ASSERT_TRUE(report.exited_cleanly) << report.message;
  if (report.skipped()) GTEST_SKIP() << report.message;
  const SetupResult result = report.result();
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(contains(result.detail, "SCHED_FIFO priority 50 refused: Operation not permitted"));
  EXPECT_TRUE(contains(result.detail, "RLIMIT_RTPRIO 0"));
  EXPECT_TRUE(contains(result.detail, "CAP_SYS_NICE not effective"));
  EXPECT_TRUE(contains(result.detail, "--cap-add=SYS_NICE --ulimit rtprio=99"));
}

TEST(SetFifoPriority, OutOfRangeIsRefusedAndChangesNothing) {
  runOnThread([] {
    for (int priority : {0, 100, -1}) {
      const SetupResult result = setFifoPriority(priority);
      EXPECT_FALSE(result.ok) << priority;
      EXPECT_TRUE(contains(result.detail, "out of range 1..99")) << priority;
      EXPECT_EQ(currentPolicy(), SCHED_OTHER);
    }
  });
}

TEST(SetCpuAffinity, PinsToEveryAllowedCpu) {
  const std::vector<int> allowed = threadAffinity();
  ASSERT_FALSE(allowed.empty());
  for (int cpu : allowed) {
    runOnThread([cpu] {
      const SetupResult result = setCpuAffinity(cpu);
      ASSERT_TRUE(result.ok) << result.detail;
      EXPECT_TRUE(contains(result.detail, "pinned to CPU " + std::to_string(cpu)));
      EXPECT_EQ(sched_getcpu(), cpu);
      EXPECT_EQ(threadAffinity(), std::vector<int>{cpu});
    });
  }
}

TEST(SetCpuAffinity, NonexistentCpuIsRefusedAndChangesNothing) {
  runOnThread([] {
    const std::vector<int> before = threadAffinity();
    const std::string cpu_count = std::to_string(sysconf(_SC_NPROCESSORS_CONF));
    for (int cpu : {100000, -1}) {
      const SetupResult result = setCpuAffinity(cpu);
      EXPECT_FALSE(result.ok);
      EXPECT_TRUE(contains(result.detail, "CPU " + std::to_string(cpu) + " out of range"));
      EXPECT_TRUE(contains(result.detail, "this host has " + cpu_count + " CPUs"));
      EXPECT_EQ(threadAffinity(), before);
    }
  });
}

TEST(PrefaultStack, MakesTheRequestedDepthResident) {
  for (std::size_t bytes : {64 * kKiB, 1024 * kKiB}) {
    runOnThread([bytes] {  // a fresh 8 MiB stack, mostly never touched
      const auto top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
      const SetupResult result = prefaultStack(bytes);
      ASSERT_TRUE(result.ok) << result.detail;
      EXPECT_EQ(prefaultedKiB(result.detail), bytes / kKiB) << result.detail;
      EXPECT_TRUE(lacks(result.detail, "capped"));
      EXPECT_EQ(nonResidentPages(top - bytes, top), 0u);
    });
  }
}

TEST(PrefaultStack, HugeRequestIsCappedWithinTheStack) {
  runOnThreadWithStack(512 * kKiB, [] {
    pthread_attr_t attributes;
    ASSERT_EQ(pthread_getattr_np(pthread_self(), &attributes), 0);
    std::size_t stack_bytes = 0;
    pthread_attr_getstacksize(&attributes, &stack_bytes);  // sanitizers may enlarge the stack
    pthread_attr_destroy(&attributes);

    const SetupResult small = prefaultStack(16 * kKiB);
    EXPECT_TRUE(small.ok) << small.detail;
    EXPECT_TRUE(lacks(small.detail, "capped"));

    // touching a gigabyte of a 512 KiB stack would crash: surviving is part of the test
    const SetupResult huge = prefaultStack(std::size_t{1} << 30);
    EXPECT_TRUE(huge.ok) << huge.detail;
    EXPECT_TRUE(contains(huge.detail, "the 1048576 KiB requested was capped"));
    EXPECT_GT(prefaultedKiB(huge.detail), 0u);
    EXPECT_LE(prefaultedKiB(huge.detail), stack_bytes / 2 / kKiB);
  });
}

// Child side of the test below: locks memory under a limit at most 1 MiB above what the process
// maps, then asks for far more stack than that.
std::string prefaultUnderTightLockLimit() {
  if (kSanitized) return std::string(kSkip) + "sanitizer shadow memory cannot be locked";
  if (!dropEffectiveCapability(CAP_IPC_LOCK)) {
    return std::string(kSkip) + "cannot drop CAP_IPC_LOCK";
  }
  rlimit limit{};
  getrlimit(RLIMIT_MEMLOCK, &limit);
  const rlim_t mapped = std::stoull(procStatusField("VmSize").value_or("0")) * kKiB;
  rlim_t room = kKiB * kKiB;
  if (limit.rlim_max != RLIM_INFINITY) {
    room = limit.rlim_max > mapped ? std::min(room, limit.rlim_max - mapped) : 0;
  }
  if (room < 256 * kKiB) {
    return std::string(kSkip) + "hard RLIMIT_MEMLOCK " + std::to_string(limit.rlim_max / kKiB) +
           " KiB leaves less than 256 KiB above VmSize " + std::to_string(mapped / kKiB) + " KiB";
  }
  limit.rlim_cur = mapped + room;
  if (setrlimit(RLIMIT_MEMLOCK, &limit) != 0 || mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    return std::string(kSkip) + "cannot lock memory under a tight limit";
  }
  const SetupResult result = prefaultStack(std::size_t{1} << 30);
  munlockall();  // gtest still has to allocate on the way out
  return encode(result);
}

TEST(PrefaultStack, StaysWithinTheLockedMemoryBudget) {
  constexpr const char* kReportFd = "HILSIM_REALTIME_SETUP_TEST_FD";
  if (const char* fd = std::getenv(kReportFd)) {  // the fresh process
    writeAll(std::atoi(fd), prefaultUnderTightLockLimit());
    return;
  }
  const ChildReport report = rerunInFreshProcess(kReportFd);
  // growing the main thread's stack past RLIMIT_MEMLOCK would have killed it with SIGSEGV
  ASSERT_TRUE(report.exited_cleanly) << report.message;
  if (report.skipped()) GTEST_SKIP() << report.message;
  const SetupResult result = report.result();
  EXPECT_TRUE(result.ok) << result.detail;
  std::size_t budget_kib = 0;
  const auto budget_at = result.detail.find("capped to half of the ");
  ASSERT_NE(budget_at, std::string::npos) << result.detail;
  ASSERT_EQ(std::sscanf(result.detail.c_str() + budget_at,
                        "capped to half of the %zu KiB that RLIMIT_MEMLOCK still allows to lock",
                        &budget_kib),
            1)
      << result.detail;
  EXPECT_LE(budget_kib, 1024u + 256u) << result.detail;  // the room given, and a few unlocked pages
  EXPECT_GT(prefaultedKiB(result.detail), 0u) << result.detail;
  EXPECT_LE(prefaultedKiB(result.detail), budget_kib / 2) << result.detail;
}

TEST(TimerSlack, SetToOneNanosecondOnTheCallingThreadOnly) {
  runOnThread([] {
    const int before = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
    std::thread other([before] {
      const SetupResult result = setMinimalTimerSlack();
      EXPECT_TRUE(result.ok) << result.detail;
      EXPECT_EQ(prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), 1);
      EXPECT_NE(result.detail.find("timer slack 1 ns"), std::string::npos) << result.detail;
      (void)before;
    });
    other.join();
    EXPECT_EQ(prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL), before) << "per thread";
  });
}

TEST(ApplyThreadSetup, RunsRequestedStepsInOrder) {
  runOnThread([] {
    ThreadSetup setup;
    setup.prefault_stack_bytes = 64 * kKiB;
    setup.fifo_priority = 50;
    setup.cpu = threadAffinity().front();
    const std::vector<SetupStep> steps = applyThreadSetup(setup);
    ASSERT_EQ(steps.size(), 5u);
    EXPECT_EQ(steps[0].name, "lock_memory");
    EXPECT_EQ(steps[1].name, "prefault_stack");
    EXPECT_EQ(steps[2].name, "timer_slack");
    EXPECT_EQ(steps[3].name, "cpu_affinity");
    EXPECT_EQ(steps[4].name, "sched_fifo");
    EXPECT_TRUE(steps[1].result.ok) << steps[1].result.detail;
    EXPECT_TRUE(steps[2].result.ok) << steps[2].result.detail;
    EXPECT_TRUE(steps[3].result.ok) << steps[3].result.detail;
    EXPECT_EQ(sched_getcpu(), setup.cpu);
    EXPECT_EQ(currentPolicy() == SCHED_FIFO, steps[4].result.ok) << steps[4].result.detail;
    if (steps[0].result.ok) {
      EXPECT_GT(lockedKiB(), 0);
    }
    munlockall();
  });

  const std::vector<SetupStep> defaults = applyThreadSetup(ThreadSetup{.lock_memory = false});
  ASSERT_EQ(defaults.size(), 2u);  // 256 KiB of stack, 1 ns slack, no pinning, SCHED_OTHER kept
  EXPECT_EQ(defaults[0].name, "prefault_stack");
  EXPECT_TRUE(defaults[0].result.ok) << defaults[0].result.detail;
  EXPECT_EQ(defaults[1].name, "timer_slack");

  EXPECT_TRUE(applyThreadSetup({.lock_memory = false,
                                .prefault_stack_bytes = 0,
                                .minimal_timer_slack = false})
                  .empty());
}

TEST(ApplyThreadSetup, RefusalDoesNotStopLaterSteps) {
  const ThreadSetup setup{.lock_memory = false,
                          .prefault_stack_bytes = 0,
                          .fifo_priority = 100,
                          .cpu = 100000,
                          .minimal_timer_slack = false};
  const std::vector<SetupStep> steps = applyThreadSetup(setup);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].name, "cpu_affinity");
  EXPECT_FALSE(steps[0].result.ok);
  EXPECT_EQ(steps[1].name, "sched_fifo");
  EXPECT_FALSE(steps[1].result.ok);
  EXPECT_TRUE(contains(steps[1].result.detail, "priority 100 out of range"));
  EXPECT_EQ(currentPolicy(), SCHED_OTHER);
}

TEST(ApplyThreadSetup, WarnsOncePerStepAndReason) {
  CapturedLog log;
  // CPUs used by no other test, so that the process-wide registry starts clean for them
  const ThreadSetup refused{.lock_memory = false,
                            .prefault_stack_bytes = 64 * kKiB,
                            .cpu = 200001,
                            .minimal_timer_slack = false};
  for (int call = 0; call < 2; ++call) {
    const std::vector<SetupStep> steps = applyThreadSetup(refused);
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_TRUE(steps[0].result.ok);  // a granted step never warns
    EXPECT_FALSE(steps[1].result.ok);  // refused every time, logged once
  }
  std::vector<std::string> warnings = log.warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "cpu_affinity"));
  EXPECT_TRUE(contains(warnings[0], "CPU 200001 out of range"));
  EXPECT_TRUE(contains(warnings[0], "running on"));

  // another reason for the same step is news
  applyThreadSetup({.lock_memory = false, .prefault_stack_bytes = 0, .cpu = 200002});
  applyThreadSetup({.lock_memory = false, .prefault_stack_bytes = 0, .cpu = 200002});
  warnings = log.warnings();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(contains(warnings[1], "CPU 200002 out of range"));
}

TEST(RealtimeKernel, AgreesWithKernelVersionString) {
  utsname names{};
  ASSERT_EQ(uname(&names), 0);
  // PREEMPT_RT kernels say so in `uname -v` ("#1 SMP PREEMPT_RT Debian ...")
  EXPECT_EQ(realtimeKernel(), std::string(names.version).find("PREEMPT_RT") != std::string::npos)
      << names.version;
}

TEST(DescribeHost, ReportsKernelCpusLimitsAndCapabilities) {
  const std::string description = describeHost();
  utsname names{};
  ASSERT_EQ(uname(&names), 0);
  EXPECT_TRUE(contains(description, std::string("kernel ") + names.release));
  EXPECT_TRUE(contains(description, realtimeKernel() ? "PREEMPT_RT yes" : "PREEMPT_RT no"));
  EXPECT_TRUE(contains(description, std::to_string(sysconf(_SC_NPROCESSORS_CONF)) + " CPUs"));
  EXPECT_TRUE(contains(description, "isolated CPUs "));
  const rlim_t rtprio = softLimit(RLIMIT_RTPRIO);
  EXPECT_TRUE(contains(description, "RLIMIT_RTPRIO " + (rtprio == RLIM_INFINITY
                                                             ? std::string("unlimited")
                                                             : std::to_string(rtprio))));
  const rlim_t memlock = softLimit(RLIMIT_MEMLOCK);
  EXPECT_TRUE(contains(description, "RLIMIT_MEMLOCK " + (memlock == RLIM_INFINITY
                                                              ? std::string("unlimited")
                                                              : std::to_string(memlock / kKiB) +
                                                                    " KiB")));
  EXPECT_TRUE(contains(description, sysNiceEffective() ? "CAP_SYS_NICE effective"
                                                        : "CAP_SYS_NICE not effective"));
  EXPECT_TRUE(contains(description, "CAP_IPC_LOCK"));
}

}  // namespace
}  // namespace hilsim::rt
