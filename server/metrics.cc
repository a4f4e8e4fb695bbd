// The Prometheus exporter: a prometheus-cpp Collectable that asks the MetricsSource for the
// sessions at every scrape and turns their statistics and histogram snapshots into metric
// families (docs/SERVER.md lists them). Nothing is recorded ahead of a scrape.
#include "server/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <deque>
#include <iterator>
#include <limits>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "server/web_listener.h"

namespace hilsim::server {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

constexpr double kSecondsPerNanosecond = 1e-9;

/// Upper bounds of the exported histogram buckets [ns]: 1 µs … 100 ms in 1-2-5 steps, then +Inf.
constexpr std::array<rt::Nanoseconds, 16> kBucketBounds = {
    1'000,   2'000,     5'000,     10'000,    20'000,     50'000,     100'000,    200'000,
    500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000, 20'000'000, 50'000'000, 100'000'000};

/// "created", "running", … (SessionState value names after the prefix, lower case).
std::string stateName(v1::SessionState state) {
  std::string name = v1::SessionState_Name(state);
  name = name.substr(std::string_view("SESSION_STATE_").size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

const std::array<v1::SessionState, 5>& sessionStates() {
  static const std::array<v1::SessionState, 5> states = {
      v1::SESSION_STATE_CREATED, v1::SESSION_STATE_RUNNING, v1::SESSION_STATE_PAUSED,
      v1::SESSION_STATE_STOPPED, v1::SESSION_STATE_FAULTED};
  return states;
}

/// The message outcomes of TransportStats, in the order of its fields: each received message is
/// counted under exactly one of them, so they sum to `received`.
using TransportField = std::uint64_t (*)(const v1::TransportStats&);
const std::array<std::pair<const char*, TransportField>, 15>& transportOutcomes() {
  static const std::array<std::pair<const char*, TransportField>, 15> outcomes = {{
      {"accepted", [](const v1::TransportStats& t) { return t.accepted(); }},
      {"oversize", [](const v1::TransportStats& t) { return t.oversize(); }},
      {"malformed", [](const v1::TransportStats& t) { return t.malformed(); }},
      {"unknown_session", [](const v1::TransportStats& t) { return t.unknown_session(); }},
      {"unauthenticated", [](const v1::TransportStats& t) { return t.unauthenticated(); }},
      {"replayed", [](const v1::TransportStats& t) { return t.replayed(); }},
      {"stale", [](const v1::TransportStats& t) { return t.stale(); }},
      {"duplicate", [](const v1::TransportStats& t) { return t.duplicate(); }},
      {"wrong_size", [](const v1::TransportStats& t) { return t.wrong_size(); }},
      {"non_finite", [](const v1::TransportStats& t) { return t.non_finite(); }},
      {"too_many_steps", [](const v1::TransportStats& t) { return t.too_many_steps(); }},
      {"too_costly", [](const v1::TransportStats& t) { return t.too_costly(); }},
      {"inactive", [](const v1::TransportStats& t) { return t.inactive(); }},
      {"dropped", [](const v1::TransportStats& t) { return t.dropped(); }},
      {"over_budget", [](const v1::TransportStats& t) { return t.over_budget(); }},
  }};
  return outcomes;
}

Labels sessionLabels(const SessionMetricsSample& s) {
  return {{"session_id", std::to_string(s.id)}, {"session", s.name}, {"model", s.model}};
}

Labels withLabel(Labels labels, std::string name, std::string value) {
  labels.push_back({std::move(name), std::move(value)});
  return labels;
}

/// The snapshot's counts, cumulated at kBucketBounds. A histogram bucket counts under the first
/// bound at or above its highest value, so a value is never reported below a bound it exceeds;
/// one up to 0.78 % under a bound may be counted at the next bound (rt/histogram.h).
ClientMetric::Histogram toHistogram(const rt::HistogramSnapshot& snapshot) {
  std::array<std::uint64_t, kBucketBounds.size() + 1> per_bound{};  // last: above every bound
  for (std::size_t i = 0; i < rt::HistogramLayout::kBucketCount; ++i) {
    const std::uint64_t n = snapshot.bucketCount(i);
    if (n == 0) continue;
    const rt::Nanoseconds highest = rt::HistogramLayout::bucketHighest(i);
    const auto at = std::lower_bound(kBucketBounds.begin(), kBucketBounds.end(), highest) -
                    kBucketBounds.begin();
    per_bound[static_cast<std::size_t>(at)] += n;
  }
  ClientMetric::Histogram h;
  std::uint64_t cumulative = 0;
  for (std::size_t k = 0; k < kBucketBounds.size(); ++k) {
    cumulative += per_bound[k];
    h.bucket.push_back({cumulative, static_cast<double>(kBucketBounds[k]) * kSecondsPerNanosecond});
  }
  cumulative += per_bound.back();
  h.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  h.sample_count = cumulative;
  h.sample_sum = static_cast<double>(snapshot.sum()) * kSecondsPerNanosecond;
  return h;
}

/// Builds the families of one scrape. A deque: the references add() hands out stay valid while
/// later families are added.
class Families {
 public:
  MetricFamily& add(std::string name, std::string help, MetricType type) {
    families_.push_back({std::move(name), std::move(help), type, {}});
    return families_.back();
  }
  static void gauge(MetricFamily& family, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = value;
    family.metric.push_back(std::move(m));
  }
  static void counter(MetricFamily& family, Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    m.counter.value = value;
    family.metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(families_.begin()), std::make_move_iterator(families_.end())};
  }

 private:
  std::deque<MetricFamily> families_;
};

/// One gauge or counter family with one sample per session.
template <typename Value>
void perSession(Families& out, const std::vector<SessionMetricsSample>& samples, std::string name,
                std::string help, MetricType type, Value value) {
  MetricFamily& family = out.add(std::move(name), std::move(help), type);
  for (const SessionMetricsSample& s : samples) {
    const double v = static_cast<double>(value(s));
    if (type == MetricType::Counter) {
      Families::counter(family, sessionLabels(s), v);
    } else {
      Families::gauge(family, sessionLabels(s), v);
    }
  }
}

std::vector<MetricFamily> buildFamilies(const std::vector<SessionMetricsSample>& samples,
                                        const std::vector<v1::WorkerStats>& workers,
                                        std::uint64_t source_errors) {
  Families out;
  const auto counter = MetricType::Counter;
  const auto gauge = MetricType::Gauge;

  // the shared workers and where each session runs (docs/REALTIME.md, "Workers")
  if (!workers.empty()) {
    MetricFamily& load = out.add(
        "hilsim_worker_load",
        "Sum of the REALTIME sessions' cycle cost / period on a shared worker (admission).", gauge);
    MetricFamily& utilisation = out.add(
        "hilsim_worker_utilisation", "Busy share of a shared worker's last full second.", gauge);
    MetricFamily& placed =
        out.add("hilsim_worker_sessions", "Sessions placed on a shared worker.", gauge);
    MetricFamily& cycles =
        out.add("hilsim_worker_cycles_total", "Control cycles a shared worker ran.", counter);
    for (const v1::WorkerStats& w : workers) {
      const Labels labels = {{"worker", std::to_string(w.index())}, {"cpu", std::to_string(w.cpu())}};
      Families::gauge(load, labels, w.load());
      Families::gauge(utilisation, labels, w.utilisation());
      Families::gauge(placed, labels, static_cast<double>(w.sessions()));
      Families::counter(cycles, labels, static_cast<double>(w.cycles()));
    }
  }
  perSession(out, samples, "hilsim_session_cycle_cost_seconds",
             "A control cycle's cost, smoothed over about 100 cycles.", gauge,
             [](const SessionMetricsSample& s) {
               return static_cast<double>(s.stats.placement().cycle_cost_ns()) *
                      kSecondsPerNanosecond;
             });
  perSession(out, samples, "hilsim_session_worker",
             "The shared worker that runs the session (-1: a thread of its own).", gauge,
             [](const SessionMetricsSample& s) { return s.stats.placement().worker(); });

  // life cycle
  MetricFamily& sessions = out.add("hilsim_sessions", "Sessions by life-cycle state.", gauge);
  for (const v1::SessionState state : sessionStates()) {
    const auto n = std::count_if(samples.begin(), samples.end(),
                                 [&](const auto& s) { return s.stats.state() == state; });
    Families::gauge(sessions, {{"state", stateName(state)}}, static_cast<double>(n));
  }
  MetricFamily& state =
      out.add("hilsim_session_state",
              "1 for the session's current life-cycle state, 0 for the others.", gauge);
  for (const SessionMetricsSample& s : samples) {
    for (const v1::SessionState st : sessionStates()) {
      Families::gauge(state, withLabel(sessionLabels(s), "state", stateName(st)),
                      s.stats.state() == st ? 1.0 : 0.0);
    }
  }

  // progress
  perSession(out, samples, "hilsim_cycles_total", "Control cycles completed since start or reset.",
             counter, [](const auto& s) { return s.stats.cycles(); });
  perSession(out, samples, "hilsim_simulated_time_seconds", "Simulation time.", gauge,
             [](const auto& s) { return s.stats.time(); });
  perSession(out, samples, "hilsim_wall_time_running_seconds",
             "Wall-clock time spent running since start or reset.", gauge,
             [](const auto& s) { return s.stats.wall_time_running(); });
  perSession(out, samples, "hilsim_real_time_factor",
             "Simulated seconds per wall-clock second while running.", gauge,
             [](const auto& s) { return s.stats.real_time_factor(); });

  // deadlines
  perSession(out, samples, "hilsim_deadline_misses_total",
             "Cycles that ended after their deadline.", counter,
             [](const auto& s) { return s.stats.timing().deadline_misses(); });
  perSession(out, samples, "hilsim_consecutive_deadline_misses", "Current run of deadline misses.",
             gauge, [](const auto& s) { return s.stats.timing().consecutive_misses(); });
  perSession(out, samples, "hilsim_max_consecutive_deadline_misses",
             "Longest run of deadline misses.", gauge,
             [](const auto& s) { return s.stats.timing().max_consecutive_misses(); });
  perSession(out, samples, "hilsim_skipped_cycles_total", "Cycles dropped by the overrun policy.",
             counter, [](const auto& s) { return s.stats.timing().skipped_cycles(); });

  // commands
  MetricFamily& commands = out.add(
      "hilsim_commands_total",
      "Commands that reached the session, by outcome (all transports; received counts those "
      "accepted into the command channel).",
      counter);
  for (const SessionMetricsSample& s : samples) {
    const v1::CommandStats& c = s.stats.commands();
    for (const auto& [outcome, value] :
         {std::pair{"received", c.received()}, std::pair{"applied", c.applied()},
          std::pair{"superseded", c.superseded()}, std::pair{"dropped", c.dropped()},
          std::pair{"rejected", c.rejected()}}) {
      Families::counter(commands, withLabel(sessionLabels(s), "outcome", outcome),
                        static_cast<double>(value));
    }
  }
  perSession(out, samples, "hilsim_command_success_rate",
             "Fraction of the last 100 armed realtime cycles that took a fresh command.", gauge,
             [](const auto& s) { return s.stats.commands().success_rate(); });
  MetricFamily& age = out.add(
      "hilsim_command_age_seconds",
      "Age of the newest command at the last cycle (absent before the first command).", gauge);
  for (const SessionMetricsSample& s : samples) {
    if (s.stats.commands().age_ns() < 0) continue;
    Families::gauge(age, sessionLabels(s),
                    static_cast<double>(s.stats.commands().age_ns()) * kSecondsPerNanosecond);
  }

  // watchdog
  perSession(out, samples, "hilsim_watchdog_trips_total",
             "Silent spells that reached the watchdog's missed-cycles limit.", counter,
             [](const auto& s) { return s.stats.watchdog().trips(); });
  perSession(out, samples, "hilsim_watchdog_missed_cycles_total",
             "Armed cycles without a fresh command.", counter,
             [](const auto& s) { return s.stats.watchdog().missed_cycles(); });
  perSession(out, samples, "hilsim_watchdog_tripped", "1 while the watchdog policy decides tau.",
             gauge, [](const auto& s) { return s.stats.watchdog().tripped() ? 1 : 0; });
  perSession(out, samples, "hilsim_watchdog_armed", "1 once a first command has arrived.", gauge,
             [](const auto& s) { return s.stats.watchdog().armed() ? 1 : 0; });

  // transports
  MetricFamily& received = out.add(
      "hilsim_transport_received_total",
      "Messages received by a transport (datagrams, stream messages, Step calls).", counter);
  MetricFamily& messages = out.add(
      "hilsim_transport_messages_total",
      "Received messages by outcome: accepted, or the first rejection rule they broke.", counter);
  MetricFamily& sent = out.add("hilsim_states_sent_total", "State messages sent.", counter);
  MetricFamily& skipped = out.add(
      "hilsim_states_skipped_total",
      "States never sent because a newer one replaced them while the transport was busy.", counter);
  MetricFamily& send_errors =
      out.add("hilsim_send_errors_total", "Failed sends (UDP sendto errors).", counter);
  for (const SessionMetricsSample& s : samples) {
    for (const auto& [transport, t] :
         {std::pair{"udp", &s.stats.udp()}, std::pair{"grpc", &s.stats.grpc()}}) {
      const Labels labels = withLabel(sessionLabels(s), "transport", transport);
      Families::counter(received, labels, static_cast<double>(t->received()));
      for (const auto& [outcome, field] : transportOutcomes()) {
        Families::counter(messages, withLabel(labels, "outcome", outcome),
                          static_cast<double>(field(*t)));
      }
      Families::counter(sent, labels, static_cast<double>(t->states_sent()));
      Families::counter(skipped, labels, static_cast<double>(t->states_skipped()));
      Families::counter(send_errors, labels, static_cast<double>(t->send_errors()));
    }
  }
  perSession(out, samples, "hilsim_events_dropped_total",
             "Log events lost because the session's event queue was full.", counter,
             [](const auto& s) { return s.stats.events_dropped(); });

  // actuator limits, joint stops, contact solver (per DoF: only the DoFs with a count)
  struct PerDof {
    const char* name;
    const char* help;
    const google::protobuf::RepeatedField<std::uint64_t>& (v1::ConstraintStats::*field)() const;
  };
  for (const PerDof& d :
       {PerDof{"hilsim_effort_saturations_total",
               "Physics steps whose commanded force the DoF's effort limit cut.",
               &v1::ConstraintStats::effort_saturations},
        PerDof{"hilsim_velocity_cuts_total",
               "Physics steps whose commanded force the DoF's velocity limit cut.",
               &v1::ConstraintStats::velocity_cuts},
        PerDof{"hilsim_limit_cycles_total", "Cycles in which the DoF's position-limit stop pushed.",
               &v1::ConstraintStats::limit_cycles}}) {
    MetricFamily& family = out.add(d.name, d.help, counter);
    for (const SessionMetricsSample& s : samples) {
      const auto& counts = (s.stats.constraints().*d.field)();
      for (int k = 0; k < counts.size(); ++k) {
        if (counts[k] == 0) continue;
        const std::string dof = static_cast<std::size_t>(k) < s.dof_labels.size()
                                    ? s.dof_labels[static_cast<std::size_t>(k)]
                                    : std::to_string(k);
        Families::counter(family, withLabel(sessionLabels(s), "dof", dof),
                          static_cast<double>(counts[k]));
      }
    }
  }
  perSession(out, samples, "hilsim_contacts_active", "Contact spheres touching the ground.", gauge,
             [](const auto& s) { return s.stats.constraints().contacts_active(); });
  perSession(out, samples, "hilsim_limits_active", "Joint stops pushing.", gauge,
             [](const auto& s) { return s.stats.constraints().limits_active(); });
  perSession(out, samples, "hilsim_solver_iterations",
             "Sweeps of the newest cycle's contact and limit solve.", gauge,
             [](const auto& s) { return s.stats.constraints().solver_iterations(); });
  perSession(out, samples, "hilsim_solver_max_iterations",
             "Most sweeps of any cycle's contact and limit solve since start or reset.", gauge,
             [](const auto& s) { return s.stats.constraints().solver_max_iterations(); });
  perSession(out, samples, "hilsim_solver_unconverged_total",
             "Cycles whose contact and limit solve used up its iteration budget.", counter,
             [](const auto& s) { return s.stats.constraints().solver_unconverged(); });

  MetricFamily& setup = out.add(
      "hilsim_rt_setup_applied",
      "1 if the host allowed the RT-thread set-up step (lock_memory, prefault_stack, timer_slack, "
      "cpu_affinity, sched_fifo), 0 if it refused it.",
      gauge);
  for (const SessionMetricsSample& s : samples) {
    for (const v1::RtSetupStep& step : s.stats.rt_setup()) {
      Families::gauge(setup, withLabel(sessionLabels(s), "step", step.name()),
                      step.applied() ? 1.0 : 0.0);
    }
  }

  // timing distributions
  struct Distribution {
    const char* name;
    const char* help;
    const rt::HistogramSnapshot SessionMetricsSample::*snapshot;
  };
  for (const Distribution& d :
       {Distribution{"hilsim_wakeup_latency",
                     "Wake-up latency of the loop (actual minus scheduled "
                     "wake-up, corrected for coordinated omission)",
                     &SessionMetricsSample::wakeup_latency},
        Distribution{"hilsim_compute_time", "Compute time of a cycle (wake-up to end of cycle)",
                     &SessionMetricsSample::compute_time},
        Distribution{"hilsim_engine_step", "Physics substeps of one cycle",
                     &SessionMetricsSample::engine_step}}) {
    MetricFamily& histogram =
        out.add(std::string(d.name) + "_seconds",
                std::string(d.help) + "; bucket bounds within 0.78 %.", MetricType::Histogram);
    MetricFamily& max =
        out.add(std::string(d.name) + "_max_seconds",
                std::string(d.help) + ": largest value since start or reset.", gauge);
    for (const SessionMetricsSample& s : samples) {
      const rt::HistogramSnapshot& snapshot = s.*d.snapshot;
      ClientMetric m;
      m.label = sessionLabels(s);
      m.histogram = toHistogram(snapshot);
      histogram.metric.push_back(std::move(m));
      Families::gauge(max, sessionLabels(s),
                      static_cast<double>(snapshot.max()) * kSecondsPerNanosecond);
    }
  }

  MetricFamily& errors = out.add("hilsim_metrics_source_errors_total",
                                 "Scrapes whose session figures could not be read.", counter);
  Families::counter(errors, {}, static_cast<double>(source_errors));
  return out.take();
}

/// Asks the source at scrape time. prometheus-cpp serialises scrapes of one endpoint, but render()
/// may run at the same time on another thread: the mutex keeps the source single-threaded.
class SessionCollector final : public prometheus::Collectable {
 public:
  SessionCollector(MetricsSource source, WorkerMetricsSource workers)
      : source_(std::move(source)), workers_(std::move(workers)) {}

  std::vector<MetricFamily> Collect() const override {
    std::lock_guard lock(mutex_);
    std::vector<SessionMetricsSample> samples;
    std::vector<v1::WorkerStats> workers;
    try {
      if (source_) samples = source_();
      if (workers_) workers = workers_();
    } catch (const std::exception&) {
      // a failing source must not take the exporter thread down: export what is left, counted
      samples.clear();
      workers.clear();
      ++source_errors_;
    }
    return buildFamilies(samples, workers, source_errors_);
  }

 private:
  MetricsSource source_;
  WorkerMetricsSource workers_;
  mutable std::mutex mutex_;
  mutable std::uint64_t source_errors_ = 0;
};

/// Workers of the exposer: scrapes are rare, but an idle connection holds one for up to 1 s.
constexpr int kMetricsWorkers = 16;

/// civetweb's listening_ports syntax: "address:port".
std::string listenAddress(const std::string& address, std::uint16_t port) {
  return address + ":" + std::to_string(port);
}

}  // namespace

struct MetricsExporter::Impl {
  std::shared_ptr<SessionCollector> collector;
  std::unique_ptr<prometheus::Exposer> exposer;
  std::string address;
  std::uint16_t port = 0;
};

MetricsExporter::MetricsExporter(const std::string& address, std::uint16_t port,
                                 MetricsSource source, WorkerMetricsSource workers)
    : impl_(std::make_unique<Impl>()) {
  impl_->collector = std::make_shared<SessionCollector>(std::move(source), std::move(workers));
  const std::string listen = listenAddress(address, port);
  try {
    // A connection holds a civetweb worker from its accept until its request is read: with one
    // worker, one idle connection held every scrape for civetweb's 30 s default. Several workers
    // and a short request timeout keep a slow or idle peer from delaying a scrape; no CORS
    // approval (civetweb's default would let any site read the metrics from a browser).
    impl_->exposer = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen,
        "num_threads", std::to_string(kMetricsWorkers),
        "request_timeout_ms", "1000",
        "enable_keep_alive", "no",
        "access_control_allow_origin", "",
        "access_control_allow_methods", "",
        "access_control_allow_headers", ""});
  } catch (const std::exception& e) {
    throw std::runtime_error("metrics: cannot listen on " + listen + " (" + e.what() + ")");
  }
  const std::vector<int> ports = impl_->exposer->GetListeningPorts();
  if (ports.empty() || ports.front() <= 0 || ports.front() > 65535) {
    throw std::runtime_error("metrics: no listening port on " + listen);
  }
  impl_->port = static_cast<std::uint16_t>(ports.front());
  impl_->address = address;
  impl_->exposer->RegisterCollectable(impl_->collector);
}

MetricsExporter::~MetricsExporter() {
  // Stop serving before the collector (and the source it captures) goes away.
  if (!impl_ || !impl_->exposer) return;
  stopWebServer(impl_->address, impl_->port, [this] { impl_->exposer.reset(); });
}

std::uint16_t MetricsExporter::port() const { return impl_->port; }

std::string MetricsExporter::render() const {
  return prometheus::TextSerializer().Serialize(impl_->collector->Collect());
}

}  // namespace hilsim::server
