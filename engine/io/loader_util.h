// Helpers shared by the model loaders (internal to engine/io; not part of the public API).
#pragma once

#include <string>

#include "engine/model/model.h"
#include "engine/spatial/transform.h"

namespace hilsim::io_detail {

/// The whole content of a text file. Throws ModelError "cannot open 'path': reason".
std::string readTextFile(const std::string& path);

/// Directory part of a path ("." when there is none).
std::string directoryOf(const std::string& path);

/// Rotation R = Rz(yaw) Ry(pitch) Rx(roll): URDF's fixed-axis roll-pitch-yaw convention.
Matrix3 rotationFromRpy(double roll, double pitch, double yaw);

/// Rethrows a ModelBuilder error for a file: "<source>: <message>", with the builder's
/// "body '…'" rewritten as `element_word` ("link" for URDF) so that it names the file's element.
[[noreturn]] void rethrowBuildError(const ModelError& error, const std::string& source,
                                    const std::string& element_word);

}  // namespace hilsim::io_detail
