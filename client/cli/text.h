// Text helpers of the `hilsim` CLI: number parsing and formatting, JSON strings, column names.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "client/cli/errors.h"
#include "engine/model/model.h"

namespace hilsim::cli {

/// Largest accepted deviation of a quaternion's norm from 1 in any input (CSV rows, --q0); inputs
/// within it are renormalised, inputs beyond it are rejected.
inline constexpr double kQuaternionNormTol = 1e-6;

/// `text` without leading and trailing spaces, tabs and carriage returns.
std::string_view trim(std::string_view text);

/// Parses one decimal floating-point number (optional sign, exponent; surrounding blanks allowed).
/// std::nullopt if `text` is not exactly one number. "nan" and "inf" parse (check with isfinite).
std::optional<double> parseNumber(std::string_view text);

/// Shortest text that reads back to exactly `value` ("0.1", "1e-300", "nan", "inf"): for files
/// and JSON, which other programs read.
std::string formatNumber(double value);

/// `value` to `significant` digits, for people: 2.4440000000000004 → "2.444",
/// 77.97288399999996 → "77.9729", 0.9990000000000008 → "0.999".
std::string readableNumber(double value, int significant = 6);

/// A duration [ns] in the unit that suits it, for people: "850 ns", "12.3 µs", "4.56 ms",
/// "764 s" (three significant digits).
std::string readableDuration(double nanoseconds);

/// Appends formatNumber(value) to `out` without a temporary string.
void appendNumber(std::string& out, double value);

/// `text` as a JSON string literal, quotes included (", \ and control characters escaped).
std::string jsonString(std::string_view text);

/// `value` as a JSON number; non-finite values become null (JSON has no inf or nan).
std::string jsonNumber(double value);

using hilsim::coordinateLabels;  // engine/model/model.h

/// Replaces newlines in `message` by "; " so that every report stays on one line.
std::string oneLine(std::string_view message);

}  // namespace hilsim::cli
