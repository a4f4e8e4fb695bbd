#include "server/conversions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "engine/integrators/simulator.h"
#include "engine/integrators/step_limit.h"
#include "hilsim/v1/udp.pb.h"
#include "proto/engine_names.h"
#include "proto/udp_frame.h"
#include "rt/session_limits.h"

namespace hilsim::server {

v1::SessionState toProto(rt::SessionState state) {
  switch (state) {
    case rt::SessionState::kCreated: return v1::SESSION_STATE_CREATED;
    case rt::SessionState::kRunning: return v1::SESSION_STATE_RUNNING;
    case rt::SessionState::kPaused: return v1::SESSION_STATE_PAUSED;
    case rt::SessionState::kStopped: return v1::SESSION_STATE_STOPPED;
    case rt::SessionState::kFaulted: return v1::SESSION_STATE_FAULTED;
  }
  return v1::SESSION_STATE_UNSPECIFIED;
}

v1::SessionMode toProto(rt::SessionMode mode) {
  switch (mode) {
    case rt::SessionMode::kRealtime: return v1::SESSION_MODE_REALTIME;
    case rt::SessionMode::kLockstep: return v1::SESSION_MODE_LOCKSTEP;
    case rt::SessionMode::kFree: return v1::SESSION_MODE_FREE;
  }
  return v1::SESSION_MODE_UNSPECIFIED;
}

std::string fromProto(const v1::InjectedFault& fault, bool scheduled, const std::string& where,
                      rt::FaultSpec* out) {
  // the wire's types are the engine's, in the same order, from 1
  if (fault.type() <= v1::FAULT_TYPE_UNSPECIFIED || fault.type() > v1::FAULT_TYPE_STALL) {
    return where + ".type: unset or unknown (" + std::to_string(fault.type()) + ")";
  }
  out->type = static_cast<rt::FaultType>(fault.type() - 1);
  out->joint = fault.joint();
  if (fault.has_start_s()) {
    if (!(fault.start_s() >= 0.0) || !std::isfinite(fault.start_s())) {
      return where + ".start_s = " + std::to_string(fault.start_s()) + ": a finite time ≥ 0 s";
    }
    out->start = fault.start_s();
  } else {
    out->start = scheduled ? 0.0 : -1.0;
  }
  out->duration = fault.duration_s();
  out->rate = fault.has_rate() ? fault.rate() : 1.0;
  out->burst = fault.burst() == 0 ? 1
               : fault.burst() > 1'000'000 ? 1'000'001  // refused by the session, named
                                           : static_cast<int>(fault.burst());
  out->cycles = static_cast<int>(std::min<std::uint32_t>(fault.cycles(), 1'000'001));
  out->value = fault.value();
  return "";
}

void toProto(const rt::ActiveFault& fault, const Model& model, v1::InjectedFault* out) {
  out->set_id(fault.id);
  out->set_type(static_cast<v1::FaultType>(static_cast<int>(fault.type) + 1));
  if (fault.body == 0) {
    out->set_joint("*");
  } else if (fault.body > 0 && fault.body < static_cast<std::int32_t>(model.joint_names.size())) {
    out->set_joint(model.joint_names[static_cast<std::size_t>(fault.body)]);
  }
}

void toProto(const rt::FaultInfo& fault, const std::string& reason, v1::Fault* out) {
  switch (fault.kind) {
    case rt::FaultKind::kNone: out->set_kind(v1::Fault::KIND_UNSPECIFIED); break;
    case rt::FaultKind::kNonFiniteCommand: out->set_kind(v1::Fault::KIND_NON_FINITE_COMMAND); break;
    case rt::FaultKind::kNonFiniteState: out->set_kind(v1::Fault::KIND_NON_FINITE_STATE); break;
    case rt::FaultKind::kExplodingState: out->set_kind(v1::Fault::KIND_EXPLODING_STATE); break;
    case rt::FaultKind::kDeadlineMiss: out->set_kind(v1::Fault::KIND_DEADLINE_MISS); break;
    case rt::FaultKind::kWatchdog: out->set_kind(v1::Fault::KIND_WATCHDOG); break;
    case rt::FaultKind::kConstraintFailure:
      out->set_kind(v1::Fault::KIND_CONSTRAINT_FAILURE);
      break;
  }
  out->set_reason(reason);
  out->set_cycle(fault.cycle);
  out->set_time(fault.time);
  out->set_index(fault.index);
  out->set_value(fault.value);
  out->set_command_sequence(fault.command_sequence);
}

void toProto(const rt::WorkerStats& stats, v1::WorkerStats* out) {
  out->set_index(stats.index);
  out->set_cpu(stats.cpu);
  out->set_sessions(static_cast<std::uint32_t>(stats.sessions));
  out->set_attached(static_cast<std::uint32_t>(stats.attached));
  out->set_cycles(stats.cycles);
  out->set_utilisation(stats.utilisation);
  out->set_load(stats.load);
}

void toProto(const rt::HistogramSummary& summary, v1::LatencySummary* out) {
  out->set_count(summary.count);
  out->set_min_ns(summary.min);
  out->set_max_ns(summary.max);
  out->set_mean_ns(summary.mean);
  out->set_p50_ns(summary.p50);
  out->set_p90_ns(summary.p90);
  out->set_p99_ns(summary.p99);
  out->set_p999_ns(summary.p999);
}

namespace {

v1::JointType jointType(JointType type) {
  switch (type) {
    case JointType::kRevolute: return v1::JOINT_TYPE_REVOLUTE;
    case JointType::kPrismatic: return v1::JOINT_TYPE_PRISMATIC;
    case JointType::kSpherical: return v1::JOINT_TYPE_SPHERICAL;
    case JointType::kFreeFlyer: return v1::JOINT_TYPE_FREE;
    case JointType::kPlanar: return v1::JOINT_TYPE_PLANAR;
  }
  return v1::JOINT_TYPE_UNSPECIFIED;
}

// A State with every field the model's states carry set to a value of its largest encoding.
void fillWorstCaseState(const Model& model, v1::State* state) {
  const int nq = model.nq, nv = model.nv;
  constexpr double kValue = -1.2345678901234567e300;
  state->set_session_id(std::numeric_limits<std::uint64_t>::max());
  state->set_cycle(std::numeric_limits<std::uint64_t>::max());
  state->set_time(kValue);
  state->set_state(v1::SESSION_STATE_FAULTED);
  for (int i = 0; i < nq; ++i) state->add_q(kValue);
  for (int i = 0; i < nv; ++i) state->add_v(kValue);
  for (int i = 0; i < nv; ++i) state->add_tau(kValue);
  state->set_command_sequence(std::numeric_limits<std::uint64_t>::max());
  state->set_command_client_send_time_ns(std::numeric_limits<std::int64_t>::min());
  state->set_command_receive_time_ns(std::numeric_limits<std::int64_t>::min());
  state->set_publish_time_ns(std::numeric_limits<std::int64_t>::min());
  state->set_send_time_ns(std::numeric_limits<std::int64_t>::min());
  state->set_watchdog_tripped(true);
  const StateExtras extras = stateExtras(model);
  for (int i = 0; extras.tau_commanded && i < nv; ++i) state->add_tau_commanded(kValue);
  for (int i = 0; extras.limit_force && i < nv; ++i) state->add_limit_force(kValue);
  for (int i = 0; i < 3 * extras.contacts; ++i) state->add_contact_force(kValue);
  for (int i = 0; i < extras.contacts; ++i) state->add_contact_depth(kValue);
}

template <typename T>
T pick(T requested, T server_default, T contract_default) {
  if (requested != T{}) return requested;
  if (server_default != T{}) return server_default;
  return contract_default;
}

std::string describe(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

}  // namespace

v1::ModelInfo describeModel(const Model& model, const std::string& name) {
  v1::ModelInfo info;
  info.set_name(name.empty() ? model.name : name);
  info.set_nq(static_cast<std::uint32_t>(model.nq));
  info.set_nv(static_cast<std::uint32_t>(model.nv));
  info.set_nbodies(static_cast<std::uint32_t>(model.nbodies));
  for (int i = 1; i < model.nbodies; ++i) {
    v1::JointInfo* joint = info.add_joints();
    joint->set_name(model.joint_names[i]);
    joint->set_type(jointType(model.joints[i].type));
    joint->set_q_start(static_cast<std::uint32_t>(model.idx_q[i]));
    joint->set_nq(static_cast<std::uint32_t>(model.nq_joint[i]));
    joint->set_v_start(static_cast<std::uint32_t>(model.idx_v[i]));
    joint->set_nv(static_cast<std::uint32_t>(model.nv_joint[i]));
    joint->set_body(model.body_names[i]);
    joint->set_parent_body(model.body_names[model.parent[i]]);
  }
  for (const std::string& label : coordinateLabels(model, false)) info.add_q_labels(label);
  for (const std::string& label : coordinateLabels(model, true)) info.add_v_labels(label);
  const Eigen::VectorXd neutral = model.neutralConfiguration();
  info.mutable_neutral_q()->Assign(neutral.data(), neutral.data() + neutral.size());
  for (int k = 0; k < 3; ++k) info.add_gravity(model.gravity[k]);
  double mass = 0.0;
  for (int i = 1; i < model.nbodies; ++i) mass += model.inertias[i].mass;
  info.set_total_mass(mass);
  info.set_nalgebraic(static_cast<std::uint32_t>(model.nalgebraic));
  const StateExtras extras = stateExtras(model);
  info.set_floating_base(hasFloatingBase(model));
  for (const std::string& warning : model.load_warnings) info.add_warnings(warning);
  info.set_position_limits(extras.limit_force);
  info.set_actuator_limits(extras.tau_commanded);
  // +inf (unknown) and 0 (a URDF's "not given") both mean no limit: sent as 0
  const auto limit = [](double value) { return std::isfinite(value) && value > 0.0 ? value : 0.0; };
  for (int d = 0; extras.tau_commanded && d < model.nv; ++d) {
    info.add_effort_limit(limit(model.effort_limit[d]));
    info.add_velocity_limit(limit(model.velocity_limit[d]));
  }
  for (int k = 0; k < extras.contacts; ++k) info.add_contacts(model.contact_spheres[k].name);
  return info;
}

StateExtras stateExtras(const Model& model) {
  StateExtras extras;
  extras.tau_commanded = model.actuator_limits_enforced && model.nv > 0;
  for (int d = 0; d < model.nv; ++d) extras.limit_force = extras.limit_force || model.limitEnforced(d);
  extras.contacts = model.ground.enabled ? static_cast<int>(model.contact_spheres.size()) : 0;
  return extras;
}

std::uint32_t udpStateMaxBytes(const Model& model, const DatagramShape& shape) {
  v1::UdpState message;
  fillWorstCaseState(model, message.mutable_state());
  message.mutable_state()->set_measured(shape.measured);
  if (shape.imu) {
    v1::Imu* reading = message.mutable_state()->mutable_imu();
    for (int i = 0; i < 4; ++i) reading->add_orientation(-1.2345678901234567e300);
    for (int i = 0; i < 3; ++i) reading->add_angular_velocity(-1.2345678901234567e300);
    for (int i = 0; i < 3; ++i) reading->add_linear_acceleration(-1.2345678901234567e300);
  }
  return static_cast<std::uint32_t>(message.ByteSizeLong() +
                                    (shape.mac ? udp::kFrameOverheadBytes : 0));
}

std::uint32_t udpCommandMaxBytes(const Model& model, const DatagramShape& shape) {
  const int nv = model.nv;
  v1::UdpCommand message;
  if (!shape.mac) message.set_token(std::string(16, '\xff'));
  v1::Command* command = message.mutable_command();
  command->set_session_id(std::numeric_limits<std::uint64_t>::max());
  command->set_sequence(std::numeric_limits<std::uint64_t>::max());
  command->set_client_send_time_ns(std::numeric_limits<std::int64_t>::min());
  for (int i = 0; i < nv; ++i) command->add_tau(-1.2345678901234567e300);
  for (int i = 0; shape.positions && i < nv; ++i) command->add_position(-1.2345678901234567e300);
  for (int i = 0; shape.velocities && i < nv; ++i) command->add_velocity(-1.2345678901234567e300);
  command->set_steps(std::numeric_limits<std::uint32_t>::max());
  for (int i = 0; hasFloatingBase(model) && i < 6; ++i) command->add_base_wrench(-1.2345678901234567e300);
  return static_cast<std::uint32_t>(message.ByteSizeLong() +
                                    (shape.mac ? udp::kFrameOverheadBytes : 0));
}

std::string checkVector(const google::protobuf::RepeatedField<double>& values, int size,
                        const char* field, const char* size_name) {
  if (values.size() != size) {
    return std::string(field) + ": " + std::to_string(values.size()) + " values, the model has " +
           size_name + " = " + std::to_string(size);
  }
  for (int i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return std::string(field) + "[" + std::to_string(i) + "] = " + describe(values[i]) +
             ": must be finite";
    }
  }
  return "";
}

StepLimit sessionStepLimit(const v1::SessionConfig& request, const Model& model) {
  if (request.initial_q_size() == model.nq &&
      std::all_of(request.initial_q().begin(), request.initial_q().end(),
                  [](double x) { return std::isfinite(x); })) {
    return rk4StepLimit(model, Eigen::Map<const Eigen::VectorXd>(request.initial_q().data(),
                                                                 model.nq));
  }
  return rk4StepLimit(model, model.initialConfiguration());
}

std::string resolveSessionConfig(const v1::SessionConfig& request, const ServerConfig& server,
                                 std::shared_ptr<const Model> model, std::uint64_t session_id,
                                 rt::SessionConfig* out, v1::SessionConfig* effective,
                                 const StepLimit* step_limit) {
  const v1::SessionConfig& defaults = server.session_defaults;
  v1::SessionConfig e;

  e.set_mode(pick(request.mode(), defaults.mode(), v1::SESSION_MODE_REALTIME));
  e.set_control_rate_hz(pick(request.control_rate_hz(), defaults.control_rate_hz(), 1000.0));
  e.set_substeps(pick(request.substeps(), defaults.substeps(), 1u));
  e.set_formulation(pick(request.formulation(), defaults.formulation(), v1::FORMULATION_ABA));
  e.set_integrator(pick(request.integrator(), defaults.integrator(), v1::INTEGRATOR_RK4));
  e.set_threads(pick(request.threads(), defaults.threads(), 1u));

  v1::WatchdogConfig* watchdog = e.mutable_watchdog();
  watchdog->set_policy(pick(request.watchdog().policy(), defaults.watchdog().policy(),
                            v1::WATCHDOG_POLICY_HOLD));
  watchdog->set_missed_cycles_limit(pick(request.watchdog().missed_cycles_limit(),
                                         defaults.watchdog().missed_cycles_limit(), 20u));
  watchdog->set_damping_gain(request.watchdog().has_damping_gain()
                                 ? request.watchdog().damping_gain()
                                 : defaults.watchdog().has_damping_gain()
                                       ? defaults.watchdog().damping_gain()
                                       : 1.0);

  v1::OverrunConfig* overrun = e.mutable_overrun();
  overrun->set_policy(pick(request.overrun().policy(), defaults.overrun().policy(),
                           v1::OVERRUN_POLICY_SKIP));
  overrun->set_max_catch_up(request.overrun().has_max_catch_up()
                                ? request.overrun().max_catch_up()
                                : defaults.overrun().has_max_catch_up()
                                      ? defaults.overrun().max_catch_up()
                                      : 10u);

  const v1::RtThreadConfig& rq = request.thread();
  const v1::RtThreadConfig& dq = defaults.thread();
  v1::RtThreadConfig* thread = e.mutable_thread();
  thread->set_lock_memory(rq.has_lock_memory() ? rq.lock_memory()
                          : dq.has_lock_memory() ? dq.lock_memory()
                                                 : true);
  thread->set_prefault_stack_bytes(rq.has_prefault_stack_bytes() ? rq.prefault_stack_bytes()
                                   : dq.has_prefault_stack_bytes() ? dq.prefault_stack_bytes()
                                                                   : 256u * 1024u);
  thread->set_fifo_priority(pick(rq.fifo_priority(), dq.fifo_priority(), 0u));
  thread->set_cpu(rq.has_cpu() ? rq.cpu() : dq.has_cpu() ? dq.cpu() : -1);
  thread->set_minimal_timer_slack(rq.has_minimal_timer_slack() ? rq.minimal_timer_slack()
                                  : dq.has_minimal_timer_slack() ? dq.minimal_timer_slack()
                                                                 : true);
  thread->set_dedicated(rq.has_dedicated() ? rq.dedicated() : dq.has_dedicated() && dq.dedicated());
  e.mutable_initial_q()->CopyFrom(request.initial_q());
  e.mutable_initial_v()->CopyFrom(request.initial_v());
  e.set_max_speed(pick(request.max_speed(), defaults.max_speed(), 1e4));
  e.set_command_capacity(pick(request.command_capacity(), defaults.command_capacity(), 64u));
  e.set_idle_timeout_s(request.has_idle_timeout_s() ? request.idle_timeout_s()
                                                    : defaults.idle_timeout_s());
  e.set_name(request.name().empty() ? "session-" + std::to_string(session_id) : request.name());
  e.mutable_drives()->CopyFrom(request.drives());  // the model's joints: no server default
  e.mutable_actuators()->CopyFrom(request.actuators());
  if (request.has_sensors()) *e.mutable_sensors() = request.sensors();
  if (request.has_faults()) *e.mutable_faults() = request.faults();

  // Ranges of the contract, then the server's limits.
  if (!request.name().empty() && request.name().rfind("session-", 0) == 0 &&
      request.name().size() > 8 &&
      std::all_of(request.name().begin() + 8, request.name().end(),
                  [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return "config.name = '" + request.name() +
           "': session-<number> is the name the server gives an unnamed session";
  }
  if (std::any_of(e.name().begin(), e.name().end(), [](char ch) {
        const auto byte = static_cast<unsigned char>(ch);
        return byte < 0x20 || byte == 0x7f;
      })) {
    return "config.name holds a control character (line feed, escape, …): names are shown in "
           "logs, metrics and the viewer";
  }
  if (e.name().size() > kMaxNameBytes) {
    return "config.name: " + std::to_string(e.name().size()) + " bytes, allowed at most " +
           std::to_string(kMaxNameBytes);
  }
  const double rate = e.control_rate_hz();
  if (!rt::controlRateAllowed(rate)) {
    return "config.control_rate_hz = " + describe(rate) + ": allowed " + rt::controlRateRange("…");
  }
  if (rate > server.max_control_rate_hz) {
    return "config.control_rate_hz = " + describe(rate) + ": this server allows at most " +
           describe(server.max_control_rate_hz) + " Hz";
  }
  if (!rt::substepsAllowed(e.substeps())) {
    return "config.substeps = " + std::to_string(e.substeps()) + ": allowed " + rt::substepsRange("…");
  }
  if (static_cast<int>(e.substeps()) > server.max_substeps) {
    return "config.substeps = " + std::to_string(e.substeps()) + ": this server allows at most " +
           std::to_string(server.max_substeps);
  }
  if (!v1::SessionMode_IsValid(e.mode())) return "config.mode: unknown value";
  if (!v1::Formulation_IsValid(e.formulation())) return "config.formulation: unknown value";
  // by name: a proto value this server's engine has no formulation for is refused, not run as
  // another (engine/formulations/formulations.h)
  if (const std::string name =
          proto_names::engineName(v1::Formulation_descriptor(), e.formulation(), "FORMULATION_");
      !parseFormulation(name)) {
    return "config.formulation: " + v1::Formulation_Name(e.formulation()) +
           " is not a formulation of this server (it runs " + formulationNames() + ")";
  }
  if (e.threads() < 1 || e.threads() > 64) {
    return "config.threads = " + std::to_string(e.threads()) + ": allowed 1 … 64";
  }
  if (const std::string why = checkThreads(
          *parseFormulation(proto_names::engineName(v1::Formulation_descriptor(), e.formulation(),
                                                    "FORMULATION_")),
          static_cast<int>(e.threads()));
      !why.empty()) {
    return "config.threads = " + std::to_string(e.threads()) + ": " + why;
  }
  if (!v1::Integrator_IsValid(e.integrator())) return "config.integrator: unknown value";
  if (!parseIntegrator(
          proto_names::engineName(v1::Integrator_descriptor(), e.integrator(), "INTEGRATOR_"))) {
    return "config.integrator: " + v1::Integrator_Name(e.integrator()) +
           " is not an integrator of this server";
  }
  if (!v1::WatchdogPolicy_IsValid(watchdog->policy())) return "config.watchdog.policy: unknown value";
  if (!v1::OverrunPolicy_IsValid(overrun->policy())) return "config.overrun.policy: unknown value";
  if (!std::isfinite(watchdog->damping_gain()) || watchdog->damping_gain() < 0.0) {
    return "config.watchdog.damping_gain = " + describe(watchdog->damping_gain()) +
           ": must be finite and ≥ 0";
  }
  if (watchdog->missed_cycles_limit() > 1'000'000) {
    return "config.watchdog.missed_cycles_limit = " +
           std::to_string(watchdog->missed_cycles_limit()) + ": allowed 1 … 1000000";
  }
  if (overrun->max_catch_up() > 1000) {
    return "config.overrun.max_catch_up = " + std::to_string(overrun->max_catch_up()) +
           ": allowed 0 … 1000";
  }
  if (!std::isfinite(e.max_speed()) || e.max_speed() <= 0.0) {
    return "config.max_speed = " + describe(e.max_speed()) + ": must be finite and > 0";
  }
  if (!std::isfinite(e.idle_timeout_s()) || e.idle_timeout_s() < 0.0 ||
      e.idle_timeout_s() > 1e6) {
    return "config.idle_timeout_s = " + describe(e.idle_timeout_s()) +
           ": allowed 0 (never) … 10⁶ s";
  }
  if (e.command_capacity() > 65536) {
    return "config.command_capacity = " + std::to_string(e.command_capacity()) +
           ": allowed 1 … 65536";
  }
  if (thread->fifo_priority() > 99) {
    return "config.thread.fifo_priority = " + std::to_string(thread->fifo_priority()) +
           ": allowed 0 (SCHED_OTHER) … 99";
  }
  if (thread->prefault_stack_bytes() > (64u << 20)) {
    return "config.thread.prefault_stack_bytes = " +
           std::to_string(thread->prefault_stack_bytes()) + ": allowed 0 … 67108864";
  }
  if (thread->cpu() < -1) {
    return "config.thread.cpu = " + std::to_string(thread->cpu()) + ": −1 (no pinning) or a CPU";
  }
  // The server's own caps: reported through the effective configuration, not as errors.
  if (static_cast<int>(thread->fifo_priority()) > server.max_fifo_priority) {
    thread->set_fifo_priority(static_cast<std::uint32_t>(std::max(0, server.max_fifo_priority)));
  }
  // FREE runs flat out: at a real-time priority it would take its CPU from everything else.
  if (e.mode() == v1::SESSION_MODE_FREE) thread->set_fifo_priority(0);
  if (thread->cpu() >= 0 &&
      std::find(server.allowed_cpus.begin(), server.allowed_cpus.end(), thread->cpu()) ==
          server.allowed_cpus.end()) {
    thread->set_cpu(-1);
  }

  rt::SessionConfig c;
  if (!e.initial_q().empty()) {
    if (std::string error = checkVector(e.initial_q(), model->nq, "config.initial_q", "nq");
        !error.empty()) {
      return error;
    }
    c.initial_q = Eigen::Map<const Eigen::VectorXd>(e.initial_q().data(), model->nq);
  }
  if (!e.initial_v().empty()) {
    if (std::string error = checkVector(e.initial_v(), model->nv, "config.initial_v", "nv");
        !error.empty()) {
      return error;
    }
    c.initial_v = Eigen::Map<const Eigen::VectorXd>(e.initial_v().data(), model->nv);
  }

  for (int k = 0; k < e.drives_size(); ++k) {
    v1::JointDrive* drive = e.mutable_drives(k);
    rt::DriveConfig d;
    d.joint = drive->joint();
    switch (drive->interface()) {
      case v1::COMMAND_INTERFACE_UNSPECIFIED:
        drive->set_interface(v1::COMMAND_INTERFACE_EFFORT);
        [[fallthrough]];
      case v1::COMMAND_INTERFACE_EFFORT: d.interface = rt::CommandInterface::kEffort; break;
      case v1::COMMAND_INTERFACE_POSITION: d.interface = rt::CommandInterface::kPosition; break;
      case v1::COMMAND_INTERFACE_VELOCITY: d.interface = rt::CommandInterface::kVelocity; break;
      default: return "config.drives[" + std::to_string(k) + "].interface: unknown value";
    }
    d.kp = drive->kp();
    d.kd = drive->kd();
    d.ki = drive->ki();
    c.drives.push_back(std::move(d));
  }
  {
    const v1::SensorsConfig& sensors = e.sensors();
    for (const v1::JointSensor& s : sensors.joints()) {
      c.sensors.joints.push_back({s.joint(), s.position_resolution(), s.position_noise(),
                                  s.position_bias(), s.velocity_noise(), s.velocity_bias(),
                                  s.torque_noise(), s.torque_bias()});
    }
    const v1::ImuSensor& imu = sensors.imu();
    c.sensors.imu.enabled = imu.enabled();
    c.sensors.imu.orientation_noise = imu.orientation_noise();
    c.sensors.imu.angular_velocity_noise = imu.angular_velocity_noise();
    c.sensors.imu.linear_acceleration_noise = imu.linear_acceleration_noise();
    for (const auto& [field, values, bias] :
         {std::tuple{"angular_velocity_bias", &imu.angular_velocity_bias(),
                     &c.sensors.imu.angular_velocity_bias},
          std::tuple{"linear_acceleration_bias", &imu.linear_acceleration_bias(),
                     &c.sensors.imu.linear_acceleration_bias}}) {
      if (values->empty()) continue;
      if (values->size() != 3) {
        return std::string("config.sensors.imu.") + field + ": " +
               std::to_string(values->size()) + " values, expected 3 or none";
      }
      *bias = Eigen::Vector3d((*values)[0], (*values)[1], (*values)[2]);
    }
    c.sensors.contact_force_noise = sensors.contact_force_noise();
    if (sensors.delay_cycles() > static_cast<std::uint32_t>(rt::kMaxSensorDelayCycles)) {
      return "config.sensors.delay_cycles = " + std::to_string(sensors.delay_cycles()) +
             ": allowed 0 … " + std::to_string(rt::kMaxSensorDelayCycles);
    }
    c.sensors.delay_cycles = static_cast<int>(sensors.delay_cycles());
    c.sensors.seed = sensors.seed();
  }
  {
    v1::FaultsConfig* faults = e.mutable_faults();
    if (faults->max_delay_cycles() > static_cast<std::uint32_t>(rt::kMaxFaultDelayCycles)) {
      return "config.faults.max_delay_cycles = " + std::to_string(faults->max_delay_cycles()) +
             ": allowed 0 … " + std::to_string(rt::kMaxFaultDelayCycles);
    }
    c.faults.max_delay_cycles = static_cast<int>(faults->max_delay_cycles());
    c.faults.seed = faults->seed();
    for (int k = 0; k < faults->schedule_size(); ++k) {
      v1::InjectedFault* fault = faults->mutable_schedule(k);
      rt::FaultSpec spec;
      if (std::string error = fromProto(*fault, true, "config.faults.schedule[" +
                                                          std::to_string(k) + "]", &spec);
          !error.empty()) {
        return error;
      }
      c.faults.schedule.push_back(spec);
      // the effective configuration: the defaults filled in, the ids the session gives
      fault->set_start_s(spec.start);
      fault->set_rate(spec.rate);
      fault->set_burst(static_cast<std::uint32_t>(spec.burst));
      fault->set_id(static_cast<std::uint32_t>(k + 1));
    }
  }
  for (const v1::ActuatorModel& actuator : e.actuators()) {
    c.actuators.push_back({actuator.joint(), actuator.time_constant_s(), actuator.delay_s(),
                           actuator.resolution(), actuator.ripple(), actuator.ripple_period()});
  }
  // names, gains, ranges and stability: the session checks them (rt::SessionError,
  // INVALID_ARGUMENT)

  c.model = std::move(model);
  switch (e.mode()) {
    case v1::SESSION_MODE_LOCKSTEP: c.mode = rt::SessionMode::kLockstep; break;
    case v1::SESSION_MODE_FREE: c.mode = rt::SessionMode::kFree; break;
    default: c.mode = rt::SessionMode::kRealtime; break;
  }
  c.control_rate = rate;
  c.substeps = static_cast<int>(e.substeps());
  c.threads = static_cast<int>(e.threads());
  c.formulation = *parseFormulation(
      proto_names::engineName(v1::Formulation_descriptor(), e.formulation(), "FORMULATION_"));
  c.integrator = *parseIntegrator(
      proto_names::engineName(v1::Integrator_descriptor(), e.integrator(), "INTEGRATOR_"));
  if (c.integrator == Integrator::kRk4) {
    // A step the joint springs and dampers make unstable faults the session within cycles. When
    // the request left substeps to the server, it takes as many as the step needs (reported in
    // the effective configuration); substeps the request asked for are refused with the number.
    const StepLimit limit = step_limit != nullptr ? *step_limit : sessionStepLimit(request, *c.model);
    const double dt = 1.0 / (rate * c.substeps);
    if (dt > limit.max_dt && limit.max_dt > 0.0) {
      const double wanted = std::ceil(1.0 / (rate * 0.9 * limit.max_dt));
      const int most = std::min(server.max_substeps, rt::kMaxSubsteps);
      const int needed = static_cast<int>(std::min(wanted, 1e9));
      const std::string why =
          "dt = 1 / (rate · substeps) = " + describe(dt) + " s is above the largest step RK4 is "
          "stable at on '" + c.model->name + "' (" + describe(limit.max_dt) + " s, set by joint '" +
          (limit.joint > 0 ? c.model->joint_names[limit.joint] : std::string("?")) +
          "': its damping or spring against its inertia)";
      if (needed > most) {
        return "config.substeps = " + std::to_string(c.substeps) + ": " + why + "; even " +
               std::to_string(most) + " substeps (this server's most) do not reach it at " +
               describe(rate) + " Hz: give the joint armature, or use a lower rate";
      }
      if (request.substeps() != 0) {
        return "config.substeps = " + std::to_string(c.substeps) + ": " + why + "; use substeps ≥ " +
               std::to_string(needed) + " at " + describe(rate) + " Hz";
      }
      c.substeps = needed;
      e.set_substeps(static_cast<std::uint32_t>(needed));
    }
  }
  switch (watchdog->policy()) {
    case v1::WATCHDOG_POLICY_ZERO: c.watchdog.policy = rt::WatchdogPolicy::kZeroTorque; break;
    case v1::WATCHDOG_POLICY_DAMPING: c.watchdog.policy = rt::WatchdogPolicy::kDamping; break;
    case v1::WATCHDOG_POLICY_FAULT: c.watchdog.policy = rt::WatchdogPolicy::kFault; break;
    default: c.watchdog.policy = rt::WatchdogPolicy::kHoldLast; break;
  }
  c.watchdog.missed_cycles_limit = static_cast<int>(watchdog->missed_cycles_limit());
  c.watchdog.damping_gain = watchdog->damping_gain();
  switch (overrun->policy()) {
    case v1::OVERRUN_POLICY_CATCH_UP: c.overrun = rt::OverrunPolicy::kCatchUp; break;
    case v1::OVERRUN_POLICY_FAULT: c.overrun = rt::OverrunPolicy::kFault; break;
    default: c.overrun = rt::OverrunPolicy::kSkip; break;
  }
  c.max_catch_up = static_cast<int>(overrun->max_catch_up());
  c.thread.lock_memory = thread->lock_memory();
  c.thread.prefault_stack_bytes = thread->prefault_stack_bytes();
  c.thread.fifo_priority = static_cast<int>(thread->fifo_priority());
  c.thread.cpu = thread->cpu();
  c.thread.minimal_timer_slack = thread->minimal_timer_slack();
  c.dedicated_thread = thread->dedicated();
  c.pool_cpus = server.workers.cpus;  // a parallel session's helpers on the workers' CPUs
  c.max_speed = e.max_speed();
  c.command_capacity = e.command_capacity();
  c.name = e.name();

  *out = std::move(c);
  *effective = std::move(e);
  return "";
}

}  // namespace hilsim::server
