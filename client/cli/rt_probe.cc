#include "client/cli/rt_probe.h"

#include <cstdio>
#include <string>

#include "client/cli/text.h"

namespace hilsim::cli {
namespace {

std::string micros(double ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f", ns * 1e-3);
  return buffer;
}

void textRow(std::ostream& out, const std::string& label, const rt::HistogramSummary& s) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-22s %10s %10s %10s %10s %10s %10s %10s\n", label.c_str(),
                micros(static_cast<double>(s.min)).c_str(),
                micros(static_cast<double>(s.p50)).c_str(),
                micros(static_cast<double>(s.p90)).c_str(),
                micros(static_cast<double>(s.p99)).c_str(),
                micros(static_cast<double>(s.p999)).c_str(),
                micros(static_cast<double>(s.max)).c_str(), micros(s.mean).c_str());
  out << line;
}

std::string jsonSummary(const rt::HistogramSummary& s) {
  return "{\"count\": " + std::to_string(s.count) + ", \"min\": " + std::to_string(s.min) +
         ", \"p50\": " + std::to_string(s.p50) + ", \"p90\": " + std::to_string(s.p90) +
         ", \"p99\": " + std::to_string(s.p99) + ", \"p999\": " + std::to_string(s.p999) +
         ", \"max\": " + std::to_string(s.max) + ", \"mean\": " + jsonNumber(s.mean) + "}";
}

std::string jsonPhase(const rt::ProbePhase& p) {
  return "{\"cycles\": " + std::to_string(p.cycles) +
         ", \"deadline_misses\": " + std::to_string(p.deadline_misses) +
         ", \"skipped_cycles\": " + std::to_string(p.skipped_cycles) +
         ", \"wakeup_latency_ns\": " + jsonSummary(p.wakeup_latency) + "}";
}

void writeJson(const rt::ProbeReport& r, std::ostream& out) {
  const rt::ProbeOptions& o = r.options;
  std::string s = "{\n";
  s += "  \"model\": " + jsonString(o.model_name) + ",\n";
  s += "  \"rate_hz\": " + jsonNumber(o.rate) + ",\n";
  s += "  \"duration_s\": " + jsonNumber(o.duration) + ",\n";
  s += "  \"substeps\": " + std::to_string(o.substeps) + ",\n";
  s += "  \"solver\": " + jsonString(formulationName(o.formulation)) + ",\n";
  s += "  \"integrator\": " + jsonString(integratorName(o.integrator)) + ",\n";
  s += "  \"host\": " + jsonString(r.host) + ",\n";
  s += "  \"setup\": [";
  for (std::size_t k = 0; k < r.setup.size(); ++k) {
    s += (k ? ", " : "") + std::string("{\"step\": ") + jsonString(r.setup[k].name) +
         ", \"ok\": " + (r.setup[k].result.ok ? "true" : "false") +
         ", \"detail\": " + jsonString(r.setup[k].result.detail) + "}";
  }
  s += "],\n";
  s += "  \"baseline\": " + jsonPhase(r.baseline) + ",\n";
  s += "  \"hilsim\": " + jsonPhase(r.hilsim) + ",\n";
  s += "  \"compute_time_ns\": " + jsonSummary(r.compute_time) + ",\n";
  s += "  \"step_time_ns\": " + jsonSummary(r.step_time) + ",\n";
  s += "  \"overhead_ns\": " + jsonSummary(r.overhead) + ",\n";
  s += "  \"wakeup_latency_ratio\": {\"p50\": " + jsonNumber(r.p50_ratio) +
       ", \"p99\": " + jsonNumber(r.p99_ratio) + ", \"p999\": " + jsonNumber(r.p999_ratio) +
       "},\n";
  s += "  \"targets\": {\"overhead_p50_le_2us\": " +
       std::string(r.overheadTargetMet() ? "true" : "false") +
       ", \"wakeup_p99_ratio_le_1_2\": " + (r.p99TargetMet() ? "true" : "false") + "}\n";
  s += "}\n";
  out << s;
}

void writeText(const rt::ProbeReport& r, std::ostream& out) {
  const rt::ProbeOptions& o = r.options;
  out << "rt-probe: " << o.model_name << " at " << formatNumber(o.rate) << " Hz, "
      << formatNumber(o.duration) << " s per phase, " << o.substeps << " substep(s), "
      << formulationName(o.formulation) << " + " << integratorName(o.integrator) << "\n";
  out << "host: " << r.host << "\n";
  for (const rt::SetupStep& step : r.setup) {
    out << "setup: " << step.name << ": " << (step.result.ok ? "ok" : "refused") << " ("
        << step.result.detail << ")\n";
  }
  out << "\n  [µs]                          min        p50        p90        p99      p99.9"
         "        max       mean\n";
  textRow(out, "baseline wake-up", r.baseline.wakeup_latency);
  textRow(out, "hilsim wake-up", r.hilsim.wakeup_latency);
  textRow(out, "hilsim compute", r.compute_time);
  textRow(out, "hilsim engine step", r.step_time);
  textRow(out, "hilsim loop overhead", r.overhead);
  char line[256];
  std::snprintf(line, sizeof line,
                "\nwake-up latency hilsim / baseline: p50 %.2f, p99 %.2f, p99.9 %.2f\n",
                r.p50_ratio, r.p99_ratio, r.p999_ratio);
  out << line;
  out << "cycles: baseline " << r.baseline.cycles << ", hilsim " << r.hilsim.cycles << "\n";
  out << "deadline misses: baseline " << r.baseline.deadline_misses << ", hilsim "
      << r.hilsim.deadline_misses << " (" << r.hilsim.skipped_cycles << " cycles skipped)\n";
  out << "target loop overhead p50 <= 2 µs: "
      << (r.overheadTargetMet() ? "met" : "NOT met") << " (" << micros(r.overhead.p50)
      << " µs)\n";
  std::snprintf(line, sizeof line, "%.2f", r.p99_ratio);
  out << "target wake-up p99 <= 1.2 x baseline: " << (r.p99TargetMet() ? "met" : "NOT met")
      << " (" << line << ")\n";
}

}  // namespace

void writeProbeReport(const rt::ProbeReport& report, bool json, std::ostream& out) {
  if (json) writeJson(report, out);
  else writeText(report, out);
}

}  // namespace hilsim::cli
