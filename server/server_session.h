// ServerSession: one rt::Session as the server hosts it — its id, UDP credentials (key or token),
// model description,
// effective configuration, transport counters, and the publisher thread that hands every newly
// published state to the session's state sinks (UDP peer, Control streams, StreamStates
// readers) without the RT thread ever knowing about them.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hilsim/v1/session.pb.h"
#include "proto/udp_frame.h"
#include "rt/session.h"
#include "server/server_config.h"
#include "server/client_quota.h"
#include "server/conversions.h"
#include "server/transport_stats.h"
#include "server/udp_screen.h"

namespace hilsim::server {

class StatePublisher;
struct SharedWorkers;

/// Receives the states of one session on its publisher thread (a non-RT thread).
class StateSink {
 public:
  virtual ~StateSink() = default;
  /// LOCKSTEP: the session's queued cycles were dropped (ServerSession::dropQueuedWork): a call
  /// waiting for some of them will not see them run. Called with no lock of the sink's held.
  virtual void onWorkDropped(const char* /*why*/) {}
  /// A newly published state (newest wins: cycles published while the previous call ran are
  /// skipped), or the current one again with `state_changed` when the session's life-cycle state
  /// changed (started, paused, reset, stopped, faulted) — then `state.state` is the new state.
  /// Must return quickly and never block on the network: copy, hand over, return.
  virtual void onState(const rt::StateSnapshot& state, bool state_changed) = 0;
  /// The session was closed (CloseSession, server shutdown): end the stream. Called once, from
  /// the closing thread, after the session stopped; no onState follows.
  virtual void onClosed() {}
};

/// A command with no set-points (tau, position and velocity empty): a sync (control.proto).
inline bool isSync(const v1::Command& command) {
  return command.tau_size() == 0 && command.position_size() == 0 && command.velocity_size() == 0;
}

/// What is wrong with a command's arrays for a session (a kWrongSize rejection), kNone if nothing.
enum class CommandShape : std::uint8_t {
  kNone,
  kTauSize,          ///< tau neither empty nor nv values
  kPositionSize,     ///< position neither empty nor nv values
  kVelocitySize,     ///< velocity neither empty nor nv values
  kPositionUnread,   ///< position given, but no DoF has a position interface
  kVelocityUnread,   ///< velocity given, but no DoF has a position or velocity interface
  kPositionMissing,  ///< a non-sync command without the positions its position DoFs need
  kVelocityMissing,  ///< a non-sync command without the velocities its velocity DoFs need
  kBaseWrench,       ///< base_wrench neither empty nor 6 values, or no floating base to push
};

class ServerSession {
 public:
  using Token = UdpToken;

  /// Builds the rt::Session (throws rt::SessionError on an invalid configuration) and starts the
  /// publisher thread. `model_info` and `effective_config` are what GetSession reports.
  ServerSession(std::uint64_t id, rt::SessionConfig config, v1::ModelInfo model_info,
                v1::SessionConfig effective_config, const Token& udp_token,
                rt::EventLogger* events = &rt::EventLogger::global(),
                std::shared_ptr<SharedWorkers> shared = nullptr);
  ~ServerSession();  ///< stops the session and the publisher thread
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  std::uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  rt::Session& session() { return *session_; }
  const rt::Session& session() const { return *session_; }
  const Model& model() const { return session_->model(); }
  int nq() const { return session_->model().nq; }
  int nv() const { return session_->model().nv; }
  rt::SessionMode mode() const { return session_->mode(); }
  const v1::ModelInfo& modelInfo() const { return model_info_; }
  const v1::SessionConfig& effectiveConfig() const { return effective_config_; }

  /// The TOKEN scheme's token (handed out only when the session has no key).
  const Token& udpToken() const { return udp_token_; }
  /// MAC: the key of the session's UDP frames (udp.proto, "Authentication"); set once, before the
  /// session is handed to its transports. Without one the session's port speaks TOKEN.
  void setUdpKey(const udp::Key& key) {
    udp_key_ = key;
    has_udp_key_ = true;
  }
  /// The key, or nullptr under TOKEN. Never logged, never in GetSession or ListSessions.
  const udp::Key* udpKey() const { return has_udp_key_ ? &udp_key_ : nullptr; }
  void setUdpPort(std::uint16_t port) { udp_port_.store(port, std::memory_order_relaxed); }
  std::uint16_t udpPort() const { return udp_port_.load(std::memory_order_relaxed); }

  TransportCounters& udpCounters() { return udp_; }
  TransportCounters& grpcCounters() { return grpc_; }

  // Life cycle, from non-RT threads. Each returns false and sets `why` (a message for the
  // client) when the transition is not allowed; every change wakes the publisher so that sinks
  // see it at once.
  bool start(std::string* why);  ///< CREATED → RUNNING, or PAUSED → RUNNING; never once closed
  bool pause(std::string* why);  ///< RUNNING → PAUSED
  bool stop(std::string* why);   ///< CREATED, RUNNING, PAUSED → STOPPED
  /// Any → CREATED at the initial state, or at (q, v) when given (sizes and finiteness already
  /// validated by the caller). Transport counters are kept; sequence gates are the transports'.
  /// Does nothing once the session is closed.
  void reset(const std::optional<Eigen::VectorXd>& q = std::nullopt,
             const std::optional<Eigen::VectorXd>& v = std::nullopt);

  /// Rules 7–11 of udp.proto for a command that passed the transport's own checks (size,
  /// session, token, sequence): the arrays' sizes (checkShape), a non-finite value, LOCKSTEP steps above
  /// maxStepCycles(), session STOPPED or FAULTED, channel full. Queues a command with set-points
  /// (a sync is only checked; an empty tau queues zeros). Does not count: the caller counts the outcome in its
  /// TransportCounters. Thread-safe.
  Rejection submit(const v1::Command& command, rt::Nanoseconds receive_time);
  /// The first problem of a command's array sizes for this session's model and drives.
  CommandShape checkShape(const v1::Command& command) const;
  /// LOCKSTEP: the most control cycles one command, step request or Step call may ask for
  /// (limits.max_step_cycles); set before the session is handed to its transports.
  void setMaxStepCycles(std::uint32_t cycles) {
    max_step_cycles_.store(cycles, std::memory_order_relaxed);
  }
  std::uint32_t maxStepCycles() const { return max_step_cycles_.load(std::memory_order_relaxed); }
  /// LOCKSTEP: the CPU time one request may ask for and the session's queued work may reach
  /// (limits.max_request_cpu_s, max_queued_cpu_s) [s]; set before the session is handed to its
  /// transports.
  void setCpuBudget(double request_s, double queued_s) {
    max_request_cpu_s_ = request_s;
    max_queued_cpu_s_ = queued_s;
  }
  double maxRequestCpu() const { return max_request_cpu_s_; }
  double maxQueuedCpu() const { return max_queued_cpu_s_; }
  /// LOCKSTEP: whether `cycles` more may be queued: kTooCostly when they alone cost more than
  /// maxRequestCpu() at the measured cycle cost, kOverBudget when with the queued ones they pass
  /// maxQueuedCpu(), else kNone. Other modes: always kNone.
  Rejection checkBudget(std::uint64_t cycles) const;
  /// The CPU time [s] `cycles` cost at the session's measured cycle cost.
  double cpuSeconds(std::uint64_t cycles) const;
  /// LOCKSTEP: drops the session's queued cycles (rt::SessionCore::dropQueuedWork) because the
  /// caller that asked for them went away, and answers every Step call still waiting ABORTED.
  /// Nothing happens when no cycle is queued.
  void dropQueuedWork(const char* why);
  /// How many times dropQueuedWork ran (a Step call compares it across its queueing).
  std::uint64_t workDrops() const { return work_drops_.load(std::memory_order_acquire); }

  // Ownership (docs/SERVER.md, "Isolation between clients"). Set once, before the session is
  // handed to its transports.
  /// The owner's secret: mutating calls must present it (or the operator's); empty: the
  /// operator's session (a start-up session), which only the operator's secret acts on.
  void setOwnerSecret(std::string secret) { owner_secret_ = std::move(secret); }
  const std::string& ownerSecret() const { return owner_secret_; }
  /// The client (peer address, without the port) that created it; empty for start-up sessions.
  void setClient(std::string client) { client_ = std::move(client); }
  const std::string& client() const { return client_; }
  /// StreamStates readers per client: claim fails when `client` holds `limit` on this session.
  bool claimClientReader(const std::string& client, int limit) {
    return client_readers_.claim(client, limit);
  }
  void releaseClientReader(const std::string& client) { client_readers_.release(client); }
  /// Whether `presented` (a call's owner secret) may drive this session: it is the owner's
  /// secret or `operator_secret` (compared in constant time; an empty one matches nothing).
  bool drivenBy(std::string_view presented, std::string_view operator_secret) const;

  /// Stops the session and ends every sink (onClosed); later addSink calls get onClosed at once.
  /// The object lives on while transports still hold it. Idempotent.
  void close();
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  /// Registers a sink; it receives the current state at once (state_changed = true), then every
  /// newly published one. On a closed session it gets onClosed() instead. Thread-safe.
  void addSink(StateSink* sink);
  /// Unregisters a sink; when it returns, no call into the sink is running or will run.
  void removeSink(StateSink* sink);

  /// The wire form of a snapshot (send_time_ns left 0: the transport stamps it): what the
  /// session's sensors read (State.measured) when it models them, unless `ground_truth`.
  void toState(const rt::StateSnapshot& snapshot, v1::State* out,
               bool ground_truth = false) const;
  /// The newest published state in wire form.
  void latestState(v1::State* out, bool ground_truth = false);
  void fillInfo(v1::SessionInfo* out);
  void fillStats(v1::SessionStats* out);
  /// What the actuator limits, stops and contact solver did (SessionStats.constraints), as of
  /// the published state `latest`.
  void fillConstraintStats(const rt::StateSnapshot& latest, v1::ConstraintStats* out) const;

  // The lease (SessionConfig.idle_timeout_s): who created the session, when, and when it was
  // last used. Thread-safe.
  /// Set once, before the session is handed to its transports.
  void setOwner(std::string owner) { owner_ = std::move(owner); }
  const std::string& owner() const { return owner_; }
  /// Marks a use: an rpc that named the session.
  void touch() { last_use_.store(rt::monotonicNow(), std::memory_order_relaxed); }
  /// Seconds since the last use: an rpc (touch), a command taken into the channel (any
  /// transport), an open Control stream or an open StreamStates, whichever was last.
  double idleSeconds();
  /// Seconds since creation.
  double ageSeconds() const {
    return static_cast<double>(rt::monotonicNow() - created_) * 1e-9;
  }
  double idleTimeout() const { return effective_config_.idle_timeout_s(); }

  /// One Control stream per session: claim fails when one is open.
  bool claimControlStream();
  void releaseControlStream();
  bool hasControlStream() const { return control_stream_open_.load(std::memory_order_acquire); }
  /// StreamStates readers: claim fails when `limit` are open.
  bool claimReader(int limit) {
    int open = readers_.load(std::memory_order_relaxed);
    do {
      if (open >= limit) return false;
    } while (!readers_.compare_exchange_weak(open, open + 1, std::memory_order_acq_rel));
    return true;
  }
  void releaseReader() { readers_.fetch_sub(1, std::memory_order_acq_rel); }
  /// Serializes Step calls on this session.
  std::mutex& stepMutex() { return step_mutex_; }
  /// The cycle the newest Step call waits for (under stepMutex; reset with the session).
  std::uint64_t& stepTarget() { return step_target_; }

 private:
  void publisherMain();
  void notifyPublisher();
  friend class StatePublisher;
  /// Forwards what is new since the last pass (a state change, a cycle, new sinks) to the sinks;
  /// false when there was nothing. On the publisher thread only (this session's or the shared one).
  bool publishPass();

  const std::uint64_t id_;
  std::string name_;
  std::string owner_ = "config";
  const rt::Nanoseconds created_ = rt::monotonicNow();
  std::atomic<rt::Nanoseconds> last_use_{rt::monotonicNow()};
  std::atomic<std::uint64_t> commands_seen_{0};  // commands_received at the last idleSeconds()
  v1::ModelInfo model_info_;
  StateExtras extras_;  // the State fields the model's states carry
  v1::SessionConfig effective_config_;
  Token udp_token_;
  udp::Key udp_key_;  // zeroed with the session
  bool has_udp_key_ = false;
  std::atomic<std::uint16_t> udp_port_{0};
  std::atomic<std::uint32_t> max_step_cycles_{kDefaultMaxStepCycles};
  std::atomic<std::uint64_t> work_drops_{0};
  double max_request_cpu_s_ = 1.0;
  double max_queued_cpu_s_ = 2.0;
  std::string owner_secret_;
  std::string client_;
  ClientQuota client_readers_;
  TransportCounters udp_, grpc_;
  std::shared_ptr<SharedWorkers> shared_;  // outlives session_: its worker leaves it last
  std::unique_ptr<rt::Session> session_;
  StatePublisher* shared_publisher_ = nullptr;  // its worker's; null: publisher_ below

  std::atomic<bool> control_stream_open_{false};
  std::atomic<int> readers_{0};
  std::mutex step_mutex_;
  std::uint64_t step_target_ = 0;

  // Sinks are called with sinks_mutex_ held, so removeSink waits for a running call; recursive,
  // so that a sink may remove itself from within its own call.
  std::recursive_mutex sinks_mutex_;
  std::vector<StateSink*> sinks_;
  // Lock order: sinks_mutex_, then new_sinks_mutex_; addSink takes only the latter.
  std::mutex new_sinks_mutex_;
  std::vector<StateSink*> new_sinks_;  // get the current state on the next publisher pass
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool wake_pending_ = false;
  std::atomic<bool> exit_{false};
  std::atomic<bool> closed_{false};
  std::atomic<bool> sinks_pending_{false};  // new_sinks_ is not empty
  // the publisher's own: what the sinks were last given
  rt::StateSnapshot snapshot_;
  rt::SessionState last_state_ = rt::SessionState::kCreated;
  std::uint64_t last_cycle_ = 0;
  rt::Nanoseconds last_publish_ = 0;
  std::thread publisher_;
};

}  // namespace hilsim::server
