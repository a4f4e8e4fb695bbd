#include "client/interrupt.h"

#include <atomic>
#include <csignal>

namespace hilsim::client {
namespace {

// written by the handler: a lock-free atomic is async-signal-safe
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);
struct sigaction g_previous_int, g_previous_term;

extern "C" void onSignal(int number) {
  if (g_signal.load(std::memory_order_relaxed) != 0) {
    // the second one: the default action (raise and signal are async-signal-safe)
    std::signal(number, SIG_DFL);
    std::raise(number);
    return;
  }
  g_signal.store(number, std::memory_order_relaxed);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0, std::memory_order_relaxed);
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns early (EINTR) and sees the flag
  sigaction(SIGINT, &action, &g_previous_int);
  sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  sigaction(SIGINT, &g_previous_int, nullptr);
  sigaction(SIGTERM, &g_previous_term, nullptr);
}

bool InterruptGuard::requested() noexcept { return g_signal.load(std::memory_order_relaxed) != 0; }

int InterruptGuard::signal() noexcept { return g_signal.load(std::memory_order_relaxed); }

const char* InterruptGuard::signalName() noexcept {
  switch (signal()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}

int InterruptGuard::exitCode() noexcept { return signal() == 0 ? 0 : 128 + signal(); }

void InterruptGuard::clear() noexcept { g_signal.store(0, std::memory_order_relaxed); }

}  // namespace hilsim::client
