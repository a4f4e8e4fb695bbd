// Visual geometry: what a model file says a link looks like (URDF <visual>). Viewers draw it; the
// dynamics never reads it. Frames follow docs/NOTATION.md.
#pragma once

#include <string>

#include <Eigen/Core>

#include "engine/spatial/transform.h"

namespace hilsim {

/// One visual element, attached to a body (welded links' visuals go to the body they were merged
/// into, placed through the weld).
struct VisualShape {
  enum class Geometry { kBox, kCylinder, kSphere, kMesh };
  int body = 0;           ///< body index; 0 is the world
  Transform placement;    ///< X_BV: the geometry's frame in the body frame
  Geometry geometry = Geometry::kBox;
  /// kBox: extents along x, y, z; kCylinder: radius, length along z (centred), 0; kSphere:
  /// radius, 0, 0 [m]. kMesh: unused.
  Vector3 size = Vector3::Zero();
  std::string mesh;                 ///< kMesh: the file name as the model gives it
  /// kMesh: the file `mesh` names, found beside the model file (absolute path), or empty: a model
  /// given as text, a file that does not exist, or a name that leaves the model's directory.
  std::string mesh_file;
  Vector3 scale = Vector3::Ones();  ///< kMesh: scale along x, y, z
  /// Colour (red, green, blue, alpha in 0 … 1) when the model gives one; alpha 0: none given.
  Eigen::Vector4d rgba = Eigen::Vector4d::Zero();
};

}  // namespace hilsim
