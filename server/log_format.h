// The server's log lines: text or JSON, with every message's control characters escaped, so that
// a string a client chose (a session name, a model text's link name, a URDF error) can neither
// forge a log line nor drive the reader's terminal (docs/SERVER.md, "Logs").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace hilsim::server {

/// `text` as one log line may hold it: a backslash becomes "\\", a line feed "\n", a tab "\t",
/// any other control character (below 0x20, and DEL) "\xNN"; everything else is kept.
std::string escapeLogText(std::string_view text);

/// The formatter of log.format `text` ("2026-01-01 12:00:00.000 info  [tid] message") or `json`
/// (one JSON object per line, the message a JSON string).
std::unique_ptr<spdlog::formatter> makeLogFormatter(const std::string& format);

}  // namespace hilsim::server
