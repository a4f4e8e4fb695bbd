// loadModel: dispatch by file extension, and resolution of bundled model names.
#include "engine/io/model_loader.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace hilsim {

namespace {

namespace fs = std::filesystem;

// Every file in config/models that loads on its own, default first. A name resolves to
// <name>.yaml, .yml, .urdf, .sdf or .xml in the first search directory that has one.
const std::vector<std::string>& bundledNames() {
  // default first (the 7-DoF arm); quadruped, humanoid and talos are YAML floating-base
  // wrappers over solo12, simple_humanoid and talos_full_v2
  static const std::vector<std::string> names = {
      "iiwa14",   "panda",           "ur5",   "quadruped",     "solo12",   "anymal_b",
      "humanoid", "simple_humanoid", "talos", "talos_full_v2", "pendulum", "double_pendulum",
      "flexible_arm", "four_bar", "delta"};
  return names;
}

std::string lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A bundled name is a plain file stem, never a path.
bool isPlainName(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

std::vector<fs::path> searchDirectories() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("HILSIM_MODEL_PATH")) {
    // colon-separated, like PATH
    const std::string value = env;
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t end = std::min(value.find(':', start), value.size());
      if (end > start) dirs.emplace_back(value.substr(start, end - start));
      start = end + 1;
    }
  }
#ifdef HILSIM_MODEL_DIR
  dirs.emplace_back(HILSIM_MODEL_DIR);
#endif
  // installed layout: <prefix>/bin/<exe> and <prefix>/share/hilsim/models
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path() / ".." / "share" / "hilsim" / "models");
  return dirs;
}

Model loadFile(const std::string& path, const std::string& extension, const UrdfOptions& options,
               const ModelLimits& limits) {
  if (extension == ".urdf") return loadUrdf(path, options, limits);
  if (extension == ".sdf") return loadSdf(path, options, limits);
  if (extension == ".xml" || extension == ".mjcf") {
    if (options.any())
      throw ModelError(path + ": the URDF options (floating base, inertia and massless policies) "
                              "do not apply to an MJCF model (a free joint is its own "
                              "<freejoint>)");
    return loadMjcf(path, limits);
  }
  // a YAML file says it itself: its URDF wrapper's floating_base, inertia and massless keys
  if (options.any()) {
    throw ModelError(path + ": a YAML model sets its URDF's options itself (its wrapper's "
                            "'floating_base', 'inertia' and 'massless' keys); none can be given "
                            "beside it");
  }
  return loadYaml(path, limits);
}

}  // namespace

std::vector<std::string> bundledModelNames() { return bundledNames(); }

std::string defaultModelName() { return bundledNames().front(); }

std::span<const std::string_view> modelFileExtensions() {
  static constexpr std::string_view kExtensions[] = {".yaml", ".yml", ".urdf", ".sdf", ".xml"};
  return kExtensions;
}

std::string modelFileIn(const std::string& directory, const std::string& name) {
  if (!isPlainName(name)) return {};
  for (const std::string_view extension : modelFileExtensions()) {
    const fs::path candidate = fs::path(directory) / (name + std::string(extension));
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
  }
  return {};
}

std::string bundledModelPath(const std::string& name) {
  for (const fs::path& dir : searchDirectories()) {
    if (std::string path = modelFileIn(dir.string(), name); !path.empty()) return path;
  }
  return {};
}

Model loadModel(const std::string& path_or_name, const ModelLimits& limits) {
  return loadModel(path_or_name, UrdfOptions{}, limits);
}

Model loadModel(const std::string& path_or_name, const UrdfOptions& options,
                const ModelLimits& limits) {
  const std::string extension = lowercase(fs::path(path_or_name).extension().string());
  if (extension == ".urdf" || extension == ".sdf" || extension == ".yaml" || extension == ".yml" ||
      extension == ".xml" || extension == ".mjcf")
    return loadFile(path_or_name, extension, options, limits);
  if (const std::string path = bundledModelPath(path_or_name); !path.empty())
    return loadFile(path, lowercase(fs::path(path).extension().string()), options, limits);

  std::string names;
  for (const std::string& n : bundledNames()) names += (names.empty() ? "" : ", ") + n;
  std::error_code ec;
  if (!path_or_name.empty() && fs::exists(path_or_name, ec))
    throw ModelError("'" + path_or_name +
                     "': unknown model file type (expected .urdf, .sdf, .xml, .mjcf, .yaml or "
                     ".yml)");
  throw ModelError("unknown model '" + path_or_name +
                   "': not a .urdf/.sdf/.xml/.mjcf/.yaml/.yml file nor a "
                   "bundled model (bundled: " +
                   names + ")");
}

}  // namespace hilsim
