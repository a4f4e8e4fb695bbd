#include "rt/worker.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cassert>
#include <climits>

#include "rt/futex.h"
#include "rt/session_core.h"

namespace hilsim::rt {

namespace {

constexpr Nanoseconds kNever = INT64_MAX;
/// How long an idle worker sleeps before it looks again; wake-ups normally come through the
/// futex at once.
constexpr Nanoseconds kIdlePoll = 100'000'000;
/// The window of WorkerStats::utilisation.
constexpr Nanoseconds kUtilisationWindow = kNanosecondsPerSecond;

// a − b as a signed distance on the 32-bit membership counter (it may wrap)
std::int32_t distance(std::uint32_t a, std::uint32_t b) { return static_cast<std::int32_t>(a - b); }

}  // namespace

Worker::Worker(WorkerConfig config)
    : config_(std::move(config)),
      slots_(static_cast<std::size_t>(std::max(config_.capacity, 1))) {
  const auto capacity = slots_.size();
  assigned_.reserve(capacity);
  entries_.reserve(capacity);
  heap_.reserve(capacity);
  others_.reserve(capacity);
  // The thread logs its set-up steps: spdlog's registry is made here first, so that its lazy
  // construction (in the uninstrumented library) happens before the thread, not beside it.
  (void)spdlog::default_logger_raw();
  thread_ = std::thread([this] { main(); });
}

Worker::~Worker() {
  stop_.store(true, std::memory_order_release);
  wake();
  thread_.join();
}

void Worker::wake() noexcept {
  // The word always moves (a worker that read it before sees the change and does not sleep);
  // the system call only when it sleeps or is about to.
  wake_word_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_seq_cst)) futexWakeAll(wake_word_);
}

void Worker::waitForRound(std::uint32_t seen, Nanoseconds timeout) {
  round_waiters_.fetch_add(1, std::memory_order_seq_cst);
  if (rounds_.load(std::memory_order_seq_cst) == seen) futexWait(rounds_, seen, timeout);
  round_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void Worker::poke() noexcept {
  rounds_.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(rounds_);
}

bool Worker::attach(SessionCore& core) {
  std::lock_guard lock(mutex_);
  for (std::atomic<SessionCore*>& slot : slots_) {
    if (slot.load(std::memory_order_relaxed) != nullptr) continue;
    slot.store(&core, std::memory_order_release);
    membership_.fetch_add(1, std::memory_order_acq_rel);
    attached_.fetch_add(1, std::memory_order_relaxed);
    wake();
    return true;
  }
  return false;
}

void Worker::detach(SessionCore& core) {
  std::lock_guard lock(mutex_);
  const auto slot = std::find_if(slots_.begin(), slots_.end(), [&](const auto& s) {
    return s.load(std::memory_order_relaxed) == &core;
  });
  if (slot == slots_.end()) return;
  slot->store(nullptr, std::memory_order_release);
  attached_.fetch_sub(1, std::memory_order_relaxed);
  const std::uint32_t target = membership_.fetch_add(1, std::memory_order_acq_rel) + 1;
  wake();
  // The worker takes the new membership in between two cycles, then never touches the core.
  while (true) {
    const std::uint32_t seen = acknowledged_.load(std::memory_order_acquire);
    if (distance(seen, target) >= 0) break;
    futexWait(acknowledged_, seen, 1'000'000);
  }
}

bool Worker::assign(SessionCore& core) {
  std::lock_guard lock(mutex_);
  if (assigned_.size() >= slots_.size()) return false;
  assigned_.push_back(&core);
  return true;
}

void Worker::unassign(SessionCore& core) {
  std::lock_guard lock(mutex_);
  assigned_.erase(std::remove(assigned_.begin(), assigned_.end(), &core), assigned_.end());
}

double Worker::load() const {
  std::lock_guard lock(mutex_);
  double sum = 0.0;
  for (const SessionCore* core : assigned_) sum += core->load();
  return sum;
}

WorkerStats Worker::stats() const {
  WorkerStats s;
  s.index = config_.index;
  s.cpu = config_.thread.cpu;
  {
    std::lock_guard lock(mutex_);
    s.sessions = static_cast<int>(assigned_.size());
  }
  s.attached = attached_.load(std::memory_order_relaxed);
  s.cycles = cycles_.load(std::memory_order_relaxed);
  s.sleeps = sleeps_.load(std::memory_order_relaxed);
  s.busy = busy_.load(std::memory_order_relaxed);
  s.utilisation = utilisation_.load(std::memory_order_relaxed);
  s.load = load();
  return s;
}

std::vector<SetupStep> Worker::setupReport() const {
  if (!setup_done_.load(std::memory_order_acquire)) return {};
  return setup_report_;
}

Nanoseconds Worker::firstRelease(const SessionCore& core, Nanoseconds now) const {
  const Nanoseconds period = core.period();
  if (!config_.align_releases) return now + period;
  return (now / period + 1) * period;  // the next multiple of the period
}

void Worker::refreshEntries() {
  entries_.clear();  // capacity reserved: no allocation
  heap_.clear();     // its indices were the old entries'
  others_.clear();
  for (const std::atomic<SessionCore*>& slot : slots_) {
    if (SessionCore* core = slot.load(std::memory_order_acquire)) entries_.push_back({core});
  }
}

bool Worker::later(int a, int b) const {
  if (entries_[a].late != entries_[b].late) return entries_[a].late;
  const Nanoseconds da = entries_[a].core->deadline(), db = entries_[b].core->deadline();
  return da != db ? da > db : a > b;
}

Nanoseconds Worker::queueDue(Nanoseconds now) {
  Nanoseconds next_release = kNever;
  for (int i = 0; i < static_cast<int>(entries_.size()); ++i) {
    Entry& entry = entries_[i];
    const SessionCore& core = *entry.core;
    if (entry.queued || (entry.late && entry.ran_round == round_) ||
        core.mode() != SessionMode::kRealtime || core.state() != SessionState::kRunning ||
        !core.inRunningSegment()) {
      continue;
    }
    if (core.release() <= now) {
      heap_.push_back(i);
      std::push_heap(heap_.begin(), heap_.end(), later_);
      entry.queued = true;
    } else {
      next_release = std::min(next_release, core.release());
    }
  }
  return next_release;
}

void Worker::main() {
  {
    std::string thread_name = config_.name;
    thread_name.resize(std::min<std::size_t>(thread_name.size(), 15));  // the kernel's limit
    pthread_setname_np(pthread_self(), thread_name.c_str());
  }
  setup_report_ = applyThreadSetup(config_.thread);
  setup_done_.store(true, std::memory_order_release);
  if (config_.on_start) config_.on_start();

  std::uint32_t members_seen = membership_.load(std::memory_order_acquire) - 1;  // refresh first
  Nanoseconds idle_since = 0;
  Nanoseconds window_start = monotonicNow(), window_busy = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint32_t seen = wake_word_.load(std::memory_order_seq_cst);
    const std::uint32_t members = membership_.load(std::memory_order_acquire);
    if (members != members_seen) {
      refreshEntries();
      members_seen = members;
      acknowledged_.store(members, std::memory_order_release);
      futexWakeAll(acknowledged_);
    }
    const auto changed = [&] {
      return membership_.load(std::memory_order_relaxed) != members_seen ||
             stop_.load(std::memory_order_relaxed);
    };
    ++round_;
    Nanoseconds now = monotonicNow();
    if (now - window_start >= kUtilisationWindow) {
      utilisation_.store(static_cast<double>(window_busy) / static_cast<double>(now - window_start),
                         std::memory_order_relaxed);
      window_start = now;
      window_busy = 0;
    }

    // Which sessions run: segments begin and end here; due REALTIME cycles go on the heap.
    Nanoseconds spin = 0;  // the longest LOCKSTEP spin of the running sessions
    for (const int i : heap_) entries_[i].queued = false;  // left over when a change cut a pass
    heap_.clear();
    others_.clear();
    for (int i = 0; i < static_cast<int>(entries_.size()); ++i) {
      SessionCore& core = *entries_[i].core;
      const bool running = core.state() == SessionState::kRunning;
      if (running != core.inRunningSegment()) {
        if (running) core.enterRunning(now, firstRelease(core, now));
        else core.leaveRunning(now);
      }
      if (!running || core.mode() == SessionMode::kRealtime) continue;
      others_.push_back(i);
      if (core.mode() == SessionMode::kLockstep)
        spin = std::max(spin, core.config().lockstep_spin);
    }
    Nanoseconds next_release = queueDue(now);

    // REALTIME, earliest deadline first. A session whose last cycle missed its deadline waits
    // for the sessions in time, and runs once per round: under plain EDF its catch-up cycles,
    // always the earliest deadlines, would hold back every other session while it stays late.
    bool worked = false;
    while (!heap_.empty() && !changed()) {
      // cycles that came due since the last look join the heap (a late session's only in the
      // next round), so that the one chosen now has the earliest deadline of all that are due
      const Nanoseconds chosen = monotonicNow();
      if (chosen >= next_release) next_release = queueDue(chosen);
      std::pop_heap(heap_.begin(), heap_.end(), later_);
      Entry& entry = entries_[heap_.back()];
      heap_.pop_back();
      entry.queued = false;
      SessionCore& core = *entry.core;
      if (core.state() != SessionState::kRunning) continue;  // paused or stopped since
      const Nanoseconds deadline = core.deadline();
      if (config_.on_cycle) config_.on_cycle(core, core.release(), deadline, chosen);
      const Nanoseconds start = monotonicNow();
      core.runRealtimeCycle();
      const Nanoseconds end = monotonicNow();
      entry.ran_round = round_;
      entry.late = end > deadline;
      window_busy += end - start;
      busy_.fetch_add(end - start, std::memory_order_relaxed);
      cycles_.fetch_add(1, std::memory_order_relaxed);
      worked = true;
      // its next cycle may come due within this round (a faster rate than the others')
      if (!entry.late) next_release = std::min(next_release, core.release());
    }

    // LOCKSTEP cycles that have work, FREE cycles: what the REALTIME ones leave, one each a round
    for (const int i : others_) {
      if (changed()) break;
      SessionCore& core = *entries_[i].core;
      if (core.state() != SessionState::kRunning) continue;
      const Nanoseconds start = monotonicNow();
      bool ran = true;
      if (core.mode() == SessionMode::kLockstep) ran = core.runLockstepCycle();
      else core.runFreeCycle();
      if (!ran) continue;
      const Nanoseconds end = monotonicNow();
      window_busy += end - start;
      busy_.fetch_add(end - start, std::memory_order_relaxed);
      cycles_.fetch_add(1, std::memory_order_relaxed);
      worked = true;
    }
    if (worked) {
      rounds_.fetch_add(1, std::memory_order_seq_cst);
      if (round_waiters_.load(std::memory_order_seq_cst) > 0) futexWakeAll(rounds_);
    }
    if (worked || !heap_.empty()) {
      idle_since = 0;
      continue;
    }

    // Nothing to run. A LOCKSTEP controller answers within microseconds: spin for its
    // lockstep_spin (never past the next release) before sleeping, which saves the futex wake-up
    // on each of its commands.
    now = monotonicNow();
    if (spin > 0) {
      if (idle_since == 0) idle_since = now;
      const Nanoseconds spin_until = std::min(idle_since + spin, next_release);
      if (now < spin_until) {
        while (wake_word_.load(std::memory_order_acquire) == seen && monotonicNow() < spin_until)
          cpuRelax();
        continue;
      }
    }
    sleeping_.store(true, std::memory_order_seq_cst);
    if (wake_word_.load(std::memory_order_seq_cst) == seen) {
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      futexWaitUntil(wake_word_, seen, next_release == kNever ? now + kIdlePoll : next_release);
    }
    sleeping_.store(false, std::memory_order_relaxed);
    idle_since = 0;
  }
  acknowledged_.store(membership_.load(std::memory_order_acquire), std::memory_order_release);
  futexWakeAll(acknowledged_);
}

}  // namespace hilsim::rt
