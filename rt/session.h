// Session: one simulated robot in its real-time loop — a SessionCore (rt/session_core.h) and the
// Worker that runs it: a shared one of a WorkerSet, many sessions on one thread, or a thread of
// its own (docs/REALTIME.md, "Workers").
#pragma once

#include <Eigen/Core>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rt/realtime_setup.h"
#include "rt/session_core.h"
#include "rt/worker.h"

namespace hilsim::rt {

class WorkerSet;

/// The WorkerSet has no worker that can take the session: every one would pass its utilisation
/// bound (the message gives the measured loads), or every one is full.
class AdmissionError : public SessionError {
 public:
  using SessionError::SessionError;
};

class Session : public SessionCore {
 public:
  /// Validates the configuration (throws SessionError) and prepares every buffer. With
  /// `workers` (config.dedicated_thread false, one thread per evaluation) the session measures
  /// its cycle cost and goes to the least-loaded worker (throws AdmissionError when none can take
  /// it); otherwise it gets a thread of its own at its first start.
  explicit Session(SessionConfig config, EventLogger* events = &EventLogger::global(),
                   WorkerSet* workers = nullptr);
  ~Session();  ///< stops the session, leaves its worker
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Control, from any non-RT thread. Each returns false (and changes nothing) when the
  // transition is not allowed from the current state; failReason() then says why.
  bool start();   ///< created → running; paused → running
  bool pause();   ///< running → paused (the worker finishes the cycle it is in)
  bool resume();  ///< paused → running
  /// created, running, paused → stopped; returns once no cycle of the session runs.
  bool stop();
  /// Any state → created: stops the session, restores the initial state (or the given one),
  /// clears the fault, the watchdog and the timing statistics.
  void reset();
  bool reset(const Eigen::VectorXd& q, const Eigen::VectorXd& v);

  /// Why the last control call failed.
  std::string failReason() const;
  /// Set-up steps of the thread that runs the session, once it has started (empty before).
  std::vector<SetupStep> setupReport() const;
  /// The shared worker that runs the session, or nullptr (a dedicated thread).
  const Worker* sharedWorker() const { return shared_; }

 private:
  // Hands the core to its worker (a dedicated one is created at the first start).
  void attach();
  // Takes the core from its worker: when it returns, no cycle runs and none will.
  void detach();
  void setFailReason(std::string reason) { fail_reason_ = std::move(reason); }

  Worker* shared_ = nullptr;
  std::unique_ptr<Worker> dedicated_;
  bool attached_ = false;
  mutable std::mutex control_mutex_;  // start/pause/resume/stop/reset
  std::string fail_reason_;
};

}  // namespace hilsim::rt
