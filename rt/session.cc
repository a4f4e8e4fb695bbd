#include "rt/session.h"

#include <spdlog/spdlog.h>

#include <cassert>

#include "rt/futex.h"
#include "rt/worker_set.h"

namespace hilsim::rt {

Session::Session(SessionConfig config, EventLogger* events, WorkerSet* workers)
    : SessionCore(std::move(config), events) {
  // A parallel formulation's pool spins its helper threads between passes: such a session runs
  // on a thread of its own, never among a worker's sessions.
  if (config_.mode == SessionMode::kLockstep) {
    measureCycleCost();  // what a request's cycles will cost, before any has run
  }
  if (workers != nullptr && !config_.dedicated_thread && config_.threads == 1) {
    if (cycleCost() == 0) measureCycleCost();
    shared_ = workers->place(*this);  // throws AdmissionError
    worker_index_.store(shared_->index(), std::memory_order_relaxed);
    setRunner(shared_);
  }
}

Session::~Session() {
  stop();  // leaves the worker
  std::lock_guard lock(control_mutex_);
  if (shared_ != nullptr) shared_->unassign(*this);
  setRunner(nullptr);
  dedicated_.reset();  // joins its thread
}

std::string Session::failReason() const {
  std::lock_guard lock(control_mutex_);
  return fail_reason_;
}

std::vector<SetupStep> Session::setupReport() const {
  std::lock_guard lock(control_mutex_);
  if (dedicated_) return dedicated_->setupReport();
  if (shared_ != nullptr) return shared_->setupReport();
  return {};
}

void Session::attach() {
  if (attached_) return;
  Worker* worker = shared_;
  if (worker == nullptr) {
    if (!dedicated_) {
      WorkerConfig dedicated;
      dedicated.name = "rt-" + config_.name;
      dedicated.thread = config_.thread;
      // a parallel session's own thread is one of its pool's: on the CPUs its helpers are
      // pinned to as well (the server's rt.workers.cpus), the one after theirs (WorkerPool pins
      // helper w to pool_cpus[(w − 1) mod n]), unless the session names a CPU of its own
      if (config_.threads > 1 && dedicated.thread.cpu < 0 && !config_.pool_cpus.empty()) {
        const std::size_t own = static_cast<std::size_t>(config_.threads - 1);
        dedicated.thread.cpu = config_.pool_cpus[own % config_.pool_cpus.size()];
      }
      dedicated.capacity = 1;
      dedicated.align_releases = false;
      dedicated.on_start = config_.on_rt_thread_start;
      dedicated_ = std::make_unique<Worker>(std::move(dedicated));
      setRunner(dedicated_.get());
    }
    worker = dedicated_.get();
  }
  // a shared worker's slots were sized for its assigned sessions: attaching cannot fail
  const bool attached = worker->attach(*this);
  (void)attached;
  assert(attached);
  attached_ = true;
}

void Session::detach() {
  if (!attached_) return;
  Worker* worker = shared_ != nullptr ? shared_ : dedicated_.get();
  worker->detach(*this);
  attached_ = false;
  // The worker is done with the core: this thread finishes its running segment.
  if (inRunningSegment()) leaveRunning(monotonicNow());
  // waiters see that the session no longer runs
  published_.fetch_add(1, std::memory_order_release);
  futexWakeAll(published_);
}

bool Session::start() {
  std::lock_guard lock(control_mutex_);
  const SessionState now = state();
  if (now == SessionState::kPaused) {
    const bool ok = transition(SessionState::kPaused, SessionState::kRunning);
    wakeRunner();
    if (!ok) setFailReason("the session faulted while paused");
    return ok;
  }
  if (now != SessionState::kCreated) {
    setFailReason("cannot start a " + std::string(sessionStateName(now)) + " session" +
                  (now == SessionState::kFaulted || now == SessionState::kStopped
                       ? "; reset it first"
                       : ""));
    return false;
  }
  attach();
  transition(SessionState::kCreated, SessionState::kRunning);
  wakeRunner();
  return true;
}

bool Session::pause() {
  std::lock_guard lock(control_mutex_);
  if (!transition(SessionState::kRunning, SessionState::kPaused)) {
    setFailReason("cannot pause a " + std::string(sessionStateName(state())) + " session");
    return false;
  }
  wakeRunner();
  return true;
}

bool Session::resume() {
  std::lock_guard lock(control_mutex_);
  if (state() != SessionState::kPaused) {
    setFailReason("cannot resume a " + std::string(sessionStateName(state())) + " session");
    return false;
  }
  const bool ok = transition(SessionState::kPaused, SessionState::kRunning);
  wakeRunner();
  return ok;
}

bool Session::stop() {
  std::lock_guard lock(control_mutex_);
  const SessionState now = state();
  if (now == SessionState::kStopped || now == SessionState::kFaulted) {
    if (now == SessionState::kStopped) setFailReason("the session is already stopped");
    else setFailReason("the session is faulted; reset it");
  } else if (!transition(now, SessionState::kStopped)) {
    setFailReason("the session changed state during stop");
  }
  detach();
  return state() == SessionState::kStopped;
}

void Session::reset() { reset(q0_, v0_); }

bool Session::reset(const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  const Model& m = *config_.model;
  std::lock_guard lock(control_mutex_);
  if (q.size() != m.nq || v.size() != m.nv || !q.allFinite() || !v.allFinite()) {
    setFailReason("reset needs nq = " + std::to_string(m.nq) + " and nv = " +
                  std::to_string(m.nv) + " finite numbers");
    return false;
  }
  detach();
  // No worker runs the core: this thread is now the only consumer of the command channel and
  // the only producer of the state buffer.
  Command discarded;
  while (commands_.tryPop(discarded)) {
  }
  step_budget_.store(0);
  drop_requested_.store(false);
  retired_cycles_.store(requested_cycles_.load());
  restoreInitialState(q, v);
  const SessionState before = state_.exchange(SessionState::kCreated);
  spdlog::info("{}: reset ({} → created)", config_.name, sessionStateName(before));
  return true;
}

}  // namespace hilsim::rt
