// The SVG latency report (writeLatencySvg, latency_report.h): a histogram of the round trip on a
// log-scaled time axis with p50 and p99 marked, and the round trip over the run.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "client/latency_report.h"
#include "client/latency_report_format.h"

namespace hilsim::client {

using detail::format;
using detail::microsLabel;
using detail::runTitle;
using detail::xmlEscape;

namespace {

/// A plot area in SVG pixels with a log-scaled or linear axis mapping.
struct Axis {
  double lo, hi;        // data range
  double from, to;      // pixel range
  bool log;
  double operator()(double value) const {
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi;
    const double x = log ? std::log10(std::max(value, lo)) : value;
    return from + (to - from) * (x - a) / (b - a);
  }
};

/// Ticks 1, 2, 5 × 10^k within [lo, hi] (log axes).
std::vector<double> logTicks(double lo, double hi) {
  std::vector<double> ticks;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi; decade *= 10) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double t = m * decade;
      if (t >= lo && t <= hi) ticks.push_back(t);
    }
  }
  return ticks;
}

/// About `count` round ticks (1, 2, 5 × 10^k steps) from 0 to hi.
std::vector<double> linearTicks(double hi, int count) {
  const double raw = hi / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = 0; t <= hi * (1 + 1e-9); t += step) ticks.push_back(t);
  return ticks;
}

std::string px(double value) { return format("%.1f", value); }

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" " + attributes + ">" +
         xmlEscape(content) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" +
         px(y2) + "\" " + attributes + "/>\n";
}

}  // namespace

void writeLatencySvg(const LatencyReport& r, std::ostream& out) {
  constexpr double kWidth = 960, kHeight = 760;
  constexpr double kLeft = 80, kRight = 930;
  constexpr double kHistTop = 120, kHistBottom = 390;
  constexpr double kSeriesTop = 470, kSeriesBottom = 700;
  const Distribution& d = r.round_trip;

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" +
       px(kHeight) + "\" viewBox=\"0 0 " + px(kWidth) + " " + px(kHeight) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<title>hilsim latency: " + xmlEscape(runTitle(r.info)) + "</title>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + px(kWidth) + "\" height=\"" + px(kHeight) +
       "\" fill=\"white\"/>\n";
  s += text(kWidth / 2, 28, "hilsim latency — " + runTitle(r.info),
            "text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\"");
  const CommandCounts& c = r.counts;
  s += text(kWidth / 2, 50,
            "sent " + std::to_string(c.sent) + ", answered " + std::to_string(c.answered) +
                ", lost " + std::to_string(c.lost) + ", late " + std::to_string(c.late) +
                " — round trip p50 " + microsLabel(d.p50) + " µs, p99 " + microsLabel(d.p99) +
                " µs, p99.9 " + microsLabel(d.p999) + " µs, max " + microsLabel(d.max) + " µs",
            "text-anchor=\"middle\"");
  s += text(kWidth / 2, 70,
            "command age p50 " + microsLabel(r.command_age.p50) + " µs, p99 " +
                microsLabel(r.command_age.p99) + " µs" +
                (r.info.same_host ? ", one way p50 " + microsLabel(r.one_way.p50) + " µs" : "") +
                " — drift " + format("%+.3f", r.drift_s * 1e3) + " ms over " +
                format("%.2f", r.wall_s) + " s, real-time factor " +
                format("%.4f", r.real_time_factor),
            "text-anchor=\"middle\"");

  if (d.count == 0) {
    s += text(kWidth / 2, (kHistTop + kSeriesBottom) / 2, "no command was answered",
              "text-anchor=\"middle\" font-size=\"16\"");
    s += "</svg>\n";
    out << s;
    return;
  }

  // Shared log-scaled time range of both panels, padded so that min and max sit inside.
  double lo = std::max(d.min, 1.0) / 1.25, hi = std::max(d.max, 1.0) * 1.25;
  const double period = r.periodNs();
  if (hi / lo < 10) {  // at least one decade, centred on the data
    const double middle = std::sqrt(lo * hi);
    lo = middle / std::sqrt(10.0);
    hi = middle * std::sqrt(10.0);
  }

  // --- histogram: 60 log-spaced bins ---
  constexpr int kBins = 60;
  std::vector<std::uint64_t> bins(kBins, 0);
  const double log_lo = std::log10(lo), log_hi = std::log10(hi);
  for (const CommandRecord& record : r.commands) {
    if (!record.answered()) continue;
    const double x = std::log10(std::max(static_cast<double>(record.roundTrip()), lo));
    const int k = std::clamp(static_cast<int>((x - log_lo) / (log_hi - log_lo) * kBins), 0,
                             kBins - 1);
    ++bins[k];
  }
  const std::uint64_t tallest = *std::max_element(bins.begin(), bins.end());
  const std::vector<double> count_ticks = linearTicks(static_cast<double>(tallest), 5);
  const double count_top = std::max(count_ticks.back(), 1.0);
  const Axis hx{lo, hi, kLeft, kRight, true};
  const Axis hy{0, count_top, kHistBottom, kHistTop, false};
  s += "<g id=\"histogram\">\n";
  s += text(kLeft, kHistTop - 14, "Round trip distribution (" + std::to_string(d.count) +
                                      " answered commands)", "font-weight=\"bold\"");
  for (const double t : count_ticks) {
    s += line(kLeft, hy(t), kRight, hy(t), "stroke=\"#e4e4e4\"");
    s += text(kLeft - 6, hy(t) + 4, format("%.0f", t), "text-anchor=\"end\"");
  }
  for (int k = 0; k < kBins; ++k) {
    if (bins[k] == 0) continue;
    const double x0 = kLeft + (kRight - kLeft) * k / kBins;
    const double x1 = kLeft + (kRight - kLeft) * (k + 1) / kBins;
    const double y = hy(static_cast<double>(bins[k]));
    s += "<rect x=\"" + px(x0 + 0.5) + "\" y=\"" + px(y) + "\" width=\"" + px(x1 - x0 - 1) +
         "\" height=\"" + px(kHistBottom - y) + "\" fill=\"#4a7ab8\"/>\n";
  }
  for (const double t : logTicks(lo, hi)) {
    s += line(hx(t), kHistBottom, hx(t), kHistBottom + 5, "stroke=\"black\"");
    s += text(hx(t), kHistBottom + 18, microsLabel(t), "text-anchor=\"middle\"");
  }
  for (const auto& [label, value, colour] :
       {std::tuple<const char*, double, const char*>{"p50", d.p50, "#1a8a3a"},
        std::tuple<const char*, double, const char*>{"p99", d.p99, "#d2691e"}}) {
    s += line(hx(value), kHistTop, hx(value), kHistBottom,
              "stroke=\"" + std::string(colour) +
                  "\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"");
    s += text(hx(value) + 4, kHistTop + (label[1] == '5' ? 12 : 26),
              std::string(label) + " " + microsLabel(value) + " µs",
              "fill=\"" + std::string(colour) + "\"");
  }
  s += line(kLeft, kHistBottom, kRight, kHistBottom, "stroke=\"black\"");
  s += line(kLeft, kHistTop, kLeft, kHistBottom, "stroke=\"black\"");
  s += text((kLeft + kRight) / 2, kHistBottom + 36, "round trip [µs] (log scale)",
            "text-anchor=\"middle\"");
  s += text(20, (kHistTop + kHistBottom) / 2, "commands",
            "text-anchor=\"middle\" transform=\"rotate(-90 20 " +
                px((kHistTop + kHistBottom) / 2) + ")\"");
  s += "</g>\n";

  // --- time series: per pixel column, the range of the round trips sent in it ---
  const std::int64_t t0 = r.commands.front().send_time_ns;
  const double span_s = std::max(
      static_cast<double>(r.commands.back().send_time_ns - t0) * 1e-9, 1e-3);
  const std::vector<double> time_ticks = linearTicks(span_s, 8);
  const Axis tx{0, std::max(time_ticks.back(), span_s), kLeft, kRight, false};
  const Axis ty{lo, hi, kSeriesBottom, kSeriesTop, true};
  const int columns = static_cast<int>(kRight - kLeft);
  std::vector<double> column_min(columns, std::numeric_limits<double>::infinity());
  std::vector<double> column_max(columns, 0.0);
  std::vector<bool> column_lost(columns, false);
  for (const CommandRecord& record : r.commands) {
    const double t = static_cast<double>(record.send_time_ns - t0) * 1e-9;
    const int k = std::clamp(static_cast<int>(tx(t) - kLeft), 0, columns - 1);
    if (!record.answered()) {
      column_lost[k] = true;
      continue;
    }
    const double value = static_cast<double>(record.roundTrip());
    column_min[k] = std::min(column_min[k], value);
    column_max[k] = std::max(column_max[k], value);
  }
  s += "<g id=\"time-series\">\n";
  s += text(kLeft, kSeriesTop - 14, "Round trip over the run (range per pixel column; red: lost)",
            "font-weight=\"bold\"");
  for (const double t : logTicks(lo, hi)) {
    s += line(kLeft, ty(t), kRight, ty(t), "stroke=\"#e4e4e4\"");
    s += text(kLeft - 6, ty(t) + 4, microsLabel(t), "text-anchor=\"end\"");
  }
  if (period > lo && period < hi) {
    s += line(kLeft, ty(period), kRight, ty(period),
              "stroke=\"#b03030\" stroke-dasharray=\"6,4\"");
    s += text(kRight - 4, ty(period) - 4, "one period (" + microsLabel(period) + " µs)",
              "text-anchor=\"end\" fill=\"#b03030\"");
  }
  std::string path;
  for (int k = 0; k < columns; ++k) {
    if (column_max[k] <= 0.0) continue;
    const double x = kLeft + k + 0.5;
    const double y_low = ty(column_min[k]), y_high = ty(column_max[k]);
    path.append("M").append(px(x)).append(" ").append(px(y_low + 0.5));
    path.append("V").append(px(std::min(y_high, y_low) - 0.5));
  }
  s += "<path d=\"" + path + "\" stroke=\"#4a7ab8\" stroke-width=\"1\" fill=\"none\"/>\n";
  std::string lost_path;
  for (int k = 0; k < columns; ++k) {
    if (column_lost[k]) {
      lost_path.append("M").append(px(kLeft + k + 0.5)).append(" ").append(px(kSeriesBottom));
      lost_path.append("V").append(px(kSeriesBottom - 8));
    }
  }
  if (!lost_path.empty()) {
    s += "<path d=\"" + lost_path + "\" stroke=\"#d62020\" stroke-width=\"1\" fill=\"none\"/>\n";
  }
  for (const double t : time_ticks) {
    s += line(tx(t), kSeriesBottom, tx(t), kSeriesBottom + 5, "stroke=\"black\"");
    s += text(tx(t), kSeriesBottom + 18, format("%g", t), "text-anchor=\"middle\"");
  }
  s += line(kLeft, kSeriesBottom, kRight, kSeriesBottom, "stroke=\"black\"");
  s += line(kLeft, kSeriesTop, kLeft, kSeriesBottom, "stroke=\"black\"");
  s += text((kLeft + kRight) / 2, kSeriesBottom + 36, "time since the first command [s]",
            "text-anchor=\"middle\"");
  s += text(20, (kSeriesTop + kSeriesBottom) / 2, "round trip [µs] (log scale)",
            "text-anchor=\"middle\" transform=\"rotate(-90 20 " +
                px((kSeriesTop + kSeriesBottom) / 2) + ")\"");
  s += "</g>\n";
  s += "</svg>\n";
  out << s;
}

}  // namespace hilsim::client
