// SessionCore: one simulated robot without a thread of its own — its state machine, command
// intake, watchdog, the substeps of a control cycle, health checks, publishing and timing records.
// A Worker (rt/worker.h) runs its cycles, alone on a dedicated thread or with many other sessions
// on a shared one; Session (rt/session.h) ties a core to its worker (docs/REALTIME.md).
#pragma once

#include <Eigen/Core>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/constraints/constraint_forces.h"
#include "engine/integrators/simulator.h"
#include "rt/actuator_models.h"
#include "rt/capacity.h"
#include "rt/clock.h"
#include "rt/command.h"
#include "rt/deadline_monitor.h"
#include "rt/events.h"
#include "rt/fault_injection.h"
#include "rt/histogram.h"
#include "rt/joint_drives.h"
#include "rt/periodic_loop.h"
#include "rt/sensor_models.h"
#include "rt/realtime_setup.h"
#include "rt/session_state.h"
#include "rt/spsc_queue.h"
#include "rt/triple_buffer.h"
#include "rt/watchdog.h"
#include "rt/worker_pool.h"

namespace hilsim::rt {


/// The constraint solve of a cycle, for statistics: its last evaluation's projected Gauss–Seidel
/// (docs/CONTACT.md, "Solver").
struct SolverSample {
  std::int32_t iterations = 0;  ///< sweeps of the cycle's last solve (0: no bounded row active)
  double residual = 0.0;        ///< its residual [m/s², rad/s²]
  bool converged = true;        ///< it met the tolerance within the budget
};

/// The state after one control cycle, as published to readers.
struct StateSnapshot {
  std::uint64_t cycle = 0;  ///< control cycles completed since start or reset
  double time = 0.0;        ///< simulation time [s]
  SessionState state = SessionState::kCreated;
  std::int32_t nq = 0;
  std::int32_t nv = 0;
  std::array<double, kMaxCoordinates> q{};    ///< positions (quaternions w, x, y, z)
  std::array<double, kMaxCoordinates> v{};    ///< velocities
  /// Joint forces the drives applied during the cycle (the last step's, through the actuator
  /// models and within the actuator limits) [N·m, N]
  std::array<double, kMaxCoordinates> tau{};
  /// Joint forces asked of the drives: the command's (position and velocity DoFs: their loops'
  /// output at the last physics step), or the watchdog's in its stead [N·m, N]
  std::array<double, kMaxCoordinates> tau_commanded{};
  /// Per dof, the generalized force of its position-limit row (0 clear of the limits) [N·m, N]
  std::array<double, kMaxCoordinates> limit_force{};
  std::int32_t ncontacts = 0;  ///< the model's contact spheres
  /// Per contact sphere: the ground's force on it in W (x, y, z) [N]
  std::array<double, 3 * kMaxContacts> contact_force{};
  /// Per contact sphere: depth of its lowest point below the ground (≥ 0) [m]
  std::array<double, kMaxContacts> contact_depth{};
  /// Counts since start or reset, per dof: cycles whose command the effort limit cut, that the
  /// velocity limit cut, in which the position limit pushed
  std::array<std::uint64_t, kMaxCoordinates> effort_saturations{}, velocity_cuts{},
      limit_cycles{};
  SolverSample solver;             ///< this cycle's constraint solve
  std::int32_t solver_max_iterations = 0;  ///< most sweeps of any cycle since start or reset
  std::uint64_t solver_unconverged = 0;    ///< cycles whose solve ran out of sweeps since then
  std::uint64_t command_sequence = 0;         ///< the command applied (0: none yet)
  Nanoseconds command_client_time = 0;        ///< its client send time
  Nanoseconds command_receive_time = 0;       ///< its receive time (CLOCK_MONOTONIC)
  Nanoseconds publish_time = 0;               ///< CLOCK_MONOTONIC when published
  bool watchdog_tripped = false;
  /// LOCKSTEP: control cycles of the applied command still to run after this one; 0 when this
  /// state completes it (the state that answers the command). Always 0 in the other modes.
  std::uint32_t command_steps_left = 0;
  /// The session models its sensors (SessionConfig::sensors): `sensors` holds what they read in
  /// this cycle (late by their delay), which controllers get instead of q, v, tau and
  /// contact_force; those stay the truth.
  bool measured = false;
  SensorReadings sensors;
  /// An injected fault (drop_states, stall) keeps this state from the controller: the UDP and
  /// Control transports do not send it; ground-truth readers and the viewer still see it.
  bool withheld = false;
  /// The injected faults acting in this cycle (SessionConfig::faults, SessionCore::injectFault).
  ActiveFaults faults;
};

struct SessionConfig {
  std::shared_ptr<const Model> model;
  SessionMode mode = SessionMode::kRealtime;
  double control_rate = 1000.0;  ///< control cycles per second [Hz], 100 to 10,000
  int substeps = 1;              ///< physics steps per control cycle; dt = 1 / (rate · substeps)
  Formulation formulation = Formulation::kAba;
  Integrator integrator = Integrator::kRk4;
  /// Threads of a parallel formulation (hdca), the RT thread one of them: a pool created with the
  /// session (docs/HDCA.md, "Threads"). 1 to 64; more than 1 only for a parallel formulation.
  int threads = 1;
  /// CPUs the pool's threads are pinned to (the server gives rt.workers.cpus): helper w to
  /// pool_cpus[(w − 1) mod n], the session's own thread to pool_cpus[(threads − 1) mod n] unless
  /// `thread.cpu` names one; empty: none.
  std::vector<int> pool_cpus;
  /// The command interfaces of the joints (rt/joint_drives.h); empty: every DoF takes efforts.
  std::vector<DriveConfig> drives;
  /// Delay, quantisation, lag and ripple between a drive's torque and its joint
  /// (rt/actuator_models.h); empty: ideal actuators.
  std::vector<ActuatorConfig> actuators;
  /// Encoders, velocities, torque sensors, the floating base's IMU, contact force sensors: their
  /// resolution, noise, bias and delay (rt/sensor_models.h); nothing set: controllers read the
  /// truth.
  SensorsConfig sensors;
  /// Faults at set times, the drops' seed, the room of the delay lines (rt/fault_injection.h);
  /// more can be injected while the session runs (SessionCore::injectFault).
  FaultsConfig faults;
  WatchdogConfig watchdog;
  OverrunPolicy overrun = OverrunPolicy::kSkip;
  int max_catch_up = 10;
  ThreadSetup thread;  ///< RT thread set-up: memory lock, SCHED_FIFO, affinity
  std::optional<Eigen::VectorXd> initial_q;  ///< default: the model's initial configuration (Model::initialConfiguration)
  std::optional<Eigen::VectorXd> initial_v;  ///< default: at rest
  /// Speeds above this [rad/s or m/s] count as a diverged simulation and fault the session.
  double max_speed = 1e4;
  std::size_t command_capacity = 64;
  /// LOCKSTEP: how long the idle RT thread polls for the next command before it sleeps [ns]. A
  /// controller that answers within it saves a thread wake-up per command; 0: sleep at once.
  Nanoseconds lockstep_spin = 50'000;
  std::string name = "session";  ///< names the session's log lines and its RT thread
  /// Run on a thread of its own even where a WorkerSet is given (e.g. 10 kHz, or a session whose
  /// cycles must never wait behind another session's). `thread` applies to that thread; on a
  /// shared worker the worker's own set-up does.
  bool dedicated_thread = false;
  /// Called on a dedicated RT thread after its set-up and before its first cycle (tests, tracing).
  std::function<void()> on_rt_thread_start;
};

/// The configuration is invalid: the message says which field and why.
class SessionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A request the session cannot take now, for want of room (a full table or channel).
class SessionBusyError : public SessionError {
 public:
  using SessionError::SessionError;
};

struct SessionStats {
  SessionState state = SessionState::kCreated;
  SessionMode mode = SessionMode::kRealtime;
  std::uint64_t cycles = 0;
  double time = 0.0;                ///< simulation time [s]
  double wall_time_running = 0.0;   ///< wall-clock time spent running [s]
  double real_time_factor = 0.0;    ///< simulated seconds per wall-clock second while running
  DeadlineStats timing;
  std::uint64_t commands_received = 0;    ///< accepted into the command channel
  std::uint64_t commands_applied = 0;     ///< taken by a cycle and applied
  std::uint64_t commands_superseded = 0;  ///< replaced by a newer one before a cycle took them
  std::uint64_t commands_dropped = 0;     ///< channel full
  std::uint64_t cycles_dropped = 0;       ///< LOCKSTEP: queued cycles dropped (dropQueuedWork)
  std::uint64_t commands_rejected = 0;    ///< wrong size, or sent to a session that cannot run
  std::uint64_t watchdog_trips = 0;
  std::uint64_t watchdog_missed_cycles = 0;
  double command_success_rate = 1.0;  ///< fresh-command fraction of the last 100 cycles
  Nanoseconds command_age = -1;       ///< age of the newest command at the last cycle [ns]
  std::uint64_t events_dropped = 0;
  bool watchdog_armed = false;    ///< a first command has arrived since start or reset
  bool watchdog_tripped = false;  ///< the watchdog policy decides τ now
  std::string fault;  ///< why the session faulted ("" unless faulted)
  FaultInfo fault_info;  ///< the fault's details (kind kNone unless faulted)
  FaultStats faults;  ///< what the injected faults did since start or reset
  Nanoseconds cycle_cost = 0;  ///< a control cycle's cost, smoothed over ~100 cycles [ns]
  double load = 0.0;           ///< REALTIME: cycle_cost / period, the share of a core it takes
  int worker = -1;             ///< the shared worker that runs it (−1: a dedicated thread)
};

class Worker;

/// Everything a session is, without a thread. Control calls (in Session) and the channels are
/// for any non-RT thread; the run* calls are for the one thread that runs the core at a time, its
/// Worker, which calls them only while the core is attached to it.
class SessionCore {
 public:
  /// Validates the configuration (throws SessionError) and prepares every buffer.
  explicit SessionCore(SessionConfig config, EventLogger* events = &EventLogger::global());
  ~SessionCore();
  SessionCore(const SessionCore&) = delete;
  SessionCore& operator=(const SessionCore&) = delete;

  /// The command interfaces of the DoFs (fixed at construction; safe from any thread).
  const JointDrives& drives() const { return drives_; }
  /// The sensor models (read their configuration only: reading belongs to the running thread).
  const SensorModels& sensorModels() const { return sensors_; }

  /// Queues a command (non-RT side; producers are serialized by a mutex, never seen by the RT
  /// thread). False when the size is wrong or the channel is full; both are counted.
  bool pushCommand(const Command& command);
  /// Lockstep: advance `n` control cycles with the torques last applied.
  void requestSteps(std::uint64_t n);

  /// Injects a fault (non-RT side): it takes effect at the next control cycle run, or at
  /// spec.start when that is later. Returns its id; throws SessionError naming what is wrong
  /// with the spec (or that its span is already over), SessionBusyError when the session's
  /// table of faults or its request channel is full.
  std::uint32_t injectFault(const FaultSpec& spec);
  /// Ends fault `id` (0: every fault, scheduled ones included) at the next control cycle run.
  /// False when the request channel is full.
  bool clearFaults(std::uint32_t id = 0) { return faults_.clear(id); }

  /// Copies the newest published state (readers are serialized by a mutex).
  StateSnapshot latestState();
  /// Blocks until a state with cycle ≥ `cycle` is published, the session leaves `running`, or
  /// the timeout passes. True when the cycle was reached. While a thread waits here the RT
  /// thread makes one futex wake per cycle, so realtime-mode readers should rather poll.
  bool waitForCycle(std::uint64_t cycle, Nanoseconds timeout);

  /// The cycle of the newest published state (0 after a reset).
  std::uint64_t publishedCycle() const { return published_cycle_.load(std::memory_order_acquire); }
  SessionState state() const { return state_.load(std::memory_order_acquire); }
  SessionMode mode() const { return config_.mode; }
  const SessionConfig& config() const { return config_; }
  const Model& model() const { return *config_.model; }
  Nanoseconds period() const { return period_; }
  SessionStats stats() const;
  /// Timing of the RT loop (wake-up latency, compute time, period).
  const DeadlineMonitor& monitor() const { return monitor_; }
  /// Per cycle: time in the engine (the substeps) [ns].
  const LatencyHistogram& stepTime() const { return step_time_; }
  /// Per cycle: the cycle's own cost besides the engine — command intake, watchdog, state
  /// checks, publishing — from wake-up to the end of the cycle minus stepTime [ns].
  const LatencyHistogram& cycleOverhead() const { return cycle_overhead_; }

  /// A control cycle's cost [ns]: smoothed over the cycles run (about the last hundred), or
  /// before any has run, measured on the calling thread (measureCycleCost).
  Nanoseconds cycleCost() const { return cycle_cost_.load(std::memory_order_relaxed); }
  /// REALTIME: cycleCost() / period(), the share of a core the session takes; 0 in the other
  /// modes (they take what realtime sessions leave).
  double load() const;
  /// Times `cycles` control cycles of the model from the current state (the median) and puts
  /// the state back: the cost a worker's admission counts before the session has run. Only while
  /// no worker runs the core (created, before it is attached).
  /// Stops early once `time_limit` has passed: a cycle longer than that is timed over its first
  /// substeps and extrapolated (at least one substep runs).
  Nanoseconds measureCycleCost(int cycles = 15, Nanoseconds time_limit = 50'000'000);

  /// LOCKSTEP: control cycles asked for (commands' steps, step requests) and neither run nor
  /// dropped yet; with cycleCost() what the session's queued work costs.
  std::uint64_t queuedCycles() const;
  /// LOCKSTEP: drops every cycle queued when the runner next looks — the commands in the channel,
  /// the step requests, what is left of the command being applied — because the caller that
  /// asked for them is gone (a cancelled call, a passed deadline, an ended stream). Counted in
  /// cyclesDropped(). Until the runner has looked, dropPending() is true.
  void dropQueuedWork();
  bool dropPending() const { return drop_requested_.load(std::memory_order_acquire); }
  std::uint64_t cyclesDropped() const { return cycles_dropped_.load(std::memory_order_relaxed); }

  // ---- for the Worker that runs the core (one thread at a time) ----
  /// The worker to wake when the core gets work (a lockstep command, a start); set by Session.
  void setRunner(Worker* worker) { runner_.store(worker, std::memory_order_release); }
  /// A running segment: begins when the worker first sees the core running (the first REALTIME
  /// cycle due at `first_release`), ends when it sees it leave running (or it is detached).
  void enterRunning(Nanoseconds now, Nanoseconds first_release);
  void leaveRunning(Nanoseconds now);
  bool inRunningSegment() const { return in_segment_; }
  /// REALTIME: when the next cycle is due, and by when it must be done (CLOCK_MONOTONIC) [ns].
  Nanoseconds release() const { return schedule_.release(); }
  Nanoseconds deadline() const { return schedule_.deadline(); }
  /// REALTIME: runs the cycle that is due (release() ≤ now), applies the overrun policy.
  void runRealtimeCycle();
  /// LOCKSTEP: runs one cycle if a command or a step request waits; false when none does.
  bool runLockstepCycle();
  /// FREE: runs one cycle at once.
  void runFreeCycle();

 protected:
  friend class Session;
  /// One control cycle; false when the session faulted.
  bool cycle(const Command* fresh, Nanoseconds now, bool use_watchdog);
  bool takeNewestCommand(Command& out);
  void fault(FaultKind kind, std::int64_t index, double value, std::uint64_t sequence);
  void publish();
  // row_forces_, the limit counts and the solver's sample from the stage's last evaluation
  void readRowForces();
  void emit(EventKind kind, std::int64_t value, std::int64_t extra = 0, double x = 0.0);
  void restoreInitialState(const Eigen::VectorXd& q, const Eigen::VectorXd& v);
  bool transition(SessionState from, SessionState to);
  void wakeRunner();
  void recordCost(Nanoseconds cost);
  void dropQueued();  // the runner's side of dropQueuedWork

  SessionConfig config_;
  Nanoseconds period_;
  std::unique_ptr<WorkerPool> pool_;  // a parallel formulation's threads (threads > 1)
  Simulator simulator_;
  Eigen::VectorXd q0_, v0_;
  JointDrives drives_;  // RT: the position and velocity loops, run before every physics step
  ActuatorModels actuators_;        // RT: from the drives' torques to the joints', every step
  Eigen::VectorXd delivered_tau_;   // RT: the actuators' output of the step
  SensorModels sensors_;            // RT: the readings published with every state
  FaultInjector faults_;            // RT: the injected faults; its request channel: any thread
  bool withhold_ = false;           // RT: this cycle's state is withheld from the controller
  Eigen::VectorXd held_tau_;     // RT: the torques of the newest command
  Eigen::VectorXd applied_tau_;  // RT: what the watchdog let through this cycle
  Vector6 held_wrench_ = Vector6::Zero();  // RT: the newest command's base wrench
  // RT: the constraint stage's row forces (nullptr, none: a tree without rows) and the counts
  // published with every state
  const ConstraintRowStage* row_stage_ = nullptr;
  ConstraintForces row_forces_;
  std::vector<std::uint64_t> limit_cycles_;
  std::int32_t solver_max_iterations_ = 0;
  std::uint64_t solver_unconverged_ = 0;
  SolverSample solver_;
  Watchdog watchdog_;
  DeadlineMonitor monitor_;
  PeriodicSchedule schedule_;
  LatencyHistogram step_time_;
  LatencyHistogram cycle_overhead_;
  SpscQueue<Command> commands_;
  TripleBuffer<StateSnapshot> state_out_;
  std::shared_ptr<EventQueue> events_;
  EventLogger* logger_;
  std::atomic<Worker*> runner_{nullptr};

  std::atomic<SessionState> state_{SessionState::kCreated};
  std::atomic<std::uint32_t> published_{0};  // futex for waitForCycle
  std::atomic<int> publish_waiters_{0};
  std::atomic<std::uint64_t> published_cycle_{0};
  std::atomic<std::uint64_t> step_budget_{0};
  // LOCKSTEP: cycles asked for (producers) and run or dropped (the runner; a reset, detached)
  std::atomic<std::uint64_t> requested_cycles_{0}, retired_cycles_{0}, cycles_dropped_{0};
  std::atomic<bool> drop_requested_{false};

  // RT bookkeeping, read by stats() through atomics
  std::uint64_t cycle_ = 0;
  Command current_;   // RT: the command being applied
  Command incoming_;  // RT: the newest command taken from the channel (reused: no per-cycle zeroing)
  bool in_segment_ = false;        // RT: between enterRunning and leaveRunning
  std::uint32_t steps_left_ = 0;   // RT, lockstep: cycles of the applied command still to run
  // RT, realtime: at most one deadline-miss event per second, each with the misses and skips
  // since the previous one (a loop that overruns every cycle would flood the event queue)
  std::uint64_t misses_reported_ = 0, skipped_reported_ = 0;
  Nanoseconds last_miss_report_ = 0;
  std::atomic<Nanoseconds> cycle_cost_{0};
  std::atomic<std::uint64_t> commands_received_{0}, commands_applied_{0},
      commands_superseded_{0}, commands_rejected_{0};
  std::atomic<std::uint64_t> watchdog_trips_{0}, watchdog_missed_{0};
  std::atomic<double> success_rate_{1.0};
  std::atomic<Nanoseconds> command_age_{-1};
  std::atomic<double> sim_time_{0.0};
  std::atomic<Nanoseconds> running_wall_{0};      // finished running segments [ns]
  std::atomic<Nanoseconds> segment_start_{0};     // start of the current segment, 0 if none
  std::atomic<double> segment_sim_start_{0.0};
  std::atomic<double> running_sim_{0.0};          // simulated time of finished segments [s]
  FaultInfo fault_;  // written by the RT thread before state_ becomes kFaulted (release)
  bool watchdog_was_tripped_ = false;
  std::uint32_t steps_left_after_cycle_ = 0;  // RT, lockstep: published as command_steps_left
  std::atomic<bool> watchdog_armed_{false}, watchdog_tripped_{false};
  std::atomic<int> worker_index_{-1};  // stats: the shared worker's index (−1: dedicated)

  std::mutex producer_mutex_;  // serializes pushCommand callers
  std::mutex reader_mutex_;    // serializes state readers
  StateSnapshot last_read_;
};

}  // namespace hilsim::rt

