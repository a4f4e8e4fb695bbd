#include "rt/fault_injection.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "rt/joint_drives.h"

namespace hilsim::rt {

namespace {

constexpr std::array<const char*, 10> kTypeNames = {
    "drop_commands", "delay_commands", "drop_states", "delay_states", "freeze_sensor",
    "offset_sensor", "lock_joint",     "free_joint",  "cut_drive",    "stall"};

constexpr std::size_t kRequestCapacity = 64;
constexpr int kMaxBurst = 1'000'000;
/// Latest start and longest duration [s of simulation time]: 31 years, far below where a count
/// of control cycles (at most 10⁴ a second) would leave an int64.
constexpr double kMaxFaultTime = 1e9;

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

// The drops' generator of fault `id`: independent of every other fault's draws.
std::uint64_t faultSeed(std::uint64_t seed, std::uint32_t id) {
  return seed ^ (0x9E3779B97F4A7C15ULL * (static_cast<std::uint64_t>(id) + 1));
}

}  // namespace

const char* faultTypeName(FaultType type) {
  const auto index = static_cast<std::size_t>(type);
  return index < kTypeNames.size() ? kTypeNames[index] : "?";
}

bool parseFaultType(std::string_view name, FaultType* type) {
  for (std::size_t k = 0; k < kTypeNames.size(); ++k) {
    if (name == kTypeNames[k]) {
      *type = static_cast<FaultType>(k);
      return true;
    }
  }
  return false;
}

bool faultNamesJoint(FaultType type) {
  switch (type) {
    case FaultType::kFreezeSensor:
    case FaultType::kOffsetSensor:
    case FaultType::kLockJoint:
    case FaultType::kFreeJoint:
    case FaultType::kCutDrive:
      return true;
    default:
      return false;
  }
}

FaultInjector::FaultInjector(const Model& model, const FaultsConfig& config, double cycle_time,
                             double step_time, const Eigen::VectorXd& q0)
    : model_(model),
      seed_(config.seed),
      cycle_time_(cycle_time),
      brake_kp_(Eigen::VectorXd::Constant(model.nv, std::numeric_limits<double>::quiet_NaN())),
      brake_kd_(Eigen::VectorXd::Constant(model.nv, std::numeric_limits<double>::quiet_NaN())),
      q_index_(static_cast<std::size_t>(model.nv), -1),
      dof_locked_(static_cast<std::size_t>(model.nv), 0),
      dof_freed_(static_cast<std::size_t>(model.nv), 0),
      dof_scale_(Eigen::VectorXd::Ones(model.nv)),
      lock_q_(Eigen::VectorXd::Zero(model.nq)),
      q_frozen_(static_cast<std::size_t>(model.nq), 0),
      dof_frozen_(static_cast<std::size_t>(model.nv), 0),
      q_was_frozen_(static_cast<std::size_t>(model.nq), 0),
      dof_was_frozen_(static_cast<std::size_t>(model.nv), 0),
      q_offset_(Eigen::VectorXd::Zero(model.nq)),
      requests_(kRequestCapacity) {
  for (int body = 1; body < model.nbodies; ++body) {
    if (!takesSetPoints(model.joint_type[body])) continue;
    for (int k = 0; k < model.nv_joint[body]; ++k) {
      q_index_[static_cast<std::size_t>(model.idx_v[body] + k)] = model.idx_q[body] + k;
    }
  }
  // A brake: the sampled PD loop of docs/REALISM.md with a = kp·dt²/I = 1 and b = kd·dt/I = 1 on
  // the DoF's smallest inertia, poles at |λ| = 1/√2 per step; stable for any inertia above half
  // of it (b < 2), which the other joints only raise.
  if (const Eigen::VectorXd inertia = smallestInertias(model, q0); inertia.size() == model.nv) {
    for (int dof = 0; dof < model.nv; ++dof) {
      if (!std::isfinite(inertia[dof]) || !(inertia[dof] > 0.0)) continue;
      brake_kp_[dof] = inertia[dof] / (step_time * step_time);
      brake_kd_[dof] = inertia[dof] / step_time;
    }
  }
  if (config.max_delay_cycles < 0 || config.max_delay_cycles > kMaxFaultDelayCycles) {
    throw std::invalid_argument("faults.max_delay_cycles " +
                                std::to_string(config.max_delay_cycles) + " is outside 0 to " +
                                std::to_string(kMaxFaultDelayCycles));
  }
  max_delay_ = config.max_delay_cycles;
  for (const FaultSpec& spec : config.schedule) {
    if ((spec.type == FaultType::kDelayCommands || spec.type == FaultType::kDelayStates) &&
        spec.cycles > 0 && spec.cycles <= kMaxFaultDelayCycles) {
      max_delay_ = std::max(max_delay_, spec.cycles);
    }
  }
  if (config.schedule.size() > static_cast<std::size_t>(kMaxInjectedFaults)) {
    throw std::invalid_argument("faults.schedule holds " + std::to_string(config.schedule.size()) +
                                " faults; a session holds at most " +
                                std::to_string(kMaxInjectedFaults));
  }
  for (std::size_t k = 0; k < config.schedule.size(); ++k) {
    const FaultSpec& spec = config.schedule[k];
    const std::string where =
        "faults.schedule[" + std::to_string(k) + "] (" + faultTypeName(spec.type) + ")";
    if (!(spec.start >= 0.0)) {
      throw std::invalid_argument(where + ": a scheduled fault needs a start ≥ 0 s");
    }
    ResolvedFault fault = resolve(spec, where);
    fault.id = static_cast<std::uint32_t>(k + 1);
    schedule_.push_back(fault);
  }
  next_id_.store(static_cast<std::uint32_t>(schedule_.size() + 1));
  if (max_delay_ > 0) {
    command_line_.resize(static_cast<std::size_t>(max_delay_) + 1);
    reading_line_.resize(static_cast<std::size_t>(max_delay_) + 1);
  }
  reset();
}

ResolvedFault FaultInjector::resolve(const FaultSpec& spec, const std::string& where) const {
  auto fail = [&](const std::string& why) { throw std::invalid_argument(where + ": " + why); };
  ResolvedFault out;
  out.type = spec.type;
  if (static_cast<std::size_t>(spec.type) >= kTypeNames.size()) fail("unknown fault type");
  if (!(spec.start <= kMaxFaultTime)) fail("start " + number(spec.start) + " s is above 10⁹ s");
  if (!(spec.duration >= 0.0 && spec.duration <= kMaxFaultTime)) {
    fail("duration " + number(spec.duration) + " s must be within 0 (until cleared) and 10⁹ s");
  }
  if (faultNamesJoint(spec.type)) {
    if (spec.joint.empty()) fail("names no joint (a joint's name, or \"*\" for every joint)");
    if (spec.joint == "*") {
      out.body = 0;
    } else {
      const auto named =
          std::find(model_.joint_names.begin() + 1, model_.joint_names.end(), spec.joint);
      if (named == model_.joint_names.end()) {
        fail("the model '" + model_.name + "' has no joint '" + spec.joint + "'");
      }
      out.body = static_cast<std::int32_t>(named - model_.joint_names.begin());
    }
  } else if (!spec.joint.empty()) {
    fail("a " + std::string(faultTypeName(spec.type)) + " fault names no joint");
  }
  const std::string joint = out.body > 0 ? "joint '" + spec.joint + "'" : "";
  switch (spec.type) {
    case FaultType::kDropCommands:
    case FaultType::kDropStates:
      if (!(spec.rate > 0.0 && spec.rate <= 1.0)) fail("rate " + number(spec.rate) + " is outside (0, 1]");
      if (spec.burst < 1 || spec.burst > kMaxBurst) {
        fail("burst " + std::to_string(spec.burst) + " is outside 1 to " + std::to_string(kMaxBurst));
      }
      out.rate = spec.rate;
      out.burst = spec.burst;
      break;
    case FaultType::kDelayCommands:
    case FaultType::kDelayStates:
      if (spec.cycles < 1 || spec.cycles > max_delay_) {
        fail("cycles " + std::to_string(spec.cycles) + " is outside 1 to " +
             std::to_string(max_delay_) + " (faults.max_delay_cycles: the room of the session's "
             "delay lines, at most " + std::to_string(kMaxFaultDelayCycles) + ")");
      }
      out.delay = spec.cycles;
      break;
    case FaultType::kOffsetSensor:
      if (!std::isfinite(spec.value)) fail("value must be finite");
      if (out.body > 0 && (model_.nq_joint[out.body] != 1 || model_.nv_joint[out.body] != 1)) {
        fail(joint + " is not a 1-DoF joint (offsets are for encoders)");
      }
      out.value = spec.value;
      break;
    case FaultType::kCutDrive:
      if (!(spec.value >= 0.0 && spec.value <= 1.0)) {
        fail("value " + number(spec.value) + " (the torque's fraction left) is outside [0, 1]");
      }
      out.value = spec.value;
      break;
    case FaultType::kLockJoint:
      if (out.body > 0) {
        const JointType type = model_.joint_type[out.body];
        if (!takesSetPoints(type)) {
          fail(joint + " is a " + std::string(jointTypeName(type)) +
               " joint; brakes are for revolute, prismatic and planar joints");
        }
        for (int k = 0; k < model_.nv_joint[out.body]; ++k) {
          if (std::isnan(brake_kp_[model_.idx_v[out.body] + k])) {
            fail(joint + " has no inertia of its own to brake (a massless body's)");
          }
        }
      }
      break;
    default:
      break;
  }
  out.start_cycle =
      spec.start < 0.0 ? -1 : static_cast<std::int64_t>(std::ceil(spec.start / cycle_time_ - 1e-9));
  out.cycles_long =
      spec.duration == 0.0
          ? 0
          : std::max<std::int64_t>(1, std::llround(spec.duration / cycle_time_));
  return out;
}

std::uint32_t FaultInjector::inject(ResolvedFault fault) {
  std::lock_guard lock(producer_mutex_);
  fault.id = next_id_.fetch_add(1);
  FaultRequest request;
  request.inject = true;
  request.fault = fault;
  return requests_.tryPush(request) ? fault.id : 0;
}

bool FaultInjector::clear(std::uint32_t id) {
  std::lock_guard lock(producer_mutex_);
  FaultRequest request;
  request.inject = false;
  request.clear_id = id;
  return requests_.tryPush(request);
}

FaultStats FaultInjector::stats() const {
  FaultStats s;
  s.started = started_.load(std::memory_order_relaxed);
  s.ended = ended_.load(std::memory_order_relaxed);
  s.commands_lost = commands_lost_.load(std::memory_order_relaxed);
  s.commands_delayed = commands_delayed_.load(std::memory_order_relaxed);
  s.states_withheld = states_withheld_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  s.active = active_count_.load(std::memory_order_relaxed);
  return s;
}

void FaultInjector::place(const ResolvedFault& fault, std::int64_t cycle) {
  for (Slot& slot : slots_) {
    if (slot.used) continue;
    slot.fault = fault;
    slot.used = true;
    slot.acting = false;
    slot.start = fault.start_cycle < 0 ? cycle : fault.start_cycle;
    slot.end = fault.cycles_long > 0 ? slot.start + fault.cycles_long : -1;
    slot.burst_left = 0;
    slot.generator.reseed(faultSeed(seed_, fault.id));
    return;
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
}

void FaultInjector::note(const Slot& slot, bool started) {
  FaultTransition& t = transitions_[static_cast<std::size_t>(transition_count_++)];
  t.fault = ActiveFault{slot.fault.id, slot.fault.type, slot.fault.body};
  t.started = started;
  (started ? started_ : ended_).fetch_add(1, std::memory_order_relaxed);
}

void FaultInjector::beginCycle(std::int64_t cycle, const Eigen::VectorXd& q) {
  transition_count_ = 0;
  bool changed = false;
  FaultRequest request;
  while (requests_.tryPop(request)) {
    if (request.inject) {
      place(request.fault, cycle);
      continue;
    }
    for (Slot& slot : slots_) {
      if (!slot.used || (request.clear_id != 0 && slot.fault.id != request.clear_id)) continue;
      if (slot.acting) {
        note(slot, false);
        changed = true;
      }
      slot.used = false;
      slot.acting = false;
    }
  }
  int used = 0;
  for (Slot& slot : slots_) {
    if (!slot.used) continue;
    ++used;
    const bool over = slot.end >= 0 && cycle >= slot.end;
    if (slot.acting && over) {
      note(slot, false);
      slot.used = slot.acting = false;
      --used;
      changed = true;
    } else if (!slot.acting && over) {
      slot.used = false;  // its whole span went by before it could act
      --used;
    } else if (!slot.acting && cycle >= slot.start) {
      slot.acting = true;
      note(slot, true);
      changed = true;
    }
  }
  slots_used_.store(used, std::memory_order_relaxed);
  if (!changed) return;

  // what the acting faults do, per DoF and coordinate
  active_.count = 0;
  acts_on_joints_ = acts_on_readings_ = false;
  state_delay_ = command_delay_ = 0;
  std::fill(dof_freed_.begin(), dof_freed_.end(), 0);
  std::fill(q_frozen_.begin(), q_frozen_.end(), 0);
  std::fill(dof_frozen_.begin(), dof_frozen_.end(), 0);
  dof_scale_.setOnes();
  q_offset_.setZero();
  // a lock keeps the pose it took while it goes on acting: only newly locked DoFs capture q
  // (2: locked before this change; | 1: locked after it)
  for (std::uint8_t& locked : dof_locked_) locked = locked ? 2 : 0;
  for (const Slot& slot : slots_) {
    if (!slot.acting) continue;
    const ResolvedFault& f = slot.fault;
    active_.list[static_cast<std::size_t>(active_.count++)] = ActiveFault{f.id, f.type, f.body};
    switch (f.type) {
      case FaultType::kDelayCommands: command_delay_ = std::max(command_delay_, f.delay); break;
      case FaultType::kDelayStates:
        state_delay_ = std::max(state_delay_, f.delay);
        acts_on_readings_ = true;
        break;
      default: break;
    }
    if (!faultNamesJoint(f.type)) continue;
    for (int body = 1; body < model_.nbodies; ++body) {
      if (!jointCovered(f, body)) continue;
      const int nv_joint = model_.nv_joint[body], nq_joint = model_.nq_joint[body];
      for (int k = 0; k < nv_joint; ++k) {
        const int dof = model_.idx_v[body] + k;
        const auto at = static_cast<std::size_t>(dof);
        switch (f.type) {
          case FaultType::kLockJoint:
            if (q_index_[at] >= 0 && !std::isnan(brake_kp_[dof])) {
              if (dof_locked_[at] == 0) lock_q_[q_index_[at]] = q[q_index_[at]];
              dof_locked_[at] |= 1;
              acts_on_joints_ = true;
            }
            break;
          case FaultType::kFreeJoint:
            dof_freed_[at] = 1;
            acts_on_joints_ = true;
            break;
          case FaultType::kCutDrive:
            dof_scale_[dof] *= f.value;
            acts_on_joints_ = true;
            break;
          case FaultType::kFreezeSensor:
            dof_frozen_[at] = 1;
            acts_on_readings_ = true;
            break;
          default: break;
        }
      }
      if (f.type == FaultType::kFreezeSensor) {
        for (int k = 0; k < nq_joint; ++k) q_frozen_[static_cast<std::size_t>(model_.idx_q[body] + k)] = 1;
      } else if (f.type == FaultType::kOffsetSensor && nq_joint == 1 && nv_joint == 1) {
        q_offset_[model_.idx_q[body]] += f.value;
        acts_on_readings_ = true;
      }
    }
  }
  // locks no acting fault holds any more are released; the rest keep the pose they took
  for (std::uint8_t& locked : dof_locked_) locked = (locked & 1) ? 1 : 0;
  // a reading no freeze holds any more is live again; the next freeze takes a new value
  for (std::size_t k = 0; k < q_frozen_.size(); ++k) q_was_frozen_[k] &= q_frozen_[k];
  for (std::size_t k = 0; k < dof_frozen_.size(); ++k) dof_was_frozen_[k] &= dof_frozen_[k];
  active_count_.store(active_.count, std::memory_order_relaxed);
}

bool FaultInjector::drawDrop(Slot& slot) {
  if (slot.burst_left > 0) {
    --slot.burst_left;
    return true;
  }
  const double u = static_cast<double>(slot.generator.nextBits() >> 11) * 0x1.0p-53;
  if (u < slot.fault.rate) {
    slot.burst_left = slot.fault.burst - 1;
    return true;
  }
  return false;
}

const Command* FaultInjector::filterCommand(const Command* fresh, std::int64_t cycle) {
  if (fresh != nullptr) {
    bool lost = false;
    for (Slot& slot : slots_) {
      if (!slot.acting) continue;
      // every acting drop draws, lost or not, so that one fault's draws never shift another's
      if (slot.fault.type == FaultType::kStall) lost = true;
      if (slot.fault.type == FaultType::kDropCommands) lost = drawDrop(slot) || lost;
    }
    if (lost) {
      commands_lost_.fetch_add(1, std::memory_order_relaxed);
      fresh = nullptr;
    }
  }
  if (command_line_.empty()) return fresh;
  const std::size_t capacity = command_line_.size();
  if (fresh != nullptr && command_delay_ == 0 && commands_in_line_ > 0) {
    // the delay is over: a new command overtakes those still on their way, which are lost
    commands_lost_.fetch_add(static_cast<std::uint64_t>(commands_in_line_),
                             std::memory_order_relaxed);
    commands_in_line_ = 0;
    return fresh;
  }
  if (fresh != nullptr && command_delay_ > 0) {
    if (commands_in_line_ == static_cast<int>(capacity)) {  // the oldest gives way
      command_head_ = (command_head_ + 1) % capacity;
      --commands_in_line_;
      commands_lost_.fetch_add(1, std::memory_order_relaxed);
    }
    DelayedCommand& slot =
        command_line_[(command_head_ + static_cast<std::size_t>(commands_in_line_)) % capacity];
    slot.due = cycle + command_delay_;
    slot.command = *fresh;
    ++commands_in_line_;
    commands_delayed_.fetch_add(1, std::memory_order_relaxed);
    fresh = nullptr;
  }
  const Command* released = fresh;
  while (commands_in_line_ > 0 && command_line_[command_head_].due <= cycle) {
    // the newest due one wins (several fall due at once when a delay shrinks): the others lost
    if (released != nullptr) commands_lost_.fetch_add(1, std::memory_order_relaxed);
    released = &command_line_[command_head_].command;
    command_head_ = (command_head_ + 1) % capacity;
    --commands_in_line_;
  }
  return released;
}

bool FaultInjector::withholdState() {
  bool withheld = false;
  for (Slot& slot : slots_) {
    if (!slot.acting) continue;
    if (slot.fault.type == FaultType::kStall) withheld = true;
    if (slot.fault.type == FaultType::kDropStates) withheld = drawDrop(slot) || withheld;
  }
  if (withheld) states_withheld_.fetch_add(1, std::memory_order_relaxed);
  return withheld;
}

void FaultInjector::applyToJoints(const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                  Eigen::VectorXd& tau) {
  for (int dof = 0; dof < model_.nv; ++dof) {
    const auto at = static_cast<std::size_t>(dof);
    if (dof_locked_[at]) {
      const int k = q_index_[at];
      const double hold = -brake_kp_[dof] * (q[k] - lock_q_[k]) - brake_kd_[dof] * v[dof];
      const double limit = model_.effort_limit[dof];  // 0: none
      if (limit > 0.0 && std::abs(hold) > limit) {
        // more than the brake can hold: it slips, braking at its limit, and grips again where
        // the joint is (a held pose chased at full torque would overshoot and ring)
        tau[dof] = -std::clamp(brake_kd_[dof] * v[dof], -limit, limit);
        lock_q_[k] = q[k];
      } else {
        tau[dof] = hold;
      }
    } else if (dof_freed_[at]) {
      tau[dof] = 0.0;
    } else {
      tau[dof] *= dof_scale_[dof];
    }
  }
}

void FaultInjector::applyToReadings(SensorReadings& readings, bool& measured, const double* q,
                                    const double* v, const double* tau,
                                    const double* contact_force, int contacts) {
  if (!acts_on_readings_ && reading_line_.empty()) return;
  if (!measured) {  // the truth, as perfect sensors read it
    std::copy_n(q, model_.nq, readings.q.begin());
    std::copy_n(v, model_.nv, readings.v.begin());
    std::copy_n(tau, model_.nv, readings.tau.begin());
    std::copy_n(contact_force, 3 * contacts, readings.contact_force.begin());
  }
  // a frozen reading keeps the value it had when the freeze began
  for (int k = 0; k < model_.nq; ++k) {
    const auto at = static_cast<std::size_t>(k);
    if (!q_frozen_[at]) {
      q_was_frozen_[at] = 0;
      continue;
    }
    if (!q_was_frozen_[at]) frozen_.q[at] = readings.q[at];
    q_was_frozen_[at] = 1;
    readings.q[at] = frozen_.q[at];
  }
  for (int dof = 0; dof < model_.nv; ++dof) {
    const auto at = static_cast<std::size_t>(dof);
    if (!dof_frozen_[at]) {
      dof_was_frozen_[at] = 0;
      continue;
    }
    if (!dof_was_frozen_[at]) {
      frozen_.v[at] = readings.v[at];
      frozen_.tau[at] = readings.tau[at];
    }
    dof_was_frozen_[at] = 1;
    readings.v[at] = frozen_.v[at];
    readings.tau[at] = frozen_.tau[at];
  }
  for (int k = 0; k < model_.nq; ++k) readings.q[static_cast<std::size_t>(k)] += q_offset_[k];
  if (!reading_line_.empty()) {
    const std::size_t capacity = reading_line_.size();
    reading_line_[reading_head_] = readings;
    reading_head_ = (reading_head_ + 1) % capacity;
    ++readings_stored_;
    if (state_delay_ > 0) {
      // the oldest there is, when the line has not yet seen `state_delay_` cycles
      const auto back = static_cast<std::size_t>(
          std::min<std::int64_t>(state_delay_, readings_stored_ - 1));
      readings = reading_line_[(reading_head_ + capacity - 1 - back) % capacity];
    }
  }
  measured = measured || acts_on_readings_;
}

void FaultInjector::reset() {
  {
    // injected faults are forgotten, and the ids start again after the schedule's (an id seeds
    // its fault's draws: a run after a reset draws as the first)
    std::lock_guard lock(producer_mutex_);
    FaultRequest request;
    while (requests_.tryPop(request)) {
    }
    next_id_.store(static_cast<std::uint32_t>(schedule_.size() + 1));
  }
  for (Slot& slot : slots_) slot.used = slot.acting = false;
  for (const ResolvedFault& fault : schedule_) place(fault, 0);
  active_.count = 0;
  transition_count_ = 0;
  acts_on_joints_ = acts_on_readings_ = false;
  state_delay_ = command_delay_ = 0;
  std::fill(dof_locked_.begin(), dof_locked_.end(), 0);
  std::fill(dof_freed_.begin(), dof_freed_.end(), 0);
  std::fill(q_frozen_.begin(), q_frozen_.end(), 0);
  std::fill(dof_frozen_.begin(), dof_frozen_.end(), 0);
  std::fill(q_was_frozen_.begin(), q_was_frozen_.end(), 0);
  std::fill(dof_was_frozen_.begin(), dof_was_frozen_.end(), 0);
  dof_scale_.setOnes();
  q_offset_.setZero();
  command_head_ = 0;
  commands_in_line_ = 0;
  reading_head_ = 0;
  readings_stored_ = 0;
  for (auto* counter : {&started_, &ended_, &commands_lost_, &commands_delayed_, &states_withheld_,
                        &refused_}) {
    counter->store(0, std::memory_order_relaxed);
  }
  active_count_.store(0, std::memory_order_relaxed);
  slots_used_.store(static_cast<int>(schedule_.size()), std::memory_order_relaxed);
}

}  // namespace hilsim::rt
