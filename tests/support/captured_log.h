// Captures what spdlog's default logger writes, for tests that check log lines: a ring-buffer sink
// added to the default logger for the lifetime of the object.
#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace hilsim::test {

class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    sink_->set_pattern("%l %v");  // "warning <message>"
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::find(sinks.begin(), sinks.end(), sink_));
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  /// Every captured line as "<level> <message>".
  std::vector<std::string> lines() const { return sink_->last_formatted(); }

  /// The messages logged as warnings.
  std::vector<std::string> warnings() const {
    std::vector<std::string> messages;
    for (const auto& record : sink_->last_raw()) {
      if (record.level == spdlog::level::warn) {
        messages.emplace_back(record.payload.begin(), record.payload.end());
      }
    }
    return messages;
  }

  bool contains(const std::string& text) const {
    const std::vector<std::string> all = lines();
    return std::any_of(all.begin(), all.end(),
                       [&](const std::string& line) { return line.find(text) != std::string::npos; });
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace hilsim::test
