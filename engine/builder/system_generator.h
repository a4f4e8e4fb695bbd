// Generated multibody systems of any size: chains of rods (a chain of pendulums; a rope when the
// links are short), complete binary trees of rods, and the large branch system of seed 000 §5.2
// (a chain hanging from the ceiling, a horizontal junction body, two subchains of two and three
// bodies hanging from its ends). For the Riccati transfer matrix method's scaling (docs/RICCATI.md)
// and for anyone who needs a model of 10 to 10⁵ bodies; the YAML format reaches it through the
// `generate:` key (docs/MODEL_FORMAT.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "engine/model/model.h"

namespace hilsim {

enum class GeneratedShape {
  kChain,   ///< link k hangs from link k − 1's far end, link 1 from the world
  kTree,    ///< complete binary tree: link k's parent is link k / 2, both children at its far end
  kBranch,  ///< seed 000 §5.2: a vertical chain, a horizontal junction, subchains of 2 and 3
};

/// The shape's name in files ("chain", "tree", "branch"), and back (nullopt when unknown).
std::string_view generatedShapeName(GeneratedShape shape);
std::optional<GeneratedShape> parseGeneratedShape(std::string_view name);

/// What to generate. Every link is a uniform rod (a solid cylinder of `link_radius`), joined to
/// its parent at one end by a `revolute` joint about the y axis (motion in the x–z plane, under
/// the default gravity along −z) or a `spherical` one. At q = 0 chain and tree links lie along +x
/// (horizontal: released, they fall); the branch system starts as the paper's: the chain and the
/// subchains hanging along −z, the junction horizontal, pinned at its midpoint.
struct SystemSpec {
  GeneratedShape shape = GeneratedShape::kChain;
  int bodies = 10;                   ///< ≥ 1 (branch: ≥ 6)
  JointType joint = JointType::kRevolute;  ///< kRevolute or kSpherical
  double link_length = 1.0;          ///< [m], > 0
  double link_mass = 1.0;            ///< [kg], > 0
  double link_radius = 0.01;         ///< [m], > 0: gives the rod an inertia about its axis
};

/// Empty when `spec` can be generated, else why not (one line naming the field).
std::string checkSystemSpec(const SystemSpec& spec);

/// The model (named `name`); throws ModelError with checkSystemSpec's reason. Links are named
/// link1 … linkN (branch: chain1 …, junction, left1 left2, right1 … right3).
Model generateSystem(const SystemSpec& spec, const std::string& name);

}  // namespace hilsim
