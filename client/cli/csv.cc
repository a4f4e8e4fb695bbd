#include "client/cli/csv.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "client/cli/text.h"

namespace hilsim::cli {
namespace {

std::string errnoText() { return std::strerror(errno); }

std::string readWholeFile(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) throw CliError("cannot open '" + path + "': " + errnoText());
  std::string text;
  char buffer[1 << 16];
  while (true) {
    const std::size_t n = std::fread(buffer, 1, sizeof(buffer), file);
    text.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  const bool failed = std::ferror(file) != 0;
  const std::string reason = failed ? errnoText() : std::string();
  std::fclose(file);
  if (failed) throw CliError("cannot read '" + path + "': " + reason);
  return text;
}

std::size_t countFields(std::string_view line) {
  std::size_t n = 1;
  for (const char c : line) n += c == ',' ? 1 : 0;
  return n;
}

std::string quoted(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string shown(text.substr(0, kMax));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20) c = '?';
  }
  if (text.size() > kMax) shown += "...";
  return "'" + shown + "'";
}

}  // namespace

NumericTable readNumericCsv(const std::string& path, const std::vector<std::string>& labels) {
  const std::string text = readWholeFile(path);
  const std::size_t expected = labels.size();
  NumericTable table;
  table.columns = static_cast<int>(expected);
  bool header_seen = false;
  int line_number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(line_number) + ": ";
    if (line.find('\0') != std::string_view::npos) throw CliError(where + "binary data (NUL byte)");
    const std::size_t fields = countFields(line);
    if (!header_seen) {
      header_seen = true;
      if (fields != expected) {
        throw CliError(where + "header has " + std::to_string(fields) + " columns, expected " +
                       std::to_string(expected));
      }
      continue;
    }
    if (fields != expected) {
      throw CliError(where + "row has " + std::to_string(fields) + " columns, expected " +
                     std::to_string(expected));
    }
    std::size_t field_start = 0;
    for (std::size_t c = 0; c < expected; ++c) {
      std::size_t field_end = line.find(',', field_start);
      if (field_end == std::string_view::npos) field_end = line.size();
      const std::string_view field = line.substr(field_start, field_end - field_start);
      field_start = field_end + 1;
      const std::string column = "column " + std::to_string(c + 1) + " (" + labels[c] + ")";
      const std::optional<double> value = parseNumber(field);
      if (!value) {
        if (trim(field).empty()) throw CliError(where + column + " is empty");
        throw CliError(where + column + " is not a number: " + quoted(trim(field)));
      }
      if (!std::isfinite(*value)) {
        throw CliError(where + column + " is not finite: " + quoted(trim(field)));
      }
      table.values.push_back(*value);
    }
    table.line_numbers.push_back(line_number);
  }
  if (!header_seen) throw CliError(path + ": empty file, expected a header row");
  return table;
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    throw CliError("cannot open '" + path + "' for writing: " + errnoText());
  }
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void OutputFile::write(const std::string& text) {
  if (file_ == nullptr) throw CliError("cannot write '" + path_ + "': file already closed");
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
    throw CliError("cannot write '" + path_ + "': " + errnoText());
  }
}

void OutputFile::close() {
  if (file_ == nullptr) return;
  const bool flushed = std::fflush(file_) == 0 && std::ferror(file_) == 0;
  const std::string reason = flushed ? std::string() : errnoText();
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed) throw CliError("cannot write '" + path_ + "': " + reason);
  if (!closed) throw CliError("cannot write '" + path_ + "': " + errnoText());
}

void checkWritable(const std::string& path) {
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  std::FILE* file = std::fopen(path.c_str(), "ab");  // appends nothing: the file stays as it is
  if (file == nullptr) throw CliError("cannot open '" + path + "' for writing: " + errnoText());
  std::fclose(file);
  if (!existed) std::filesystem::remove(path, ec);
}

void appendCsvRow(std::string& out, const double* values, int count) {
  for (int i = 0; i < count; ++i) {
    if (i > 0) out.push_back(',');
    appendNumber(out, values[i]);
  }
  out.push_back('\n');
}

void appendCsvHeader(std::string& out, const std::string& prefix,
                     const std::vector<std::string>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += prefix;
    out += labels[i];
  }
  out.push_back('\n');
}

}  // namespace hilsim::cli
