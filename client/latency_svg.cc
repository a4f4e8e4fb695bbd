// The SVG latency report (writeLatencySvg, latency_report.h): a histogram of the round trip on a
// log-scaled time axis with p50 and p99 marked, and the round trip over the run.
//
// Layout: a header band (title and two summary lines), then two panels, each a title row with
// its legend on the right above a plot rectangle; tick labels and axis titles lie outside the
// rectangle. Every axis ends on a tick at or beyond the data, so nothing a plot draws leaves its
// rectangle, and no text is placed inside one.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "client/latency_report.h"
#include "client/latency_report_format.h"

namespace hilsim::client {

using detail::format;
using detail::microsLabel;
using detail::runTitle;
using detail::xmlEscape;

namespace detail {

namespace {

// Relative slack in comparisons of axis values, so that a value that is already round (3000
// computed as 2999.9999999999995) counts as itself.
constexpr double kSlack = 1e-9;

/// 10^k with 10^k ≤ value < 10^(k+1) (value > 0).
double decadeOf(double value) { return std::pow(10.0, std::floor(std::log10(value))); }

}  // namespace

double niceCeiling(double value) {
  if (!(value > 0)) return 1.0;  // no scale to take from zero, a negative or NaN: a unit axis
  // one decade lower too, in case log10 rounded up across a power of ten
  for (double decade = decadeOf(value) / 10;; decade *= 10) {
    for (const double mantissa : {1.0, 2.0, 2.5, 5.0}) {
      if (mantissa * decade >= value * (1 - kSlack)) return mantissa * decade;
    }
  }
}

std::vector<double> countTicks(double max, bool integral) {
  const double top = niceCeiling(integral ? std::max(max, 1.0) : max);
  // 1 → 0.2 steps, 2 → 0.5, 2.5 → 0.5, 5 → 1 (× 10^k): 4 or 5 steps, each itself a nice number
  const double mantissa = top / decadeOf(top * (1 + kSlack));
  double step = top / (std::abs(mantissa - 2.0) < 1e-6 ? 4 : 5);
  if (integral) step = std::max(step, 1.0);  // no fractional counts
  const auto steps = static_cast<int>(std::lround(top / step));
  std::vector<double> ticks;
  for (int k = 0; k <= steps; ++k) ticks.push_back(k * step);
  return ticks;
}

std::vector<std::string> tickLabels(std::span<const double> values) {
  // the digits after the point that the finest value needs, then the same for every label
  int decimals = 0;
  for (const double value : values) {
    int needed = 0;
    for (double scaled = std::abs(value);
         needed < 6 && std::abs(scaled - std::round(scaled)) > 1e-6 * std::max(1.0, scaled);
         scaled *= 10) {
      ++needed;
    }
    decimals = std::max(decimals, needed);
  }
  std::vector<std::string> labels;
  for (const double value : values) {
    // + 0.0 turns a −0 into 0
    labels.push_back(format(("%." + std::to_string(decimals) + "f").c_str(), value + 0.0));
  }
  return labels;
}

}  // namespace detail

namespace {

using detail::countTicks;
using detail::kSlack;
using detail::niceCeiling;
using detail::tickLabels;

// --- page layout [px] ------------------------------------------------------------------------
constexpr double kWidth = 960, kHeight = 770;
constexpr double kLeft = 90, kRight = 930;
constexpr double kFontSize = 12;
constexpr double kTitleBaseline = 28, kSummaryBaselines[] = {50, 70};
// each panel: title row, plot rectangle, tick labels and the axis title below it
constexpr double kHistTitleBaseline = 106, kHistTop = 120, kHistBottom = 390;
constexpr double kSeriesTitleBaseline = 468, kSeriesTop = 482, kSeriesBottom = 712;
// below the plot: the x tick labels' tops clear the lowest y tick label ("0", centred on the axis)
constexpr double kTickLabelBelow = 20, kAxisTitleBelow = 38;
constexpr double kYAxisTitleX = 22;
// Least distance between the labels of neighbouring ticks: a label's height on a vertical axis,
// the width of a label like "10000" and a gap on a horizontal one.
constexpr double kMinVerticalTickGap = 1.5 * kFontSize, kMinHorizontalTickGap = 48;

/// Width of `text` in the page's sans-serif font: code points × 0.6 em, a little more than
/// digits and lower-case letters take, so that what is laid out by it does not touch.
double textWidth(const std::string& text, double font_size = kFontSize) {
  const auto code_points = std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a UTF-8 continuation byte
  });
  return static_cast<double>(code_points) * 0.6 * font_size;
}

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

// --- log axes: values 1, 2, 5 × 10^k ---------------------------------------------------------

/// The values 1, 2, 5 × 10^k of the decades around `value`, ascending.
std::vector<double> roundValuesAround(double value) {
  std::vector<double> values;
  const double below = std::pow(10.0, std::floor(std::log10(value)) - 1);
  for (const double decade : {below, 10 * below, 100 * below}) {
    for (const double mantissa : {1.0, 2.0, 5.0}) values.push_back(mantissa * decade);
  }
  return values;
}

/// The largest 1, 2, 5 × 10^k at or below `value`.
double roundDown(double value) {
  double best = 0;
  for (const double v : roundValuesAround(value)) {
    if (v <= value * (1 + kSlack)) best = v;
  }
  return best;
}

/// The smallest 1, 2, 5 × 10^k at or above `value`.
double roundUp(double value) {
  for (const double v : roundValuesAround(value)) {
    if (v >= value * (1 - kSlack)) return v;
  }
  return 10 * value;  // not reached: the last candidate is ≥ 10 × value's decade
}

/// Ticks of a log axis over [lo, hi] that is `pixels` long: 1, 2, 5 × 10^k where their labels
/// keep `min_gap` apart (the closest pair, 1 and 2, is log10 2 apart), else whole decades, every
/// so many where even those crowd.
std::vector<double> logTicks(double lo, double hi, double pixels, double min_gap) {
  const double pixels_per_decade = pixels / std::log10(hi / lo);
  std::vector<double> ticks;
  if (std::log10(2.0) * pixels_per_decade >= min_gap) {
    for (double decade = std::pow(10.0, std::floor(std::log10(lo)) - 1);
         decade <= hi * (1 + kSlack); decade *= 10) {
      for (const double mantissa : {1.0, 2.0, 5.0}) {
        const double t = mantissa * decade;
        if (t >= lo * (1 - kSlack) && t <= hi * (1 + kSlack)) ticks.push_back(t);
      }
    }
    return ticks;
  }
  const int every = static_cast<int>(std::ceil(min_gap / pixels_per_decade));
  for (int k = static_cast<int>(std::ceil(std::log10(lo) - kSlack));
       k <= static_cast<int>(std::floor(std::log10(hi) + kSlack)); ++k) {
    if (k % every == 0) ticks.push_back(std::pow(10.0, k));
  }
  return ticks;
}

/// The round-trip range [ns] both panels share: from the 1, 2, 5 × 10^k at or below the fastest
/// to the one at or above the slowest, at least a decade (widened on the side with less room),
/// and whole decades when the shorter of its axes could not label 1, 2 and 5 in each.
std::pair<double, double> roundTripRange(double fastest, double slowest) {
  fastest = std::max(fastest, 1.0);
  slowest = std::max(slowest, fastest);
  double lo = roundDown(fastest), hi = roundUp(slowest);
  while (hi / lo < 10 * (1 - kSlack)) {
    if (fastest / lo <= hi / slowest) {
      lo = roundDown(lo * (1 - 1e-6));
    } else {
      hi = roundUp(hi * (1 + 1e-6));
    }
  }
  const double max_decades_at_125 =
      std::log10(2.0) * (kSeriesBottom - kSeriesTop) / kMinVerticalTickGap;
  if (std::log10(hi / lo) > max_decades_at_125) {
    lo = std::pow(10.0, std::floor(std::log10(lo) + kSlack));
    hi = std::pow(10.0, std::ceil(std::log10(hi) - kSlack));
  }
  return {lo, hi};
}

/// Ticks 0, step, …, of the time axis: it ends on the first multiple of the step at or above
/// `max`, the step being 1, 2 or 5 × 10^k and 4 to 8 of them, chosen for the least room past
/// `max` (then for about 6 steps, then the larger step), so that a run of 3.03 s ends at 3.5 s
/// rather than 4 s, and one of 60 s at 60 s rather than at the nice ceiling 100 s.
std::vector<double> timeTicks(double max) {
  double best_step = 0, best_end = std::numeric_limits<double>::infinity();
  int best_count = 0;
  for (int target = 4; target <= 8; ++target) {
    const double step = roundUp(max / target);
    const auto count = static_cast<int>(std::ceil(max / step - kSlack));
    const double end = count * step;
    const bool shorter = end < best_end * (1 - kSlack);
    const bool as_short = end <= best_end * (1 + kSlack);
    if (shorter || (as_short && (std::abs(count - 6) < std::abs(best_count - 6) ||
                                 (std::abs(count - 6) == std::abs(best_count - 6) &&
                                  step > best_step)))) {
      best_step = step;
      best_end = end;
      best_count = count;
    }
  }
  std::vector<double> ticks;
  for (int k = 0; k <= best_count; ++k) ticks.push_back(k * best_step);
  return ticks;
}

// --- SVG elements ----------------------------------------------------------------------------

std::string px(double value) { return format("%.1f", value); }

std::string text(double x, double y, const std::string& content, const std::string& attributes) {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" " + attributes + ">" +
         xmlEscape(content) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attributes) {
  return "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" +
         px(y2) + "\" " + attributes + "/>\n";
}

std::string rect(double x0, double y0, double x1, double y1, const std::string& attributes) {
  return "<rect x=\"" + px(x0) + "\" y=\"" + px(y0) + "\" width=\"" + px(x1 - x0) +
         "\" height=\"" + px(y1 - y0) + "\" " + attributes + "/>\n";
}

/// A horizontal axis' ticks below `bottom`, in a group the tests find by `id`: a mark and its
/// label at x_of(tick) for each tick.
template <typename XOf>
std::string bottomTicks(const std::string& id, const std::vector<double>& ticks,
                        const std::vector<std::string>& labels, XOf x_of, double bottom) {
  std::string s = "<g id=\"" + id + "\">\n";
  for (std::size_t k = 0; k < ticks.size(); ++k) {
    const double x = x_of(ticks[k]);
    s += line(x, bottom, x, bottom + 5, "stroke=\"black\"");
    s += text(x, bottom + kTickLabelBelow, labels[k], "text-anchor=\"middle\"");
  }
  return s + "</g>\n";
}

/// The frame of a plot; the tests find it by its class.
std::string plotArea(double top, double bottom) {
  return rect(kLeft, top, kRight, bottom,
              "class=\"plot-area\" fill=\"white\" stroke=\"#d0d0d0\"");
}

/// One entry of a panel's legend: a short stroke in the style of what it names, and its label.
struct LegendEntry {
  std::string label;
  std::string stroke_attributes;
};

/// The entries in a row in a panel's title row, ending at the plot's right edge.
std::string legend(const std::vector<LegendEntry>& entries, double baseline) {
  constexpr double kSample = 22, kSampleGap = 5, kEntryGap = 18;
  double width = 0;
  for (const LegendEntry& entry : entries) {
    width += (width > 0 ? kEntryGap : 0) + kSample + kSampleGap + textWidth(entry.label);
  }
  std::string s;
  double x = kRight - width;
  for (const LegendEntry& entry : entries) {
    const double middle = baseline - kFontSize * 0.35;  // the height of the middle of digits
    s += line(x, middle, x + kSample, middle, entry.stroke_attributes);
    x += kSample + kSampleGap;
    s += text(x, baseline, entry.label, "");
    x += textWidth(entry.label) + kEntryGap;
  }
  return s;
}

/// A line centred on the page, its font shrunk where it would run wider than the page (the run's
/// title carries host names of any length).
std::string centredLine(double baseline, const std::string& content, double font_size,
                        const std::string& attributes) {
  constexpr double kMargin = 20;
  const double fitting = font_size * (kWidth - 2 * kMargin) / textWidth(content, font_size);
  return text(kWidth / 2, baseline, content,
              "text-anchor=\"middle\" font-size=\"" + px(std::min(font_size, fitting)) + "\"" +
                  (attributes.empty() ? "" : " " + attributes));
}

/// Tick labels [µs] of round-trip ticks [ns].
std::vector<std::string> microsTickLabels(const std::vector<double>& ticks_ns) {
  std::vector<double> micros;
  for (const double t : ticks_ns) micros.push_back(t * 1e-3);
  return tickLabels(micros);
}

}  // namespace

void writeLatencySvg(const LatencyReport& r, std::ostream& out) {
  const Distribution& d = r.round_trip;

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(kWidth) + "\" height=\"" +
       px(kHeight) + "\" viewBox=\"0 0 " + px(kWidth) + " " + px(kHeight) +
       "\" font-family=\"sans-serif\" font-size=\"" + px(kFontSize) + "\">\n";
  s += "<title>hilsim latency: " + xmlEscape(runTitle(r.info)) + "</title>\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + px(kWidth) + "\" height=\"" + px(kHeight) +
       "\" fill=\"white\"/>\n";
  s += centredLine(kTitleBaseline, "hilsim latency — " + runTitle(r.info), 15,
                   "font-weight=\"bold\"");
  const CommandCounts& c = r.counts;
  s += centredLine(
      kSummaryBaselines[0],
      "sent " + std::to_string(c.sent) + ", answered " + std::to_string(c.answered) + ", lost " +
          std::to_string(c.lost) + ", late " + std::to_string(c.late) + " — round trip p50 " +
          microsLabel(d.p50) + " µs, p99 " + microsLabel(d.p99) + " µs, p99.9 " +
          microsLabel(d.p999) + " µs, max " + microsLabel(d.max) + " µs",
      kFontSize, "");
  s += centredLine(
      kSummaryBaselines[1],
      "command age p50 " + microsLabel(r.command_age.p50) + " µs, p99 " +
          microsLabel(r.command_age.p99) + " µs" +
          (r.info.same_host ? ", one way p50 " + microsLabel(r.one_way.p50) + " µs" : "") +
          " — drift " + format("%+.3f", r.drift_s * 1e3) + " ms over " +
          format("%.2f", r.wall_s) + " s, real-time factor " + format("%.4f", r.real_time_factor),
      kFontSize, "");

  if (d.count == 0) {
    s += text(kWidth / 2, (kHistTop + kSeriesBottom) / 2, "no command was answered",
              "text-anchor=\"middle\" font-size=\"16\"");
    s += "</svg>\n";
    out << s;
    return;
  }

  const auto [lo, hi] = roundTripRange(d.min, d.max);
  const double period = r.periodNs();

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
  const std::vector<double> count_ticks = countTicks(static_cast<double>(tallest), true);
  const Axis hx{lo, hi, kLeft, kRight, true};
  const Axis hy{0, count_ticks.back(), kHistBottom, kHistTop, false};
  s += "<g id=\"histogram\">\n";
  s += text(kLeft, kHistTitleBaseline,
            "Round trip distribution (" + std::to_string(d.count) + " answered commands)",
            "font-weight=\"bold\"");
  const auto marker_stroke = [](const char* colour) {
    return "stroke=\"" + std::string(colour) + "\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"";
  };
  const std::string p50_stroke = marker_stroke("#1a8a3a"), p99_stroke = marker_stroke("#d2691e");
  s += legend({{"p50 " + microsLabel(d.p50) + " µs", p50_stroke},
               {"p99 " + microsLabel(d.p99) + " µs", p99_stroke}},
              kHistTitleBaseline);
  s += plotArea(kHistTop, kHistBottom);
  s += "<g id=\"histogram-count-ticks\">\n";
  const std::vector<std::string> count_labels = tickLabels(count_ticks);
  for (std::size_t k = 0; k < count_ticks.size(); ++k) {
    s += line(kLeft, hy(count_ticks[k]), kRight, hy(count_ticks[k]), "stroke=\"#e4e4e4\"");
    s += text(kLeft - 6, hy(count_ticks[k]) + 4, count_labels[k], "text-anchor=\"end\"");
  }
  s += "</g>\n";
  for (int k = 0; k < kBins; ++k) {
    if (bins[k] == 0) continue;
    const double x0 = kLeft + (kRight - kLeft) * k / kBins;
    const double x1 = kLeft + (kRight - kLeft) * (k + 1) / kBins;
    s += rect(x0 + 0.5, hy(static_cast<double>(bins[k])), x1 - 0.5, kHistBottom,
              "class=\"bar\" fill=\"#4a7ab8\"");
  }
  const std::vector<double> round_trip_ticks =
      logTicks(lo, hi, kRight - kLeft, kMinHorizontalTickGap);
  s += bottomTicks("histogram-round-trip-ticks", round_trip_ticks,
                   microsTickLabels(round_trip_ticks), hx, kHistBottom);
  s += line(hx(d.p50), kHistTop, hx(d.p50), kHistBottom, p50_stroke);
  s += line(hx(d.p99), kHistTop, hx(d.p99), kHistBottom, p99_stroke);
  s += line(kLeft, kHistBottom, kRight, kHistBottom, "stroke=\"black\"");
  s += line(kLeft, kHistTop, kLeft, kHistBottom, "stroke=\"black\"");
  s += text((kLeft + kRight) / 2, kHistBottom + kAxisTitleBelow, "round trip [µs] (log scale)",
            "text-anchor=\"middle\"");
  s += text(kYAxisTitleX, (kHistTop + kHistBottom) / 2, "commands",
            "text-anchor=\"middle\" transform=\"rotate(-90 " + px(kYAxisTitleX) + " " +
                px((kHistTop + kHistBottom) / 2) + ")\"");
  s += "</g>\n";

  // --- time series: per pixel column, the range of the round trips sent in it ---
  const std::int64_t t0 = r.commands.front().send_time_ns;
  const double span_s = std::max(
      static_cast<double>(r.commands.back().send_time_ns - t0) * 1e-9, 1e-3);
  const std::vector<double> time_ticks = timeTicks(span_s);
  const Axis tx{0, time_ticks.back(), kLeft, kRight, false};
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
  const bool any_lost = std::ranges::find(column_lost, true) != column_lost.end();
  const bool period_shown = period > lo && period < hi;
  const std::string lost_stroke = "stroke=\"#d62020\" stroke-width=\"1\"";
  const std::string period_stroke = "stroke=\"#b03030\" stroke-dasharray=\"6,4\"";
  s += "<g id=\"time-series\">\n";
  s += text(kLeft, kSeriesTitleBaseline, "Round trip over the run (range per pixel column)",
            "font-weight=\"bold\"");
  std::vector<LegendEntry> series_legend;
  if (any_lost) series_legend.push_back({"lost", lost_stroke});
  if (period_shown) {
    series_legend.push_back({"one period (" + microsLabel(period) + " µs)", period_stroke});
  }
  s += legend(series_legend, kSeriesTitleBaseline);
  s += plotArea(kSeriesTop, kSeriesBottom);
  s += "<g id=\"time-series-round-trip-ticks\">\n";
  const std::vector<double> series_ticks =
      logTicks(lo, hi, kSeriesBottom - kSeriesTop, kMinVerticalTickGap);
  const std::vector<std::string> series_labels = microsTickLabels(series_ticks);
  for (std::size_t k = 0; k < series_ticks.size(); ++k) {
    const double y = ty(series_ticks[k]);
    s += line(kLeft, y, kRight, y, "stroke=\"#e4e4e4\"");
    s += text(kLeft - 6, y + 4, series_labels[k], "text-anchor=\"end\"");
  }
  s += "</g>\n";
  if (period_shown) s += line(kLeft, ty(period), kRight, ty(period), period_stroke);
  std::string path;
  for (int k = 0; k < columns; ++k) {
    if (column_max[k] <= 0.0) continue;
    // a pixel beyond both ends, so that a single value shows as a short dash, but not past the
    // frame
    const double x = kLeft + k + 0.5;
    const double y_low = std::min(ty(column_min[k]) + 1, kSeriesBottom);
    const double y_high = std::max(ty(column_max[k]) - 1, kSeriesTop);
    path.append("M").append(px(x)).append(" ").append(px(y_low));
    path.append("V").append(px(y_high));
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
    s += "<path d=\"" + lost_path + "\" " + lost_stroke + " fill=\"none\"/>\n";
  }
  s += bottomTicks("time-series-time-ticks", time_ticks, tickLabels(time_ticks), tx,
                   kSeriesBottom);
  s += line(kLeft, kSeriesBottom, kRight, kSeriesBottom, "stroke=\"black\"");
  s += line(kLeft, kSeriesTop, kLeft, kSeriesBottom, "stroke=\"black\"");
  s += text((kLeft + kRight) / 2, kSeriesBottom + kAxisTitleBelow,
            "time since the first command [s]", "text-anchor=\"middle\"");
  s += text(kYAxisTitleX, (kSeriesTop + kSeriesBottom) / 2, "round trip [µs] (log scale)",
            "text-anchor=\"middle\" transform=\"rotate(-90 " + px(kYAxisTitleX) + " " +
                px((kSeriesTop + kSeriesBottom) / 2) + ")\"");
  s += "</g>\n";
  s += "</svg>\n";
  out << s;
}

}  // namespace hilsim::client
