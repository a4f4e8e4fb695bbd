// The measurements of `hilsim latency` (docs/CLI.md) and their reports, apart from any
// networking: LatencyRecorder matches the States a controller receives to the commands it sent
// (round trip, command age, one-way time, loss), LatencyReport summarises a run, and the writers
// turn it into a text table, JSON, a CSV file (one row per command) and a self-contained SVG
// chart. docs/PROTOCOL.md defines the figures.
//
// Times are nanoseconds; client times on the controller's CLOCK_MONOTONIC, server times on the
// server's. Not thread-safe: one recorder per controller loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "hilsim/v1/control.pb.h"
#include "hilsim/v1/session.pb.h"

namespace hilsim::client {

/// Order statistics of a set of durations [ns]. Percentiles are exact, by nearest rank: the
/// smallest sample with at least p % of the samples at or below it. All 0 when count is 0.
struct Distribution {
  std::size_t count = 0;
  double min = 0.0, p50 = 0.0, p90 = 0.0, p99 = 0.0, p999 = 0.0, max = 0.0, mean = 0.0;
};

/// Nearest-rank p-th percentile (0 < p ≤ 100) of `sorted` (ascending, not empty).
std::int64_t percentile(std::span<const std::int64_t> sorted, double p);

/// The distribution of `samples` (any order).
Distribution summarize(std::vector<std::int64_t> samples);

/// One command of a run and the State that answered it.
struct CommandRecord {
  std::uint64_t sequence = 0;
  /// client_send_time_ns as the answering State echoes it, else as the controller noted it just
  /// before sending (client clock).
  std::int64_t send_time_ns = 0;
  /// When the answering State arrived (client clock); absent: never answered (lost).
  std::optional<std::int64_t> receive_time_ns;
  /// publish_time_ns − command_receive_time_ns of the answering State, when it applied this very
  /// command (server clock): how long the command waited in the server until its cycle ended.
  std::optional<std::int64_t> command_age_ns;
  /// command_receive_time_ns − client_send_time_ns: client → server, when both clocks are the same
  /// (same host) and the answering State applied this very command.
  std::optional<std::int64_t> one_way_ns;
  std::uint64_t cycle = 0;  ///< cycle of the answering State
  /// Answered by the State of a newer command, not by its own (Matching::kNewest): two commands
  /// reached one cycle, or this one was lost on the way and a newer one overtook it.
  bool superseded = false;

  bool answered() const { return receive_time_ns.has_value(); }
  /// Receipt of the answering State − send [ns]; only when answered().
  std::int64_t roundTrip() const { return *receive_time_ns - send_time_ns; }
};

/// What the States received tell about the downlink.
struct StateCounts {
  std::uint64_t received = 0;
  /// Cycles missing between consecutive States: lost datagrams, States the server skipped for a
  /// busy transport, or cycles the loop skipped (docs/PROTOCOL.md, "Downlink loss").
  std::uint64_t missing_cycles = 0;
  std::uint64_t repeated = 0;      ///< same cycle as the previous State (e.g. a sync's answer)
  std::uint64_t out_of_order = 0;  ///< an older cycle than the previous State
};

/// How States answer commands.
enum class Matching {
  /// LOCKSTEP: only the State whose command_sequence equals the command's sequence answers it; a
  /// command without one is lost.
  kExact,
  /// REALTIME and FREE: the first State whose command_sequence is ≥ the command's sequence (the
  /// State of the cycle that applied it, or of a newer command that superseded it).
  kNewest,
};

/// Matches States to commands. A State answers only commands sent no later than the send time it
/// echoes, so that States applying another controller's commands never count.
class LatencyRecorder {
 public:
  /// `same_host`: client and server share CLOCK_MONOTONIC, so one-way times are meaningful.
  LatencyRecorder(Matching matching, bool same_host)
      : matching_(matching), same_host_(same_host) {}

  void reserve(std::size_t commands) { commands_.reserve(commands); }
  /// A command with torques was sent (syncs are not recorded). Sequences must increase.
  void commandSent(std::uint64_t sequence, std::int64_t send_time_ns);
  /// A State arrived at `receive_time_ns` (client clock).
  void stateReceived(const v1::State& state, std::int64_t receive_time_ns);

  bool sameHost() const { return same_host_; }
  const std::vector<CommandRecord>& commands() const { return commands_; }
  /// Commands sent and not answered yet.
  std::size_t unanswered() const { return commands_.size() - answered_; }
  const StateCounts& states() const { return states_; }

  /// The simulated and server wall time between the first State that answered a command and the
  /// last State received [s]; 0 before two such States.
  double simulatedSeconds() const;
  double serverWallSeconds() const;

 private:
  /// Fills in `c` from the State that answers it.
  void answer(CommandRecord& c, const v1::State& state, std::int64_t receive_time_ns);

  Matching matching_;
  bool same_host_;
  std::vector<CommandRecord> commands_;
  std::size_t first_unanswered_ = 0;  // kNewest: every command before it is answered
  std::size_t answered_ = 0;
  StateCounts states_;
  bool have_previous_ = false;
  std::uint64_t previous_cycle_ = 0;
  // drift window
  bool window_open_ = false;
  double first_time_ = 0.0, last_time_ = 0.0;
  std::int64_t first_publish_ns_ = 0, last_publish_ns_ = 0;
};

/// How the run was made (for the report's titles).
struct LatencyRunInfo {
  std::string transport;     ///< "udp" or "grpc"
  std::string server;        ///< gRPC target "host:port"
  std::string client_host;   ///< this host's name
  std::string model;         ///< the session's model
  std::string mode;          ///< "realtime", "lockstep" or "free"
  double session_rate_hz = 0.0;
  std::uint64_t session_id = 0;
  double rate_hz = 0.0;      ///< the controller loop's rate
  double duration_s = 0.0;   ///< the controller loop's planned duration
  bool same_host = false;
  std::string control_law;         ///< what the commands computed, in words
  std::uint64_t loop_overruns = 0;  ///< controller periods skipped because its thread was late
};

/// Counts over the commands of a run.
struct CommandCounts {
  std::uint64_t sent = 0;
  std::uint64_t answered = 0;
  std::uint64_t lost = 0;        ///< never answered
  std::uint64_t late = 0;        ///< answered after more than one controller period
  std::uint64_t superseded = 0;  ///< answered by a newer command's State
};

struct LatencyReport {
  LatencyRunInfo info;
  std::vector<CommandRecord> commands;
  CommandCounts counts;
  StateCounts states;
  Distribution round_trip;   ///< [ns], answered commands
  Distribution command_age;  ///< [ns], commands answered by their own State
  Distribution one_way;      ///< [ns], same host only (count 0 otherwise)
  /// Simulated time and server wall time (CLOCK_MONOTONIC between the publish times) from the
  /// first answering State to the last State [s]; drift = simulated − wall; real_time_factor =
  /// simulated / wall (0 when wall is 0).
  double simulated_s = 0.0, wall_s = 0.0, drift_s = 0.0, real_time_factor = 0.0;
  std::optional<v1::SessionStats> server_stats;  ///< GetStats at the end of the run

  double periodNs() const { return info.rate_hz > 0 ? 1e9 / info.rate_hz : 0.0; }
};

/// Summarises a finished run (call once no more States are expected).
LatencyReport buildReport(LatencyRunInfo info, const LatencyRecorder& recorder);

/// The report for people: run, percentile table [µs], counts, drift, server summary.
void writeLatencyText(const LatencyReport& report, std::ostream& out);
/// The report as one JSON document (durations in ns; server_stats as the proto's JSON mapping).
void writeLatencyJson(const LatencyReport& report, std::ostream& out);
/// One row per command: sequence, send_time_ns, receive_time_ns, round_trip_ns, command_age_ns,
/// one_way_ns, cycle, superseded, lost (empty fields where unknown), after a header row.
void writeLatencyCsv(const LatencyReport& report, std::ostream& out);
/// A self-contained SVG image: title with the run and its summary numbers, a histogram of the
/// round trip (log-scaled time axis, p50 and p99 marked) and the round trip over the run.
void writeLatencySvg(const LatencyReport& report, std::ostream& out);

/// The server-side summary the text report ends with: a few indented lines on timing, commands,
/// watchdog and both transports of a SessionStats.
void writeServerStatsSummary(const v1::SessionStats& stats, std::ostream& out);

}  // namespace hilsim::client
