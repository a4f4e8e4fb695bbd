#include "engine/builder/system_generator.h"

#include <cmath>
#include <optional>
#include <tuple>

#include "engine/builder/model_builder.h"

namespace hilsim {

namespace {

// A uniform solid cylinder of length L and radius r along `axis` (0: x, 2: z) with its centre
// at `com`: m r²/2 about the axis, m (3 r² + L²)/12 across it.
Inertia rod(const SystemSpec& spec, int axis, const Vector3& com) {
  const double m = spec.link_mass, L = spec.link_length, r = spec.link_radius;
  Vector3 diagonal = Vector3::Constant(m * (3.0 * r * r + L * L) / 12.0);
  diagonal(axis) = 0.5 * m * r * r;
  return Inertia(m, com, diagonal.asDiagonal());
}

Joint makeJoint(const SystemSpec& spec) {
  return spec.joint == JointType::kSpherical ? Joint::spherical() : Joint::revolute(Vector3::UnitY());
}

Transform at(const Vector3& p) { return Transform(Matrix3::Identity(), p); }

}  // namespace

std::string_view generatedShapeName(GeneratedShape shape) {
  switch (shape) {
    case GeneratedShape::kChain: return "chain";
    case GeneratedShape::kTree: return "tree";
    case GeneratedShape::kBranch: return "branch";
  }
  return "chain";
}

std::optional<GeneratedShape> parseGeneratedShape(std::string_view name) {
  for (const GeneratedShape s : {GeneratedShape::kChain, GeneratedShape::kTree, GeneratedShape::kBranch})
    if (generatedShapeName(s) == name) return s;
  return std::nullopt;
}

std::string checkSystemSpec(const SystemSpec& spec) {
  const int least = spec.shape == GeneratedShape::kBranch ? 6 : 1;
  if (spec.bodies < least)
    return "bodies: " + std::to_string(spec.bodies) + " is too few for a " +
           std::string(generatedShapeName(spec.shape)) + " (at least " + std::to_string(least) + ")";
  if (spec.joint != JointType::kRevolute && spec.joint != JointType::kSpherical)
    return "joint: must be revolute or spherical";
  const auto positive = [](double x) { return std::isfinite(x) && x > 0.0; };
  if (!positive(spec.link_length)) return "link_length: must be a positive number of metres";
  if (!positive(spec.link_mass)) return "link_mass: must be a positive number of kilograms";
  if (!positive(spec.link_radius)) return "link_radius: must be a positive number of metres";
  return {};
}

Model generateSystem(const SystemSpec& spec, const std::string& name) {
  if (const std::string why = checkSystemSpec(spec); !why.empty()) throw ModelError(why);
  ModelBuilder builder(name);
  const double L = spec.link_length;
  const Joint joint = makeJoint(spec);
  const auto link = [](int k) { return "link" + std::to_string(k); };
  switch (spec.shape) {
    case GeneratedShape::kChain:
    case GeneratedShape::kTree: {
      // horizontal links along +x, each joined at its parent's far end
      const Inertia horizontal = rod(spec, 0, Vector3(0.5 * L, 0.0, 0.0));
      for (int k = 1; k <= spec.bodies; ++k) {
        const int parent = spec.shape == GeneratedShape::kChain ? k - 1 : k / 2;
        builder.addBody(link(k), parent == 0 ? "world" : link(parent), joint,
                        at(Vector3(parent == 0 ? 0.0 : L, 0.0, 0.0)), horizontal);
      }
      break;
    }
    case GeneratedShape::kBranch: {
      // seed 000 §5.2: the chain from the ceiling (N − 6 links along −z), the junction centred on
      // its joint along x, two links hanging from its −x end and three from its +x end
      const Inertia vertical = rod(spec, 2, Vector3(0.0, 0.0, -0.5 * L));
      const int chain = spec.bodies - 6;
      std::string parent = "world";
      for (int k = 1; k <= chain; ++k) {
        const std::string body = "chain" + std::to_string(k);
        builder.addBody(body, parent, joint, at(Vector3(0.0, 0.0, k == 1 ? 0.0 : -L)), vertical);
        parent = body;
      }
      builder.addBody("junction", parent, joint, at(Vector3(0.0, 0.0, chain == 0 ? 0.0 : -L)),
                      rod(spec, 0, Vector3::Zero()));
      for (const auto& [side, count, x] : {std::tuple{"left", 2, -0.5 * L}, std::tuple{"right", 3, 0.5 * L}}) {
        std::string up = "junction";
        for (int k = 1; k <= count; ++k) {
          const std::string body = std::string(side) + std::to_string(k);
          builder.addBody(body, up, joint, at(Vector3(k == 1 ? x : 0.0, 0.0, k == 1 ? 0.0 : -L)),
                          vertical);
          up = body;
        }
      }
      break;
    }
  }
  return builder.build();
}

}  // namespace hilsim
