#include "client/cli/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace hilsim::cli {

std::string_view trim(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r";
  const auto first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(kBlank);
  return text.substr(first, last - first + 1);
}

std::optional<double> parseNumber(std::string_view text) {
  text = trim(text);
  // from_chars takes no leading '+'; accept one, but not "+-1" or "+ 1"
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  }
  if (text.empty()) return std::nullopt;
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  // out-of-range values (1e999) are reported as not-a-number rather than silently clamped
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

void appendNumber(std::string& out, double value) {
  char buffer[32];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec == std::errc()) {
    out.append(buffer, ptr);
  } else {
    // cannot happen for a double with a 32-byte buffer; keep a readable fallback all the same
    const int n = std::snprintf(buffer, sizeof(buffer), "%.17g", value);
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

std::string formatNumber(double value) {
  std::string out;
  appendNumber(out, value);
  return out;
}

std::string readableNumber(double value, int significant) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*g", significant, value);
  return buffer;
}

std::string readableDuration(double nanoseconds) {
  const double magnitude = std::abs(nanoseconds);
  const char* unit = "ns";
  double scaled = nanoseconds;
  if (magnitude >= 1e9) {
    scaled *= 1e-9;
    unit = "s";
  } else if (magnitude >= 1e6) {
    scaled *= 1e-6;
    unit = "ms";
  } else if (magnitude >= 1e3) {
    scaled *= 1e-3;
    unit = "µs";
  }
  // three significant digits, but never an exponent ("764 s", not "7.64e+02 s")
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f %s",
                std::abs(scaled) >= 100.0 ? 0 : std::abs(scaled) >= 10.0 ? 1 : 2, scaled, unit);
  return buffer;
}

std::string jsonString(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out.push_back(ch);  // UTF-8 passes through unchanged
        }
    }
  }
  out.push_back('"');
  return out;
}

std::string jsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return formatNumber(value);
}

std::string oneLine(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (std::size_t i = 0; i < message.size(); ++i) {
    const char ch = message[i];
    if (ch == '\r') continue;
    if (ch == '\n') {
      if (i + 1 < message.size()) out += "; ";
      continue;
    }
    out.push_back(ch);
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

}  // namespace hilsim::cli
