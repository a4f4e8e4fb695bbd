// The measurements and reports of `hilsim latency` without any network: exact percentiles of
// known samples, matching States to commands (lockstep and realtime rules, loss, superseded
// commands, another controller's States), downlink gaps, drift, the CSV columns, and an SVG that
// is well-formed and carries its axis labels and summary numbers.
#include "client/latency_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace hilsim::client {
namespace {

constexpr std::int64_t kMs = 1'000'000;

/// A State as the server would send it for `cycle`, applying command `applied` sent at
/// `client_send`, received by the server at `server_receive` and published at `publish`.
v1::State state(std::uint64_t cycle, std::uint64_t applied, std::int64_t client_send,
                std::int64_t server_receive, std::int64_t publish, double time = 0.0) {
  v1::State s;
  s.set_session_id(1);
  s.set_cycle(cycle);
  s.set_time(time);
  s.set_command_sequence(applied);
  s.set_command_client_send_time_ns(client_send);
  s.set_command_receive_time_ns(server_receive);
  s.set_publish_time_ns(publish);
  s.set_send_time_ns(publish);
  return s;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(text);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (!text.empty() && text.back() == separator) fields.emplace_back();
  return fields;
}

TEST(Percentiles, NearestRankOfKnownSamples) {
  std::vector<std::int64_t> samples(1000);
  std::iota(samples.begin(), samples.end(), 1);  // 1 … 1000
  std::shuffle(samples.begin(), samples.end(), std::mt19937(7));
  const Distribution d = summarize(samples);
  EXPECT_EQ(d.count, 1000u);
  EXPECT_EQ(d.min, 1);
  EXPECT_EQ(d.p50, 500);   // 500 of 1000 samples are ≤ 500
  EXPECT_EQ(d.p90, 900);
  EXPECT_EQ(d.p99, 990);
  EXPECT_EQ(d.p999, 999);
  EXPECT_EQ(d.max, 1000);
  EXPECT_DOUBLE_EQ(d.mean, 500.5);

  const std::vector<std::int64_t> four = {40, 10, 30, 20};
  const Distribution small = summarize(four);
  EXPECT_EQ(small.p50, 20);  // rank ceil(0.5 · 4) = 2
  EXPECT_EQ(small.p90, 40);  // rank ceil(3.6) = 4
  EXPECT_EQ(small.min, 10);
  EXPECT_DOUBLE_EQ(small.mean, 25.0);

  const Distribution one = summarize({7});
  EXPECT_EQ(one.min, 7);
  EXPECT_EQ(one.p999, 7);
  EXPECT_EQ(one.max, 7);

  const Distribution none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.max, 0);
}

TEST(LatencyRecorder, LockstepAnswersOnlyTheExactCommandAndCountsTheRestLost) {
  LatencyRecorder recorder(Matching::kExact, /*same_host=*/true);
  // Commands 1 … 10 sent 1 ms apart; the server receives each 20 µs later and publishes its
  // cycle 50 µs after that; the client gets the State 30 µs after the publish. Commands 4 and 7
  // are never answered.
  for (std::uint64_t k = 1; k <= 10; ++k) {
    const std::int64_t sent = static_cast<std::int64_t>(k) * kMs;
    recorder.commandSent(k, sent);
    if (k == 4 || k == 7) continue;
    recorder.stateReceived(state(k, k, sent, sent + 20'000, sent + 70'000, k * 1e-3),
                           sent + 100'000);
  }
  // A sync's answer repeats the newest State: it answers nothing new.
  recorder.stateReceived(state(10, 10, 10 * kMs, 10 * kMs + 20'000, 10 * kMs + 70'000, 0.01),
                         11 * kMs);
  EXPECT_EQ(recorder.unanswered(), 2u);

  LatencyRunInfo info;
  info.rate_hz = 1000;
  info.same_host = true;
  const LatencyReport report = buildReport(info, recorder);
  EXPECT_EQ(report.counts.sent, 10u);
  EXPECT_EQ(report.counts.answered, 8u);
  EXPECT_EQ(report.counts.lost, 2u);
  EXPECT_EQ(report.counts.superseded, 0u);
  EXPECT_EQ(report.counts.late, 0u);
  EXPECT_FALSE(report.commands[3].answered());
  EXPECT_FALSE(report.commands[6].answered());
  EXPECT_EQ(report.round_trip.count, 8u);
  EXPECT_EQ(report.round_trip.min, 100'000);
  EXPECT_EQ(report.round_trip.max, 100'000);
  EXPECT_EQ(report.command_age.p50, 50'000);
  EXPECT_EQ(report.one_way.p50, 20'000);
  // cycles 1 2 3 5 6 8 9 10 10: two missing, one repeated
  EXPECT_EQ(report.states.received, 9u);
  EXPECT_EQ(report.states.missing_cycles, 2u);
  EXPECT_EQ(report.states.repeated, 1u);
  EXPECT_EQ(report.states.out_of_order, 0u);
}

TEST(LatencyRecorder, RealtimeAnswersWithTheFirstStateAtOrAfterTheCommand) {
  LatencyRecorder recorder(Matching::kNewest, /*same_host=*/false);
  // Before any command: a State applying another controller's command 900 (sent long ago on
  // some other clock) answers nothing.
  recorder.stateReceived(state(5, 900, -5 * kMs, 1, 2), 0);
  recorder.commandSent(1, 1 * kMs);
  recorder.stateReceived(state(6, 900, -5 * kMs, 1, 2), 1 * kMs + 400'000);  // not ours
  EXPECT_EQ(recorder.unanswered(), 1u);
  recorder.stateReceived(state(7, 1, 1 * kMs, 1 * kMs + 10'000, 1 * kMs + 900'000),
                         1 * kMs + 950'000);
  // Commands 2 and 3 reach the same cycle: 3 supersedes 2, and both are answered by its State.
  recorder.commandSent(2, 2 * kMs);
  recorder.commandSent(3, 2 * kMs + 500'000);
  recorder.stateReceived(state(8, 1, 1 * kMs, 1 * kMs + 10'000, 2 * kMs + 900'000),
                         2 * kMs + 950'000);  // no fresh command in cycle 8
  recorder.stateReceived(state(9, 3, 2 * kMs + 500'000, 2 * kMs + 520'000, 3 * kMs + 900'000),
                         3 * kMs + 950'000);
  // Command 4 is never answered; out-of-order cycle 8 is counted.
  recorder.commandSent(4, 4 * kMs);
  recorder.stateReceived(state(8, 1, 1 * kMs, 1 * kMs + 10'000, 2 * kMs + 900'000),
                         4 * kMs + 100'000);

  LatencyRunInfo info;
  info.rate_hz = 1000;
  const LatencyReport report = buildReport(info, recorder);
  EXPECT_EQ(report.counts.sent, 4u);
  EXPECT_EQ(report.counts.answered, 3u);
  EXPECT_EQ(report.counts.lost, 1u);
  EXPECT_EQ(report.counts.superseded, 1u);
  EXPECT_TRUE(report.commands[1].superseded);
  EXPECT_EQ(report.commands[1].cycle, 9u);
  // Command 2 waited 1.95 ms for its answer: late (> 1 ms period); 1 and 3 took 0.95 and 1.45 ms.
  EXPECT_EQ(report.commands[0].roundTrip(), 950'000);
  EXPECT_EQ(report.commands[1].roundTrip(), 1'950'000);
  EXPECT_EQ(report.commands[2].roundTrip(), 1'450'000);
  EXPECT_EQ(report.counts.late, 2u);
  // Command age only for commands answered by their own State; no one-way across hosts.
  EXPECT_EQ(report.command_age.count, 2u);
  EXPECT_EQ(report.command_age.min, 890'000);
  EXPECT_EQ(report.command_age.max, 1'380'000);
  EXPECT_EQ(report.one_way.count, 0u);
  EXPECT_FALSE(report.commands[0].one_way_ns.has_value());
  // cycles 5 6 7 8 9 8: the last is out of order
  EXPECT_EQ(report.states.out_of_order, 1u);
  EXPECT_EQ(report.states.repeated, 0u);
  EXPECT_EQ(report.states.missing_cycles, 0u);
}

TEST(LatencyRecorder, DriftComparesSimulatedWithServerWallTime) {
  LatencyRecorder recorder(Matching::kNewest, true);
  // 1001 States, one per command: 1 ms of simulation per cycle, but the server published them
  // 1.001 ms apart (a loop 0.1 % slow): drift −1 ms over 1.001 s, real-time factor 1/1.001.
  for (std::uint64_t k = 1; k <= 1001; ++k) {
    const std::int64_t publish = static_cast<std::int64_t>(k) * 1'001'000;
    recorder.commandSent(k, publish - 500'000);
    recorder.stateReceived(
        state(k, k, publish - 500'000, publish - 400'000, publish, static_cast<double>(k) * 1e-3),
        publish + 50'000);
  }
  LatencyRunInfo info;
  info.rate_hz = 1000;
  const LatencyReport report = buildReport(info, recorder);
  EXPECT_NEAR(report.simulated_s, 1.000, 1e-12);
  EXPECT_NEAR(report.wall_s, 1.001, 1e-12);
  EXPECT_NEAR(report.drift_s, -0.001, 1e-12);
  EXPECT_NEAR(report.real_time_factor, 1.0 / 1.001, 1e-12);
  EXPECT_EQ(report.states.missing_cycles, 0u);
}

LatencyReport sampleReport() {
  LatencyRecorder recorder(Matching::kExact, true);
  std::mt19937 random(3);
  std::lognormal_distribution<double> round_trip(std::log(80'000.0), 0.4);
  for (std::uint64_t k = 1; k <= 2000; ++k) {
    const std::int64_t sent = static_cast<std::int64_t>(k) * kMs;
    recorder.commandSent(k, sent);
    if (k % 500 == 0) continue;  // 4 lost
    const auto rt = static_cast<std::int64_t>(round_trip(random));
    recorder.stateReceived(state(k, k, sent, sent + rt / 4, sent + rt / 2, k * 1e-3), sent + rt);
  }
  LatencyRunInfo info;
  info.transport = "udp";
  info.server = "127.0.0.1:50051";
  info.client_host = "bench<1>";
  info.model = "iiwa14";
  info.mode = "lockstep";
  info.session_rate_hz = 1000;
  info.session_id = 3;
  info.rate_hz = 1000;
  info.duration_s = 2;
  info.same_host = true;
  return buildReport(info, recorder);
}

TEST(LatencyReport, CsvHasOneRowPerCommandWithTheDocumentedColumns) {
  const LatencyReport report = sampleReport();
  std::ostringstream out;
  writeLatencyCsv(report, out);
  const std::vector<std::string> lines = split(out.str(), '\n');
  ASSERT_EQ(lines.size(), 1 + 2000 + 1u);  // header, rows, and the empty piece after the last \n
  EXPECT_EQ(lines[0],
            "sequence,send_time_ns,receive_time_ns,round_trip_ns,command_age_ns,one_way_ns,cycle,"
            "superseded,lost");
  int lost = 0;
  for (std::size_t row = 1; row <= 2000; ++row) {
    const std::vector<std::string> fields = split(lines[row], ',');
    ASSERT_EQ(fields.size(), 9u) << lines[row];
    const CommandRecord& c = report.commands[row - 1];
    EXPECT_EQ(fields[0], std::to_string(c.sequence));
    EXPECT_EQ(fields[1], std::to_string(c.send_time_ns));
    if (fields[8] == "1") {
      ++lost;
      EXPECT_TRUE(fields[2].empty() && fields[3].empty() && fields[6].empty()) << lines[row];
    } else {
      ASSERT_EQ(fields[8], "0");
      EXPECT_EQ(std::stoll(fields[3]), std::stoll(fields[2]) - std::stoll(fields[1]));
      EXPECT_EQ(fields[6], std::to_string(c.sequence));  // cycle k answers command k here
    }
  }
  EXPECT_EQ(lost, 4);
}

/// Checks that every element opened is closed, in order, and returns the number of tags (no XML
/// library needed for our own output: no comments, CDATA or processing instructions besides the
/// declaration, which the pattern skips).
std::size_t expectBalancedTags(const std::string& svg) {
  // A plain scan rather than std::regex, whose recursive matcher overflows the stack on a large
  // document under AddressSanitizer.
  std::vector<std::string> open;
  std::size_t tags = 0;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) break;
    std::string inside = svg.substr(at + 1, end - at - 1);
    const bool closing = !inside.empty() && inside.front() == '/';
    if (closing) inside.erase(0, 1);
    if (inside.empty() || !std::isalpha(static_cast<unsigned char>(inside.front()))) continue;
    ++tags;
    const bool self_closing = inside.back() == '/';
    const std::string name = inside.substr(0, inside.find_first_of(" \t\n/"));
    if (self_closing) continue;  // <x …/>
    if (!closing) {
      open.push_back(name);
    } else {
      EXPECT_FALSE(open.empty()) << "closing </" << name << "> without an opening tag";
      if (open.empty()) return tags;
      EXPECT_EQ(open.back(), name) << "tags closed out of order";
      open.pop_back();
    }
  }
  EXPECT_TRUE(open.empty()) << "unclosed <" << (open.empty() ? "" : open.back()) << ">";
  // Every '<' in text is escaped: each one left starts a tag or the declaration.
  EXPECT_EQ(static_cast<std::size_t>(std::count(svg.begin(), svg.end(), '<')), tags + 1);
  return tags;
}

TEST(LatencyReport, SvgIsWellFormedAndLabelled) {
  const LatencyReport report = sampleReport();
  std::ostringstream out;
  writeLatencySvg(report, out);
  const std::string svg = out.str();
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_GT(expectBalancedTags(svg), 50u);
  EXPECT_NE(svg.find("bench&lt;1&gt;"), std::string::npos);  // the client host, escaped
  EXPECT_NE(svg.find("round trip [µs] (log scale)"), std::string::npos);
  EXPECT_NE(svg.find("time since the first command [s]"), std::string::npos);
  EXPECT_NE(svg.find(">commands<"), std::string::npos);
  EXPECT_NE(svg.find("UDP, 1000 Hz, iiwa14 (lockstep 1000 Hz)"), std::string::npos);
  EXPECT_NE(svg.find("lost 4"), std::string::npos);
  // the p50 and p99 markers with their values, as the summary states them
  char p50[32], p99[32];
  std::snprintf(p50, sizeof p50, "p50 %.1f µs", report.round_trip.p50 * 1e-3);
  std::snprintf(p99, sizeof p99, "p99 %.0f µs", report.round_trip.p99 * 1e-3);
  // the label formats: 3 significant digits, so one decimal for 10 … 100 µs, none above
  ASSERT_TRUE(report.round_trip.p50 > 10'000 && report.round_trip.p50 < 100'000);  // ≈ 80 µs
  ASSERT_TRUE(report.round_trip.p99 > 100'000);  // e^(2.33·0.4) · 80 µs ≈ 203 µs
  EXPECT_NE(svg.find(p50), std::string::npos) << p50;
  EXPECT_NE(svg.find(p99), std::string::npos) << p99;
}

TEST(LatencyReport, SvgWithoutAnswersSaysSo) {
  LatencyRecorder recorder(Matching::kExact, false);
  recorder.commandSent(1, 1000);
  const LatencyReport report = buildReport(LatencyRunInfo{}, recorder);
  std::ostringstream out;
  writeLatencySvg(report, out);
  expectBalancedTags(out.str());
  EXPECT_NE(out.str().find("no command was answered"), std::string::npos);
}

TEST(LatencyReport, TextAndJsonCarryTheCounts) {
  LatencyReport report = sampleReport();
  report.server_stats.emplace();
  report.server_stats->set_state(v1::SESSION_STATE_RUNNING);
  report.server_stats->mutable_timing()->set_deadline_misses(17);
  report.server_stats->mutable_udp()->set_stale(5);
  report.server_stats->mutable_udp()->set_malformed(2);
  std::ostringstream text;
  writeLatencyText(report, text);
  const std::string t = text.str();
  EXPECT_NE(t.find("sent 2000, answered 1996 (99.80 %), lost 4"), std::string::npos) << t;
  EXPECT_NE(t.find("round trip"), std::string::npos);
  EXPECT_NE(t.find("one way client→server"), std::string::npos);
  EXPECT_NE(t.find("deadline misses 17"), std::string::npos) << t;
  EXPECT_NE(t.find("rejected 7 (malformed 2, stale 5)"), std::string::npos) << t;
  EXPECT_NE(t.find("state RUNNING"), std::string::npos);

  std::ostringstream json;
  writeLatencyJson(report, json);
  const std::string j = json.str();
  EXPECT_NE(j.find("\"commands\": {\"sent\": 2000, \"answered\": 1996, \"lost\": 4"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"deadline_misses\":\"17\""), std::string::npos) << j;  // uint64 as string
  EXPECT_NE(j.find("\"client_host\": \"bench<1>\""), std::string::npos);
  // balanced braces: one document
  EXPECT_EQ(std::count(j.begin(), j.end(), '{'), std::count(j.begin(), j.end(), '}'));
}

}  // namespace
}  // namespace hilsim::client
