#include "engine/io/loader_util.h"

#include <Eigen/Geometry>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/model/names.h"

namespace hilsim::io_detail {

std::string readTextFile(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ModelError("cannot open '" + path + "': is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError("cannot open '" + path + "': " + std::strerror(errno));
  // Read in blocks and stop once past the limit (at most one block past it): a special file (a
  // pipe, /dev/zero) has no size to ask.
  std::string text;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw ModelError("'" + path + "': larger than the limit of " + std::to_string(max_bytes) +
                       " bytes for a model file");
  }
  if (in.bad()) throw ModelError("cannot read '" + path + "'");
  return text;
}

void checkXmlShape(std::string_view xml, std::size_t max_bytes, const std::string& source) {
  if (xml.size() > max_bytes)
    throw ModelError(source + ": " + std::to_string(xml.size()) +
                     " bytes, larger than the limit of " + std::to_string(max_bytes) +
                     " bytes for a model text");
  constexpr int kMaxAttributes = 64;
  if (const int line = tagWithTooManyAttributes(xml, kMaxAttributes))
    throw ModelError(source + ":" + std::to_string(line) + ": an element with more than " +
                     std::to_string(kMaxAttributes) + " attributes");
}

std::string printable(std::string_view text, std::size_t max_bytes) {
  constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  std::size_t k = 0;
  while (k < text.size() && k < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    // a whole UTF-8 sequence is kept (never cut), any other byte of 0x80 and above escaped
    std::size_t length = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (length > 1 && (k + length > text.size() || !isValidUtf8(text.substr(k, length))))
      length = 0;
    if (length == 0 || c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
      ++k;
      continue;
    }
    if (k + length > max_bytes) break;
    out.append(text.substr(k, length));
    k += length;
  }
  if (k < text.size()) out += "...";
  return out;
}

std::string oneLine(std::string_view message) { return printable(message, 2048); }

int tagWithTooManyAttributes(std::string_view xml, int max_attributes) {
  int line = 1;
  for (std::size_t k = 0; k < xml.size(); ++k) {
    if (xml[k] == '\n') ++line;
    if (xml[k] != '<') continue;
    if (xml.compare(k, 4, "<!--") == 0 || xml.compare(k, 9, "<![CDATA[") == 0) {
      const std::size_t end = xml.find(xml[k + 2] == '-' ? "-->" : "]]>", k);
      if (end == std::string_view::npos) return 0;  // the XML parser reports it
      for (std::size_t j = k; j < end; ++j) line += xml[j] == '\n';
      k = end;
      continue;
    }
    // a tag: count '=' outside quoted values up to its '>'
    const int start_line = line;
    int attributes = 0;
    char quote = 0;
    std::size_t j = k + 1;
    for (; j < xml.size() && (quote != 0 || xml[j] != '>'); ++j) {
      if (xml[j] == '\n') ++line;
      if (quote != 0) {
        if (xml[j] == quote) quote = 0;
      } else if (xml[j] == '"' || xml[j] == '\'') {
        quote = xml[j];
      } else if (xml[j] == '=' && ++attributes > max_attributes) {
        return start_line;
      }
    }
    k = j;
  }
  return 0;
}

std::string directoryOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

Matrix3 rotationFromRpy(double roll, double pitch, double yaw) {
  return (Eigen::AngleAxisd(yaw, Vector3::UnitZ()) * Eigen::AngleAxisd(pitch, Vector3::UnitY()) *
          Eigen::AngleAxisd(roll, Vector3::UnitX()))
      .toRotationMatrix();
}

InertiaCheck applyInertiaPolicy(BodySpec& body, InertiaPolicy policy) {
  InertiaCheck check;
  // undefined dynamics are refused whatever the policy; a rigid body's triangle inequality only
  // under `strict` (vendor files often break it by a few percent)
  check.error = policy == InertiaPolicy::kStrict ? body.inertia.validate()
                                                 : body.inertia.validateDefinite();
  if (!check.error.empty()) return check;
  const double excess = body.inertia.triangleExcess();
  const double scale = std::max(1.0, body.inertia.inertia_com.cwiseAbs().maxCoeff());
  if (policy == InertiaPolicy::kStrict || !(excess > 1e-9 * scale)) return check;
  std::ostringstream note;
  note << "principal moments break the triangle inequality by " << excess << " kg·m²";
  if (policy == InertiaPolicy::kBalance) {
    body.inertia = body.inertia.balanced();
    note << "; balanced: the two smaller moments raised by " << 0.5 * excess << " kg·m² each";
  } else {
    body.inertia_as_given = true;
    note << "; loaded as given (inertia: balance or strict to change that)";
  }
  check.warning = note.str();
  return check;
}

void rethrowBuildError(const ModelError& error, const std::string& source,
                       const std::string& element_word) {
  std::string message = error.what();
  if (element_word != "body" && message.rfind("body '", 0) == 0)
    message = element_word + message.substr(4);
  throw ModelError(source + ": " + message);
}

}  // namespace hilsim::io_detail
