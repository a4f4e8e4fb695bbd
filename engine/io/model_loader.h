// Loading models from files: URDF (urdfdom) and the native YAML format (docs/MODEL_FORMAT.md).
#pragma once

#include <string>
#include <vector>

#include "engine/model/model.h"

namespace hilsim {

/// Loads a model from `path_or_name`: a path to a .urdf or .yaml/.yml file, or the name of a
/// bundled model (see bundledModelNames()). Throws ModelError with one clear line naming the file
/// and element on any problem (missing file, parse error, invalid inertia, unknown parent, cycle,
/// duplicate name, NaN/Inf, unsupported joint type, ...). Never crashes on bad input.
Model loadModel(const std::string& path_or_name);

/// Loads a URDF file. `floating_base` puts a free joint between the world and the root link.
Model loadUrdf(const std::string& path, bool floating_base = false);

/// Parses URDF text (for tests); `source_name` is used in error messages.
Model loadUrdfString(const std::string& urdf_xml, bool floating_base = false,
                     const std::string& source_name = "<string>");

/// Loads a native YAML model file.
Model loadYaml(const std::string& path);

/// Parses YAML text; relative paths inside it resolve against `base_directory`.
Model loadYamlString(const std::string& yaml_text, const std::string& base_directory = ".",
                     const std::string& source_name = "<string>");

/// Names of the bundled models (config/models), default first.
std::vector<std::string> bundledModelNames();

/// The default bundled model's name (the 7-DoF arm).
std::string defaultModelName();

/// Path of a bundled model file, or empty if `name` is not bundled. Looks in $HILSIM_MODEL_PATH,
/// then the source tree's config/models, then ../share/hilsim/models next to the executable.
std::string bundledModelPath(const std::string& name);

}  // namespace hilsim
