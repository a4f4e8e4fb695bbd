// The calls of SimulationService that outlive their handler (grpc_service.cc): their reactors,
// which gRPC keeps until it is done with them and the session's publisher feeds.
#include "server/grpc_reactors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <mutex>

#include <spdlog/spdlog.h>

#include "rt/clock.h"
#include "rt/futex.h"
#include "server/conversions.h"
#include "server/grpc_status.h"

namespace hilsim::server {

std::string describeRejection(Rejection rejection, const v1::Command& command,
                              std::uint64_t newest, const ServerSession& session) {
  const int nv = session.nv();
  switch (rejection) {
    case Rejection::kMalformed: return "command sequence 0: sequences start at 1";
    case Rejection::kUnknownSession:
      return "command for session " + std::to_string(command.session_id()) +
             " on a stream bound to another session";
    case Rejection::kStale:
    case Rejection::kDuplicate:
      return "command sequence " + std::to_string(command.sequence()) +
             " is not above the newest accepted (" + std::to_string(newest) + ")";
    case Rejection::kWrongSize: {
      const auto count = [nv](const char* name, int size) {
        return std::string(name) + " has " + std::to_string(size) +
               " values; expected none or nv = " + std::to_string(nv);
      };
      switch (session.checkShape(command)) {
        case CommandShape::kTauSize: return count("tau", command.tau_size());
        case CommandShape::kPositionSize: return count("position", command.position_size());
        case CommandShape::kVelocitySize: return count("velocity", command.velocity_size());
        case CommandShape::kPositionUnread:
          return "position: no joint of this session has a position interface "
                 "(SessionConfig.drives)";
        case CommandShape::kVelocityUnread:
          return "velocity: no joint of this session has a position or velocity interface "
                 "(SessionConfig.drives)";
        case CommandShape::kPositionMissing:
          return "position: the session has joints with a position interface; every command "
                 "but a sync carries nv positions";
        case CommandShape::kVelocityMissing:
          return "velocity: the session has joints with a velocity interface; every command "
                 "but a sync carries nv velocities";
        default: break;
      }
      if (!session.modelInfo().floating_base()) {
        return "base_wrench: the model has no floating base to push (its first joint is not a "
               "free joint)";
      }
      return "base_wrench has " + std::to_string(command.base_wrench_size()) +
             " values; expected none or 6 (force, then torque, in the world frame)";
    }
    case Rejection::kNonFinite: {
      for (int i = 0; i < command.tau_size(); ++i) {
        if (!std::isfinite(command.tau(i))) return "tau[" + std::to_string(i) + "] is not finite";
      }
      for (int i = 0; i < command.position_size(); ++i) {
        if (!std::isfinite(command.position(i)))
          return "position[" + std::to_string(i) + "] is not finite";
      }
      for (int i = 0; i < command.velocity_size(); ++i) {
        if (!std::isfinite(command.velocity(i)))
          return "velocity[" + std::to_string(i) + "] is not finite";
      }
      for (int i = 0; i < command.base_wrench_size(); ++i) {
        if (!std::isfinite(command.base_wrench(i)))
          return "base_wrench[" + std::to_string(i) + "] is not finite";
      }
      return "a set-point is not finite";
    }
    case Rejection::kTooManySteps:
      return "command steps = " + std::to_string(command.steps()) + ": this server runs at most " +
             std::to_string(session.maxStepCycles()) +
             " cycles per command (limits.max_step_cycles); split the request";
    case Rejection::kTooCostly:
    case Rejection::kOverBudget: {
      const std::uint64_t cycles = isSync(command)
                                       ? command.steps()
                                       : std::max<std::uint64_t>(1, command.steps());
      const double cycle_ms = session.cpuSeconds(1) * 1e3;
      char text[400];
      if (rejection == Rejection::kTooCostly) {
        std::snprintf(text, sizeof text,
                      "command steps = %llu would take %.3g s of CPU time (%.3g ms a cycle, as "
                      "measured): this server runs at most %.3g s per request "
                      "(limits.max_request_cpu_s); split the request",
                      static_cast<unsigned long long>(cycles), session.cpuSeconds(cycles), cycle_ms,
                      session.maxRequestCpu());
      } else {
        std::snprintf(text, sizeof text,
                      "the session's queued work, %llu cycles, with this command's %llu would take "
                      "%.3g s of CPU time (%.3g ms a cycle): this server queues at most %.3g s "
                      "per session (limits.max_queued_cpu_s); wait for the answers",
                      static_cast<unsigned long long>(session.session().queuedCycles()),
                      static_cast<unsigned long long>(cycles),
                      session.cpuSeconds(session.session().queuedCycles() + cycles), cycle_ms,
                      session.maxQueuedCpu());
      }
      return text;
    }
    default: return std::string(rejectionName(rejection));
  }
}

namespace {

using grpc::Status;
using grpc::StatusCode;

// ---------------------------------------------------------------------------------------------
// Step: a unary call answered by the session's publisher once the requested cycles have run.

class StepReactor final : public grpc::ServerUnaryReactor, public StateSink {
 public:
  StepReactor(std::shared_ptr<ServerSession> session, v1::State* response, std::uint64_t target,
              std::uint64_t drops_before)
      : session_(std::move(session)), response_(response), target_(target) {
    session_->addSink(this);
    // work dropped between the command's queueing and now would never reach this sink
    if (session_->workDrops() != drops_before) {
      onWorkDropped("another caller's call ended while this one was queued");
      return;
    }
    // The cycles may have run already: the publisher hands a new sink the current state only
    // on its next pass.
    rt::StateSnapshot now = session_->session().latestState();
    now.state = session_->session().state();
    onState(now, false);
  }

  void onState(const rt::StateSnapshot& state, bool) override {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    if (state.state == rt::SessionState::kFaulted) {
      finishLocked({StatusCode::ABORTED, session_->session().stats().fault});
    } else if (state.cycle >= target_) {
      session_->toState(state, response_);
      response_->set_send_time_ns(rt::monotonicNow());
      finishLocked(Status::OK);
    } else if (state.state != rt::SessionState::kRunning) {
      finishLocked(transitionFailed(sessionLabel(session_->id()) + " left RUNNING (" +
                                    std::string(rt::sessionStateName(state.state)) +
                                    ") before the steps ran"));
    }
  }
  void onClosed() override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::CANCELLED, "session closed"});
  }
  void onWorkDropped(const char* why) override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::ABORTED, std::string("the session's queued cycles were dropped: ") +
                                           why + "; the state is as GetSession shows it"});
  }
  // A deadline that passes cancels the call too: its cycles (and any queued behind them) are
  // dropped rather than run for nobody.
  void OnCancel() override {
    bool waiting = false;
    {
      std::lock_guard lock(mutex_);
      waiting = !finished_;
      finishLocked({StatusCode::CANCELLED, "call cancelled"});
    }
    if (waiting) session_->dropQueuedWork("a Step call was cancelled or passed its deadline");
  }
  void OnDone() override {
    session_->removeSink(this);
    delete this;
  }

 private:
  void finishLocked(const Status& status) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  std::shared_ptr<ServerSession> session_;
  v1::State* response_;
  const std::uint64_t target_;
  std::mutex mutex_;
  bool finished_ = false;
};

// ---------------------------------------------------------------------------------------------
// State writes shared by the Control and StreamStates reactors: one write in flight, newest
// wins; a state that arrives while a write is in flight replaces the one waiting (counted as
// skipped).

template <typename Reactor>
class StateWriter {
 public:
  explicit StateWriter(Reactor* reactor) : reactor_(reactor) {}

  // Caller holds the reactor's mutex.
  // `ground_truth`: the simulated truth rather than the session's sensor readings.
  void offer(ServerSession& session, const rt::StateSnapshot& state, TransportCounters* counters,
             bool ground_truth = false) {
    if (writing_) {
      if (has_pending_ && counters) counters->states_skipped.fetch_add(1, std::memory_order_relaxed);
      session.toState(state, &pending_, ground_truth);
      has_pending_ = true;
      return;
    }
    session.toState(state, &in_flight_, ground_truth);
    start(counters);
  }
  void offer(const v1::State& state, TransportCounters* counters) {
    if (writing_) {
      if (has_pending_ && counters) counters->states_skipped.fetch_add(1, std::memory_order_relaxed);
      pending_ = state;
      has_pending_ = true;
      return;
    }
    in_flight_ = state;
    start(counters);
  }
  // OnWriteDone: the next pending state, if any. Returns whether a write is in flight.
  bool next(TransportCounters* counters) {
    writing_ = false;
    if (!has_pending_) return false;
    in_flight_.Swap(&pending_);
    has_pending_ = false;
    start(counters);
    return true;
  }
  bool writing() const { return writing_; }

 private:
  void start(TransportCounters* counters) {
    in_flight_.set_send_time_ns(rt::monotonicNow());
    writing_ = true;
    if (counters) counters->states_sent.fetch_add(1, std::memory_order_relaxed);
    reactor_->StartWrite(&in_flight_);
  }

  Reactor* reactor_;
  v1::State in_flight_;
  v1::State pending_;
  bool has_pending_ = false;
  bool writing_ = false;
};

// ---------------------------------------------------------------------------------------------
// Control: the controller's bidirectional stream.

class ControlReactor final : public grpc::ServerBidiReactor<v1::Command, v1::State>,
                             public StateSink {
 public:
  ControlReactor(SessionRegistry& registry, Status admitted, OwnerCheck may_drive)
      : registry_(registry), may_drive_(std::move(may_drive)), writer_(this) {
    if (!admitted.ok()) {
      std::lock_guard lock(mutex_);
      finishLocked(admitted);
      return;
    }
    StartRead(&command_);
  }

  void OnReadDone(bool ok) override {
    const rt::Nanoseconds receive_time = rt::monotonicNow();
    std::lock_guard lock(mutex_);
    if (finish_requested_) return;
    if (!ok) {  // the client half-closed: done (queued commands still run)
      finishLocked(Status::OK);
      return;
    }
    if (!session_) {
      if (!bind()) return;
    }
    TransportCounters& counters = session_->grpcCounters();
    counters.received.fetch_add(1, std::memory_order_relaxed);
    Rejection outcome = Rejection::kNone;
    if (command_.session_id() != session_->id()) {
      outcome = Rejection::kUnknownSession;
    } else if (command_.sequence() == 0) {
      outcome = Rejection::kMalformed;
    } else {
      outcome = gate_.check(command_.sequence());
    }
    if (outcome == Rejection::kNone) outcome = session_->submit(command_, receive_time);
    counters.count(outcome);
    switch (outcome) {
      case Rejection::kNone: break;
      case Rejection::kInactive:
      case Rejection::kDropped:
      case Rejection::kOverBudget:
        // Not the controller's fault: the stream stays (a stop ends it with its last state).
        StartRead(&command_);
        return;
      default:
        finishLocked(invalid(describeRejection(outcome, command_, gate_.newest(), *session_)));
        return;
    }
    gate_.accept(command_.sequence());

    const bool lockstep = session_->mode() == rt::SessionMode::kLockstep;
    if (isSync(command_)) {
      if (lockstep && command_.steps() > 0) {
        // A step request: answered by the state after the last of its cycles.
        sync_target_ = std::max(sync_target_, session_->session().publishedCycle()) +
                       command_.steps();
        session_->session().requestSteps(command_.steps());
      } else {
        // the newest state, unless an injected fault withholds it (offer checks)
        direct_ = session_->session().latestState();
        direct_.state = session_->session().state();
        offer(direct_, &counters);
      }
    } else if (lockstep) {
      pending_.push_back(command_.sequence());
      answerDirectly(counters);
    }
    // Lockstep back-pressure: with the command channel full of unanswered commands the next
    // read waits for an answer, so gRPC flow control holds the controller back.
    if (!lockstep || pending_.size() < capacity_) {
      StartRead(&command_);
    } else {
      read_paused_ = true;
    }
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mutex_);
    if (!ok) {  // the client went away
      finishLocked({StatusCode::CANCELLED, "stream broken"});
      return;
    }
    if (finish_requested_) return;  // nothing is written after Finish
    TransportCounters* counters = session_ ? &session_->grpcCounters() : nullptr;
    if (!writer_.next(counters) && finish_after_write_) finishLocked(final_status_);
  }

  void onState(const rt::StateSnapshot& state, bool state_changed) override {
    std::lock_guard lock(mutex_);
    if (finish_requested_ || finish_after_write_) return;
    // The publisher's first call to a new sink says "changed" without a change: only a state that
    // differs from the one seen before is a life-cycle change.
    const bool changed = state_changed && state.state != seen_state_;
    seen_state_ = state.state;
    TransportCounters* counters = &session_->grpcCounters();
    bool send = false;
    switch (session_->mode()) {
      case rt::SessionMode::kRealtime:
      case rt::SessionMode::kFree:
        send = true;
        break;
      case rt::SessionMode::kLockstep: {
        bool answered = false;
        if (state.command_steps_left == 0) {
          while (!pending_.empty() && pending_.front() <= state.command_sequence) {
            pending_.pop_front();
            answered = true;
          }
        }
        if (sync_target_ != 0 && state.cycle >= sync_target_) {
          sync_target_ = 0;
          answered = true;
        }
        send = answered || changed;
        if (read_paused_ && pending_.size() < capacity_) {
          read_paused_ = false;
          StartRead(&command_);
        }
        break;
      }
    }
    if (state.state == rt::SessionState::kCreated && changed) {
      // A reset: commands waiting for an answer were discarded with the channel.
      pending_.clear();
      sync_target_ = 0;
    }
    // Never the same state twice in a row (e.g. one a direct answer or a sync reply sent first).
    if (send && !(has_sent_ && state.cycle == sent_cycle_ && toProto(state.state) == sent_state_)) {
      offer(state, counters);
    }
    if (changed && state.state == rt::SessionState::kStopped) {
      endAfterWrite(Status::OK);
    } else if (changed && state.state == rt::SessionState::kFaulted) {
      endAfterWrite({StatusCode::ABORTED, session_->session().stats().fault});
    }
  }

  // Every state written goes through one of these two, which remember it.
  void offer(const rt::StateSnapshot& state, TransportCounters* counters) {
    // an injected fault lost it on its way (SessionStats.faults.states_withheld counts it)
    if (state.withheld && state.state == rt::SessionState::kRunning) return;
    has_sent_ = true;
    sent_cycle_ = state.cycle;
    sent_state_ = toProto(state.state);
    writer_.offer(*session_, state, counters);
  }
  void offer(const v1::State& state, TransportCounters* counters) {
    has_sent_ = true;
    sent_cycle_ = state.cycle();
    sent_state_ = state.state();
    writer_.offer(state, counters);
  }

  void onClosed() override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::CANCELLED, "session closed"});
  }

  void OnCancel() override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::CANCELLED, "call cancelled"});
  }

  void OnDone() override {
    if (session_) {
      session_->removeSink(this);
      // LOCKSTEP: what the stream queued is nobody's once it ends (half-closed, cancelled,
      // broken): dropped, not run
      if (bound_) session_->dropQueuedWork("its Control stream ended");
    }
    delete this;
  }

 private:
  // LOCKSTEP: the cycle of a command usually ends within microseconds. This reaction watches for
  // it for up to lockstep_spin and writes the answer itself, which saves the publisher's wake-up;
  // a longer cycle is answered by the publisher (pending_ keeps a state from going out twice).
  // Bounded, so the reaction stays short.
  void answerDirectly(TransportCounters& counters) {
    const rt::Session& session = session_->session();
    const rt::Nanoseconds until = rt::monotonicNow() + session.config().lockstep_spin;
    std::uint64_t looked_at = ~std::uint64_t{0};
    while (!pending_.empty()) {
      const std::uint64_t cycle = session.publishedCycle();
      if (cycle != looked_at) {
        looked_at = cycle;
        direct_ = session_->session().latestState();
        if (direct_.command_steps_left == 0 && direct_.command_sequence >= pending_.front()) {
          while (!pending_.empty() && pending_.front() <= direct_.command_sequence) {
            pending_.pop_front();
          }
          direct_.state = session.state();
          offer(direct_, &counters);
          return;
        }
      }
      if (rt::monotonicNow() >= until) return;
      rt::cpuRelax();
    }
  }

  // The first message names the session; the stream serves it until the end.
  bool bind() {
    std::shared_ptr<ServerSession> session = registry_.find(command_.session_id());
    if (!session) {
      finishLocked({StatusCode::NOT_FOUND,
                    "no session " + std::to_string(command_.session_id()) + " (unknown or closed)"});
      return false;
    }
    if (Status allowed = may_drive_(*session); !allowed.ok()) {
      finishLocked(allowed);
      return false;
    }
    const rt::SessionState state = session->session().state();
    if (state == rt::SessionState::kStopped || state == rt::SessionState::kFaulted) {
      finishLocked(transitionFailed(sessionLabel(session->id()) + " is " +
                                    std::string(rt::sessionStateName(state)) + ": reset it first"));
      return false;
    }
    if (!session->claimControlStream()) {
      finishLocked(transitionFailed(sessionLabel(session->id()) +
                                    " already has a Control stream (one controller at a time)"));
      return false;
    }
    claimed_ = true;
    bound_ = true;
    seen_state_ = state;
    session_ = std::move(session);
    capacity_ = std::max<std::size_t>(1, session_->effectiveConfig().command_capacity());
    session_->addSink(this);
    return true;
  }

  void endAfterWrite(const Status& status) {
    if (writer_.writing()) {
      finish_after_write_ = true;
      final_status_ = status;
    } else {
      finishLocked(status);
    }
  }

  void finishLocked(const Status& status) {
    if (finish_requested_) return;
    finish_requested_ = true;
    // Released now, not in OnDone: a client that sees this stream end may open the next one at
    // once. Nothing is sent after this point.
    if (claimed_) session_->releaseControlStream();
    claimed_ = false;
    Finish(status);
  }

  SessionRegistry& registry_;
  OwnerCheck may_drive_;
  std::mutex mutex_;
  v1::Command command_;
  std::shared_ptr<ServerSession> session_;
  SequenceGate gate_;
  StateWriter<ControlReactor> writer_;
  std::deque<std::uint64_t> pending_;  // lockstep: accepted commands not answered yet
  rt::StateSnapshot direct_;           // lockstep: the state answerDirectly looks at
  rt::SessionState seen_state_ = rt::SessionState::kCreated;  // as of the last onState
  bool has_sent_ = false;              // the state written last: cycle and life-cycle state
  std::uint64_t sent_cycle_ = 0;
  v1::SessionState sent_state_ = v1::SESSION_STATE_UNSPECIFIED;
  std::size_t capacity_ = 64;
  std::uint64_t sync_target_ = 0;      // lockstep: cycle that answers a step request
  bool read_paused_ = false;
  bool claimed_ = false;
  bool bound_ = false;  // a session was bound (its work is the stream's)
  bool finish_requested_ = false;
  bool finish_after_write_ = false;
  Status final_status_;
};

// ---------------------------------------------------------------------------------------------
// StreamStates: a read-only feed.

class StateStreamReactor final : public grpc::ServerWriteReactor<v1::State>, public StateSink {
 public:
  // `session`: one of whose readers (claimReader) this stream is.
  StateStreamReactor(std::shared_ptr<ServerSession> session, std::uint32_t decimation,
                     bool ground_truth, std::string client)
      : session_(std::move(session)),
        client_(std::move(client)),
        decimation_(std::max(1u, decimation)),
        ground_truth_(ground_truth),
        writer_(this) {
    claimed_ = true;
    session_->addSink(this);
  }
  StateStreamReactor(const Status& status) : writer_(this) {
    finished_ = true;
    Finish(status);
  }

  void onState(const rt::StateSnapshot& state, bool changed) override {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    const bool due = !sent_any_ || state.cycle < last_sent_cycle_ ||
                     state.cycle - last_sent_cycle_ >= decimation_;
    if (!(changed || due)) return;
    sent_any_ = true;
    last_sent_cycle_ = state.cycle;
    writer_.offer(*session_, state, nullptr, ground_truth_);
  }
  void onClosed() override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::CANCELLED, "session closed"});
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mutex_);
    if (!ok) {
      finishLocked({StatusCode::CANCELLED, "stream broken"});
      return;
    }
    if (finished_) return;  // nothing is written after Finish
    writer_.next(nullptr);
  }
  void OnCancel() override {
    std::lock_guard lock(mutex_);
    finishLocked({StatusCode::CANCELLED, "call cancelled"});
  }
  void OnDone() override {
    if (session_) {
      session_->removeSink(this);
      if (claimed_) release();
    }
    delete this;
  }

 private:
  void finishLocked(const Status& status) {
    if (finished_) return;
    finished_ = true;
    // released now, not in OnDone: a reader that sees this stream end may open the next at once
    if (claimed_) release();
    claimed_ = false;
    Finish(status);
  }
  void release() {
    session_->releaseReader();
    session_->releaseClientReader(client_);
  }

  std::shared_ptr<ServerSession> session_;
  const std::string client_;
  bool claimed_ = false;
  const std::uint32_t decimation_ = 1;
  const bool ground_truth_ = false;
  StateWriter<StateStreamReactor> writer_;
  std::mutex mutex_;
  bool finished_ = false;
  bool sent_any_ = false;
  std::uint64_t last_sent_cycle_ = 0;
};

}  // namespace

grpc::ServerUnaryReactor* newStepReactor(std::shared_ptr<ServerSession> session, v1::State* response,
                                         std::uint64_t target, std::uint64_t drops_before) {
  return new StepReactor(std::move(session), response, target, drops_before);
}

grpc::ServerBidiReactor<v1::Command, v1::State>* newControlReactor(SessionRegistry& registry,
                                                                   grpc::Status admitted,
                                                                   OwnerCheck may_drive) {
  return new ControlReactor(registry, std::move(admitted), std::move(may_drive));
}

grpc::ServerWriteReactor<v1::State>* newStateStreamReactor(const grpc::Status& refusal) {
  return new StateStreamReactor(refusal);
}

grpc::ServerWriteReactor<v1::State>* newStateStreamReactor(std::shared_ptr<ServerSession> session,
                                                           std::uint32_t decimation,
                                                           bool ground_truth,
                                                           std::string client) {
  return new StateStreamReactor(std::move(session), decimation, ground_truth, std::move(client));
}

}  // namespace hilsim::server
