// Loop closures and force elements: what a Model says beyond its spanning tree. The bodies keep
// their tree coordinates; a closure adds constraint rows between two body frames (the constraint
// stage, engine/constraints/), a force element adds a force between two body points.
// Frames follow docs/NOTATION.md; a body index 0 is the world.
#pragma once

#include <string>
#include <string_view>

#include "engine/spatial/transform.h"

namespace hilsim {

/// Kinds of loop-closure joint, named after the joint they stand for.
enum class ClosureType {
  kBall,       ///< the origins of frames A and B coincide: 3 rows
  kRevolute,   ///< ball, and the axis (in A) fixed in B as well: 5 rows
  kPrismatic,  ///< no relative rotation, and B's origin on A's axis line: 5 rows
  kWeld,       ///< frames A and B coincide: 6 rows
  kDistance,   ///< |p_B − p_A| = length (a massless rod with ball ends): 1 row
};

/// Rows a closure of this type adds (the constraints it removes).
constexpr int closureRows(ClosureType type) {
  switch (type) {
    case ClosureType::kBall: return 3;
    case ClosureType::kRevolute: return 5;
    case ClosureType::kPrismatic: return 5;
    case ClosureType::kWeld: return 6;
    case ClosureType::kDistance: return 1;
  }
  return 0;
}

/// "ball", "revolute", "prismatic", "weld", "distance".
std::string_view closureTypeName(ClosureType type);

/// A loop-closure joint between frame A on body_a and frame B on body_b. Assembled, A and B
/// coincide (ball: their origins; revolute: origins and `axis`; distance: origins `length`
/// apart).
struct LoopClosure {
  std::string name;
  ClosureType type = ClosureType::kBall;
  int body_a = 0, body_b = 0;  ///< body indices; 0 is the world
  Transform frame_a;           ///< X_{a A}: frame A in body a's frame
  Transform frame_b;           ///< X_{b B}
  Vector3 axis = Vector3::UnitZ();  ///< unit axis in A (revolute, prismatic)
  /// Two unit vectors that complete `axis` to a right-handed orthonormal basis of A (built by
  /// ModelBuilder): the directions of the rows a revolute or prismatic closure constrains.
  Vector3 normal_1 = Vector3::UnitX(), normal_2 = Vector3::UnitY();
  double length = 0.0;              ///< distance only [m], > 0
};

/// A linear spring and viscous damper along the line between two body points:
/// f = k (ℓ − ℓ₀) + c ℓ̇ pulling the points together when positive [N].
struct SpringDamper {
  std::string name;
  int body_a = 0, body_b = 0;  ///< body indices; 0 is the world
  Vector3 point_a = Vector3::Zero();  ///< in body a's frame [m]
  Vector3 point_b = Vector3::Zero();  ///< in body b's frame [m]
  double stiffness = 0.0;    ///< k ≥ 0 [N/m]
  double damping = 0.0;      ///< c ≥ 0 [N·s/m]
  double rest_length = 0.0;  ///< ℓ₀ ≥ 0 [m]
};

/// How the constraint stage keeps a model on its constraint manifold.
struct ConstraintStabilisation {
  /// Baumgarte (seed 002 eq. 60): J q̈ = −J̇ v − 2α (J v) − β² C. Damping α and stiffness β
  /// [1/s]; RK4 stays stable for h·α < 2.7 (docs/LOOPS.md).
  double baumgarte_alpha = 10.0;
  double baumgarte_beta = 10.0;
  /// Gauss–Newton iterations that move q back onto C(q) = 0 after each step (0: none); v is then
  /// projected onto J v = 0.
  int projection_iterations = 1;
};

}  // namespace hilsim
