#include "client/cli/latency.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <numbers>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "client/cli/csv.h"
#include "client/cli/progress.h"
#include "client/interrupt.h"
#include "client/cli/errors.h"
#include "client/cli/session_commands.h"
#include "client/cli/text.h"
#include "client/udp_controller.h"
#include "engine/algorithms/rnea.h"
#include "engine/io/model_loader.h"
#include "rt/clock.h"
#include "rt/session_limits.h"

namespace hilsim::cli {
namespace {

using rt::monotonicNow;
using rt::Nanoseconds;

constexpr Nanoseconds kMillisecond = 1'000'000;
/// LOCKSTEP: how long a command's State may take before the command counts as lost.
constexpr Nanoseconds kLockstepAnswerTimeout = 500 * kMillisecond;

// --- transports ------------------------------------------------------------------------------

/// One controller's channel to the session: commands out, States (with their arrival time on
/// this host's CLOCK_MONOTONIC) in.
class Link {
 public:
  virtual ~Link() = default;
  virtual void sync() = 0;
  /// Sends τ; returns the sequence (0 if not sent) and the send time stamped in the command.
  virtual std::pair<std::uint64_t, Nanoseconds> send(const std::vector<double>& tau,
                                                     std::uint32_t steps) = 0;
  /// Waits until `deadline` for the next State; false on timeout or when the channel ended.
  virtual bool receive(v1::State& state, Nanoseconds& receive_time, Nanoseconds deadline) = 0;
  /// Ends the channel; a message when it ended abnormally, else empty.
  virtual std::string close() = 0;
};

class UdpLink : public Link {
 public:
  /// `created`: the session's id, port and credentials (key or token) choose the scheme.
  UdpLink(const std::string& host, const v1::CreateSessionResponse& created)
      : udp_(host, created) {}
  void sync() override { udp_.sync(); }
  std::pair<std::uint64_t, Nanoseconds> send(const std::vector<double>& tau,
                                             std::uint32_t steps) override {
    const Nanoseconds before = monotonicNow();
    return {udp_.send(tau, steps), before};
  }
  bool receive(v1::State& state, Nanoseconds& receive_time, Nanoseconds deadline) override {
    const Nanoseconds wait = std::max<Nanoseconds>(deadline - monotonicNow(), 0);
    if (!udp_.receive(state, std::chrono::nanoseconds(wait))) return false;
    receive_time = monotonicNow();
    return true;
  }
  std::string close() override { return {}; }

 private:
  client::UdpController udp_;
};

/// The Control stream, read by its own thread so that each State is stamped when it arrives.
class GrpcLink : public Link {
 public:
  explicit GrpcLink(std::unique_ptr<client::ControlStream> stream)
      : stream_(std::move(stream)), reader_([this] { readLoop(); }) {}
  ~GrpcLink() override { close(); }

  void sync() override { stream_->sync(); }
  std::pair<std::uint64_t, Nanoseconds> send(const std::vector<double>& tau,
                                             std::uint32_t steps) override {
    const std::uint64_t sequence = stream_->send(tau, steps);
    return {sequence, stream_->lastSendTime()};
  }
  bool receive(v1::State& state, Nanoseconds& receive_time, Nanoseconds deadline) override {
    std::unique_lock lock(mutex_);
    // libstdc++'s steady_clock is CLOCK_MONOTONIC, the clock of `deadline`
    const std::chrono::steady_clock::time_point until{std::chrono::nanoseconds(deadline)};
    if (!arrived_.wait_until(lock, until, [this] { return !queue_.empty() || ended_; })) {
      return false;
    }
    if (queue_.empty()) return false;
    state = std::move(queue_.front().first);
    receive_time = queue_.front().second;
    queue_.pop_front();
    return true;
  }
  std::string close() override {
    if (closed_) return {};
    closed_ = true;
    stream_->writesDone();  // the server ends the stream with OK
    {
      std::unique_lock lock(mutex_);
      if (!arrived_.wait_for(lock, std::chrono::seconds(2), [this] { return ended_; })) {
        stream_->cancel();
      }
    }
    reader_.join();
    const grpc::Status status = stream_->finish();
    if (status.ok()) return {};
    return "Control stream ended with " + client::statusCodeName(status.error_code()) + ": " +
           status.error_message();
  }

 private:
  void readLoop() {
    v1::State state;
    Nanoseconds when = 0;
    while (stream_->read(state, &when)) {
      std::lock_guard lock(mutex_);
      queue_.emplace_back(std::move(state), when);
      arrived_.notify_one();
    }
    std::lock_guard lock(mutex_);
    ended_ = true;
    arrived_.notify_all();
  }

  std::unique_ptr<client::ControlStream> stream_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<std::pair<v1::State, Nanoseconds>> queue_;
  bool ended_ = false;
  bool closed_ = false;
  std::thread reader_;  // last: starts once everything above exists
};

// --- the control law -------------------------------------------------------------------------

/// Holds the posture of the first State with an inertia-scaled PD plus compensation of gravity,
/// velocity-product and damping forces ("computed torque"): τ = rnea(q, v, q̈_des) with
/// q̈_des = ω² (q₀ − q) − 2ω v for one-coordinate joints and −2ω v for the DoFs of other joints.
/// Every joint is then a critically damped system of bandwidth ω, 10 Hz at 1 kHz (lower at lower
/// rates, for stability). Needs the model on this host (a bundled model of the same name and
/// layout); without it the commands are zero torques.
class HoldPosture {
 public:
  HoldPosture(const v1::ModelInfo& info, double rate) : nv_(static_cast<int>(info.nv())) {
    try {
      auto model = std::make_shared<Model>(loadModel(info.name()));
      bool same = model->nq == static_cast<int>(info.nq()) && model->nv == nv_ &&
                  model->nbodies - 1 == info.joints_size();
      for (int i = 0; same && i < info.joints_size(); ++i) {
        same = model->joint_names[i + 1] == info.joints(i).name();
      }
      if (same) {
        model_ = std::move(model);
        data_ = std::make_unique<Data>(*model_);
      }
    } catch (const std::exception&) {
      // not available locally: zero torques
    }
    one_coordinate_.assign(nv_, -1);
    for (const v1::JointInfo& joint : info.joints()) {
      if (joint.nq() == 1 && joint.nv() == 1) one_coordinate_[joint.v_start()] = joint.q_start();
    }
    omega_ = 2.0 * std::numbers::pi * std::min(10.0, rate / 100.0);
  }

  std::string describe() const {
    return model_ ? "computed-torque PD holding the initial posture (model from this host)"
                  : "zero torques (the model is not available on this host)";
  }

  /// Fixes the posture to hold.
  void start(const v1::State& state) {
    if (!model_) return;
    q0_ = Eigen::Map<const Eigen::VectorXd>(state.q().data(), state.q_size());
    q_ = q0_;
    v_ = Eigen::VectorXd::Zero(nv_);
    acceleration_ = v_;
  }

  void torques(const v1::State& state, std::vector<double>& tau) {
    tau.assign(nv_, 0.0);
    if (!model_ || q0_.size() != model_->nq || state.q_size() != model_->nq ||
        state.v_size() != nv_) {
      return;
    }
    for (int k = 0; k < model_->nq; ++k) q_[k] = state.q(k);
    for (int k = 0; k < nv_; ++k) v_[k] = state.v(k);
    for (int k = 0; k < nv_; ++k) {
      acceleration_[k] = -2.0 * omega_ * state.v(k);
      const int i = one_coordinate_[k];
      if (i >= 0) acceleration_[k] += omega_ * omega_ * (q0_[i] - q_[i]);
    }
    const Eigen::VectorXd& result = rnea(*model_, *data_, q_, v_, acceleration_);
    for (int k = 0; k < nv_; ++k) tau[k] = result[k];
  }

 private:
  int nv_;
  std::shared_ptr<const Model> model_;
  std::unique_ptr<Data> data_;
  std::vector<int> one_coordinate_;  // per DoF: its q index for a one-coordinate joint, else −1
  double omega_ = 0.0;
  Eigen::VectorXd q0_, q_, v_, acceleration_;
};

// The lease of the session a run creates [s]: long enough for any pause of the run (the
// drain, a slow start), short enough that a killed run's session does not linger.
constexpr double kOwnSessionLease = 10.0;

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return {};
  return name;
}

bool isLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

void checkOptions(const LatencyOptions& o) {
  if (o.transport != "udp" && o.transport != "grpc") {
    throw CliError("--transport must be udp or grpc, got '" + o.transport + "'", kExitUsage);
  }
  if (!(o.rate >= 1.0 && o.rate <= rt::kMaxControlRate)) {  // a session runs at 100 Hz or more
    throw CliError("--rate must be within 1 to 10000 Hz, got " + formatNumber(o.rate), kExitUsage);
  }
  if (!(o.duration > 0.0 && o.duration <= 3600.0)) {
    throw CliError("--duration must be > 0 and at most 3600 s, got " + formatNumber(o.duration),
                   kExitUsage);
  }
  if (o.session_id == 0 && o.mode != "realtime" && o.mode != "lockstep") {
    throw CliError("--mode must be realtime or lockstep, got '" + o.mode + "'", kExitUsage);
  }
  if (o.session_id != 0 && o.transport == "udp" && o.udp_token_hex.empty() &&
      o.udp_key_hex.empty()) {
    throw CliError("--session over UDP needs --udp-key (or --udp-token on a server with "
                   "listen.udp.authentication: token): 'hilsim session create' prints it, and "
                   "a start-up session's key is its udp_key_file (its token the server's log line "
                   "'start-up session … UDP token …'); --transport grpc needs none",
                   kExitUsage);
  }
  if (!o.udp_token_hex.empty() && !o.udp_key_hex.empty()) {
    throw CliError("give --udp-key or --udp-token, not both", kExitUsage);
  }
}

}  // namespace

std::string targetHost(const std::string& target) {
  if (!target.empty() && target.front() == '[') {
    const auto end = target.find(']');
    return end == std::string::npos ? target.substr(1) : target.substr(1, end - 1);
  }
  const auto colon = target.rfind(':');
  if (colon == std::string::npos || target.find(':') != colon) return target;
  return target.substr(0, colon);
}

namespace {

/// `bytes` bytes from 2·`bytes` hex digits; CliError naming `option` otherwise.
std::string parseHex(const std::string& hex, std::size_t bytes, const char* option) {
  if (hex.size() != 2 * bytes) {
    throw CliError(std::string(option) + " must be " + std::to_string(2 * bytes) +
                       " hex digits (" + std::to_string(bytes) + " bytes), got " +
                       std::to_string(hex.size()) + " characters",
                   kExitUsage);
  }
  std::string out(bytes, '\0');
  for (std::size_t k = 0; k < bytes; ++k) {
    int value = 0;
    for (int half = 0; half < 2; ++half) {
      const char c = hex[2 * k + half];
      int digit;
      if (c >= '0' && c <= '9') digit = c - '0';
      else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
      else throw CliError(std::string(option) + ": not a hex digit", kExitUsage);  // a secret
      value = value * 16 + digit;
    }
    out[k] = static_cast<char>(value);
  }
  return out;
}

}  // namespace

std::string parseTokenHex(const std::string& hex) { return parseHex(hex, 16, "--udp-token"); }

std::string parseKeyHex(const std::string& hex) {
  return parseHex(hex, udp::kKeyBytes, "--udp-key");
}

std::string tokenHex(const std::string& bytes) {
  static const char* const kDigits = "0123456789abcdef";
  std::string hex;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

client::LatencyReport runLatency(const LatencyOptions& o, double* elapsed_s) {
  checkOptions(o);
  client::SimulationClient simulation(o.server, o.client);

  // The session: a new one (closed at the end) or the one named.
  std::uint64_t id = o.session_id;
  // the session's UDP credentials, as CreateSession hands them out
  v1::CreateSessionResponse credentials;
  if (!o.udp_token_hex.empty()) credentials.set_udp_token(parseTokenHex(o.udp_token_hex));
  if (!o.udp_key_hex.empty()) credentials.set_udp_key(parseKeyHex(o.udp_key_hex));
  v1::SessionInfo info;
  std::uint64_t created = 0;
  if (id == 0) {
    std::string model = o.model;
    if (model.empty()) {
      const v1::ListModelsResponse models = simulation.listModels();
      if (models.models_size() == 0) throw CliError("the server lists no bundled model");
      model = models.models(0).name();
    }
    v1::SessionConfig config;
    config.set_mode(o.mode == "lockstep" ? v1::SESSION_MODE_LOCKSTEP : v1::SESSION_MODE_REALTIME);
    config.set_control_rate_hz(std::clamp(o.rate, rt::kMinControlRate, rt::kMaxControlRate));
    config.set_name("latency");
    // closed by the server too if this process dies without closing it (kill -9)
    config.set_idle_timeout_s(kOwnSessionLease);
    const v1::CreateSessionResponse response = simulation.createSession(model, config);
    id = created = response.session().session_id();
    credentials.set_udp_token(response.udp_token());
    credentials.set_udp_key(response.udp_key());
  }
  client::SessionCloser closer(simulation, created);
  if (created != 0) info = simulation.startSession(id);
  else info = simulation.getSession(id);
  if (info.state() != v1::SESSION_STATE_RUNNING) {
    throw CliError("session " + std::to_string(id) + " is " + sessionStateName(info.state()) +
                   ", not running (hilsim session start " + std::to_string(id) + ")");
  }
  const bool lockstep = info.config().mode() == v1::SESSION_MODE_LOCKSTEP;

  const std::string host = targetHost(o.server);
  client::LatencyRunInfo run;
  run.transport = o.transport;
  run.server = o.server;
  run.client_host = hostName();
  run.model = info.model().name();
  run.mode = sessionModeName(info.config().mode());
  run.session_rate_hz = info.config().control_rate_hz();
  run.session_id = id;
  run.rate_hz = o.rate;
  run.duration_s = o.duration;
  run.same_host = o.same_host.value_or(isLoopback(host));

  std::unique_ptr<Link> link;
  if (o.transport == "udp") {
    if (info.udp_port() == 0) throw CliError("the server has UDP disabled: use --transport grpc");
    credentials.mutable_session()->set_session_id(id);
    credentials.mutable_session()->set_udp_port(info.udp_port());
    link = std::make_unique<UdpLink>(host, credentials);
  } else {
    link = std::make_unique<GrpcLink>(simulation.openControl(id));
  }

  HoldPosture law(info.model(), o.rate);
  run.control_law = law.describe();
  client::LatencyRecorder recorder(
      lockstep ? client::Matching::kExact : client::Matching::kNewest, run.same_host);
  const Nanoseconds period = std::llround(1e9 / o.rate);
  const auto planned = static_cast<std::uint64_t>(std::llround(o.duration * o.rate));
  recorder.reserve(planned);

  // Bind the channel and fetch the posture to hold (a lost UDP sync is asked again).
  v1::State latest, state;
  Nanoseconds when = 0;
  bool bound = false;
  for (int attempt = 0; attempt < 10 && !bound && !client::InterruptGuard::requested(); ++attempt) {
    link->sync();
    bound = link->receive(latest, when, monotonicNow() + 200 * kMillisecond);
  }
  if (!bound && !client::InterruptGuard::requested()) {
    throw CliError("session " + std::to_string(id) + " sent no State over " + o.transport +
                   " within 2 s" + (o.transport == "udp" ? " (is UDP port " +
                   std::to_string(info.udp_port()) + " of " + host + " reachable?)" : ""));
  }
  if (bound) recorder.stateReceived(latest, when);
  // REALTIME: States stream in every cycle; send half a period after one arrives, so that each
  // command reaches the next cycle with margin on both sides.
  Nanoseconds next = monotonicNow();
  if (!lockstep && bound) {
    const Nanoseconds until = monotonicNow() + 30 * kMillisecond;
    while (link->receive(state, when, until)) {
      recorder.stateReceived(state, when);
      latest = state;
    }
    next = when + period / 2;
    while (next < monotonicNow()) next += period;
  }
  if (bound) law.start(latest);

  std::vector<double> tau;
  Progress progress("latency", o.duration, "s");
  const Nanoseconds loop_start = monotonicNow();
  for (std::uint64_t k = 0; k < planned && bound && !client::InterruptGuard::requested(); ++k) {
    if (monotonicNow() > next + period) {  // this thread was late: keep the schedule's phase
      const auto behind = std::min<Nanoseconds>((monotonicNow() - next) / period,
                                                 static_cast<Nanoseconds>(planned - k));
      run.loop_overruns += static_cast<std::uint64_t>(behind);
      next += behind * period;
      k += static_cast<std::uint64_t>(behind);
      if (k >= planned) break;
    }
    rt::sleepUntil(next);
    law.torques(latest, tau);
    const auto [sequence, sent] = link->send(tau, lockstep ? 1 : 0);
    if (sequence != 0) recorder.commandSent(sequence, sent);
    next += period;
    progress.update(static_cast<double>(k + 1) / o.rate);  // after the send: off the hot path
    // Collect States until the next period. LOCKSTEP: the next command is computed from this
    // one's State, so wait for it even past the period (late), or until it counts as lost.
    for (;;) {
      const bool waiting = lockstep && recorder.unanswered() > 0;
      const Nanoseconds until = waiting ? std::max(next, sent + kLockstepAnswerTimeout) : next;
      if (!link->receive(state, when, until)) break;
      recorder.stateReceived(state, when);
      if (state.cycle() >= latest.cycle()) latest = state;
    }
  }
  if (elapsed_s != nullptr) *elapsed_s = static_cast<double>(monotonicNow() - loop_start) * 1e-9;
  // The last answers: up to half a second, or 20 periods when that is longer.
  const Nanoseconds drain_until = monotonicNow() + std::max(500 * kMillisecond, 20 * period);
  while (recorder.unanswered() > 0 && link->receive(state, when, drain_until)) {
    recorder.stateReceived(state, when);
  }
  const std::string link_problem = link->close();
  link.reset();

  client::LatencyReport report = client::buildReport(std::move(run), recorder);
  report.server_stats = simulation.getStats(id);
  if (!link_problem.empty()) throw CliError(link_problem);
  return report;
}

void latencyCommand(const LatencyOptions& options, std::ostream& out) {
  // before the run, not after it: a report is not lost to a mistyped path
  if (!options.csv.empty()) checkWritable(options.csv);
  if (!options.svg.empty()) checkWritable(options.svg);
  const client::InterruptGuard interrupts;
  double elapsed_s = 0.0;
  const client::LatencyReport report = runLatency(options, &elapsed_s);
  if (!options.csv.empty()) {
    std::ostringstream text;
    client::writeLatencyCsv(report, text);
    OutputFile file(options.csv);
    file.write(text.str());
    file.close();
  }
  if (!options.svg.empty()) {
    std::ostringstream text;
    client::writeLatencySvg(report, text);
    OutputFile file(options.svg);
    file.write(text.str());
    file.close();
  }
  if (options.json) client::writeLatencyJson(report, out);
  else client::writeLatencyText(report, out);
  if (client::InterruptGuard::requested()) {
    char line[160];
    std::snprintf(line, sizeof line, "interrupted by %s after %.1f s of the %g s planned; the "
                  "report covers the %zu commands sent",
                  client::InterruptGuard::signalName(), elapsed_s, options.duration,
                  report.commands.size());
    throw CliError(line, client::InterruptGuard::exitCode());
  }
}

}  // namespace hilsim::cli
