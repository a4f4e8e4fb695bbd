// What the fuzz targets share: reporting, to the console libFuzzer writes to, of two findings
// that would otherwise be hard to read.
//
// Output. model_loader.h and server_config.h promise that the parsers write nothing to stdout or
// stderr, since the server's output is its log. With libFuzzer's -close_fd_mask=3 (scripts/fuzz
// passes it), libFuzzer writes its own and the sanitizers' reports to a duplicate of stderr and
// points fds 1 and 2 at /dev/null. guardOutput() replaces each of them with a pipe and, after
// every input, aborts if anything arrived (a crash to libFuzzer, which saves the input), printing
// what arrived. Without the mask (an input run by hand) the guard stays off and whatever the
// parser writes shows as usual.
//
// Exceptions. An exception the parser does not document escapes the target, and std::terminate
// aborts; its own message goes to stderr, silenced by the mask. The handler installed by
// initFuzzTarget() prints the exception's type and what() to the console first.
#pragma once

#include <cxxabi.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <typeinfo>

namespace hilsim::fuzz {

namespace detail {

struct State {
  int console = -1;         // stderr as it was at start-up, for the report
  bool set_up = false;      // the first input decides whether the guard is on
  int pipes[2] = {-1, -1};  // read ends of the pipes on fds 1 and 2; -1: guard off
};

inline State& state() {
  static State s;
  return s;
}

inline bool isDevNull(int fd) {
  struct stat null_stat {};
  struct stat fd_stat {};
  return ::stat("/dev/null", &null_stat) == 0 && ::fstat(fd, &fd_stat) == 0 &&
         S_ISCHR(fd_stat.st_mode) && fd_stat.st_rdev == null_stat.st_rdev;
}

// Both fds discarded by libFuzzer, or neither guarded: a half-guarded run would be misleading.
inline void setUp(State& s) {
  s.set_up = true;
  if (!isDevNull(1) || !isDevNull(2)) return;
  for (int fd = 1; fd <= 2; ++fd) {
    int ends[2];
    // non-blocking: a parser writing more than a pipe holds must not hang the fuzzer
    if (::pipe2(ends, O_NONBLOCK | O_CLOEXEC) != 0 || ::dup2(ends[1], fd) < 0) std::abort();
    ::close(ends[1]);
    s.pipes[fd - 1] = ends[0];
  }
}

inline void writeAll(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// The type and message of the exception being handled, for std::terminate.
inline std::string currentException() {
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) return "std::terminate without an exception";
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type->name(), nullptr, nullptr, &status), std::free);
  std::string text = "uncaught exception of type " + std::string(name ? name.get() : type->name());
  try {
    throw;
  } catch (const std::exception& e) {
    text += ": " + std::string(e.what());
  } catch (...) {
  }
  return text;
}

}  // namespace detail

/// From LLVMFuzzerInitialize, which libFuzzer calls before it moves its own output off fd 2.
inline void initFuzzTarget() {
  detail::state().console = ::fcntl(2, F_DUPFD_CLOEXEC, 3);
  std::set_terminate([] {
    detail::writeAll(detail::state().console, "fuzz: " + detail::currentException() + "\n");
    std::abort();
  });
}

/// Runs `parse` (one input) and aborts if it wrote to stdout or stderr (the file comment).
template <typename Parse>
void guardOutput(Parse&& parse) {
  using namespace detail;
  State& s = state();
  if (!s.set_up) setUp(s);  // before the first input: a run over one file has no second
  parse();
  if (s.pipes[0] < 0) return;
  std::fflush(nullptr);  // what stdio still buffers counts too
  for (int k = 0; k < 2; ++k) {
    char buffer[2048];
    const ssize_t n = ::read(s.pipes[k], buffer, sizeof buffer);
    if (n <= 0) continue;
    const std::string stream = k == 0 ? "stdout" : "stderr";
    writeAll(s.console, "fuzz: the parser wrote to " + stream + " (first " + std::to_string(n) +
                            " bytes between the lines):\n----\n" +
                            std::string(buffer, static_cast<std::size_t>(n)) + "\n----\n");
    std::abort();
  }
}

}  // namespace hilsim::fuzz
