#include "rt/session_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "rt/futex.h"
#include "rt/session_limits.h"
#include "rt/worker.h"

namespace hilsim::rt {

namespace {

/// Weight of a new cycle in the smoothed cycle cost: about the last hundred cycles count.
constexpr double kCostSmoothing = 0.01;

void validate(const SessionConfig& c) {
  auto fail = [](const std::string& why) { throw SessionError("session config: " + why); };
  if (!c.model) fail("no model");
  const Model& m = *c.model;
  if (m.nq > kMaxCoordinates || m.nv > kMaxCoordinates) {
    fail("model has nq = " + std::to_string(m.nq) + ", nv = " + std::to_string(m.nv) +
         "; sessions hold at most " + std::to_string(kMaxCoordinates) + " coordinates");
  }
  if (!controlRateAllowed(c.control_rate)) {
    std::ostringstream why;
    why << "control_rate " << c.control_rate << " Hz is outside " << controlRateRange();
    fail(why.str());
  }
  if (!substepsAllowed(c.substeps))
    fail("substeps " + std::to_string(c.substeps) + " is outside " + substepsRange());
  if (const std::string why = checkSimulatorChoice(m, c.formulation, c.integrator); !why.empty())
    fail(why);
  if (c.threads < 1 || c.threads > 64) fail("threads " + std::to_string(c.threads) + " is outside 1 to 64");
  if (const std::string why = checkThreads(c.formulation, c.threads); !why.empty())
    fail("threads " + std::to_string(c.threads) + ": " + why);
  if (c.watchdog.missed_cycles_limit < 1) fail("watchdog missed_cycles_limit must be ≥ 1");
  if (!(c.watchdog.damping_gain >= 0.0) || !std::isfinite(c.watchdog.damping_gain)) {
    fail("watchdog damping_gain must be a finite number ≥ 0");
  }
  if (c.max_catch_up < 0) fail("max_catch_up must be ≥ 0");
  if (!(c.max_speed > 0.0)) fail("max_speed must be > 0");
  if (c.command_capacity < 1) fail("command_capacity must be ≥ 1");
  if (m.contact_spheres.size() > static_cast<std::size_t>(kMaxContacts)) {
    fail("model has " + std::to_string(m.contact_spheres.size()) +
         " contact spheres; sessions hold at most " + std::to_string(kMaxContacts));
  }
  if (c.initial_q && (c.initial_q->size() != m.nq || !c.initial_q->allFinite())) {
    fail("initial q must hold nq = " + std::to_string(m.nq) + " finite numbers");
  }
  if (c.initial_v && (c.initial_v->size() != m.nv || !c.initial_v->allFinite())) {
    fail("initial v must hold nv = " + std::to_string(m.nv) + " finite numbers");
  }
}

SessionConfig validated(SessionConfig c) {
  validate(c);
  return c;
}

SensorModels makeSensors(const SessionConfig& c) {
  try {
    return SensorModels(*c.model, c.sensors, 1.0 / c.control_rate);
  } catch (const std::invalid_argument& e) {
    throw SessionError(std::string("session config: ") + e.what());
  }
}

ActuatorModels makeActuators(const SessionConfig& c) {
  try {
    return ActuatorModels(*c.model, c.actuators, 1.0 / (c.control_rate * c.substeps));
  } catch (const std::invalid_argument& e) {
    throw SessionError(std::string("session config: ") + e.what());
  }
}

FaultInjector makeFaults(const SessionConfig& c, const Eigen::VectorXd& q0) {
  try {
    return FaultInjector(*c.model, c.faults, 1.0 / c.control_rate,
                         1.0 / (c.control_rate * c.substeps), q0);
  } catch (const std::invalid_argument& e) {
    throw SessionError(std::string("session config: ") + e.what());
  }
}

// The drives of a validated configuration, checked for stability at the physics step from q0.
JointDrives makeDrives(const SessionConfig& c, const Eigen::VectorXd& q0) {
  const double dt = 1.0 / (c.control_rate * c.substeps);
  try {
    JointDrives drives(*c.model, c.drives, dt);
    if (const std::string why = drives.stabilityProblem(q0); !why.empty()) {
      throw SessionError("session config: drives: " + why);
    }
    return drives;
  } catch (const std::invalid_argument& e) {
    throw SessionError(std::string("session config: ") + e.what());
  }
}

}  // namespace

SessionCore::SessionCore(SessionConfig config, EventLogger* events)
    : config_(validated(std::move(config))),
      period_(static_cast<Nanoseconds>(std::llround(1e9 / config_.control_rate))),
      pool_(config_.threads > 1
                ? std::make_unique<WorkerPool>(config_.threads, WorkerPool::kDefaultSpin,
                                               config_.pool_cpus)
                : nullptr),
      simulator_(config_.model, config_.formulation, config_.integrator,
                 1.0 / (config_.control_rate * config_.substeps)),
      q0_(config_.initial_q.value_or(config_.model->initialConfiguration())),
      v0_(config_.initial_v.value_or(Eigen::VectorXd::Zero(config_.model->nv))),
      drives_(makeDrives(config_, q0_)),
      actuators_(makeActuators(config_)),
      delivered_tau_(Eigen::VectorXd::Zero(config_.model->nv)),
      sensors_(makeSensors(config_)),
      faults_(makeFaults(config_, q0_)),
      held_tau_(Eigen::VectorXd::Zero(config_.model->nv)),
      applied_tau_(Eigen::VectorXd::Zero(config_.model->nv)),
      row_stage_(dynamic_cast<const ConstraintRowStage*>(simulator_.constraints())),
      row_forces_(*config_.model),
      limit_cycles_(static_cast<std::size_t>(config_.model->nv), 0),
      watchdog_(config_.watchdog),
      schedule_(LoopConfig{period_, config_.overrun, config_.max_catch_up}, monitor_),
      commands_(config_.command_capacity),
      events_(std::make_shared<EventQueue>()),
      logger_(events) {
  simulator_.setExecutor(pool_.get());
  restoreInitialState(q0_, v0_);
  if (logger_) {
    std::vector<std::string> closures;
    for (const LoopClosure& loop : config_.model->loops) closures.push_back(loop.name);
    logger_->attach(events_, config_.name, std::move(closures), config_.model->joint_names);
  }
}

SessionCore::~SessionCore() {
  if (logger_) logger_->detach(events_.get());
}

double SessionCore::load() const {
  if (config_.mode != SessionMode::kRealtime) return 0.0;
  return static_cast<double>(cycleCost()) / static_cast<double>(period_);
}

Nanoseconds SessionCore::measureCycleCost(int cycles, Nanoseconds time_limit) {
  const Eigen::VectorXd q = simulator_.q(), v = simulator_.v();
  const double t = simulator_.time();
  std::vector<Nanoseconds> costs;
  costs.reserve(static_cast<std::size_t>(std::max(cycles, 1)));
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(config_.model->nv);
  const Nanoseconds begin = monotonicNow();
  for (int c = 0; c < std::max(cycles, 1); ++c) {
    const Nanoseconds start = monotonicNow();
    Nanoseconds now = start;
    int done = 0;
    // a cycle longer than the time limit is timed over its first substeps and extrapolated
    while (done < config_.substeps) {
      simulator_.step(tau);
      ++done;
      now = monotonicNow();
      if (now - begin > time_limit) break;
    }
    costs.push_back((now - start) * config_.substeps / done);
    if (now - begin > time_limit) break;
  }
  simulator_.setState(q, v, t);
  std::nth_element(costs.begin(), costs.begin() + costs.size() / 2, costs.end());
  const Nanoseconds median = costs[costs.size() / 2];
  if (cycle_ == 0) cycle_cost_.store(median, std::memory_order_relaxed);
  return median;
}

void SessionCore::recordCost(Nanoseconds cost) {
  const Nanoseconds before = cycle_cost_.load(std::memory_order_relaxed);
  const Nanoseconds smoothed =
      before == 0 ? cost
                  : before + std::llround(kCostSmoothing * static_cast<double>(cost - before));
  cycle_cost_.store(smoothed, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// the runner's side: one thread at a time, the worker the core is attached to

void SessionCore::enterRunning(Nanoseconds now, Nanoseconds first_release) {
  in_segment_ = true;
  steps_left_ = 0;
  schedule_.begin(first_release);
  misses_reported_ = monitor_.deadlineMisses();
  skipped_reported_ = monitor_.skippedCycles();
  last_miss_report_ = 0;
  segment_sim_start_.store(simulator_.time(), std::memory_order_relaxed);
  segment_start_.store(now, std::memory_order_release);
}

void SessionCore::leaveRunning(Nanoseconds now) {
  in_segment_ = false;
  const Nanoseconds started = segment_start_.exchange(0, std::memory_order_acq_rel);
  if (started == 0) return;
  running_wall_.fetch_add(now - started, std::memory_order_relaxed);
  running_sim_.store(running_sim_.load(std::memory_order_relaxed) + simulator_.time() -
                         segment_sim_start_.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);
}

void SessionCore::runRealtimeCycle() {
  const CycleContext context = schedule_.open(monotonicNow());
  constexpr Nanoseconds kMissReportInterval = kNanosecondsPerSecond;
  const std::uint64_t misses = monitor_.deadlineMisses();
  if (misses != misses_reported_ &&
      (last_miss_report_ == 0 || context.woke - last_miss_report_ >= kMissReportInterval)) {
    const std::uint64_t skipped = monitor_.skippedCycles();
    emit(EventKind::kDeadlineMiss, schedule_.overrun(),
         static_cast<std::int64_t>(misses - misses_reported_),
         static_cast<double>(skipped - skipped_reported_));
    misses_reported_ = misses;
    skipped_reported_ = skipped;
    last_miss_report_ = context.woke;
  }
  const bool fresh = takeNewestCommand(incoming_);
  const bool ok = cycle(fresh ? &incoming_ : nullptr, context.woke, true);
  const Nanoseconds finished = monotonicNow();
  recordCost(finished - context.woke);
  if (!schedule_.close(context, finished) && ok) {
    fault(FaultKind::kDeadlineMiss, -1, static_cast<double>(schedule_.overrun()),
          current_.sequence);
  }
}

bool SessionCore::runLockstepCycle() {
  if (drop_requested_.load(std::memory_order_acquire)) dropQueued();
  const Command* fresh = nullptr;
  if (steps_left_ == 0) {
    if (commands_.tryPop(incoming_)) {
      fresh = &incoming_;
      steps_left_ = incoming_.steps;
    } else if (step_budget_.load(std::memory_order_acquire) > 0) {
      step_budget_.fetch_sub(1, std::memory_order_acq_rel);
      steps_left_ = 1;
    } else {
      return false;
    }
  }
  const Nanoseconds start = monotonicNow();
  steps_left_after_cycle_ = steps_left_ - 1;
  if (!cycle(fresh, start, false)) return true;
  --steps_left_;
  retired_cycles_.fetch_add(1, std::memory_order_acq_rel);
  const Nanoseconds end = monotonicNow();
  recordCost(end - start);
  monitor_.recordCycle(CycleTiming{start, start, end, INT64_MAX, period_});
  return true;
}

void SessionCore::dropQueued() {
  std::uint64_t dropped = steps_left_;
  steps_left_ = 0;
  while (commands_.tryPop(incoming_)) dropped += incoming_.steps;
  dropped += step_budget_.exchange(0, std::memory_order_acq_rel);
  retired_cycles_.fetch_add(dropped, std::memory_order_acq_rel);
  cycles_dropped_.fetch_add(dropped, std::memory_order_relaxed);
  drop_requested_.store(false, std::memory_order_release);
}

void SessionCore::dropQueuedWork() {
  if (config_.mode != SessionMode::kLockstep) return;
  drop_requested_.store(true, std::memory_order_release);
  wakeRunner();
}

std::uint64_t SessionCore::queuedCycles() const {
  const std::uint64_t retired = retired_cycles_.load(std::memory_order_acquire);
  const std::uint64_t requested = requested_cycles_.load(std::memory_order_acquire);
  return requested > retired ? requested - retired : 0;
}

void SessionCore::runFreeCycle() {
  const Nanoseconds start = monotonicNow();
  const bool fresh = takeNewestCommand(incoming_);
  if (!cycle(fresh ? &incoming_ : nullptr, start, false)) return;
  const Nanoseconds end = monotonicNow();
  recordCost(end - start);
  monitor_.recordCycle(CycleTiming{start, start, end, INT64_MAX, period_});
}

bool SessionCore::transition(SessionState from, SessionState to) {
  SessionState expected = from;
  if (!state_.compare_exchange_strong(expected, to, std::memory_order_acq_rel)) return false;
  spdlog::info("{}: state {} → {}", config_.name, sessionStateName(from), sessionStateName(to));
  return true;
}

void SessionCore::wakeRunner() {
  if (Worker* worker = runner_.load(std::memory_order_acquire)) worker->wake();
}

void SessionCore::restoreInitialState(const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  simulator_.setState(q, v, 0.0);
  held_tau_.setZero();
  applied_tau_.setZero();
  held_wrench_.setZero();
  if (hasFloatingBase(*config_.model)) simulator_.setBaseWrench(Vector3::Zero(), Vector3::Zero());
  row_forces_ = ConstraintForces(*config_.model);
  std::fill(limit_cycles_.begin(), limit_cycles_.end(), 0);
  solver_max_iterations_ = 0;
  solver_unconverged_ = 0;
  solver_ = SolverSample{};
  watchdog_.disarm();
  watchdog_was_tripped_ = false;
  watchdog_armed_.store(false);
  watchdog_tripped_.store(false);
  steps_left_after_cycle_ = 0;
  monitor_.reset();
  step_time_.reset();
  cycle_overhead_.reset();
  cycle_ = 0;
  current_ = Command{};
  // until a first command, position drives hold the state they start from
  drives_.holdAt(q, current_.position.data());
  drives_.resetIntegrals();
  actuators_.reset();
  sensors_.reset();
  faults_.reset();
  withhold_ = false;
  fault_ = FaultInfo{};
  sim_time_.store(0.0);
  running_wall_.store(0);
  running_sim_.store(0.0);
  segment_start_.store(0);
  published_cycle_.store(0);
  publish();
}

bool SessionCore::pushCommand(const Command& command) {
  const SessionState now = state();
  const bool pushes = std::any_of(command.base_wrench.begin(), command.base_wrench.end(),
                                  [](double x) { return x != 0.0; });
  if (command.nv != config_.model->nv || now == SessionState::kStopped ||
      now == SessionState::kFaulted || (pushes && !hasFloatingBase(*config_.model))) {
    commands_rejected_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Command stamped = command;
  if (stamped.receive_time == 0) stamped.receive_time = monotonicNow();
  if (stamped.steps == 0) stamped.steps = 1;
  const bool lockstep = config_.mode == SessionMode::kLockstep;
  bool pushed;
  {
    std::lock_guard lock(producer_mutex_);
    // counted before the push: the runner may take the command at once
    if (lockstep) requested_cycles_.fetch_add(stamped.steps, std::memory_order_acq_rel);
    pushed = commands_.tryPush(stamped);
    if (!pushed && lockstep) requested_cycles_.fetch_sub(stamped.steps, std::memory_order_acq_rel);
  }
  if (!pushed) return false;  // counted by the queue
  commands_received_.fetch_add(1, std::memory_order_relaxed);
  if (config_.mode == SessionMode::kLockstep) wakeRunner();
  return true;
}

std::uint32_t SessionCore::injectFault(const FaultSpec& spec) {
  const std::string where = std::string("fault (") + faultTypeName(spec.type) + ")";
  ResolvedFault fault;
  try {
    fault = faults_.resolve(spec, where);
  } catch (const std::invalid_argument& e) {
    throw SessionError(e.what());
  }
  const double now = sim_time_.load(std::memory_order_relaxed);
  if (spec.start >= 0.0 && spec.duration > 0.0 && spec.start + spec.duration <= now) {
    std::ostringstream why;
    why << where << ": it would end at t = " << spec.start + spec.duration
        << " s, and the session is at t = " << now << " s";
    throw SessionError(why.str());
  }
  if (faults_.tableFull()) {
    throw SessionBusyError(where + ": the session holds " + std::to_string(kMaxInjectedFaults) +
                           " faults already (scheduled and injected): clear one first");
  }
  const std::uint32_t id = faults_.inject(fault);
  if (id == 0) throw SessionBusyError(where + ": too many requests wait for the next cycle");
  if (config_.mode == SessionMode::kLockstep) wakeRunner();
  return id;
}

void SessionCore::requestSteps(std::uint64_t n) {
  if (n == 0) return;
  requested_cycles_.fetch_add(n, std::memory_order_acq_rel);
  step_budget_.fetch_add(n, std::memory_order_acq_rel);
  wakeRunner();
}

StateSnapshot SessionCore::latestState() {
  std::lock_guard lock(reader_mutex_);
  state_out_.read(last_read_);
  StateSnapshot copy = last_read_;
  copy.state = state();
  return copy;
}

bool SessionCore::waitForCycle(std::uint64_t cycle, Nanoseconds timeout) {
  const Nanoseconds deadline = monotonicNow() + timeout;
  publish_waiters_.fetch_add(1, std::memory_order_acq_rel);
  bool reached = false;
  while (true) {
    const std::uint32_t seen = published_.load(std::memory_order_acquire);
    if (published_cycle_.load(std::memory_order_acquire) >= cycle) {
      reached = true;
      break;
    }
    if (state() != SessionState::kRunning) break;
    const Nanoseconds left = deadline - monotonicNow();
    if (left <= 0) break;
    futexWait(published_, seen, left);
  }
  publish_waiters_.fetch_sub(1, std::memory_order_acq_rel);
  return reached;
}

SessionStats SessionCore::stats() const {
  SessionStats s;
  s.state = state();
  s.mode = config_.mode;
  s.cycles = published_cycle_.load(std::memory_order_acquire);
  s.time = sim_time_.load(std::memory_order_relaxed);
  Nanoseconds wall = running_wall_.load(std::memory_order_relaxed);
  double sim = running_sim_.load(std::memory_order_relaxed);
  const Nanoseconds segment = segment_start_.load(std::memory_order_acquire);
  if (segment != 0) {
    wall += monotonicNow() - segment;
    sim += s.time - segment_sim_start_.load(std::memory_order_relaxed);
  }
  s.wall_time_running = static_cast<double>(wall) * 1e-9;
  s.real_time_factor = wall > 0 ? sim / s.wall_time_running : 0.0;
  s.timing = monitor_.stats();
  s.commands_received = commands_received_.load(std::memory_order_relaxed);
  s.commands_applied = commands_applied_.load(std::memory_order_relaxed);
  s.commands_superseded = commands_superseded_.load(std::memory_order_relaxed);
  s.commands_dropped = commands_.dropped();
  s.cycles_dropped = cycles_dropped_.load(std::memory_order_relaxed);
  s.commands_rejected = commands_rejected_.load(std::memory_order_relaxed);
  s.watchdog_trips = watchdog_trips_.load(std::memory_order_relaxed);
  s.watchdog_missed_cycles = watchdog_missed_.load(std::memory_order_relaxed);
  s.command_success_rate = success_rate_.load(std::memory_order_relaxed);
  s.command_age = command_age_.load(std::memory_order_relaxed);
  s.events_dropped = events_->dropped();
  s.watchdog_armed = watchdog_armed_.load(std::memory_order_relaxed);
  s.watchdog_tripped = watchdog_tripped_.load(std::memory_order_relaxed);
  if (s.state == SessionState::kFaulted) {
    s.fault = describeFault(fault_, config_.model.get());
    s.fault_info = fault_;
  }
  s.faults = faults_.stats();
  s.cycle_cost = cycleCost();
  s.load = load();
  s.worker = worker_index_.load(std::memory_order_relaxed);
  return s;
}

bool SessionCore::takeNewestCommand(Command& out) {
  if (!commands_.tryPop(out)) return false;
  std::uint64_t superseded = 0;
  while (commands_.tryPop(out)) ++superseded;
  if (superseded > 0) commands_superseded_.fetch_add(superseded, std::memory_order_relaxed);
  return true;
}

bool SessionCore::cycle(const Command* fresh, Nanoseconds now, bool use_watchdog) {
  const Model& model = *config_.model;
  faults_.beginCycle(static_cast<std::int64_t>(cycle_), simulator_.q());
  for (int k = 0; k < faults_.transitionCount(); ++k) {
    const FaultTransition& t = faults_.transitions()[static_cast<std::size_t>(k)];
    emit(t.started ? EventKind::kInjectedFaultStarted : EventKind::kInjectedFaultEnded,
         static_cast<std::int64_t>(t.fault.type), t.fault.id, t.fault.body);
  }
  if (fresh != nullptr) {
    for (int k = 0; k < model.nv; ++k) {
      for (const double x : {fresh->tau[k], fresh->position[k], fresh->velocity[k]}) {
        if (!std::isfinite(x)) {
          fault(FaultKind::kNonFiniteCommand, k, x, fresh->sequence);
          return false;
        }
      }
    }
    for (int k = 0; k < 6; ++k) {
      if (!std::isfinite(fresh->base_wrench[k])) {
        fault(FaultKind::kNonFiniteCommand, model.nv + k, fresh->base_wrench[k], fresh->sequence);
        return false;
      }
    }
  }
  // an injected fault may lose the command, or hand over one that arrived cycles ago
  const Command* taken =
      faults_.idle() ? fresh : faults_.filterCommand(fresh, static_cast<std::int64_t>(cycle_));
  // lockstep keeps its protocol whatever the faults do: the cycles run belong to the command
  // that asked for them (the fresh one, else the one running) and its answer echoes it; only
  // set-points are lost or late
  const Command& running = fresh != nullptr ? *fresh : current_;
  const std::uint64_t echo_sequence = running.sequence;
  const Nanoseconds echo_client_time = running.client_send_time;
  const Nanoseconds echo_receive_time = running.receive_time;
  const std::uint32_t echo_steps = running.steps;
  if (taken != nullptr) {
    current_ = *taken;
    held_tau_ = Eigen::Map<const Eigen::VectorXd>(taken->tau.data(), model.nv);
    held_wrench_ = Eigen::Map<const Vector6>(taken->base_wrench.data());
    commands_applied_.fetch_add(1, std::memory_order_relaxed);
  }
  if (taken != fresh && config_.mode == SessionMode::kLockstep) {
    current_.sequence = echo_sequence;
    current_.client_send_time = echo_client_time;
    current_.receive_time = echo_receive_time;
    current_.steps = echo_steps;
  }

  WatchdogAction action = taken ? WatchdogAction::kApplyCommand : WatchdogAction::kHoldLast;
  if (use_watchdog) {
    action = watchdog_.onCycle(taken != nullptr, now);
    if (watchdog_.tripped() && !watchdog_was_tripped_) {
      emit(EventKind::kWatchdogTripped, watchdog_.consecutiveMissed(),
           static_cast<std::int64_t>(config_.watchdog.policy));
    } else if (!watchdog_.tripped() && watchdog_was_tripped_) {
      emit(EventKind::kWatchdogCleared, 0);
    }
    watchdog_was_tripped_ = watchdog_.tripped();
    watchdog_armed_.store(watchdog_.armed(), std::memory_order_relaxed);
    watchdog_tripped_.store(watchdog_.tripped(), std::memory_order_relaxed);
    watchdog_trips_.store(watchdog_.trips(), std::memory_order_relaxed);
    watchdog_missed_.store(watchdog_.missedCycles(), std::memory_order_relaxed);
    success_rate_.store(watchdog_.successRate(), std::memory_order_relaxed);
    command_age_.store(watchdog_.commandAge(now), std::memory_order_relaxed);
  }
  // a push belongs to the command that carries it: the watchdog's own torques come without
  bool push = true;
  // the drives' loops follow the command's set-points until the watchdog takes over
  bool drive = false;
  switch (action) {
    case WatchdogAction::kApplyCommand:
    case WatchdogAction::kHoldLast:
      applied_tau_ = held_tau_;
      drive = !drives_.effortOnly();
      break;
    case WatchdogAction::kZeroTorque:
      applied_tau_.setZero();
      push = false;
      break;
    case WatchdogAction::kDamping:
      applied_tau_.noalias() = -config_.watchdog.damping_gain * simulator_.v();
      push = false;
      break;
    case WatchdogAction::kFault:
      fault(FaultKind::kWatchdog, -1, watchdog_.consecutiveMissed(), current_.sequence);
      return false;
  }

  if (hasFloatingBase(model)) {
    const Vector6 wrench = push ? held_wrench_ : Vector6::Zero();
    simulator_.setBaseWrench(wrench.head<3>(), wrench.tail<3>());
  }

  const Nanoseconds step_start = monotonicNow();
  if (!drive && !drives_.effortOnly()) drives_.resetIntegrals();  // no wind-up while cut off
  const DriveReference reference{current_.tau.data(), current_.position.data(),
                                 current_.velocity.data()};
  for (int s = 0; s < config_.substeps; ++s) {
    if (drive) drives_.compute(simulator_.q(), simulator_.v(), reference, applied_tau_);
    const Eigen::VectorXd* joint_tau = &applied_tau_;
    if (!actuators_.ideal()) {
      actuators_.apply(simulator_.q(), applied_tau_, delivered_tau_);
      joint_tau = &delivered_tau_;
    }
    if (faults_.actsOnJoints()) {  // a brake, a dead or a weakened drive, past the actuator
      if (joint_tau != &delivered_tau_) delivered_tau_ = applied_tau_;
      faults_.applyToJoints(simulator_.q(), simulator_.v(), delivered_tau_);
      joint_tau = &delivered_tau_;
    }
    simulator_.step(*joint_tau);
  }
  const Nanoseconds step_end = monotonicNow();
  ++cycle_;
  if (row_stage_) readRowForces();

  // a loop the step could not keep closed: the state after it is not the mechanism's
  if (const ConstraintFailure& failure = simulator_.constraintFailure();
      failure.kind != ConstraintFailure::Kind::kNone) {
    fault_.constraint = failure;
    fault(FaultKind::kConstraintFailure, failure.closure, failure.error, current_.sequence);
    return false;
  }
  const Eigen::VectorXd& q = simulator_.q();
  const Eigen::VectorXd& v = simulator_.v();
  for (int k = 0; k < model.nq; ++k) {
    if (!std::isfinite(q[k])) {
      fault(FaultKind::kNonFiniteState, k, q[k], current_.sequence);
      return false;
    }
  }
  for (int k = 0; k < model.nv; ++k) {
    if (!std::isfinite(v[k])) {
      fault(FaultKind::kNonFiniteState, model.nq + k, v[k], current_.sequence);
      return false;
    }
    if (std::abs(v[k]) > config_.max_speed) {
      fault(FaultKind::kExplodingState, k, v[k], current_.sequence);
      return false;
    }
  }
  withhold_ = !faults_.idle() && faults_.withholdState();
  publish();
  const Nanoseconds step_time = step_end - step_start;
  step_time_.record(step_time);
  cycle_overhead_.record(monotonicNow() - now - step_time);
  return true;
}

void SessionCore::readRowForces() {
  readConstraintForces(*config_.model, *row_stage_, row_forces_);
  for (int d = 0; d < config_.model->nv; ++d) {
    if (row_forces_.limit_force[d] != 0.0) ++limit_cycles_[d];
  }
  const GaussSeidelResult& solve = row_stage_->lastSolve();
  solver_.iterations = solve.iterations;
  solver_.residual = solve.residual;
  solver_.converged = solve.iterations == 0 || solve.converged;
  solver_max_iterations_ = std::max(solver_max_iterations_, solver_.iterations);
  if (!solver_.converged) ++solver_unconverged_;
}

void SessionCore::publish() {
  const Model& model = *config_.model;
  StateSnapshot& out = state_out_.writeBuffer();
  out.cycle = cycle_;
  out.time = simulator_.time();
  out.state = state();
  out.nq = model.nq;
  out.nv = model.nv;
  std::copy_n(simulator_.q().data(), model.nq, out.q.begin());
  std::copy_n(simulator_.v().data(), model.nv, out.v.begin());
  std::copy_n(simulator_.appliedTau().data(), model.nv, out.tau.begin());
  std::copy_n(applied_tau_.data(), model.nv, out.tau_commanded.begin());
  std::copy_n(row_forces_.limit_force.data(), model.nv, out.limit_force.begin());
  out.ncontacts = static_cast<std::int32_t>(model.contact_spheres.size());
  for (int k = 0; k < out.ncontacts; ++k) {
    std::copy_n(row_forces_.contact_force[k].data(), 3, out.contact_force.begin() + 3 * k);
    out.contact_depth[k] = row_forces_.contact_depth[k];
  }
  std::copy_n(simulator_.effortSaturations().data(), model.nv, out.effort_saturations.begin());
  std::copy_n(simulator_.velocityCuts().data(), model.nv, out.velocity_cuts.begin());
  std::copy_n(limit_cycles_.data(), model.nv, out.limit_cycles.begin());
  out.solver = solver_;
  out.solver_max_iterations = solver_max_iterations_;
  out.solver_unconverged = solver_unconverged_;
  out.command_sequence = current_.sequence;
  out.command_client_time = current_.client_send_time;
  out.command_receive_time = current_.receive_time;
  out.watchdog_tripped = watchdog_.tripped();
  out.command_steps_left = steps_left_after_cycle_;
  out.measured = !sensors_.ideal();
  if (out.measured) {
    out.sensors = sensors_.read(out.q.data(), out.v.data(), out.tau.data(),
                                out.contact_force.data(), out.ncontacts);
  }
  if (faults_.actsOnReadings()) {
    faults_.applyToReadings(out.sensors, out.measured, out.q.data(), out.v.data(),
                            out.tau.data(), out.contact_force.data(), out.ncontacts);
  }
  out.withheld = withhold_;
  out.faults = faults_.active();
  out.publish_time = monotonicNow();
  state_out_.publish();
  sim_time_.store(out.time, std::memory_order_relaxed);
  published_cycle_.store(cycle_, std::memory_order_release);
  published_.fetch_add(1, std::memory_order_release);
  if (publish_waiters_.load(std::memory_order_acquire) > 0) futexWakeAll(published_);
}

void SessionCore::fault(FaultKind kind, std::int64_t index, double value, std::uint64_t sequence) {
  fault_.kind = kind;
  fault_.cycle = cycle_;
  fault_.time = simulator_.time();
  fault_.index = index;
  fault_.value = value;
  fault_.command_sequence = sequence;
  state_.store(SessionState::kFaulted, std::memory_order_release);
  emit(EventKind::kFault, static_cast<std::int64_t>(kind), index, value);
  published_.fetch_add(1, std::memory_order_release);
  futexWakeAll(published_);
}

void SessionCore::emit(EventKind kind, std::int64_t value, std::int64_t extra, double x) {
  Event event;
  event.kind = kind;
  event.time = monotonicNow();
  event.cycle = cycle_;
  event.value = value;
  event.extra = extra;
  event.x = x;
  event.sim_time = simulator_.time();
  events_->push(event);  // a full queue drops and counts
}

}  // namespace hilsim::rt
