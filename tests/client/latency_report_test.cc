// The measurements and reports of `hilsim latency` without any network: exact percentiles of
// known samples, matching States to commands (lockstep and realtime rules, loss, superseded
// commands, another controller's States), downlink gaps, drift, the CSV columns, and an SVG that
// is well-formed, carries its axis labels and summary numbers, keeps its plots inside axes that
// end on round ticks, and draws nothing over its text.
#include "client/latency_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "client/latency_report_format.h"

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

// --- the SVG's geometry -----------------------------------------------------------------------

/// One element of our own SVG output: its attributes and, for <text>, its content unescaped.
struct SvgElement {
  std::map<std::string, std::string> attributes;
  std::string content;

  double number(const std::string& name) const {
    const auto it = attributes.find(name);
    EXPECT_NE(it, attributes.end()) << "no attribute " << name;
    return it == attributes.end() ? 0.0 : std::stod(it->second);
  }
  std::string attribute(const std::string& name) const {
    const auto it = attributes.find(name);
    return it == attributes.end() ? std::string() : it->second;
  }
};

std::string unescapeXml(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size(); ++at) {
    bool replaced = false;
    for (const auto& [entity, character] :
         {std::pair{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}}) {
      if (text.compare(at, std::char_traits<char>::length(entity), entity) == 0) {
        out += character;
        at += std::char_traits<char>::length(entity) - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[at];
  }
  return out;
}

/// Every <`name` …> element of `svg` in document order (our writer puts one space after the
/// name and quotes every attribute value with ").
std::vector<SvgElement> svgElements(const std::string& svg, const std::string& name) {
  std::vector<SvgElement> elements;
  const std::string opening = "<" + name + " ";
  for (std::size_t at = svg.find(opening); at != std::string::npos;
       at = svg.find(opening, at + 1)) {
    const std::size_t end = svg.find('>', at);
    SvgElement element;
    std::size_t cursor = at + opening.size();
    for (std::size_t equals = svg.find("=\"", cursor); equals < end;
         equals = svg.find("=\"", cursor)) {
      const std::size_t key_begin = svg.find_last_of(' ', equals) + 1;
      const std::size_t value_end = svg.find('"', equals + 2);
      element.attributes[svg.substr(key_begin, equals - key_begin)] =
          unescapeXml(svg.substr(equals + 2, value_end - equals - 2));
      cursor = value_end + 1;
    }
    if (name == "text") {
      element.content = unescapeXml(svg.substr(end + 1, svg.find("</text>", end) - end - 1));
    }
    elements.push_back(element);
  }
  return elements;
}

/// The content of <g id="`id`"> (tick groups hold no nested groups).
std::string svgGroup(const std::string& svg, const std::string& id) {
  const std::size_t at = svg.find("<g id=\"" + id + "\"");
  EXPECT_NE(at, std::string::npos) << "no group " << id;
  if (at == std::string::npos) return {};
  return svg.substr(at, svg.find("</g>", at) - at);
}

struct Box {
  double left, top, right, bottom;  // SVG pixels, y grows downward
};

std::ostream& operator<<(std::ostream& out, const Box& b) {
  return out << "[" << b.left << ", " << b.right << "] × [" << b.top << ", " << b.bottom << "]";
}

/// Whether the boxes share more than an edge.
bool overlap(const Box& a, const Box& b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

bool inside(const Box& inner, const Box& outer) {
  constexpr double kRounding = 1e-6;
  return inner.left >= outer.left - kRounding && inner.right <= outer.right + kRounding &&
         inner.top >= outer.top - kRounding && inner.bottom <= outer.bottom + kRounding;
}

Box rectBox(const SvgElement& rect) {
  const double x = rect.number("x"), y = rect.number("y");
  return {x, y, x + rect.number("width"), y + rect.number("height")};
}

/// An estimate of the box a <text> covers, with no font at hand: each code point 0.6 × the font
/// size wide (sans-serif digits and letters take about 0.55), from one font size above the
/// baseline (capitals, ascenders) to a quarter of it below (descenders); placed by text-anchor,
/// then turned by a rotate(angle cx cy) transform.
Box textBox(const SvgElement& text, double default_font_size) {
  const std::string size = text.attribute("font-size");
  const double font_size = size.empty() ? default_font_size : std::stod(size);
  const auto code_points = std::count_if(text.content.begin(), text.content.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  });
  const double width = static_cast<double>(code_points) * 0.6 * font_size;
  const double x = text.number("x"), y = text.number("y");
  const std::string anchor = text.attribute("text-anchor");
  const double left = anchor == "middle" ? x - width / 2 : anchor == "end" ? x - width : x;
  Box box{left, y - font_size, left + width, y + 0.25 * font_size};
  const std::string transform = text.attribute("transform");
  if (transform.empty()) return box;
  double degrees = 0, cx = 0, cy = 0;
  EXPECT_EQ(std::sscanf(transform.c_str(), "rotate(%lf %lf %lf)", &degrees, &cx, &cy), 3)
      << transform;
  const double angle = degrees * std::acos(-1.0) / 180, cos = std::cos(angle),
               sin = std::sin(angle);
  Box turned{1e300, 1e300, -1e300, -1e300};
  for (const double px : {box.left, box.right}) {
    for (const double py : {box.top, box.bottom}) {
      const double tx = cx + (px - cx) * cos - (py - cy) * sin;
      const double ty = cy + (px - cx) * sin + (py - cy) * cos;
      turned = {std::min(turned.left, tx), std::min(turned.top, ty), std::max(turned.right, tx),
                std::max(turned.bottom, ty)};
    }
  }
  return turned;
}

/// Digits after the decimal point of a tick label.
std::size_t decimals(const std::string& label) {
  const std::size_t point = label.find('.');
  return point == std::string::npos ? 0 : label.size() - point - 1;
}

/// The tick labels of one axis, by the id of its group.
std::vector<std::string> tickLabelsOf(const std::string& svg, const std::string& axis) {
  std::vector<std::string> labels;
  for (const SvgElement& text : svgElements(svgGroup(svg, axis), "text")) {
    labels.push_back(text.content);
  }
  return labels;
}

const char* const kTickGroups[] = {"histogram-count-ticks", "histogram-round-trip-ticks",
                                   "time-series-round-trip-ticks", "time-series-time-ticks"};

/// The SVG of `report`; written to $HILSIM_LATENCY_SVG_DIR/`name`.svg as well when that is set,
/// to look at it in a browser.
std::string latencySvg(const LatencyReport& report, const std::string& name) {
  std::ostringstream out;
  writeLatencySvg(report, out);
  if (const char* directory = std::getenv("HILSIM_LATENCY_SVG_DIR")) {
    std::ofstream(std::string(directory) + "/" + name + ".svg") << out.str();
  }
  return out.str();
}

/// What every latency SVG must keep to: (a) no histogram bar rises above the top tick of the
/// count axis, (b) the bars lie inside the histogram's plot rectangle, (c) no bar or plot
/// rectangle covers any text (nor does text cover text, or leave the page), and (d) the tick
/// labels of each axis share one number of decimals.
void expectReadableSvg(const std::string& svg) {
  expectBalancedTags(svg);
  const std::vector<SvgElement> root = svgElements(svg, "svg");
  ASSERT_EQ(root.size(), 1u);
  const Box page{0, 0, root[0].number("width"), root[0].number("height")};
  const double font_size = root[0].number("font-size");

  std::vector<Box> plots, bars;
  for (const SvgElement& rect : svgElements(svg, "rect")) {
    if (rect.attribute("class") == "plot-area") plots.push_back(rectBox(rect));
    if (rect.attribute("class") == "bar") bars.push_back(rectBox(rect));
  }
  ASSERT_EQ(plots.size(), 2u);  // the histogram's first, then the time series'
  ASSERT_FALSE(bars.empty());
  const Box& histogram = plots[0];

  // (a) the top tick line of the count axis (the smallest y) is at or above every bar's top
  double top_tick_y = 1e300;
  for (const SvgElement& tick : svgElements(svgGroup(svg, "histogram-count-ticks"), "line")) {
    EXPECT_EQ(tick.number("y1"), tick.number("y2"));  // horizontal
    top_tick_y = std::min(top_tick_y, tick.number("y1"));
  }
  EXPECT_NEAR(top_tick_y, histogram.top, 1e-9) << "the count axis ends on its top tick";
  for (const Box& bar : bars) {
    EXPECT_GE(bar.top, top_tick_y) << "bar " << bar << " rises above the top tick";
    // (b)
    EXPECT_TRUE(inside(bar, histogram)) << "bar " << bar << " leaves the plot " << histogram;
  }
  EXPECT_FALSE(overlap(plots[0], plots[1]));

  // (c)
  std::vector<std::pair<std::string, Box>> texts;
  for (const SvgElement& text : svgElements(svg, "text")) {
    texts.emplace_back(text.content, textBox(text, font_size));
  }
  ASSERT_GT(texts.size(), 10u);
  for (const auto& [content, box] : texts) {
    EXPECT_TRUE(inside(box, page)) << "\"" << content << "\" " << box << " leaves the page";
    for (const Box& plot : plots) {
      EXPECT_FALSE(overlap(plot, box)) << "plot " << plot << " covers \"" << content << "\"";
    }
    for (const Box& bar : bars) {
      EXPECT_FALSE(overlap(bar, box)) << "bar " << bar << " covers \"" << content << "\"";
    }
  }
  for (std::size_t i = 0; i < texts.size(); ++i) {
    for (std::size_t j = i + 1; j < texts.size(); ++j) {
      EXPECT_FALSE(overlap(texts[i].second, texts[j].second))
          << "\"" << texts[i].first << "\" " << texts[i].second << " and \"" << texts[j].first
          << "\" " << texts[j].second;
    }
  }

  // (d)
  for (const char* axis : kTickGroups) {
    const std::vector<std::string> labels = tickLabelsOf(svg, axis);
    ASSERT_GE(labels.size(), 2u) << axis;
    for (const std::string& label : labels) {
      EXPECT_EQ(decimals(label), decimals(labels.front()))
          << axis << ": \"" << label << "\" beside \"" << labels.front() << "\"";
    }
  }
}

/// A report whose round trips are `round_trips_ns` (shuffled over the run, one command per
/// millisecond; negative: lost).
LatencyReport reportOf(std::vector<std::int64_t> round_trips_ns) {
  std::shuffle(round_trips_ns.begin(), round_trips_ns.end(), std::mt19937(11));
  LatencyRecorder recorder(Matching::kExact, true);
  for (std::uint64_t k = 1; k <= round_trips_ns.size(); ++k) {
    const std::int64_t sent = static_cast<std::int64_t>(k) * kMs;
    const std::int64_t rt = round_trips_ns[k - 1];
    recorder.commandSent(k, sent);
    if (rt < 0) continue;
    recorder.stateReceived(state(k, k, sent, sent + rt / 4, sent + rt / 2, k * 1e-3), sent + rt);
  }
  LatencyRunInfo info;
  info.transport = "udp";
  info.server = "127.0.0.1:50051";
  info.model = "iiwa14";
  info.mode = "lockstep";
  info.session_rate_hz = 1000;
  info.rate_hz = 1000;
  info.same_host = true;
  return buildReport(info, recorder);
}

/// `count` round trips spread evenly over [from, to] µs on a log scale.
std::vector<std::int64_t> logSpread(double from_us, double to_us, int count) {
  std::vector<std::int64_t> values;
  for (int k = 0; k < count; ++k) {
    values.push_back(static_cast<std::int64_t>(
        1e3 * from_us * std::pow(to_us / from_us, static_cast<double>(k) / (count - 1))));
  }
  return values;
}

TEST(LatencySvgAxes, NiceCeilingIsTheSmallestOneTwoTwoAndAHalfOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(detail::niceCeiling(3850), 5000);
  EXPECT_EQ(detail::niceCeiling(3000), 5000);
  EXPECT_EQ(detail::niceCeiling(2500), 2500);
  EXPECT_EQ(detail::niceCeiling(2501), 5000);
  EXPECT_EQ(detail::niceCeiling(2000), 2000);
  EXPECT_EQ(detail::niceCeiling(101), 200);
  EXPECT_EQ(detail::niceCeiling(1000), 1000);
  EXPECT_EQ(detail::niceCeiling(1), 1);
  EXPECT_DOUBLE_EQ(detail::niceCeiling(0.7), 1);
  EXPECT_DOUBLE_EQ(detail::niceCeiling(0.0013), 0.002);
  EXPECT_DOUBLE_EQ(detail::niceCeiling(0.3), 0.5);
  EXPECT_EQ(detail::niceCeiling(0), 1);  // no scale to take: a unit axis
}

TEST(LatencySvgAxes, CountTicksRunInEvenNiceStepsFromZeroToTheNiceCeiling) {
  using Ticks = std::vector<double>;
  EXPECT_EQ(detail::countTicks(3850, true), (Ticks{0, 1000, 2000, 3000, 4000, 5000}));
  EXPECT_EQ(detail::countTicks(1200, true), (Ticks{0, 500, 1000, 1500, 2000}));
  EXPECT_EQ(detail::countTicks(24, true), (Ticks{0, 5, 10, 15, 20, 25}));
  EXPECT_EQ(detail::countTicks(100, true), (Ticks{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(detail::countTicks(3, true), (Ticks{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(detail::countTicks(2, true), (Ticks{0, 1, 2}));  // no half commands
  EXPECT_EQ(detail::countTicks(1, true), (Ticks{0, 1}));
  const Ticks fractional = detail::countTicks(0.7, false);
  ASSERT_EQ(fractional.size(), 6u);
  for (std::size_t k = 0; k < fractional.size(); ++k) EXPECT_DOUBLE_EQ(fractional[k], 0.2 * k);
}

TEST(LatencySvgAxes, TickLabelsOfOneAxisShareTheirDecimals) {
  using Labels = std::vector<std::string>;
  EXPECT_EQ(detail::tickLabels(std::vector<double>{20, 50, 100, 200, 500}),
            (Labels{"20", "50", "100", "200", "500"}));
  EXPECT_EQ(detail::tickLabels(std::vector<double>{0.5, 1, 2, 5, 10}),
            (Labels{"0.5", "1.0", "2.0", "5.0", "10.0"}));
  EXPECT_EQ(detail::tickLabels(std::vector<double>{0, 0.25, 0.5, 0.75}),
            (Labels{"0.00", "0.25", "0.50", "0.75"}));
  // µs from ns, with the rounding that brings
  EXPECT_EQ(detail::tickLabels(std::vector<double>{50'000 * 1e-3, 100'000 * 1e-3, 0.3 * 3}),
            (Labels{"50.0", "100.0", "0.9"}));
}

TEST(LatencyReport, SvgHistogramStaysBelowItsTopTickAndClearOfText) {
  // 3850 commands at 60 µs make the tallest bin (the rest spread over 100 … 1000 µs, a few dozen
  // a bin); a count axis ending on the last tick below it (3000) let that bar run over the
  // summary text.
  std::vector<std::int64_t> round_trips(3850, 60'000);
  const std::vector<std::int64_t> spread = logSpread(100, 999, 2000);
  round_trips.insert(round_trips.end(), spread.begin(), spread.end());
  const std::string svg = latencySvg(reportOf(round_trips), "tallest_bin_3850");
  expectReadableSvg(svg);
  EXPECT_EQ(tickLabelsOf(svg, "histogram-count-ticks"),
            (std::vector<std::string>{"0", "1000", "2000", "3000", "4000", "5000"}));
  EXPECT_EQ(tickLabelsOf(svg, "histogram-round-trip-ticks"),
            (std::vector<std::string>{"50", "100", "200", "500", "1000"}));
  EXPECT_EQ(tickLabelsOf(svg, "time-series-time-ticks"),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"}));  // 5.849 s of commands
}

TEST(LatencyReport, SvgOfTypicalShortAndWideRunsIsReadable) {
  {
    SCOPED_TRACE("lognormal round trips around 80 µs");
    const std::string svg = latencySvg(sampleReport(), "lognormal");
    expectReadableSvg(svg);
    // the axis: "20.0", "50.0" beside "100", "200"
    const std::vector<std::string> labels = tickLabelsOf(svg, "histogram-round-trip-ticks");
    EXPECT_NE(std::find(labels.begin(), labels.end(), "50"), labels.end());
    EXPECT_NE(std::find(labels.begin(), labels.end(), "100"), labels.end());
  }
  {
    SCOPED_TRACE("sub-microsecond to 9 µs, few commands");
    const std::string svg = latencySvg(reportOf(logSpread(0.6, 9, 40)), "fast_few");
    expectReadableSvg(svg);
    EXPECT_EQ(tickLabelsOf(svg, "histogram-round-trip-ticks"),
              (std::vector<std::string>{"0.5", "1.0", "2.0", "5.0", "10.0"}));
  }
  {
    SCOPED_TRACE("2 µs to 50 ms with lost commands");
    std::vector<std::int64_t> round_trips = logSpread(2, 50'000, 3000);
    round_trips.insert(round_trips.end(), 30, -1);
    expectReadableSvg(latencySvg(reportOf(round_trips), "wide_lossy"));
  }
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
