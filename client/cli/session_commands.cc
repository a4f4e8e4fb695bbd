#include "client/cli/session_commands.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include <google/protobuf/util/json_util.h>

#include "client/cli/commands.h"
#include "client/cli/errors.h"
#include "client/cli/latency.h"
#include "client/cli/text.h"
#include "engine/formulations/formulations.h"
#include "proto/engine_names.h"
#include "rt/session_limits.h"

namespace hilsim::cli {
namespace {

/// The enum value's name without its prefix, lower case: "SESSION_MODE_LOCKSTEP" → "lockstep".
std::string shortName(const std::string& name, std::string_view prefix) {
  std::string out = name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

std::string micros(double ns) { return format("%.2f", ns * 1e-3); }

std::string list(const google::protobuf::RepeatedField<double>& values) {
  std::string out;
  for (int k = 0; k < values.size(); ++k) {
    if (k > 0) out += ", ";
    out += format("%.6g", values[k]);
  }
  return out;
}

template <typename Enum>
Enum parseEnumOrThrow(const std::string& name, const char* option,
                      std::initializer_list<std::pair<const char*, Enum>> values) {
  std::string expected;
  for (const auto& [text, value] : values) {
    if (name == text) return value;
    expected += expected.empty() ? text : std::string(", ") + text;
  }
  throw CliError(std::string(option) + ": unknown value '" + name + "' (expected " + expected + ")",
                 kExitUsage);
}

void summaryRow(std::ostream& out, const char* label, const v1::LatencySummary& s) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-18s %9llu %10s %10s %10s %10s %10s %10s %10s\n", label,
                static_cast<unsigned long long>(s.count()),
                micros(static_cast<double>(s.min_ns())).c_str(),
                micros(static_cast<double>(s.p50_ns())).c_str(),
                micros(static_cast<double>(s.p90_ns())).c_str(),
                micros(static_cast<double>(s.p99_ns())).c_str(),
                micros(static_cast<double>(s.p999_ns())).c_str(),
                micros(static_cast<double>(s.max_ns())).c_str(), micros(s.mean_ns()).c_str());
  out << line;
}

void transportRow(std::ostream& out, const char* label, std::uint64_t udp, std::uint64_t grpc) {
  char line[128];
  std::snprintf(line, sizeof line, "  %-18s %12llu %12llu\n", label,
                static_cast<unsigned long long>(udp), static_cast<unsigned long long>(grpc));
  out << line;
}

/// "iiwa14, realtime at 1000 Hz"
std::string sessionSummary(const v1::SessionInfo& info) {
  return info.model().name() + ", " + sessionModeName(info.config().mode()) + " at " +
         formatNumber(info.config().control_rate_hz()) + " Hz";
}

}  // namespace

std::uint64_t parseSessionId(const std::string& text) {
  std::uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 20;
  for (const char c : text) {
    if (!ok) break;
    if (c < '0' || c > '9') ok = false;
    else if (value > (UINT64_MAX - (c - '0')) / 10) ok = false;
    else value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (!ok || value == 0) {
    throw CliError("session id must be a number >= 1, got '" + text + "'", kExitUsage);
  }
  return value;
}

bool isSessionId(const std::string& text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::uint64_t resolveSession(const ServerOptions& server, const std::string& text) {
  if (text.empty()) throw CliError("a session id or name is required", kExitUsage);
  if (isSessionId(text)) return parseSessionId(text);
  client::SimulationClient simulation(server.server, server.client);
  const v1::ListSessionsResponse response = simulation.listSessions();
  std::vector<std::uint64_t> matches;
  std::string known;
  for (const v1::SessionInfo& s : response.sessions()) {
    if (s.name() == text) matches.push_back(s.session_id());
    known += (known.empty() ? "" : ", ") + s.name() + " (" + std::to_string(s.session_id()) + ")";
  }
  if (matches.size() == 1) return matches.front();
  if (matches.empty()) {
    throw CliError("no session named '" + text + "' on " + server.server +
                   (known.empty() ? " (it has no sessions)" : " (sessions: " + known + ")"));
  }
  std::string ids;
  for (const std::uint64_t id : matches) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  throw CliError(std::to_string(matches.size()) + " sessions are named '" + text + "' (ids " +
                 ids + "): give the id");
}

namespace {

void setUrdfOptions(const UrdfOptions& options, v1::ModelSource& source) {
  source.set_floating_base(options.floating_base);
  if (options.inertia != InertiaPolicy::kAsGiven) {
    source.set_inertia(options.inertia == InertiaPolicy::kBalance ? v1::INERTIA_POLICY_BALANCE
                                                                  : v1::INERTIA_POLICY_STRICT);
  }
  switch (options.massless) {
    case MasslessPolicy::kRefuse: break;
    case MasslessPolicy::kWeld: source.set_massless(v1::MASSLESS_POLICY_WELD); break;
    case MasslessPolicy::kArmature:
      source.set_massless(v1::MASSLESS_POLICY_ARMATURE);
      source.set_massless_armature(options.massless_armature);
      break;
  }
}

}  // namespace

v1::ModelSource modelSourceFor(const std::string& model, const UrdfOptions& options) {
  v1::ModelSource source;
  const auto ends_with = [&](std::string_view suffix) {
    return model.size() >= suffix.size() &&
           model.compare(model.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool urdf = ends_with(".urdf");
  const bool sdf = ends_with(".sdf");
  const bool mjcf = ends_with(".xml") || ends_with(".mjcf");
  const bool yaml = ends_with(".yaml") || ends_with(".yml");
  const bool file_name = urdf || sdf || mjcf || yaml;
  if (!file_name && model.find('/') == std::string::npos) {
    source.set_bundled_name(model);
    setUrdfOptions(options, source);  // the server refuses them for a YAML or MJCF model of its own
    return source;
  }
  if (!file_name) {
    throw CliError("--model " + model + ": a model file ends in .urdf, .sdf, .xml, .mjcf, .yaml or "
                   ".yml",
                   kExitUsage);
  }
  if (options.any() && !urdf && !sdf) {
    throw CliError("--floating-base, --inertia and --massless apply to URDF and SDFormat (a YAML "
                   "model says them in its wrapper, an MJCF model in its own joints)",
                   kExitUsage);
  }
  std::ifstream file(model, std::ios::binary);
  if (!file) throw CliError("cannot read " + model + ": " + std::strerror(errno));
  std::ostringstream text;
  text << file.rdbuf();
  if (!file.good() && !file.eof()) throw CliError("cannot read " + model);
  if (urdf) {
    source.set_urdf(text.str());
  } else if (sdf) {
    source.set_sdf(text.str());
  } else if (mjcf) {
    source.set_mjcf(text.str());
  } else {
    source.set_yaml(text.str());
  }
  if (urdf || sdf) setUrdfOptions(options, source);
  source.set_source_name(model);
  return source;
}

v1::SessionMode parseSessionModeOrThrow(const std::string& name) {
  return parseEnumOrThrow<v1::SessionMode>(name, "--mode",
                                           {{"realtime", v1::SESSION_MODE_REALTIME},
                                            {"lockstep", v1::SESSION_MODE_LOCKSTEP},
                                            {"free", v1::SESSION_MODE_FREE}});
}

std::string sessionModeName(v1::SessionMode mode) {
  return shortName(v1::SessionMode_Name(mode), "SESSION_MODE_");
}

std::string sessionStateName(v1::SessionState state) {
  const std::string name = v1::SessionState_Name(state);
  const std::string_view prefix = "SESSION_STATE_";
  return name.rfind(prefix, 0) == 0 ? name.substr(prefix.size()) : name;
}

std::string messageToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) throw CliError("cannot print the response as JSON: " + status.ToString());
  if (json.empty() || json.back() != '\n') json += '\n';
  return json;
}

// --- text forms ------------------------------------------------------------------------------

void writeSessionInfo(const v1::SessionInfo& info, std::ostream& out) {
  const v1::SessionConfig& c = info.config();
  const v1::ModelInfo& m = info.model();
  out << "session      " << info.session_id() << " (" << info.name() << ")\n";
  out << "owner        " << info.owner() << ", created " << readableDuration(info.age_s() * 1e9)
      << " ago, lease "
      << (c.idle_timeout_s() > 0.0 ? readableNumber(c.idle_timeout_s()) + " s idle"
                                   : std::string("none"))
      << "\n";
  out << "state        " << sessionStateName(info.state());
  if (info.has_fault()) out << ": " << info.fault().reason();
  out << "\n";
  out << "model        " << m.name() << " (nq " << m.nq() << ", nv " << m.nv() << ", "
      << m.nbodies() << " bodies, " << format("%.4g", m.total_mass()) << " kg)\n";
  out << "mode         " << sessionModeName(c.mode()) << " at " << formatNumber(c.control_rate_hz())
      << " Hz (period " << info.control_period_ns() << " ns), " << c.substeps()
      << " substep(s), dt " << readableNumber(info.dt()) << " s\n";
  out << "dynamics     " << shortName(v1::Formulation_Name(c.formulation()), "FORMULATION_")
      << " + " << shortName(v1::Integrator_Name(c.integrator()), "INTEGRATOR_") << "\n";
  out << "watchdog     "
      << shortName(v1::WatchdogPolicy_Name(c.watchdog().policy()), "WATCHDOG_POLICY_")
      << " after " << c.watchdog().missed_cycles_limit() << " missed cycles\n";
  if (info.udp_port() != 0) {
    out << "udp port     " << info.udp_port() << " (states up to " << info.udp_state_max_bytes()
        << " bytes, commands up to " << info.udp_command_max_bytes() << " bytes)\n";
  } else {
    out << "udp port     none (UDP disabled on the server)\n";
  }
  out << "controller   " << (info.has_controller_stream() ? "a Control stream is open" : "none")
      << "\n";
  out << "joints       ";
  for (int i = 0; i < m.joints_size(); ++i) {
    const v1::JointInfo& j = m.joints(i);
    if (i > 0) out << "\n             ";
    out << j.name() << " " << shortName(v1::JointType_Name(j.type()), "JOINT_TYPE_") << " q["
        << j.q_start() << ":" << j.q_start() + j.nq() << "] v[" << j.v_start() << ":"
        << j.v_start() + j.nv() << "]";
  }
  out << "\n";
  const v1::State& s = info.latest_state();
  out << "latest state cycle " << s.cycle() << ", t " << readableNumber(s.time(), 9) << " s, command "
      << s.command_sequence() << (s.watchdog_tripped() ? ", watchdog tripped" : "") << "\n";
  out << "  q   " << list(s.q()) << "\n";
  out << "  v   " << list(s.v()) << "\n";
  out << "  tau " << list(s.tau()) << "\n";
}

void writeSessionStats(const v1::SessionStats& s, std::ostream& out) {
  out << "session " << s.session_id() << ": " << sessionStateName(s.state()) << ", "
      << sessionModeName(s.mode()) << ", " << s.cycles() << " cycles, simulated "
      << format("%.4f", s.time()) << " s in " << format("%.4f", s.wall_time_running())
      << " s running, real-time factor " << format("%.4f", s.real_time_factor()) << "\n";
  if (s.has_fault()) out << "fault: " << s.fault().reason() << "\n";

  const v1::TimingStats& t = s.timing();
  out << "\n  [µs]                   count        min        p50        p90        p99      p99.9"
         "        max       mean\n";
  summaryRow(out, "wake-up latency", t.wakeup_latency());
  summaryRow(out, "compute time", t.compute_time());
  summaryRow(out, "measured period", t.measured_period());
  summaryRow(out, "engine step", t.engine_step());
  summaryRow(out, "loop overhead", t.loop_overhead());

  out << "\ndeadlines  " << t.cycles() << " cycles timed, misses " << t.deadline_misses()
      << " (longest run " << t.max_consecutive_misses() << ", current "
      << t.consecutive_misses() << "), skipped cycles " << t.skipped_cycles() << "\n";
  const v1::CommandStats& c = s.commands();
  out << "commands   received " << c.received() << ", applied " << c.applied() << ", superseded "
      << c.superseded() << ", dropped " << c.dropped() << ", rejected " << c.rejected()
      << ", success rate over the last 100 cycles " << format("%.3f", c.success_rate())
      << ", age of the newest "
      << (c.age_ns() < 0 ? std::string("n/a") : readableDuration(static_cast<double>(c.age_ns())))
      << "\n";
  const v1::WatchdogStats& w = s.watchdog();
  out << "watchdog   trips " << w.trips() << ", missed cycles " << w.missed_cycles()
      << ", tripped " << (w.tripped() ? "yes" : "no") << ", armed " << (w.armed() ? "yes" : "no")
      << "\n";
  const v1::FaultStats& f = s.faults();
  if (f.started() > 0 || f.refused() > 0) {
    out << "faults     started " << f.started() << ", ended " << f.ended() << ", commands lost "
        << f.commands_lost() << ", delayed " << f.commands_delayed() << ", states withheld "
        << f.states_withheld() << (f.refused() > 0 ? ", refused " + std::to_string(f.refused()) : "")
        << "\n";
    for (const v1::InjectedFault& active : f.active()) {
      out << "  acting   " << describeInjectedFault(active, false) << "\n";
    }
  }

  const v1::TransportStats& u = s.udp();
  const v1::TransportStats& g = s.grpc();
  out << "\n  transport                   udp         grpc\n";
  transportRow(out, "received", u.received(), g.received());
  transportRow(out, "accepted", u.accepted(), g.accepted());
  transportRow(out, "oversize", u.oversize(), g.oversize());
  transportRow(out, "malformed", u.malformed(), g.malformed());
  transportRow(out, "unknown_session", u.unknown_session(), g.unknown_session());
  transportRow(out, "unauthenticated", u.unauthenticated(), g.unauthenticated());
  transportRow(out, "replayed", u.replayed(), g.replayed());
  transportRow(out, "stale", u.stale(), g.stale());
  transportRow(out, "duplicate", u.duplicate(), g.duplicate());
  transportRow(out, "wrong_size", u.wrong_size(), g.wrong_size());
  transportRow(out, "non_finite", u.non_finite(), g.non_finite());
  transportRow(out, "too_many_steps", u.too_many_steps(), g.too_many_steps());
  transportRow(out, "too_costly", u.too_costly(), g.too_costly());
  transportRow(out, "inactive", u.inactive(), g.inactive());
  transportRow(out, "dropped", u.dropped(), g.dropped());
  transportRow(out, "over_budget", u.over_budget(), g.over_budget());
  transportRow(out, "states_sent", u.states_sent(), g.states_sent());
  transportRow(out, "states_skipped", u.states_skipped(), g.states_skipped());
  transportRow(out, "send_errors", u.send_errors(), g.send_errors());

  if (s.events_dropped() > 0) out << "\nlog events dropped " << s.events_dropped() << "\n";
  if (s.rt_setup_size() > 0) {
    out << "\nrt setup\n";
    for (const v1::RtSetupStep& step : s.rt_setup()) {
      out << "  " << step.name() << ": " << (step.applied() ? "applied" : "not applied") << " ("
          << step.detail() << ")\n";
    }
  }
}

// --- commands --------------------------------------------------------------------------------

// Calls take(name, value) for each NAME=VALUE of a comma-separated list; fail(why) on one that
// is not NAME=number.
template <typename Fail, typename Take>
void forEachSetting(const std::string& list, const Fail& fail, const Take& take) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    const std::size_t at = item.find('=');
    if (at == std::string::npos) fail("'" + item + "' is not NAME=VALUE");
    double value = 0.0;
    try {
      std::size_t used = 0;
      value = std::stod(item.substr(at + 1), &used);
      if (used != item.size() - at - 1) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      fail("'" + item.substr(at + 1) + "' is not a number");
    }
    take(item.substr(0, at), value);
  }
}

v1::JointDrive parseDrive(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    throw CliError("--drive '" + text + "': " + why +
                       " (expected JOINT=effort, JOINT=position:kp=K,kd=D or "
                       "JOINT=velocity:kd=D[,ki=I]; JOINT * for every joint not named)",
                   kExitUsage);
  };
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0) fail("no JOINT=");
  v1::JointDrive drive;
  drive.set_joint(text.substr(0, equals));
  const std::size_t colon = text.find(':', equals);
  const std::string interface = text.substr(equals + 1, colon == std::string::npos
                                                            ? std::string::npos
                                                            : colon - equals - 1);
  drive.set_interface(parseEnumOrThrow<v1::CommandInterface>(
      interface, "--drive interface",
      {{"effort", v1::COMMAND_INTERFACE_EFFORT},
       {"position", v1::COMMAND_INTERFACE_POSITION},
       {"velocity", v1::COMMAND_INTERFACE_VELOCITY}}));
  if (colon == std::string::npos) return drive;
  forEachSetting(text.substr(colon + 1), fail, [&](const std::string& name, double value) {
    if (name == "kp") drive.set_kp(value);
    else if (name == "kd") drive.set_kd(value);
    else if (name == "ki") drive.set_ki(value);
    else fail("unknown gain '" + name + "' (kp, kd, ki)");
  });
  return drive;
}

v1::ActuatorModel parseActuator(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    throw CliError("--actuator '" + text + "': " + why +
                       " (expected JOINT:time_constant=T,delay=D,resolution=R,ripple=A,"
                       "ripple_period=P, any of them; JOINT * for every joint not named)",
                   kExitUsage);
  };
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0) fail("no JOINT:");
  v1::ActuatorModel actuator;
  actuator.set_joint(text.substr(0, colon));
  forEachSetting(text.substr(colon + 1), fail, [&](const std::string& name, double value) {
    if (name == "time_constant") actuator.set_time_constant_s(value);
    else if (name == "delay") actuator.set_delay_s(value);
    else if (name == "resolution") actuator.set_resolution(value);
    else if (name == "ripple") actuator.set_ripple(value);
    else if (name == "ripple_period") actuator.set_ripple_period(value);
    else fail("unknown setting '" + name + "' (time_constant, delay, resolution, ripple, ripple_period)");
  });
  return actuator;
}

v1::InjectedFault parseFault(const std::string& text) {
  const auto fail = [&](const std::string& why) {
    throw CliError("fault '" + text + "': " + why +
                       " (expected TYPE[@JOINT][:start=S,duration=D,rate=R,burst=B,cycles=C,"
                       "value=V]; docs/REALISM.md)",
                   kExitUsage);
  };
  const std::size_t colon = text.find(':');
  const std::string head = text.substr(0, colon);
  const std::size_t at = head.find('@');
  const std::string type = head.substr(0, at);
  v1::InjectedFault fault;
  std::vector<std::pair<std::string, v1::FaultType>> types;
  for (int value = v1::FAULT_TYPE_DROP_COMMANDS; value <= v1::FAULT_TYPE_STALL; ++value) {
    const auto t = static_cast<v1::FaultType>(value);
    types.emplace_back(shortName(v1::FaultType_Name(t), "FAULT_TYPE_"), t);
  }
  std::string names;
  for (const auto& [name, value] : types) {
    names += (names.empty() ? "" : ", ") + name;
    if (name == type) fault.set_type(value);
  }
  if (fault.type() == v1::FAULT_TYPE_UNSPECIFIED) fail("unknown type '" + type + "' (" + names + ")");
  if (at != std::string::npos) {
    if (at + 1 == head.size()) fail("no joint after '@'");
    fault.set_joint(head.substr(at + 1));
  }
  if (colon == std::string::npos) return fault;
  forEachSetting(text.substr(colon + 1), fail, [&](const std::string& name, double value) {
    const auto count = [&] {
      if (!(value >= 0.0 && value <= 4e9) || value != std::floor(value)) {
        fail(name + " must be a whole number ≥ 0");
      }
      return static_cast<std::uint32_t>(value);
    };
    if (name == "start") fault.set_start_s(value);
    else if (name == "duration") fault.set_duration_s(value);
    else if (name == "rate") fault.set_rate(value);
    else if (name == "burst") fault.set_burst(count());
    else if (name == "cycles") fault.set_cycles(count());
    else if (name == "value") fault.set_value(value);
    else fail("unknown setting '" + name + "' (start, duration, rate, burst, cycles, value)");
  });
  return fault;
}

std::string describeInjectedFault(const v1::InjectedFault& f, bool detail) {
  std::string text = shortName(v1::FaultType_Name(f.type()), "FAULT_TYPE_");
  if (!f.joint().empty()) text += f.joint() == "*" ? " on every joint" : " on " + f.joint();
  if (f.id() != 0) text += " (id " + std::to_string(f.id()) + ")";
  if (!detail) return text;
  switch (f.type()) {
    case v1::FAULT_TYPE_DROP_COMMANDS:
    case v1::FAULT_TYPE_DROP_STATES:
      text += ", rate " + readableNumber(f.has_rate() ? f.rate() : 1.0) + " in bursts of " +
              std::to_string(std::max<std::uint32_t>(f.burst(), 1));
      break;
    case v1::FAULT_TYPE_DELAY_COMMANDS:
    case v1::FAULT_TYPE_DELAY_STATES:
      text += ", " + std::to_string(f.cycles()) + " cycles late";
      break;
    case v1::FAULT_TYPE_OFFSET_SENSOR: text += ", offset " + readableNumber(f.value()); break;
    case v1::FAULT_TYPE_CUT_DRIVE: text += ", torque × " + readableNumber(f.value()); break;
    default: break;
  }
  text += f.has_start_s() ? ", from " + readableNumber(f.start_s()) + " s" : ", from the next cycle";
  text += f.duration_s() > 0.0 ? " for " + readableNumber(f.duration_s()) + " s" : " until cleared";
  return text;
}

void sessionFault(const ServerOptions& server, std::uint64_t id, const std::string& spec,
                  std::ostream& out) {
  const v1::InjectedFault fault = parseFault(spec);
  client::SimulationClient simulation(server.server, server.client);
  const v1::InjectedFault injected = simulation.injectFault(id, fault);
  if (server.json) {
    out << messageToJson(injected);
    return;
  }
  out << "session " << id << ": fault " << describeInjectedFault(injected) << "\n";
}

void sessionClearFaults(const ServerOptions& server, std::uint64_t id, std::uint32_t fault,
                        std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  simulation.clearFaults(id, fault);
  if (server.json) {
    out << messageToJson(v1::ClearFaultsResponse());
    return;
  }
  out << "session " << id << ": "
      << (fault == 0 ? std::string("every fault") : "fault " + std::to_string(fault))
      << " ends at the next cycle\n";
}

void sessionCreate(const ServerOptions& server, const CreateOptions& o, std::ostream& out) {
  if (o.model.empty()) throw CliError("--model is required", kExitUsage);
  v1::CreateSessionRequest request;
  *request.mutable_model() =
      modelSourceFor(o.model, urdfOptionsOrThrow(o.floating_base, o.inertia, o.massless));
  v1::SessionConfig& c = *request.mutable_config();
  if (o.idle_timeout) {
    if (!(*o.idle_timeout >= 0.0 && *o.idle_timeout <= 1e6)) {
      throw CliError("--idle-timeout must be within 0 to 10⁶ s, got " +
                         formatNumber(*o.idle_timeout),
                     kExitUsage);
    }
    c.set_idle_timeout_s(*o.idle_timeout);
  }
  if (!o.name.empty()) {
    if (isSessionId(o.name)) {
      throw CliError("--name: '" + o.name + "' would read as a session id; use a name with a letter",
                     kExitUsage);
    }
    c.set_name(o.name);
  }
  c.set_mode(parseSessionModeOrThrow(o.mode));
  if (o.rate != 0.0) {
    if (!rt::controlRateAllowed(o.rate)) {
      throw CliError("--rate must be within " + rt::controlRateRange() + ", got " +
                         formatNumber(o.rate),
                     kExitUsage);
    }
    c.set_control_rate_hz(o.rate);
  }
  if (o.substeps != 0) {
    if (!rt::substepsAllowed(o.substeps)) {
      throw CliError("--substeps must be within " + rt::substepsRange(), kExitUsage);
    }
    c.set_substeps(static_cast<std::uint32_t>(o.substeps));
  }
  if (o.threads != 0) {
    if (o.threads < 1 || o.threads > 64) throw CliError("--threads must be within 1 to 64", kExitUsage);
    c.set_threads(static_cast<std::uint32_t>(o.threads));
  }
  if (!o.solver.empty()) {
    // the engine's names (the registry), carried by the proto value of the same name
    const std::optional<int> value =
        parseFormulation(o.solver)
            ? proto_names::protoValue(v1::Formulation_descriptor(), "FORMULATION_", o.solver)
            : std::nullopt;
    if (!value) {
      throw CliError("--solver: unknown value '" + o.solver + "' (expected " +
                         formulationNames() + ")",
                     kExitUsage);
    }
    c.set_formulation(static_cast<v1::Formulation>(*value));
  }
  if (!o.integrator.empty()) {
    c.set_integrator(parseEnumOrThrow<v1::Integrator>(
        o.integrator, "--integrator",
        {{"rk4", v1::INTEGRATOR_RK4},
         {"euler", v1::INTEGRATOR_EULER},
         {"imex_euler", v1::INTEGRATOR_IMEX_EULER}}));
  }
  if (!o.watchdog.empty()) {
    c.mutable_watchdog()->set_policy(parseEnumOrThrow<v1::WatchdogPolicy>(
        o.watchdog, "--watchdog",
        {{"hold", v1::WATCHDOG_POLICY_HOLD},
         {"zero", v1::WATCHDOG_POLICY_ZERO},
         {"damping", v1::WATCHDOG_POLICY_DAMPING},
         {"fault", v1::WATCHDOG_POLICY_FAULT}}));
  }

  for (const std::string& drive : o.drives) *c.add_drives() = parseDrive(drive);
  for (const std::string& actuator : o.actuators) *c.add_actuators() = parseActuator(actuator);
  if (!o.faults.empty() || o.fault_seed || o.max_fault_delay) {
    v1::FaultsConfig* faults = c.mutable_faults();
    for (const std::string& fault : o.faults) *faults->add_schedule() = parseFault(fault);
    if (o.fault_seed) faults->set_seed(*o.fault_seed);
    if (o.max_fault_delay) faults->set_max_delay_cycles(*o.max_fault_delay);
  }

  client::SimulationClient simulation(server.server, server.client);
  v1::CreateSessionResponse response = simulation.createSession(request);
  const std::uint64_t id = response.session().session_id();
  if (o.start) {
    try {
      *response.mutable_session() = simulation.startSession(id);
    } catch (const client::RpcError& e) {
      // The session exists: say so, so that it is not left behind unnoticed.
      throw CliError("session " + std::to_string(id) + " created but not started: " + e.what());
    }
  }
  if (server.json) {
    out << messageToJson(response);
    return;
  }
  const v1::SessionInfo& info = response.session();
  out << "session    " << id << " (" << info.name() << ")\n";
  out << "model      " << sessionSummary(info) << "\n";
  out << "state      " << sessionStateName(info.state()) << "\n";
  out << "udp port   " << info.udp_port() << "\n";
  if (!response.udp_key().empty()) {
    out << "udp key    " << tokenHex(response.udp_key())
        << "  (shown only now: UDP controllers need it; keep it secret)\n";
  } else {
    out << "udp token  " << tokenHex(response.udp_token())
        << "  (shown only now: UDP controllers need it)\n";
  }
  if (!response.owner_secret().empty()) {
    out << "owner      " << response.owner_secret()
        << "  (shown only now: --owner-secret of the commands that change the session)\n";
  }
}

void sessionAction(const ServerOptions& server, const std::string& action, std::uint64_t id,
                   std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  if (action == "close") {
    const v1::CloseSessionResponse response = simulation.closeSession(id);
    if (server.json) {
      out << messageToJson(response);
    } else {
      out << "session " << id << " closed; final statistics:\n\n";
      writeSessionStats(response.final_stats(), out);
    }
    return;
  }
  v1::SessionInfo info;
  if (action == "start") info = simulation.startSession(id);
  else if (action == "pause") info = simulation.pauseSession(id);
  else if (action == "stop") info = simulation.stopSession(id);
  else if (action == "reset") info = simulation.resetSession(id);
  else throw CliError("unknown session action '" + action + "'", kExitUsage);
  if (server.json) {
    out << messageToJson(info);
  } else {
    out << "session " << id << ": " << sessionStateName(info.state()) << " ("
        << sessionSummary(info) << ", cycle " << info.latest_state().cycle() << ")\n";
  }
}

void sessionStep(const ServerOptions& server, std::uint64_t id, std::uint32_t steps,
                 const StepSetPoints& set_points, std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  const int nv = simulation.getSession(id).model().nv();
  v1::Command command;
  command.set_session_id(id);
  command.set_steps(steps);
  const auto add = [nv](const std::string& text, const char* option,
                        google::protobuf::RepeatedField<double>* field) {
    if (text.empty()) return;
    for (const double value : parseVectorOption(text, nv, option)) field->Add(value);
  };
  add(set_points.tau, "--tau", command.mutable_tau());
  add(set_points.position, "--position", command.mutable_position());
  add(set_points.velocity, "--velocity", command.mutable_velocity());
  // zeros when nothing is given: an empty command would be a sync, which does not advance
  if (command.tau_size() + command.position_size() + command.velocity_size() == 0) {
    command.mutable_tau()->Resize(nv, 0.0);
  }
  const v1::State state = simulation.step(command);
  if (server.json) {
    out << messageToJson(state);
    return;
  }
  out << "session " << id << ": cycle " << state.cycle() << ", t " << format("%.6g", state.time())
      << " s\n";
  out << "  q " << list(state.q()) << "\n";
  out << "  v " << list(state.v()) << "\n";
  out << "  tau " << list(state.tau()) << "\n";
}

void sessionList(const ServerOptions& server, std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  const v1::ListSessionsResponse response = simulation.listSessions();
  if (server.json) {
    out << messageToJson(response);
    return;
  }
  if (response.sessions_size() == 0) {
    out << "no sessions\n";
    return;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-6s %-16s %-16s %-9s %8s %-8s %8s %-10s %8s %8s %s\n",
                "id", "name", "model", "mode", "rate", "state", "udp", "controller", "age",
                "idle", "owner");
  out << line;
  for (const v1::SessionInfo& s : response.sessions()) {
    const std::string lease =
        s.config().idle_timeout_s() > 0.0
            ? " (closed after " + readableNumber(s.config().idle_timeout_s()) + " s idle)"
            : "";
    std::snprintf(line, sizeof line, "%-6llu %-16s %-16s %-9s %8s %-8s %8u %-10s %8s %8s %s%s\n",
                  static_cast<unsigned long long>(s.session_id()), s.name().c_str(),
                  s.model().name().c_str(), sessionModeName(s.config().mode()).c_str(),
                  formatNumber(s.config().control_rate_hz()).c_str(),
                  sessionStateName(s.state()).c_str(), s.udp_port(),
                  s.has_controller_stream() ? "stream" : "-",
                  readableDuration(s.age_s() * 1e9).c_str(),
                  readableDuration(s.idle_s() * 1e9).c_str(), s.owner().c_str(), lease.c_str());
    out << line;
  }
}

void sessionGet(const ServerOptions& server, std::uint64_t id, std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  const v1::SessionInfo info = simulation.getSession(id);
  if (server.json) out << messageToJson(info);
  else writeSessionInfo(info, out);
}

void sessionStats(const ServerOptions& server, std::uint64_t id, std::ostream& out) {
  client::SimulationClient simulation(server.server, server.client);
  const v1::SessionStats stats = simulation.getStats(id);
  if (server.json) out << messageToJson(stats);
  else writeSessionStats(stats, out);
}

}  // namespace hilsim::cli
