// FaultInjector: the failures a controller must survive on real hardware, on the session's own
// clock (docs/REALISM.md, "Fault injection"). A fault is one of
//
//   drop_commands   commands lost on their way: each begins a lost burst with probability
//                   `rate`, and the `burst` − 1 after it are lost with it
//   delay_commands  commands applied `cycles` control cycles after they arrive
//   drop_states     states to the controller lost (rate, burst), one draw per cycle
//   delay_states    the controller's readings `cycles` control cycles old
//   freeze_sensor   a joint's readings (position, velocity, torque) stuck at their value at onset
//   offset_sensor   a joint's position reading off by `value` [rad or m] (1-DoF joints)
//   lock_joint      a brake holds the joint where it was at onset (within its effort limit)
//   free_joint      the joint gets no torque (its drive is off)
//   cut_drive       the joint gets `value` (0 … 1) of its drive's torque
//   stall           the controller's link is dead: every command and every state lost
//
// scheduled in the session's configuration (a start and a duration in simulation time) or
// injected on demand while the session runs. Faults act on whole control cycles: one that starts
// at t acts from the first cycle that begins at or after t. Drops draw from one generator per
// fault seeded from the session's seed and the fault's id, so a lockstep run is the same, bit for
// bit, on one binary: a controller's fault handling is testable in CI.
//
// In LOCKSTEP the protocol stays intact: a lost or late command still runs its steps and is
// answered (what is lost or late is its set-points), and a lost state is an answer that never
// comes.
#pragma once

#include <Eigen/Core>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model.h"
#include "rt/command.h"
#include "rt/sensor_models.h"
#include "rt/spsc_queue.h"

namespace hilsim::rt {

enum class FaultType : std::uint8_t {
  kDropCommands,
  kDelayCommands,
  kDropStates,
  kDelayStates,
  kFreezeSensor,
  kOffsetSensor,
  kLockJoint,
  kFreeJoint,
  kCutDrive,
  kStall,
};

/// "drop_commands", "delay_commands", …, "stall".
const char* faultTypeName(FaultType type);
/// The type of a name faultTypeName gives; false for any other string.
bool parseFaultType(std::string_view name, FaultType* type);
/// The fault acts on a joint (`joint` names one, or "*" for all).
bool faultNamesJoint(FaultType type);

/// Most faults a session's table holds at once (scheduled and injected, active or waiting).
constexpr int kMaxInjectedFaults = 32;
/// Longest command or state delay [control cycles].
constexpr int kMaxFaultDelayCycles = 1000;

struct FaultSpec {
  FaultType type = FaultType::kDropCommands;
  /// Sensor and joint faults: a joint's name (Model::joint_names), or "*" for every joint.
  std::string joint;
  /// When it begins [s of simulation time]; < 0, on demand: at the next cycle.
  double start = -1.0;
  /// How long it lasts [s]; 0: until cleared or the session is reset.
  double duration = 0.0;
  double rate = 1.0;  ///< drops: probability that a command or state begins a lost burst, (0, 1]
  int burst = 1;      ///< drops: commands or states lost in a row once one is, ≥ 1
  int cycles = 0;     ///< delays: control cycles late, 1 … max_delay_cycles
  /// offset_sensor: added to the position reading [rad or m]; cut_drive: the fraction of the
  /// drive's torque the joint still gets, [0, 1]
  double value = 0.0;
};

struct FaultsConfig {
  std::vector<FaultSpec> schedule;  ///< faults at set times, ids 1, 2, … in this order
  std::uint64_t seed = 0;           ///< the drops' generators' seed
  /// Room of the delay lines [control cycles], 0 … kMaxFaultDelayCycles: the longest delay an
  /// injected fault may ask for (the schedule's own delays are always room enough). A line holds
  /// that many commands and readings (a few kB each), so it is 0 unless asked for.
  int max_delay_cycles = 0;
};

/// A fault of the table: resolved against the model, plain numbers (copies never allocate).
struct ResolvedFault {
  std::uint32_t id = 0;
  FaultType type = FaultType::kDropCommands;
  std::int32_t body = -1;  ///< the joint's body (0: every joint; −1: not a joint fault)
  std::int64_t start_cycle = -1;  ///< first control cycle it acts in (−1: the next one run)
  std::int64_t cycles_long = 0;   ///< control cycles it lasts (0: until cleared)
  double rate = 1.0;
  std::int32_t burst = 1;
  std::int32_t delay = 0;  ///< control cycles
  double value = 0.0;
};

/// A fault acting in a published cycle (ground-truth states, the viewer, statistics).
struct ActiveFault {
  std::uint32_t id = 0;
  FaultType type = FaultType::kDropCommands;
  std::int32_t body = -1;  ///< as ResolvedFault::body
};

struct ActiveFaults {
  std::int32_t count = 0;
  std::array<ActiveFault, kMaxInjectedFaults> list{};
};

/// Since start or reset (on-demand faults counted whatever they did).
struct FaultStats {
  std::uint64_t started = 0;           ///< faults that began acting
  std::uint64_t ended = 0;             ///< faults that ended (duration over, or cleared)
  std::uint64_t commands_lost = 0;     ///< commands dropped (drop_commands, stall)
  std::uint64_t commands_delayed = 0;  ///< commands held back (delay_commands)
  std::uint64_t states_withheld = 0;   ///< states not sent to the controller
  std::uint64_t refused = 0;           ///< injections the full table could not take
  std::int32_t active = 0;             ///< acting in the last cycle
};

/// A fault beginning or ending in a cycle, for the session's events.
struct FaultTransition {
  ActiveFault fault;
  bool started = true;  ///< false: ended
};

/// A request to the running thread: inject a fault, or end one (FaultInjector::clear).
struct FaultRequest {
  bool inject = true;
  ResolvedFault fault;
  std::uint32_t clear_id = 0;
};

class FaultInjector {
 public:
  /// Resolves the schedule against `model` (std::invalid_argument naming the entry: an unknown
  /// joint, a value out of range, a lock on a joint without inertia of its own). `cycle_time`: the
  /// control period [s]; `step_time`: the physics step dt [s]; `q0`: the pose whose inertias tune
  /// the brakes.
  FaultInjector(const Model& model, const FaultsConfig& config, double cycle_time,
                double step_time, const Eigen::VectorXd& q0);

  /// The entry resolved, or std::invalid_argument naming what is wrong (`where`: its label). Any
  /// thread.
  ResolvedFault resolve(const FaultSpec& spec, const std::string& where) const;

  // ---- any non-RT thread: requests the running thread takes at its next cycle ----
  /// Queues a resolved fault (from resolve()); returns its id (0: the request channel is full).
  std::uint32_t inject(ResolvedFault fault);
  /// Queues the end of fault `id` (0: of every fault, scheduled ones included). False when the
  /// request channel is full.
  bool clear(std::uint32_t id);
  /// Since start or reset; any thread.
  FaultStats stats() const;
  /// The table holds kMaxInjectedFaults faults with those waiting to enter it (any thread; as of
  /// the last cycle run).
  bool tableFull() const {
    return slots_used_.load(std::memory_order_relaxed) +
               static_cast<int>(requests_.sizeApprox()) >= kMaxInjectedFaults;
  }
  int maxDelayCycles() const { return max_delay_; }

  // ---- the thread that runs the session ----
  /// Opens control cycle `cycle` (0-based since start or reset): takes the queued requests,
  /// starts and ends faults, captures a lock's pose q (nq). The transitions are in transitions().
  void beginCycle(std::int64_t cycle, const Eigen::VectorXd& q);
  const std::array<FaultTransition, 2 * kMaxInjectedFaults>& transitions() const {
    return transitions_;
  }
  int transitionCount() const { return transition_count_; }
  /// Nothing is injected now and nothing is on its way (the cycle can skip every hook).
  bool idle() const { return active_.count == 0 && commands_in_line_ == 0; }
  const ActiveFaults& active() const { return active_; }

  /// The command the cycle applies given the one it took (nullptr: none): the same, none (lost),
  /// or one that arrived `delay` cycles ago. The pointer lives until the next call.
  const Command* filterCommand(const Command* fresh, std::int64_t cycle);
  /// This cycle's state does not reach the controller (drop_states, stall); one draw per cycle.
  bool withholdState();
  /// A lock, free or cut acts: applyToJoints has work.
  bool actsOnJoints() const { return acts_on_joints_; }
  /// Per physics step, after the actuator models: what the joints get instead of `tau` (nv). A
  /// brake holds up to the joint's effort limit; beyond it, it slips at that torque and grips
  /// again where the joint then is.
  void applyToJoints(const Eigen::VectorXd& q, const Eigen::VectorXd& v, Eigen::VectorXd& tau);
  /// A freeze, offset or delay of the readings acts (or readings are still on their way).
  bool actsOnReadings() const { return acts_on_readings_ || max_delay_ > 0; }
  /// The controller's readings this cycle: `readings` (the sensor models' output, or the truth
  /// copied in when `measured` was false — then it becomes true) with the freezes, offsets and
  /// state delay applied.
  void applyToReadings(SensorReadings& readings, bool& measured, const double* q, const double* v,
                       const double* tau, const double* contact_force, int contacts);

  /// Back to the configuration: the schedule re-armed, injected faults forgotten, generators
  /// reseeded, lines emptied, counters zeroed. Only while no thread runs the session.
  void reset();

 private:
  struct Slot {
    ResolvedFault fault;
    bool used = false;
    bool acting = false;
    std::int64_t start = 0, end = 0;  // cycles [start, end); end < 0: open
    std::int32_t burst_left = 0;
    GaussianNoise generator{0};
  };
  struct DelayedCommand {
    std::int64_t due = 0;  // the cycle that applies it
    Command command;
  };

  void place(const ResolvedFault& fault, std::int64_t cycle);
  bool drawDrop(Slot& slot);
  void note(const Slot& slot, bool started);
  bool jointCovered(const ResolvedFault& fault, int body) const {
    return fault.body == 0 || fault.body == body;
  }

  const Model& model_;
  std::uint64_t seed_;  // FaultsConfig::seed
  double cycle_time_;
  int max_delay_ = 0;
  std::vector<ResolvedFault> schedule_;
  Eigen::VectorXd brake_kp_, brake_kd_;  // per DoF (NaN: no inertia of its own)
  std::vector<int> q_index_;             // per DoF: its coordinate (−1: not 1:1)

  std::array<Slot, kMaxInjectedFaults> slots_{};
  ActiveFaults active_;
  std::array<FaultTransition, 2 * kMaxInjectedFaults> transitions_{};
  int transition_count_ = 0;
  bool acts_on_joints_ = false, acts_on_readings_ = false;
  // per DoF and coordinate: what the acting joint faults do (rebuilt when one starts or ends)
  std::vector<std::uint8_t> dof_locked_, dof_freed_;
  Eigen::VectorXd dof_scale_, lock_q_;  // lock_q_: per coordinate, the pose held
  std::vector<std::uint8_t> q_frozen_, dof_frozen_, q_was_frozen_, dof_was_frozen_;
  Eigen::VectorXd q_offset_;
  SensorReadings frozen_;  // the frozen values, by coordinate and DoF
  int state_delay_ = 0, command_delay_ = 0;

  // delay lines
  std::vector<DelayedCommand> command_line_;
  std::size_t command_head_ = 0;
  int commands_in_line_ = 0;
  std::vector<SensorReadings> reading_line_;
  std::size_t reading_head_ = 0;
  std::int64_t readings_stored_ = 0;

  SpscQueue<FaultRequest> requests_;
  std::mutex producer_mutex_;  // serializes inject/clear callers; never taken by the RT thread
  std::atomic<std::uint32_t> next_id_{1};
  std::atomic<std::uint64_t> started_{0}, ended_{0}, commands_lost_{0}, commands_delayed_{0},
      states_withheld_{0}, refused_{0};
  std::atomic<std::int32_t> active_count_{0};
  std::atomic<int> slots_used_{0};  // scheduled and injected faults in the table
};

}  // namespace hilsim::rt
