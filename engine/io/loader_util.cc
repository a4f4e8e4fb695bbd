#include "engine/io/loader_util.h"

#include <Eigen/Geometry>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hilsim::io_detail {

std::string readTextFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ModelError("cannot open '" + path + "': is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ModelError("cannot read '" + path + "'");
  return text.str();
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

void rethrowBuildError(const ModelError& error, const std::string& source,
                       const std::string& element_word) {
  std::string message = error.what();
  if (element_word != "body" && message.rfind("body '", 0) == 0)
    message = element_word + message.substr(4);
  throw ModelError(source + ": " + message);
}

}  // namespace hilsim::io_detail
