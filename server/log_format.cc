#include "server/log_format.h"

#include <cstdio>

#include <spdlog/pattern_formatter.h>

namespace hilsim::server {
namespace {

void appendEscaped(std::string_view text, bool json, spdlog::memory_buf_t& out) {
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    switch (ch) {
      case '\\': out.append(std::string_view("\\\\")); continue;
      case '\n': out.append(std::string_view("\\n")); continue;
      case '\t': out.append(std::string_view("\\t")); continue;
      case '"':
        if (json) {
          out.append(std::string_view("\\\""));
          continue;
        }
        break;
      default: break;
    }
    if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, json ? "\\u%04x" : "\\x%02x", byte);
      out.append(std::string_view(escaped));
    } else {
      out.push_back(ch);
    }
  }
}

// %j: the message as the inside of a JSON string; %E: the message with control characters escaped
class EscapedMessage final : public spdlog::custom_flag_formatter {
 public:
  explicit EscapedMessage(bool json) : json_(json) {}
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    appendEscaped(std::string_view(message.payload.data(), message.payload.size()), json_, out);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessage>(json_);
  }

 private:
  bool json_;
};

}  // namespace

std::string escapeLogText(std::string_view text) {
  spdlog::memory_buf_t buffer;
  appendEscaped(text, false, buffer);
  return std::string(buffer.data(), buffer.size());
}

std::unique_ptr<spdlog::formatter> makeLogFormatter(const std::string& format) {
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  if (format == "json") {
    formatter->add_flag<EscapedMessage>('j', true).set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%f%z","level":"%l","thread":%t,"message":"%j"})");
  } else {
    formatter->add_flag<EscapedMessage>('E', false).set_pattern(
        "%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%t] %E");
  }
  return formatter;
}

}  // namespace hilsim::server
