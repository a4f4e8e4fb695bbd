#include "client/latency_report.h"
#include "client/latency_report_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include <google/protobuf/util/json_util.h>

namespace hilsim::client {

// --- shared with the SVG report (latency_report_format.h) ------------------------------------

namespace detail {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

/// A duration in µs for labels: three significant digits ("61.2 µs", "1.23 ms" is not used: the
/// unit stays µs so that the labels compare at a glance).
std::string microsLabel(double ns) {
  const double us = ns * 1e-3;
  if (us >= 100.0) return format("%.0f", us);
  if (us >= 10.0) return format("%.1f", us);
  return format("%.2f", us);
}

std::string xmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

/// `text` in capitals (ASCII).
std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

/// "UDP, 1000 Hz, iiwa14 (realtime), server 127.0.0.1:50051"
std::string runTitle(const LatencyRunInfo& info) {
  return upper(info.transport) + ", " + format("%g", info.rate_hz) + " Hz, " + info.model + " (" +
         info.mode + (info.session_rate_hz > 0 ? " " + format("%g", info.session_rate_hz) + " Hz"
                                               : std::string()) +
         "), server " + info.server + (info.same_host ? " (same host)" : "") +
         (info.client_host.empty() ? std::string() : ", client " + info.client_host);
}

}  // namespace detail

namespace {

using detail::format;
using detail::microsLabel;
using detail::runTitle;
using detail::upper;
using detail::xmlEscape;

// --- formatting ------------------------------------------------------------------------------

/// Microseconds with two decimals, from nanoseconds.
std::string micros(double ns) { return format("%.2f", ns * 1e-3); }

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? std::string("n/a") : format("%.2f %%", 100.0 * part / whole);
}

std::string jsonEscape(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string jsonDouble(double value) {
  if (!std::isfinite(value)) return "null";
  return format("%.17g", value);
}


std::uint64_t rejectedTotal(const v1::TransportStats& t) {
  return t.oversize() + t.malformed() + t.unknown_session() + t.unauthenticated() + t.replayed() +
         t.stale() + t.duplicate() + t.wrong_size() + t.non_finite() + t.too_many_steps() + t.too_costly() +
         t.inactive() + t.dropped() + t.over_budget();
}

/// "stale 3, wrong_size 1" for the non-zero rejection counters, or "none".
std::string rejectedDetail(const v1::TransportStats& t) {
  const std::pair<const char*, std::uint64_t> counters[] = {
      {"oversize", t.oversize()},       {"malformed", t.malformed()},
      {"unknown_session", t.unknown_session()}, {"unauthenticated", t.unauthenticated()},
      {"replayed", t.replayed()},       {"stale", t.stale()},
      {"duplicate", t.duplicate()},
      {"wrong_size", t.wrong_size()},   {"non_finite", t.non_finite()},
      {"too_many_steps", t.too_many_steps()}, {"too_costly", t.too_costly()},
      {"inactive", t.inactive()},       {"dropped", t.dropped()},
      {"over_budget", t.over_budget()}};
  std::string out;
  for (const auto& [name, count] : counters) {
    if (count == 0) continue;
    if (!out.empty()) out += ", ";
    out += std::string(name) + " " + std::to_string(count);
  }
  return out.empty() ? "none" : out;
}

std::string stateName(v1::SessionState state) {
  std::string name = v1::SessionState_Name(state);
  const std::string prefix = "SESSION_STATE_";
  if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  return name;
}

/// `text` padded with spaces to `width` characters (UTF-8: continuation bytes take no column).
std::string padded(const std::string& text, std::size_t width) {
  std::size_t columns = 0;
  for (const char c : text) columns += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return text + std::string(width > columns ? width - columns : 0, ' ');
}

void tableRow(std::ostream& out, const std::string& label, const Distribution& d) {
  char line[256];
  std::snprintf(line, sizeof line, "  %s %8zu %10s %10s %10s %10s %10s %10s %10s\n",
                padded(label, 24).c_str(), d.count, micros(d.min).c_str(), micros(d.p50).c_str(),
                micros(d.p90).c_str(), micros(d.p99).c_str(), micros(d.p999).c_str(),
                micros(d.max).c_str(), micros(d.mean).c_str());
  out << line;
}

std::string jsonDistribution(const Distribution& d) {
  return "{\"count\": " + std::to_string(d.count) + ", \"min\": " + jsonDouble(d.min) +
         ", \"p50\": " + jsonDouble(d.p50) + ", \"p90\": " + jsonDouble(d.p90) +
         ", \"p99\": " + jsonDouble(d.p99) + ", \"p999\": " + jsonDouble(d.p999) +
         ", \"max\": " + jsonDouble(d.max) + ", \"mean\": " + jsonDouble(d.mean) + "}";
}

}  // namespace

// --- statistics ------------------------------------------------------------------------------

std::int64_t percentile(std::span<const std::int64_t> sorted, double p) {
  const double n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

Distribution summarize(std::vector<std::int64_t> samples) {
  Distribution d;
  if (samples.empty()) return d;
  std::sort(samples.begin(), samples.end());
  d.count = samples.size();
  d.min = static_cast<double>(samples.front());
  d.max = static_cast<double>(samples.back());
  d.p50 = static_cast<double>(percentile(samples, 50.0));
  d.p90 = static_cast<double>(percentile(samples, 90.0));
  d.p99 = static_cast<double>(percentile(samples, 99.0));
  d.p999 = static_cast<double>(percentile(samples, 99.9));
  long double sum = 0;
  for (const std::int64_t s : samples) sum += s;
  d.mean = static_cast<double>(sum / samples.size());
  return d;
}

void LatencyRecorder::commandSent(std::uint64_t sequence, std::int64_t send_time_ns) {
  CommandRecord record;
  record.sequence = sequence;
  record.send_time_ns = send_time_ns;
  commands_.push_back(record);
}

void LatencyRecorder::stateReceived(const v1::State& state, std::int64_t receive_time_ns) {
  ++states_.received;
  const std::uint64_t cycle = state.cycle();
  if (have_previous_) {
    if (cycle > previous_cycle_ + 1) states_.missing_cycles += cycle - previous_cycle_ - 1;
    else if (cycle == previous_cycle_) ++states_.repeated;
    else if (cycle < previous_cycle_) ++states_.out_of_order;
  }
  if (!have_previous_ || cycle >= previous_cycle_) {
    previous_cycle_ = cycle;
    have_previous_ = true;
  }

  const std::uint64_t applied = state.command_sequence();
  const std::int64_t echoed = state.command_client_send_time_ns();
  bool answered_any = false;
  if (matching_ == Matching::kNewest) {
    while (first_unanswered_ < commands_.size()) {
      CommandRecord& c = commands_[first_unanswered_];
      if (c.sequence > applied || c.send_time_ns > echoed) break;
      answer(c, state, receive_time_ns);
      ++first_unanswered_;
      answered_any = true;
    }
  } else {
    const auto it = std::lower_bound(
        commands_.begin(), commands_.end(), applied,
        [](const CommandRecord& c, std::uint64_t sequence) { return c.sequence < sequence; });
    if (it != commands_.end() && it->sequence == applied && it->send_time_ns <= echoed &&
        !it->answered()) {
      answer(*it, state, receive_time_ns);
      answered_any = true;
    }
  }

  if (!window_open_) {
    if (!answered_any) return;
    window_open_ = true;
    first_time_ = last_time_ = state.time();
    first_publish_ns_ = last_publish_ns_ = state.publish_time_ns();
  } else if (state.publish_time_ns() >= last_publish_ns_ && state.time() >= last_time_) {
    last_time_ = state.time();
    last_publish_ns_ = state.publish_time_ns();
  }
}

void LatencyRecorder::answer(CommandRecord& c, const v1::State& state,
                             std::int64_t receive_time_ns) {
  c.receive_time_ns = receive_time_ns;
  c.cycle = state.cycle();
  ++answered_;
  if (c.sequence != state.command_sequence()) {
    c.superseded = true;
    return;
  }
  c.send_time_ns = state.command_client_send_time_ns();  // the exact stamp the command carried
  if (state.command_receive_time_ns() > 0) {
    c.command_age_ns = state.publish_time_ns() - state.command_receive_time_ns();
    if (same_host_) c.one_way_ns = state.command_receive_time_ns() - c.send_time_ns;
  }
}

double LatencyRecorder::simulatedSeconds() const { return last_time_ - first_time_; }

double LatencyRecorder::serverWallSeconds() const {
  return static_cast<double>(last_publish_ns_ - first_publish_ns_) * 1e-9;
}

LatencyReport buildReport(LatencyRunInfo info, const LatencyRecorder& recorder) {
  LatencyReport report;
  report.info = std::move(info);
  report.commands = recorder.commands();
  report.states = recorder.states();
  const double period = report.periodNs();
  std::vector<std::int64_t> round_trips, ages, one_ways;
  round_trips.reserve(report.commands.size());
  ages.reserve(report.commands.size());
  for (const CommandRecord& c : report.commands) {
    ++report.counts.sent;
    if (!c.answered()) {
      ++report.counts.lost;
      continue;
    }
    ++report.counts.answered;
    if (c.superseded) ++report.counts.superseded;
    const std::int64_t rt = c.roundTrip();
    if (period > 0 && static_cast<double>(rt) > period) ++report.counts.late;
    round_trips.push_back(rt);
    if (c.command_age_ns) ages.push_back(*c.command_age_ns);
    if (c.one_way_ns) one_ways.push_back(*c.one_way_ns);
  }
  report.round_trip = summarize(std::move(round_trips));
  report.command_age = summarize(std::move(ages));
  report.one_way = summarize(std::move(one_ways));
  report.simulated_s = recorder.simulatedSeconds();
  report.wall_s = recorder.serverWallSeconds();
  report.drift_s = report.simulated_s - report.wall_s;
  report.real_time_factor = report.wall_s > 0 ? report.simulated_s / report.wall_s : 0.0;
  return report;
}

// --- text ------------------------------------------------------------------------------------

void writeServerStatsSummary(const v1::SessionStats& s, std::ostream& out) {
  const v1::TimingStats& t = s.timing();
  out << "  state " << stateName(s.state()) << ", " << s.cycles() << " cycles, simulated "
      << format("%.3f", s.time()) << " s in " << format("%.3f", s.wall_time_running())
      << " s running, real-time factor " << format("%.4f", s.real_time_factor()) << "\n";
  out << "  deadline misses " << t.deadline_misses() << " (longest run "
      << t.max_consecutive_misses() << ", skipped cycles " << t.skipped_cycles()
      << "), wake-up latency p99 " << micros(static_cast<double>(t.wakeup_latency().p99_ns()))
      << " µs, compute time p99 " << micros(static_cast<double>(t.compute_time().p99_ns()))
      << " µs\n";
  const v1::CommandStats& c = s.commands();
  out << "  commands received " << c.received() << ", applied " << c.applied() << ", superseded "
      << c.superseded() << ", dropped " << c.dropped() << ", rejected " << c.rejected()
      << ", success rate over the last 100 cycles " << format("%.3f", c.success_rate()) << "\n";
  out << "  watchdog trips " << s.watchdog().trips() << ", missed cycles "
      << s.watchdog().missed_cycles() << (s.watchdog().tripped() ? " (tripped now)" : "") << "\n";
  for (const auto& [name, transport] :
       {std::pair<const char*, const v1::TransportStats*>{"udp ", &s.udp()},
        std::pair<const char*, const v1::TransportStats*>{"grpc", &s.grpc()}}) {
    out << "  " << name << " received " << transport->received() << ", accepted "
        << transport->accepted() << ", rejected " << rejectedTotal(*transport) << " ("
        << rejectedDetail(*transport) << "), states sent " << transport->states_sent()
        << ", skipped " << transport->states_skipped();
    if (transport->send_errors() > 0) out << ", send errors " << transport->send_errors();
    out << "\n";
  }
  const v1::ConstraintStats& k = s.constraints();
  const auto sum = [](const auto& counts) {
    std::uint64_t total = 0;
    for (const std::uint64_t n : counts) total += n;
    return total;
  };
  if (k.effort_saturations_size() > 0 || k.limit_cycles_size() > 0 ||
      k.solver_max_iterations() > 0) {
    out << "  drives: effort saturations " << sum(k.effort_saturations()) << ", velocity cuts "
        << sum(k.velocity_cuts()) << "; stops pushing in " << sum(k.limit_cycles())
        << " DoF-cycles; contacts now " << k.contacts_active() << ", solver sweeps "
        << k.solver_iterations() << " (most " << k.solver_max_iterations() << ", out of budget "
        << k.solver_unconverged() << " cycles)\n";
  }
  if (s.has_fault()) out << "  fault: " << s.fault().reason() << "\n";
}

void writeLatencyText(const LatencyReport& r, std::ostream& out) {
  const LatencyRunInfo& i = r.info;
  out << "hilsim latency: " << runTitle(i) << "\n";
  out << "session " << i.session_id << "; controller loop " << format("%g", i.rate_hz) << " Hz for "
      << format("%g", i.duration_s) << " s";
  if (!i.control_law.empty()) out << "; commands: " << i.control_law;
  out << "\n";
  if (i.loop_overruns > 0) {
    out << "controller loop overruns: " << i.loop_overruns
        << " periods skipped (this host's scheduling, not the server's)\n";
  }
  out << "\n";
  out << "  [µs]                        count        min        p50        p90        p99"
         "      p99.9        max       mean\n";
  tableRow(out, "round trip", r.round_trip);
  tableRow(out, "command age", r.command_age);
  if (i.same_host) tableRow(out, "one way client→server", r.one_way);
  out << "\n  round trip: command sent → State that applied it received (client clock)\n"
      << "  command age: command received by the server → end of the cycle that applied it\n";
  if (i.same_host) out << "  one way: command sent → received by the server (shared clock)\n";
  else out << "  one way: not measured (client and server clocks differ; see --same-host)\n";

  const CommandCounts& c = r.counts;
  out << "\ncommands  sent " << c.sent << ", answered " << c.answered << " ("
      << percent(c.answered, c.sent) << "), lost " << c.lost << ", late (> "
      << microsLabel(r.periodNs()) << " µs) " << c.late << ", superseded " << c.superseded
      << "\n";
  out << "states    received " << r.states.received << ", missing cycles "
      << r.states.missing_cycles << ", repeated " << r.states.repeated << ", out of order "
      << r.states.out_of_order << "\n";
  out << "drift     simulated " << format("%.4f", r.simulated_s) << " s in "
      << format("%.4f", r.wall_s) << " s of server wall time: simulated − wall "
      << format("%+.3f", r.drift_s * 1e3) << " ms, real-time factor "
      << format("%.4f", r.real_time_factor) << "\n";
  if (r.server_stats) {
    out << "\nserver statistics (GetStats)\n";
    writeServerStatsSummary(*r.server_stats, out);
  }
}

// --- JSON ------------------------------------------------------------------------------------

void writeLatencyJson(const LatencyReport& r, std::ostream& out) {
  const LatencyRunInfo& i = r.info;
  std::string s = "{\n";
  s += "  \"transport\": " + jsonEscape(i.transport) + ",\n";
  s += "  \"server\": " + jsonEscape(i.server) + ",\n";
  s += "  \"client_host\": " + jsonEscape(i.client_host) + ",\n";
  s += "  \"same_host\": " + std::string(i.same_host ? "true" : "false") + ",\n";
  s += "  \"session_id\": " + std::to_string(i.session_id) + ",\n";
  s += "  \"model\": " + jsonEscape(i.model) + ",\n";
  s += "  \"mode\": " + jsonEscape(i.mode) + ",\n";
  s += "  \"session_rate_hz\": " + jsonDouble(i.session_rate_hz) + ",\n";
  s += "  \"rate_hz\": " + jsonDouble(i.rate_hz) + ",\n";
  s += "  \"duration_s\": " + jsonDouble(i.duration_s) + ",\n";
  s += "  \"control_law\": " + jsonEscape(i.control_law) + ",\n";
  s += "  \"loop_overruns\": " + std::to_string(i.loop_overruns) + ",\n";
  s += "  \"commands\": {\"sent\": " + std::to_string(r.counts.sent) +
       ", \"answered\": " + std::to_string(r.counts.answered) +
       ", \"lost\": " + std::to_string(r.counts.lost) +
       ", \"late\": " + std::to_string(r.counts.late) +
       ", \"superseded\": " + std::to_string(r.counts.superseded) + "},\n";
  s += "  \"states\": {\"received\": " + std::to_string(r.states.received) +
       ", \"missing_cycles\": " + std::to_string(r.states.missing_cycles) +
       ", \"repeated\": " + std::to_string(r.states.repeated) +
       ", \"out_of_order\": " + std::to_string(r.states.out_of_order) + "},\n";
  s += "  \"round_trip_ns\": " + jsonDistribution(r.round_trip) + ",\n";
  s += "  \"command_age_ns\": " + jsonDistribution(r.command_age) + ",\n";
  s += "  \"one_way_ns\": " + (i.same_host ? jsonDistribution(r.one_way) : "null") + ",\n";
  s += "  \"drift\": {\"simulated_s\": " + jsonDouble(r.simulated_s) +
       ", \"wall_s\": " + jsonDouble(r.wall_s) + ", \"drift_s\": " + jsonDouble(r.drift_s) +
       ", \"real_time_factor\": " + jsonDouble(r.real_time_factor) + "},\n";
  std::string stats = "null";
  if (r.server_stats) {
    google::protobuf::util::JsonPrintOptions options;
    options.preserve_proto_field_names = true;
    options.always_print_primitive_fields = true;
    std::string json;
    if (google::protobuf::util::MessageToJsonString(*r.server_stats, &json, options).ok()) {
      stats = json;
    }
  }
  s += "  \"server_stats\": " + stats + "\n}\n";
  out << s;
}

// --- CSV -------------------------------------------------------------------------------------

void writeLatencyCsv(const LatencyReport& r, std::ostream& out) {
  std::string s =
      "sequence,send_time_ns,receive_time_ns,round_trip_ns,command_age_ns,one_way_ns,cycle,"
      "superseded,lost\n";
  const auto optional = [](const std::optional<std::int64_t>& value) {
    return value ? std::to_string(*value) : std::string();
  };
  for (const CommandRecord& c : r.commands) {
    s += std::to_string(c.sequence) + ',' + std::to_string(c.send_time_ns) + ',' +
         optional(c.receive_time_ns) + ',' +
         (c.answered() ? std::to_string(c.roundTrip()) : std::string()) + ',' +
         optional(c.command_age_ns) + ',' + optional(c.one_way_ns) + ',' +
         (c.answered() ? std::to_string(c.cycle) : std::string()) + ',' +
         (c.superseded ? "1" : "0") + ',' + (c.answered() ? "0" : "1") + '\n';
  }
  out << s;
}

}  // namespace hilsim::client
