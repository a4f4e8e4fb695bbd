// Per-transport counters of what a session's UDP port or gRPC calls did with the messages they
// received (hilsim.v1.TransportStats), and the rejection rules shared by both transports
// (udp.proto, service.proto).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace hilsim::v1 {
class TransportStats;
}

namespace hilsim::server {

/// Why a received command was refused, in the order the rules are checked under the TOKEN scheme
/// and on gRPC (udp.proto); the MAC scheme checks kUnauthenticated, kReplayed and kStale before
/// kMalformed (server/udp_screen.h). kNone: accepted.
enum class Rejection : std::uint8_t {
  kNone,
  kOversize,        ///< UDP datagram longer than 1472 bytes
  kMalformed,       ///< truncated or unparseable, no command, sequence 0
  kUnknownSession,  ///< session_id is not the port's or the stream's session
  kUnauthenticated, ///< UDP MAC: shorter than a frame, wrong magic or tag; TOKEN: token absent,
                    ///< of the wrong length or wrong
  kReplayed,        ///< UDP MAC: a frame counter accepted before (from any source)
  kStale,           ///< sequence below the newest accepted from that controller
  kDuplicate,       ///< sequence equal to it
  kWrongSize,       ///< tau neither empty nor nv values
  kNonFinite,       ///< a NaN or infinite torque
  kTooManySteps,    ///< LOCKSTEP: steps above the server's limits.max_step_cycles
  kTooCostly,       ///< LOCKSTEP: steps × the measured cycle cost above limits.max_request_cpu_s
  kInactive,        ///< the session is STOPPED or FAULTED
  kDropped,         ///< the session's command channel is full
  kOverBudget,      ///< LOCKSTEP: the session's queued work would pass limits.max_queued_cpu_s
};

/// "oversize", "malformed", … (the TransportStats field names); "accepted" for kNone.
std::string_view rejectionName(Rejection rejection);

/// Lock-free counters, written by network threads, read by GetStats and the metrics exporter.
struct TransportCounters {
  std::atomic<std::uint64_t> received{0};
  std::atomic<std::uint64_t> accepted{0};
  std::atomic<std::uint64_t> oversize{0};
  std::atomic<std::uint64_t> malformed{0};
  std::atomic<std::uint64_t> unknown_session{0};
  std::atomic<std::uint64_t> unauthenticated{0};
  std::atomic<std::uint64_t> replayed{0};
  std::atomic<std::uint64_t> stale{0};
  std::atomic<std::uint64_t> duplicate{0};
  std::atomic<std::uint64_t> wrong_size{0};
  std::atomic<std::uint64_t> non_finite{0};
  std::atomic<std::uint64_t> too_many_steps{0};
  std::atomic<std::uint64_t> too_costly{0};
  std::atomic<std::uint64_t> over_budget{0};
  std::atomic<std::uint64_t> inactive{0};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> states_sent{0};
  std::atomic<std::uint64_t> states_skipped{0};
  std::atomic<std::uint64_t> send_errors{0};

  /// Counts one received message's outcome: `accepted` for kNone, else the rejection's counter.
  /// (`received` is counted separately, once per message, by the transport.)
  void count(Rejection outcome);
  void toProto(v1::TransportStats* out) const;
  void reset();
};

/// The newest sequence number accepted from one controller (a Control stream, or one UDP source
/// address and port): rules 5 and 6 of udp.proto.
class SequenceGate {
 public:
  /// kStale, kDuplicate or kNone; does not record `sequence` (call accept() once the command has
  /// passed every other rule, so that a rejected command never advances the gate).
  Rejection check(std::uint64_t sequence) const {
    if (sequence < newest_) return Rejection::kStale;
    if (sequence == newest_) return Rejection::kDuplicate;
    return Rejection::kNone;
  }
  void accept(std::uint64_t sequence) { newest_ = sequence; }
  void restart() { newest_ = 0; }
  std::uint64_t newest() const { return newest_; }

 private:
  std::uint64_t newest_ = 0;
};

}  // namespace hilsim::server
