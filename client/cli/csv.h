// Numeric CSV files of the `hilsim` CLI: one header row, then rows of decimal numbers separated by
// commas. Every problem is reported as a CliError "<file>:<line>: <what>".
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace hilsim::cli {

/// The data rows of a numeric CSV file, row-major.
struct NumericTable {
  int columns = 0;
  std::vector<double> values;     ///< rows × columns
  std::vector<int> line_numbers;  ///< 1-based line of each row in the file, for error messages
  int rows() const { return static_cast<int>(line_numbers.size()); }
  const double* row(int r) const { return values.data() + static_cast<std::size_t>(r) * columns; }
};

/// Reads `path`: the first non-blank line is the header and must have `labels.size()` columns (its
/// names are not checked); every following non-blank line must hold exactly that many finite
/// numbers. `labels` name the columns in error messages. Blank lines are skipped; CRLF line ends
/// and blanks around fields are accepted. Throws CliError naming the file and line.
NumericTable readNumericCsv(const std::string& path, const std::vector<std::string>& labels);

/// A file opened for writing with C stdio (so failures carry errno). Throws CliError when the file
/// cannot be opened, written or closed; the message names the file and the reason.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const std::string& text);
  /// Flushes and closes; throws on any write error so far (disk full, ...).
  void close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

/// Throws CliError (exit code 1) when `path` cannot be opened for writing; leaves an existing
/// file as it is and creates none. For checks before a long run whose output goes there.
void checkWritable(const std::string& path);

/// Appends one CSV line (values separated by commas, '\n' at the end) to `out`.
void appendCsvRow(std::string& out, const double* values, int count);

/// Appends a header line "<prefix><label>,..." to `out`.
void appendCsvHeader(std::string& out, const std::string& prefix,
                     const std::vector<std::string>& labels);

}  // namespace hilsim::cli
