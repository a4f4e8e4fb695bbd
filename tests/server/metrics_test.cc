// Prometheus exporter: families, labels and exact values from a fake source; histogram buckets
// against a LatencyHistogram fed known values; the HTTP endpoint; bind failures.

#include "server/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

namespace hilsim::server {
namespace {

// One sample line of the text exposition.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0.0;
};

// Parses `name{a="x",b="y"} value` lines (the exposition format's escapes included).
std::vector<Sample> parseSamples(const std::string& text) {
  std::vector<Sample> samples;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        const std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t k = eq + 2;  // after ="
        for (; line[k] != '"'; ++k) {
          if (line[k] == '\\') {
            ++k;
            value += line[k] == 'n' ? '\n' : line[k];
          } else {
            value += line[k];
          }
        }
        s.labels[key] = value;
        i = k + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::strtod(line.c_str() + i + 1, nullptr);  // "+Inf", "Nan" parse too
    samples.push_back(std::move(s));
  }
  return samples;
}

// The single sample of `name` whose labels include `labels`.
double valueOf(const std::vector<Sample>& samples, const std::string& name,
               const std::map<std::string, std::string>& labels) {
  const Sample* found = nullptr;
  int matches = 0;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [key, value] : labels) {
      const auto it = s.labels.find(key);
      all = all && it != s.labels.end() && it->second == value;
    }
    if (all) {
      found = &s;
      ++matches;
    }
  }
  EXPECT_EQ(matches, 1) << name;
  return found ? found->value : std::numeric_limits<double>::quiet_NaN();
}

int countOf(const std::vector<Sample>& samples, const std::string& name) {
  int n = 0;
  for (const Sample& s : samples) n += s.name == name;
  return n;
}

bool hasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// Values recorded into the fake sessions' wake-up histogram [ns] and where they fall: well inside
// the exported buckets (not within the 0.78 % bucket error of a bound).
const std::vector<rt::Nanoseconds> kWakeups = {500,     1'500,     3'000,       7'000,
                                               150'000, 2'500'000, 150'000'000, 20'000'000'000};

// Records `values` and writes the snapshot into `out`; the histogram lives on the heap because
// the source runs on the exposer's thread, whose stack is small.
void snapshotOf(const std::vector<rt::Nanoseconds>& values, rt::HistogramSnapshot& out) {
  const auto histogram = std::make_unique<rt::LatencyHistogram>();
  for (const rt::Nanoseconds v : values) histogram->record(v);
  histogram->snapshot(out);
}

rt::HistogramSnapshot snapshotOf(const std::vector<rt::Nanoseconds>& values) {
  rt::HistogramSnapshot out;
  snapshotOf(values, out);
  return out;
}

std::vector<SessionMetricsSample> fakeSessions() {
  std::vector<SessionMetricsSample> sessions(2);
  SessionMetricsSample& arm = sessions[0];
  arm.id = 7;
  arm.name = "arm \"one\"";  // quotes are escaped in label values
  arm.model = "iiwa14";
  v1::SessionStats& s = arm.stats;
  s.set_state(v1::SESSION_STATE_RUNNING);
  s.set_cycles(123'456'789'012);  // needs 12 digits
  s.set_time(12.345);
  s.set_wall_time_running(12.5);
  s.set_real_time_factor(0.9876);
  s.mutable_timing()->set_deadline_misses(3);
  s.mutable_timing()->set_consecutive_misses(1);
  s.mutable_timing()->set_max_consecutive_misses(2);
  s.mutable_timing()->set_skipped_cycles(4);
  v1::CommandStats& c = *s.mutable_commands();
  c.set_received(100);
  c.set_applied(90);
  c.set_superseded(5);
  c.set_dropped(2);
  c.set_rejected(1);
  c.set_success_rate(0.75);
  c.set_age_ns(250'000);
  s.mutable_watchdog()->set_trips(6);
  s.mutable_watchdog()->set_missed_cycles(77);
  s.mutable_watchdog()->set_tripped(true);
  s.mutable_watchdog()->set_armed(true);
  v1::TransportStats& udp = *s.mutable_udp();
  udp.set_received(63);
  udp.set_accepted(40);
  udp.set_oversize(1);
  udp.set_malformed(2);
  udp.set_unknown_session(3);
  udp.set_unauthenticated(4);
  udp.set_replayed(2);
  udp.set_stale(5);
  udp.set_duplicate(1);
  udp.set_wrong_size(1);
  udp.set_non_finite(1);
  udp.set_too_many_steps(1);
  udp.set_inactive(1);
  udp.set_dropped(1);
  udp.set_states_sent(500);
  udp.set_states_skipped(8);
  udp.set_send_errors(9);
  s.mutable_grpc()->set_received(11);
  s.mutable_grpc()->set_accepted(11);
  s.mutable_grpc()->set_states_sent(22);
  s.set_events_dropped(13);
  auto* step = s.add_rt_setup();
  step->set_name("sched_fifo");
  step->set_applied(false);
  step = s.add_rt_setup();
  step->set_name("lock_memory");
  step->set_applied(true);
  snapshotOf(kWakeups, arm.wakeup_latency);
  snapshotOf({40'000, 60'000}, arm.compute_time);
  snapshotOf({30'000}, arm.engine_step);

  SessionMetricsSample& idle = sessions[1];
  idle.id = 8;
  idle.name = "idle";
  idle.model = "pendulum";
  idle.stats.set_state(v1::SESSION_STATE_CREATED);
  idle.stats.mutable_commands()->set_success_rate(1.0);
  idle.stats.mutable_commands()->set_age_ns(-1);  // no command yet
  return sessions;
}

const std::map<std::string, std::string> kArm = {
    {"session_id", "7"}, {"session", "arm \"one\""}, {"model", "iiwa14"}};
const std::map<std::string, std::string> kIdle = {
    {"session_id", "8"}, {"session", "idle"}, {"model", "pendulum"}};

std::map<std::string, std::string> with(std::map<std::string, std::string> labels,
                                        const std::string& key, const std::string& value) {
  labels[key] = value;
  return labels;
}

TEST(MetricsExporterTest, RendersEveryFamilyWithExactValuesAndLabels) {
  MetricsExporter exporter("127.0.0.1", 0, fakeSessions);
  const std::string text = exporter.render();
  const std::vector<Sample> samples = parseSamples(text);

  for (const auto& [family, type] : std::vector<std::pair<std::string, std::string>>{
           {"hilsim_sessions", "gauge"},
           {"hilsim_session_state", "gauge"},
           {"hilsim_cycles_total", "counter"},
           {"hilsim_simulated_time_seconds", "gauge"},
           {"hilsim_real_time_factor", "gauge"},
           {"hilsim_deadline_misses_total", "counter"},
           {"hilsim_skipped_cycles_total", "counter"},
           {"hilsim_commands_total", "counter"},
           {"hilsim_command_success_rate", "gauge"},
           {"hilsim_command_age_seconds", "gauge"},
           {"hilsim_watchdog_trips_total", "counter"},
           {"hilsim_watchdog_tripped", "gauge"},
           {"hilsim_transport_messages_total", "counter"},
           {"hilsim_states_sent_total", "counter"},
           {"hilsim_states_skipped_total", "counter"},
           {"hilsim_send_errors_total", "counter"},
           {"hilsim_wakeup_latency_seconds", "histogram"},
           {"hilsim_compute_time_seconds", "histogram"},
           {"hilsim_engine_step_seconds", "histogram"}}) {
    EXPECT_TRUE(hasLine(text, "# TYPE " + family + " " + type)) << family;
  }

  EXPECT_EQ(valueOf(samples, "hilsim_sessions", {{"state", "running"}}), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_sessions", {{"state", "created"}}), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_sessions", {{"state", "faulted"}}), 0.0);
  EXPECT_EQ(valueOf(samples, "hilsim_session_state", with(kArm, "state", "running")), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_session_state", with(kArm, "state", "paused")), 0.0);
  EXPECT_EQ(valueOf(samples, "hilsim_session_state", with(kIdle, "state", "created")), 1.0);

  EXPECT_EQ(valueOf(samples, "hilsim_cycles_total", kArm), 123456789012.0);
  EXPECT_EQ(valueOf(samples, "hilsim_cycles_total", kIdle), 0.0);
  EXPECT_NEAR(valueOf(samples, "hilsim_simulated_time_seconds", kArm), 12.345, 1e-6);
  EXPECT_NEAR(valueOf(samples, "hilsim_wall_time_running_seconds", kArm), 12.5, 1e-6);
  EXPECT_NEAR(valueOf(samples, "hilsim_real_time_factor", kArm), 0.9876, 1e-6);
  EXPECT_EQ(valueOf(samples, "hilsim_deadline_misses_total", kArm), 3.0);
  EXPECT_EQ(valueOf(samples, "hilsim_consecutive_deadline_misses", kArm), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_max_consecutive_deadline_misses", kArm), 2.0);
  EXPECT_EQ(valueOf(samples, "hilsim_skipped_cycles_total", kArm), 4.0);

  EXPECT_EQ(valueOf(samples, "hilsim_commands_total", with(kArm, "outcome", "received")), 100.0);
  EXPECT_EQ(valueOf(samples, "hilsim_commands_total", with(kArm, "outcome", "applied")), 90.0);
  EXPECT_EQ(valueOf(samples, "hilsim_commands_total", with(kArm, "outcome", "superseded")), 5.0);
  EXPECT_EQ(valueOf(samples, "hilsim_commands_total", with(kArm, "outcome", "dropped")), 2.0);
  EXPECT_EQ(valueOf(samples, "hilsim_commands_total", with(kArm, "outcome", "rejected")), 1.0);
  EXPECT_NEAR(valueOf(samples, "hilsim_command_success_rate", kArm), 0.75, 1e-9);
  EXPECT_NEAR(valueOf(samples, "hilsim_command_success_rate", kIdle), 1.0, 1e-9);
  EXPECT_NEAR(valueOf(samples, "hilsim_command_age_seconds", kArm), 250e-6, 1e-9);
  EXPECT_EQ(countOf(samples, "hilsim_command_age_seconds"), 1) << "idle has no command yet";

  EXPECT_EQ(valueOf(samples, "hilsim_watchdog_trips_total", kArm), 6.0);
  EXPECT_EQ(valueOf(samples, "hilsim_watchdog_missed_cycles_total", kArm), 77.0);
  EXPECT_EQ(valueOf(samples, "hilsim_watchdog_tripped", kArm), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_watchdog_tripped", kIdle), 0.0);
  EXPECT_EQ(valueOf(samples, "hilsim_watchdog_armed", kArm), 1.0);

  // transports: one family, outcomes summing to received
  const auto udp = with(kArm, "transport", "udp");
  EXPECT_EQ(valueOf(samples, "hilsim_transport_received_total", udp), 63.0);
  const std::map<std::string, double> expected = {
      {"accepted", 40},       {"oversize", 1}, {"malformed", 2},      {"unknown_session", 3},
      {"unauthenticated", 4}, {"replayed", 2}, {"stale", 5},    {"duplicate", 1},
      {"wrong_size", 1},
      {"non_finite", 1},      {"too_many_steps", 1}, {"inactive", 1}, {"dropped", 1}};
  double sum = 0.0;
  for (const auto& [outcome, value] : expected) {
    EXPECT_EQ(valueOf(samples, "hilsim_transport_messages_total", with(udp, "outcome", outcome)),
              value)
        << outcome;
    sum += value;
  }
  EXPECT_EQ(sum, 63.0);
  EXPECT_EQ(countOf(samples, "hilsim_transport_messages_total"), 2 * 2 * 15);
  const auto grpc = with(kArm, "transport", "grpc");
  EXPECT_EQ(valueOf(samples, "hilsim_transport_messages_total", with(grpc, "outcome", "accepted")),
            11.0);
  EXPECT_EQ(valueOf(samples, "hilsim_states_sent_total", udp), 500.0);
  EXPECT_EQ(valueOf(samples, "hilsim_states_sent_total", grpc), 22.0);
  EXPECT_EQ(valueOf(samples, "hilsim_states_skipped_total", udp), 8.0);
  EXPECT_EQ(valueOf(samples, "hilsim_send_errors_total", udp), 9.0);
  EXPECT_EQ(valueOf(samples, "hilsim_events_dropped_total", kArm), 13.0);
  EXPECT_EQ(valueOf(samples, "hilsim_rt_setup_applied", with(kArm, "step", "sched_fifo")), 0.0);
  EXPECT_EQ(valueOf(samples, "hilsim_rt_setup_applied", with(kArm, "step", "lock_memory")), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_metrics_source_errors_total", {}), 0.0);
}

TEST(MetricsExporterTest, HistogramBucketsAreCumulativeAndMatchTheSnapshot) {
  MetricsExporter exporter("127.0.0.1", 0, fakeSessions);
  const std::vector<Sample> samples = parseSamples(exporter.render());
  const rt::HistogramSnapshot snapshot = snapshotOf(kWakeups);

  // the buckets of the arm's wake-up latency, by bound
  std::map<double, double> buckets;
  for (const Sample& s : samples) {
    if (s.name != "hilsim_wakeup_latency_seconds_bucket" || s.labels.at("session_id") != "7") {
      continue;
    }
    buckets[std::strtod(s.labels.at("le").c_str(), nullptr)] = s.value;
  }
  const std::vector<double> bounds = {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4,
                                      5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1};
  ASSERT_EQ(buckets.size(), bounds.size() + 1);
  std::vector<double> counts;
  for (const auto& [bound, count] : buckets) counts.push_back(count);
  // ≤ bound: 500 ns | 1.5 µs | 3 µs | 7 µs | … 150 µs at 200 µs | 2.5 ms at 5 ms | 150 ms and
  // 20 s only at +Inf
  const std::vector<double> expected = {1, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 6, 8};
  EXPECT_EQ(counts, expected);
  std::size_t k = 0;
  for (const auto& [bound, count] : buckets) {
    if (k < bounds.size()) {
      EXPECT_NEAR(bound, bounds[k], bounds[k] * 1e-9);
    } else {
      EXPECT_TRUE(std::isinf(bound));
    }
    ++k;
  }

  // _count and _sum are the snapshot's (the sum in seconds)
  EXPECT_EQ(valueOf(samples, "hilsim_wakeup_latency_seconds_count", kArm),
            static_cast<double>(snapshot.count()));
  EXPECT_EQ(snapshot.count(), kWakeups.size());
  const double sum_seconds = static_cast<double>(snapshot.sum()) * 1e-9;
  EXPECT_NEAR(valueOf(samples, "hilsim_wakeup_latency_seconds_sum", kArm), sum_seconds,
              sum_seconds * 1e-9);
  EXPECT_NEAR(valueOf(samples, "hilsim_wakeup_latency_max_seconds", kArm), 20.0, 1e-9);

  // the other histograms, and an empty one
  EXPECT_EQ(valueOf(samples, "hilsim_compute_time_seconds_count", kArm), 2.0);
  EXPECT_NEAR(valueOf(samples, "hilsim_compute_time_seconds_sum", kArm), 100e-6, 1e-12);
  EXPECT_EQ(valueOf(samples, "hilsim_compute_time_seconds_bucket", with(kArm, "le", "+Inf")), 2.0);
  EXPECT_EQ(valueOf(samples, "hilsim_engine_step_seconds_count", kArm), 1.0);
  EXPECT_EQ(valueOf(samples, "hilsim_engine_step_seconds_count", kIdle), 0.0);
  EXPECT_EQ(valueOf(samples, "hilsim_engine_step_seconds_bucket", with(kIdle, "le", "+Inf")), 0.0);
}

TEST(MetricsExporterTest, BucketsNeverReportAValueBelowABoundItExceeds) {
  // a value just above a bound lands in the next bucket; the bound itself (its bucket's highest
  // value exceeds it) may too: the bucket error stays on the safe side
  const rt::HistogramSnapshot snapshot = snapshotOf({1'001, 1'000});
  std::vector<SessionMetricsSample> one(1);
  one[0].id = 1;
  one[0].wakeup_latency = snapshot;
  MetricsExporter exporter("127.0.0.1", 0, [&] { return one; });
  const std::vector<Sample> samples = parseSamples(exporter.render());
  const auto le = [&](const char* bound) {
    return valueOf(samples, "hilsim_wakeup_latency_seconds_bucket",
                   {{"session_id", "1"}, {"le", bound}});
  };
  EXPECT_EQ(le("+Inf"), 2.0);
  for (const Sample& s : samples) {
    if (s.name == "hilsim_wakeup_latency_seconds_bucket" && s.labels.at("session_id") == "1" &&
        std::strtod(s.labels.at("le").c_str(), nullptr) <= 1e-6 * (1 + 1e-9)) {
      EXPECT_EQ(s.value, 0.0) << "le " << s.labels.at("le");
    }
  }
}

TEST(MetricsExporterTest, NoSessionsAndFailingSources) {
  MetricsExporter empty("127.0.0.1", 0, [] { return std::vector<SessionMetricsSample>{}; });
  std::vector<Sample> samples = parseSamples(empty.render());
  EXPECT_EQ(valueOf(samples, "hilsim_sessions", {{"state", "running"}}), 0.0);
  EXPECT_EQ(countOf(samples, "hilsim_cycles_total"), 0);

  std::atomic<int> calls{0};
  MetricsExporter failing("127.0.0.1", 0, [&]() -> std::vector<SessionMetricsSample> {
    ++calls;
    throw std::runtime_error("registry gone");
  });
  failing.render();
  samples = parseSamples(failing.render());
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(valueOf(samples, "hilsim_metrics_source_errors_total", {}), 2.0);
  EXPECT_EQ(valueOf(samples, "hilsim_sessions", {{"state", "running"}}), 0.0);
}

// A plain HTTP/1.1 GET over a socket: status line and body.
std::pair<std::string, std::string> httpGet(std::uint16_t port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  timeval timeout{10, 0};  // generous: the VM may be loaded; a hang must still end
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    ADD_FAILURE() << "cannot connect to port " << port;
    return {};
  }
  const std::string request =
      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) response.append(buffer, n);
  ::close(fd);
  const std::size_t header_end = response.find("\r\n\r\n");
  if (header_end == std::string::npos) return {response, ""};
  return {response.substr(0, response.find("\r\n")), response.substr(header_end + 4)};
}

TEST(MetricsExporterTest, ServesTheSameTextOverHttp) {
  MetricsExporter exporter("127.0.0.1", 0, fakeSessions);
  ASSERT_NE(exporter.port(), 0);
  const auto [status, body] = httpGet(exporter.port(), "/metrics");
  EXPECT_EQ(status, "HTTP/1.1 200 OK");
  // the exposer adds its own families (exposer_*); ours come as render() has them
  const std::string text = exporter.render();
  EXPECT_NE(body.find(text), std::string::npos) << body;
  EXPECT_TRUE(hasLine(body, "# TYPE hilsim_wakeup_latency_seconds histogram"));
}

TEST(MetricsExporterTest, AnOccupiedPortThrows) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof address;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::uint16_t port = ntohs(address.sin_port);

  try {
    MetricsExporter exporter("127.0.0.1", port, fakeSessions);
    ADD_FAILURE() << "bound an occupied port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
  }
  ::close(fd);

  // and a second exporter on the first one's port
  MetricsExporter first("127.0.0.1", 0, fakeSessions);
  EXPECT_THROW(MetricsExporter("127.0.0.1", first.port(), fakeSessions), std::runtime_error);
  EXPECT_THROW(MetricsExporter("203.0.113.1", 0, fakeSessions), std::runtime_error)
      << "an address of no local interface";
}

TEST(MetricsExporterTest, StopsPromptly) {
  // civetweb's listener polls in 2 s quanta; the exporter must not wait for one to end
  const auto start = std::chrono::steady_clock::now();
  { MetricsExporter exporter("127.0.0.1", 0, fakeSessions); }
  { MetricsExporter exporter("0.0.0.0", 0, fakeSessions); }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::milliseconds(1500));
}

}  // namespace
}  // namespace hilsim::server
