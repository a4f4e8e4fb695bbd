#include "server/server_session.h"

#include <sodium.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "server/conversions.h"
#include "server/state_publisher.h"

namespace hilsim::server {

namespace {

// How long the publisher waits for a cycle before it looks at the session's state again: bounds
// the delay of a state change made by the RT thread itself (a fault) reaching the sinks.
constexpr rt::Nanoseconds kPublisherPoll = 20'000'000;

}  // namespace

ServerSession::ServerSession(std::uint64_t id, rt::SessionConfig config, v1::ModelInfo model_info,
                             v1::SessionConfig effective_config, const Token& udp_token,
                             rt::EventLogger* events, std::shared_ptr<SharedWorkers> shared)
    : id_(id),
      name_(config.name),
      model_info_(std::move(model_info)),
      effective_config_(std::move(effective_config)),
      udp_token_(udp_token),
      shared_(std::move(shared)),
      session_(std::make_unique<rt::Session>(std::move(config), events,
                                             shared_ ? &shared_->workers : nullptr)) {
  if (const rt::Worker* worker = session_->sharedWorker())
    shared_publisher_ = shared_->publishers[static_cast<std::size_t>(worker->index())].get();
  extras_ = stateExtras(session_->model());
  snapshot_ = session_->latestState();
  last_state_ = session_->state();
  last_cycle_ = snapshot_.cycle;
  last_publish_ = snapshot_.publish_time;
  if (shared_publisher_ != nullptr) shared_publisher_->add(this);
  else publisher_ = std::thread([this] { publisherMain(); });
}

ServerSession::~ServerSession() {
  close();
  sodium_memzero(udp_token_.data(), udp_token_.size());  // the key zeroes itself
}

bool ServerSession::start(std::string* why) {
  // a caller that found the session just before it was closed must not bring it back
  if (closed()) {
    if (why) *why = "the session is closed";
    return false;
  }
  const rt::SessionState now = session_->state();
  bool ok = false;
  if (now == rt::SessionState::kPaused) {
    ok = session_->resume();
  } else if (now == rt::SessionState::kCreated) {
    ok = session_->start();
  } else {
    if (why) {
      *why = "session " + std::to_string(id_) + " is " +
             std::string(rt::sessionStateName(now)) +
             (now == rt::SessionState::kRunning ? "" : ": reset it first");
    }
    return false;
  }
  if (!ok && why) *why = session_->failReason();
  notifyPublisher();
  return ok;
}

bool ServerSession::pause(std::string* why) {
  const bool ok = session_->pause();
  if (!ok && why) *why = session_->failReason();
  notifyPublisher();
  return ok;
}

bool ServerSession::stop(std::string* why) {
  const bool ok = session_->stop();
  if (!ok && why) *why = session_->failReason();
  notifyPublisher();
  return ok;
}

void ServerSession::reset(const std::optional<Eigen::VectorXd>& q,
                          const std::optional<Eigen::VectorXd>& v) {
  if (closed()) return;  // as start(): a closed session stays stopped
  if (q || v) {
    const Eigen::VectorXd q0 = q ? *q : session_->config().initial_q.value_or(
                                            session_->model().initialConfiguration());
    const Eigen::VectorXd v0 =
        v ? *v : session_->config().initial_v.value_or(Eigen::VectorXd::Zero(nv()));
    session_->reset(q0, v0);
  } else {
    session_->reset();
  }
  {
    std::lock_guard lock(step_mutex_);
    step_target_ = 0;
  }
  notifyPublisher();
}

CommandShape ServerSession::checkShape(const v1::Command& command) const {
  const int n = nv();
  const auto sized = [n](int size) { return size == 0 || size == n; };
  if (!sized(command.tau_size())) return CommandShape::kTauSize;
  if (!sized(command.position_size())) return CommandShape::kPositionSize;
  if (!sized(command.velocity_size())) return CommandShape::kVelocitySize;
  const rt::JointDrives& drives = session_->drives();
  if (command.position_size() != 0 && !drives.anyPosition()) return CommandShape::kPositionUnread;
  if (command.velocity_size() != 0 && !drives.anyPosition() && !drives.anyVelocity()) {
    return CommandShape::kVelocityUnread;
  }
  if (!isSync(command)) {
    if (drives.anyPosition() && command.position_size() == 0) return CommandShape::kPositionMissing;
    if (drives.anyVelocity() && command.velocity_size() == 0) return CommandShape::kVelocityMissing;
  }
  const int pushes = command.base_wrench_size();
  if (pushes != 0 && (pushes != 6 || !model_info_.floating_base())) return CommandShape::kBaseWrench;
  return CommandShape::kNone;
}

Rejection ServerSession::submit(const v1::Command& command, rt::Nanoseconds receive_time) {
  if (checkShape(command) != CommandShape::kNone) return Rejection::kWrongSize;
  const auto finite = [](const auto& values) {
    return std::all_of(values.begin(), values.end(), [](double x) { return std::isfinite(x); });
  };
  if (!finite(command.tau()) || !finite(command.position()) || !finite(command.velocity()) ||
      !finite(command.base_wrench())) {
    return Rejection::kNonFinite;
  }
  // Bounded work per request: steps are cycles the RT thread runs back to back (other modes
  // ignore them).
  if (mode() == rt::SessionMode::kLockstep) {
    if (command.steps() > maxStepCycles()) return Rejection::kTooManySteps;
    // ... and cost CPU time: bounded per request and per session's queue, before any is queued
    const std::uint64_t cycles =
        isSync(command) ? command.steps() : std::max<std::uint64_t>(1, command.steps());
    if (const Rejection over = checkBudget(cycles); over != Rejection::kNone) return over;
  }
  const rt::SessionState now = session_->state();
  if (now == rt::SessionState::kStopped || now == rt::SessionState::kFaulted) {
    return Rejection::kInactive;
  }
  if (isSync(command)) return Rejection::kNone;  // checked, never queued

  rt::Command queued;
  queued.sequence = command.sequence();
  queued.client_send_time = command.client_send_time_ns();
  queued.receive_time = receive_time;
  queued.steps = command.steps();
  queued.nv = nv();
  // an empty array stays zeros: no torque, no feed-forward
  std::copy(command.tau().begin(), command.tau().end(), queued.tau.begin());
  std::copy(command.position().begin(), command.position().end(), queued.position.begin());
  std::copy(command.velocity().begin(), command.velocity().end(), queued.velocity.begin());
  std::copy(command.base_wrench().begin(), command.base_wrench().end(),
            queued.base_wrench.begin());
  if (session_->pushCommand(queued)) return Rejection::kNone;
  // pushCommand refuses a full channel, or a session that stopped or faulted since the check.
  const rt::SessionState after = session_->state();
  if (after == rt::SessionState::kStopped || after == rt::SessionState::kFaulted) {
    return Rejection::kInactive;
  }
  return Rejection::kDropped;
}

double ServerSession::cpuSeconds(std::uint64_t cycles) const {
  return static_cast<double>(cycles) * static_cast<double>(session_->cycleCost()) * 1e-9;
}

Rejection ServerSession::checkBudget(std::uint64_t cycles) const {
  if (mode() != rt::SessionMode::kLockstep || cycles == 0) return Rejection::kNone;
  if (cpuSeconds(cycles) > max_request_cpu_s_) return Rejection::kTooCostly;
  if (cpuSeconds(session_->queuedCycles() + cycles) > max_queued_cpu_s_) {
    return Rejection::kOverBudget;
  }
  return Rejection::kNone;
}

void ServerSession::dropQueuedWork(const char* why) {
  // Nothing queued, nothing to drop: a drop request would stay pending until the runner's next
  // look and take whatever another caller queued meanwhile (a controller that reconnects at once)
  if (mode() != rt::SessionMode::kLockstep || session_->queuedCycles() == 0) return;
  session_->dropQueuedWork();
  work_drops_.fetch_add(1, std::memory_order_acq_rel);
  {
    std::lock_guard lock(step_mutex_);
    step_target_ = 0;  // the next Step counts from the published cycle again
  }
  std::vector<StateSink*> sinks;
  std::lock_guard lock(sinks_mutex_);
  {
    std::lock_guard fresh(new_sinks_mutex_);
    sinks = new_sinks_;
  }
  sinks.insert(sinks.end(), sinks_.begin(), sinks_.end());
  for (StateSink* sink : sinks) sink->onWorkDropped(why);
}

bool ServerSession::drivenBy(std::string_view presented, std::string_view operator_secret) const {
  const auto same = [presented](std::string_view secret) {
    return !secret.empty() && secret.size() == presented.size() &&
           sodium_memcmp(secret.data(), presented.data(), secret.size()) == 0;
  };
  return same(operator_secret) || same(owner_secret_);
}

void ServerSession::close() {
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  // The publisher first: streams end as closed (CANCELLED), not as stopped.
  exit_.store(true, std::memory_order_release);
  if (shared_publisher_ != nullptr) shared_publisher_->remove(this);
  notifyPublisher();
  if (publisher_.joinable()) publisher_.join();
  session_->stop();
  // Under the lock: a sink being removed right now waits until its onClosed has returned.
  std::lock_guard lock(sinks_mutex_);
  std::vector<StateSink*> sinks;
  sinks.swap(sinks_);
  {
    std::lock_guard pending(new_sinks_mutex_);
    sinks.insert(sinks.end(), new_sinks_.begin(), new_sinks_.end());
    new_sinks_.clear();
  }
  for (StateSink* sink : sinks) sink->onClosed();
}

void ServerSession::addSink(StateSink* sink) {
  {
    // Only the small list of new sinks: a caller may hold a lock that the sink's own onState
    // takes, which the publisher calls with sinks_mutex_ held.
    std::lock_guard lock(new_sinks_mutex_);
    if (!closed()) {
      new_sinks_.push_back(sink);
      sinks_pending_.store(true, std::memory_order_release);
      sink = nullptr;
    }
  }
  if (sink != nullptr) {
    sink->onClosed();
    return;
  }
  notifyPublisher();
}

void ServerSession::removeSink(StateSink* sink) {
  std::lock_guard lock(sinks_mutex_);
  std::erase(sinks_, sink);
  std::lock_guard pending(new_sinks_mutex_);
  std::erase(new_sinks_, sink);
}

void ServerSession::notifyPublisher() {
  if (shared_publisher_ != nullptr) {
    shared_publisher_->wake();
    return;
  }
  {
    std::lock_guard lock(wake_mutex_);
    wake_pending_ = true;
  }
  wake_.notify_one();
}

void ServerSession::publisherMain() {
  while (!exit_.load(std::memory_order_acquire)) {
    const rt::SessionState now = session_->state();
    if (now == rt::SessionState::kRunning) {
      // A reset restarts the cycle count at 0.
      const std::uint64_t last_cycle =
          session_->publishedCycle() < last_cycle_ ? 0 : last_cycle_;
      // A new cycle, or a timeout to look at the state again (a fault ends the loop at once).
      session_->waitForCycle(last_cycle + 1, kPublisherPoll);
    } else if (now == last_state_) {
      std::unique_lock lock(wake_mutex_);
      wake_.wait_for(lock, std::chrono::nanoseconds(kPublisherPoll),
                     [this] { return wake_pending_; });
      wake_pending_ = false;
    }
    {
      std::lock_guard lock(wake_mutex_);
      wake_pending_ = false;
    }
    if (exit_.load(std::memory_order_acquire)) break;
    publishPass();
  }
}

bool ServerSession::publishPass() {
  // Nothing new: no state change, no new cycle, no new sink. The shared publisher asks every
  // session of its worker each round, so this costs three atomic loads.
  if (session_->state() == last_state_ && session_->publishedCycle() == last_cycle_ &&
      !sinks_pending_.load(std::memory_order_acquire)) {
    return false;
  }
  rt::StateSnapshot& snapshot = snapshot_;
  snapshot = session_->latestState();
  const rt::SessionState current = session_->state();
  const bool changed = current != last_state_;
  const bool fresh = snapshot.publish_time != last_publish_;
  // The snapshot carries the state of the cycle that published it; a change made from a
  // control thread (pause, stop, reset) is newer.
  snapshot.state = current;

  std::lock_guard lock(sinks_mutex_);
  const std::size_t before = sinks_.size();
  {
    std::lock_guard pending(new_sinks_mutex_);
    sinks_.insert(sinks_.end(), new_sinks_.begin(), new_sinks_.end());
    new_sinks_.clear();
    sinks_pending_.store(false, std::memory_order_release);
  }
  const std::size_t added = sinks_.size() - before;
  for (std::size_t i = before; i < sinks_.size(); ++i) sinks_[i]->onState(snapshot, true);
  if (changed || fresh) {
    for (std::size_t i = 0; i + added < sinks_.size(); ++i) sinks_[i]->onState(snapshot, changed);
  }
  last_state_ = current;
  last_cycle_ = snapshot.cycle;
  last_publish_ = snapshot.publish_time;
  return true;
}

void ServerSession::toState(const rt::StateSnapshot& s, v1::State* out, bool ground_truth) const {
  out->set_session_id(id_);
  out->set_cycle(s.cycle);
  out->set_time(s.time);
  out->set_state(toProto(s.state));
  // a controller reads its sensors; tests, logs and the viewer may ask for the truth
  const bool measured = s.measured && !ground_truth;
  out->set_measured(measured);
  const rt::SensorReadings& r = s.sensors;
  const double* q = measured ? r.q.data() : s.q.data();
  const double* v = measured ? r.v.data() : s.v.data();
  const double* tau = measured ? r.tau.data() : s.tau.data();
  out->mutable_q()->Assign(q, q + s.nq);
  out->mutable_v()->Assign(v, v + s.nv);
  out->mutable_tau()->Assign(tau, tau + s.nv);
  if (measured && session_->sensorModels().hasImu()) {
    v1::Imu* imu = out->mutable_imu();
    imu->mutable_orientation()->Assign(r.imu_orientation.begin(), r.imu_orientation.end());
    imu->mutable_angular_velocity()->Assign(r.imu_angular_velocity.begin(),
                                            r.imu_angular_velocity.end());
    imu->mutable_linear_acceleration()->Assign(r.imu_linear_acceleration.begin(),
                                               r.imu_linear_acceleration.end());
  } else {
    out->clear_imu();
  }
  out->set_command_sequence(s.command_sequence);
  out->set_command_client_send_time_ns(s.command_client_time);
  out->set_command_receive_time_ns(s.command_receive_time);
  out->set_publish_time_ns(s.publish_time);
  out->set_send_time_ns(0);
  out->set_watchdog_tripped(s.watchdog_tripped);
  // sparse: the commanded forces when a drive cut them, the stops' forces when one pushes
  const auto n = static_cast<std::ptrdiff_t>(s.nv);
  // (ground truth: also where an injected fault cut, freed or locked a joint of any model)
  if ((extras_.tau_commanded || ground_truth) &&
      !std::equal(s.tau_commanded.begin(), s.tau_commanded.begin() + n, s.tau.begin())) {
    out->mutable_tau_commanded()->Assign(s.tau_commanded.begin(), s.tau_commanded.begin() + n);
  } else {
    out->clear_tau_commanded();
  }
  if (extras_.limit_force && std::any_of(s.limit_force.begin(), s.limit_force.begin() + n,
                                         [](double f) { return f != 0.0; })) {
    out->mutable_limit_force()->Assign(s.limit_force.begin(), s.limit_force.begin() + n);
  } else {
    out->clear_limit_force();
  }
  const int contacts = std::min(extras_.contacts, static_cast<int>(s.ncontacts));
  const double* force = measured ? r.contact_force.data() : s.contact_force.data();
  out->mutable_contact_force()->Assign(force, force + 3 * contacts);
  out->mutable_contact_depth()->Assign(s.contact_depth.begin(), s.contact_depth.begin() + contacts);
  out->clear_faults();
  if (ground_truth) {  // a controller is not told which faults it meets
    for (int k = 0; k < s.faults.count; ++k) {
      toProto(s.faults.list[static_cast<std::size_t>(k)], model(), out->add_faults());
    }
  }
}

void ServerSession::latestState(v1::State* out, bool ground_truth) {
  rt::StateSnapshot snapshot = session_->latestState();
  snapshot.state = session_->state();
  toState(snapshot, out, ground_truth);
}

double ServerSession::idleSeconds() {
  const std::uint64_t received = session_->stats().commands_received;
  if (commands_seen_.exchange(received, std::memory_order_relaxed) != received ||
      hasControlStream() || readers_.load(std::memory_order_relaxed) > 0) {
    touch();
  }
  return static_cast<double>(rt::monotonicNow() - last_use_.load(std::memory_order_relaxed)) *
         1e-9;
}

void ServerSession::fillInfo(v1::SessionInfo* out) {
  out->set_session_id(id_);
  out->set_name(name_);
  *out->mutable_config() = effective_config_;
  *out->mutable_model() = model_info_;
  const rt::SessionStats stats = session_->stats();
  out->set_state(toProto(stats.state));
  if (stats.state == rt::SessionState::kFaulted) {
    toProto(stats.fault_info, stats.fault, out->mutable_fault());
  } else {
    out->clear_fault();
  }
  out->set_udp_port(udpPort());
  const bool mac = has_udp_key_;
  if (udpPort() != 0) {
    out->set_udp_authentication(mac ? v1::UDP_AUTHENTICATION_MAC : v1::UDP_AUTHENTICATION_TOKEN);
  }
  const rt::SensorModels& sensors = session_->sensorModels();
  const rt::JointDrives& drives = session_->drives();
  DatagramShape shape;
  shape.mac = mac;
  shape.measured = !sensors.ideal();
  shape.imu = sensors.hasImu();
  shape.positions = drives.anyPosition();
  shape.velocities = drives.anyPosition() || drives.anyVelocity();
  out->set_udp_state_max_bytes(udpStateMaxBytes(model(), shape));
  out->set_udp_command_max_bytes(udpCommandMaxBytes(model(), shape));
  out->set_control_period_ns(session_->period());
  out->set_dt(1.0 / (session_->config().control_rate * session_->config().substeps));
  latestState(out->mutable_latest_state());
  out->set_has_controller_stream(hasControlStream());
  out->set_owner(owner_);
  out->set_age_s(ageSeconds());
  out->set_idle_s(idleSeconds());
}

void ServerSession::fillStats(v1::SessionStats* out) {
  const rt::SessionStats s = session_->stats();
  out->set_session_id(id_);
  out->set_state(toProto(s.state));
  out->set_mode(toProto(s.mode));
  if (s.state == rt::SessionState::kFaulted) toProto(s.fault_info, s.fault, out->mutable_fault());
  out->set_cycles(s.cycles);
  out->set_time(s.time);
  out->set_wall_time_running(s.wall_time_running);
  out->set_real_time_factor(s.real_time_factor);

  v1::TimingStats* timing = out->mutable_timing();
  timing->set_cycles(s.timing.cycles);
  timing->set_deadline_misses(s.timing.deadline_misses);
  timing->set_consecutive_misses(s.timing.consecutive_misses);
  timing->set_max_consecutive_misses(s.timing.max_consecutive_misses);
  timing->set_skipped_cycles(s.timing.skipped_cycles);
  toProto(s.timing.wakeup_latency, timing->mutable_wakeup_latency());
  toProto(s.timing.compute_time, timing->mutable_compute_time());
  toProto(s.timing.measured_period, timing->mutable_measured_period());
  toProto(session_->stepTime().summary(), timing->mutable_engine_step());
  toProto(session_->cycleOverhead().summary(), timing->mutable_loop_overhead());

  v1::CommandStats* commands = out->mutable_commands();
  commands->set_received(s.commands_received);
  commands->set_applied(s.commands_applied);
  commands->set_superseded(s.commands_superseded);
  commands->set_dropped(s.commands_dropped);
  commands->set_cycles_dropped(s.cycles_dropped);
  commands->set_rejected(s.commands_rejected);
  commands->set_success_rate(s.command_success_rate);
  commands->set_age_ns(s.command_age);

  v1::WatchdogStats* watchdog = out->mutable_watchdog();
  watchdog->set_trips(s.watchdog_trips);
  watchdog->set_missed_cycles(s.watchdog_missed_cycles);
  watchdog->set_tripped(s.watchdog_tripped);
  watchdog->set_armed(s.watchdog_armed);

  v1::FaultStats* faults = out->mutable_faults();
  faults->set_started(s.faults.started);
  faults->set_ended(s.faults.ended);
  faults->set_commands_lost(s.faults.commands_lost);
  faults->set_commands_delayed(s.faults.commands_delayed);
  faults->set_states_withheld(s.faults.states_withheld);
  faults->set_refused(s.faults.refused);
  faults->clear_active();
  // one copy of the newest state for the fault list and the constraint counts
  const rt::StateSnapshot latest = session_->latestState();
  for (int k = 0; k < latest.faults.count; ++k) {
    toProto(latest.faults.list[static_cast<std::size_t>(k)], model(), faults->add_active());
  }

  fillConstraintStats(latest, out->mutable_constraints());
  udp_.toProto(out->mutable_udp());
  grpc_.toProto(out->mutable_grpc());
  out->set_events_dropped(s.events_dropped);
  out->clear_rt_setup();
  for (const rt::SetupStep& step : session_->setupReport()) {
    v1::RtSetupStep* entry = out->add_rt_setup();
    entry->set_name(step.name);
    entry->set_applied(step.result.ok);
    entry->set_detail(step.result.detail);
  }
  v1::Placement* placement = out->mutable_placement();
  placement->set_worker(s.worker);
  placement->set_cycle_cost_ns(static_cast<std::uint64_t>(std::max<rt::Nanoseconds>(s.cycle_cost, 0)));
  placement->set_load(s.load);
}

void ServerSession::fillConstraintStats(const rt::StateSnapshot& s,
                                        v1::ConstraintStats* out) const {
  const int n = s.nv;
  out->Clear();
  if (extras_.tau_commanded) {
    out->mutable_effort_saturations()->Assign(s.effort_saturations.begin(),
                                              s.effort_saturations.begin() + n);
    out->mutable_velocity_cuts()->Assign(s.velocity_cuts.begin(), s.velocity_cuts.begin() + n);
  }
  std::uint32_t limits_active = 0, contacts_active = 0;
  if (extras_.limit_force) {
    out->mutable_limit_cycles()->Assign(s.limit_cycles.begin(), s.limit_cycles.begin() + n);
    for (int d = 0; d < n; ++d) limits_active += s.limit_force[d] != 0.0 ? 1 : 0;
  }
  for (int k = 0; k < std::min(extras_.contacts, static_cast<int>(s.ncontacts)); ++k) {
    contacts_active += s.contact_force[3 * k + 2] != 0.0 ? 1 : 0;
  }
  out->set_solver_iterations(static_cast<std::uint32_t>(s.solver.iterations));
  out->set_solver_residual(s.solver.residual);
  out->set_solver_max_iterations(static_cast<std::uint32_t>(s.solver_max_iterations));
  out->set_solver_unconverged(s.solver_unconverged);
  out->set_limits_active(limits_active);
  out->set_contacts_active(contacts_active);
}

bool ServerSession::claimControlStream() {
  bool expected = false;
  return control_stream_open_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
}

void ServerSession::releaseControlStream() {
  control_stream_open_.store(false, std::memory_order_release);
}

}  // namespace hilsim::server
