// Random models and states for the cross-checks: trees that mix every joint type.
#pragma once

#include <random>
#include <span>

#include "engine/model/model.h"

namespace hilsim::test {

struct RandomTreeOptions {
  int bodies = 20;              ///< moving bodies
  bool free_flyer_root = true;  ///< first body on a free joint
  bool all_joint_types = true;  ///< revolute, prismatic, spherical, planar (else revolute only)
  double fixed_fraction = 0.1;  ///< share of extra welded bodies
  bool damping_and_armature = true;
  bool chain = false;  ///< each body's parent the one before: a chain as deep as it is long
};

/// A random tree: random parents (each body's parent among the earlier ones), placements, axes,
/// physically valid inertias (random principal moments obeying the triangle inequality, rotated,
/// centre of mass off the origin).
Model randomTree(std::mt19937& rng, const RandomTreeOptions& options = {});

struct RandomFlexibleTreeOptions {
  int bodies = 6;                    ///< moving bodies
  bool free_flyer_root = true;       ///< first body on a free joint
  double flexible_fraction = 0.6;    ///< share of flexible bodies
  int max_modes = 4;                 ///< modes per flexible body, uniform in 1 … max_modes
  double hinge_node_fraction = 0.5;  ///< share of flexible bodies whose joint is at a deforming node
  bool geometric_stiffening = true;
};

/// A random flexible body: modal integrals reduced from six random lumped masses with rotary
/// inertia and random mode shapes (second-order ones symmetric in the mode pair), random SPD
/// stiffness, PSD damping, `attach_nodes` nodes named node0, node1, … and optionally a hinge node.
FlexibleBody randomFlexibleBody(std::mt19937& rng, int nmodes, bool geometric_stiffening,
                                bool hinge_node, int attach_nodes);

/// A random tree mixing rigid and flexible bodies and joints of 1 to 6 DoF; children of a
/// flexible body attach at one of its nodes (mostly) or at its frame.
Model randomFlexibleTree(std::mt19937& rng, const RandomFlexibleTreeOptions& options = {});

/// A random valid configuration: unit quaternions, 1-DoF joints uniform within their finite
/// limits, else in [−π, π]; modal coordinates uniform in [−0.2, 0.2].
Eigen::VectorXd randomConfiguration(const Model& model, std::mt19937& rng);

/// A vector of standard-normal entries of size n.
Eigen::VectorXd randomVector(int n, std::mt19937& rng, double scale = 1.0);

/// A random physically valid inertia.
Inertia randomInertia(std::mt19937& rng);

/// Adds `count` random loop closures (every type in turn — ball, revolute, prismatic, weld,
/// distance — from the type numbered `first_type` in that list, between random distinct bodies or
/// the world) to `model`, placed so that they hold at configuration q: frame A at a random pose on
/// body a, frame B where A is at q (a distance closure: a random point, at the length it has at q).
void addRandomClosures(Model& model, const Eigen::VectorXd& q, int count, std::mt19937& rng,
                       int first_type = 0);
/// The same with the closure types given, one closure each.
void addRandomClosures(Model& model, const Eigen::VectorXd& q, std::span<const ClosureType> types,
                       std::mt19937& rng);

/// A random spatial tree of `bodies` bodies (every joint type, a floating root) with `closures`
/// closures of the types in turn from `first_type` (addRandomClosures) that hold at q; v random
/// (not yet on J v = 0), tau random (×5).
struct LoopCase {
  Model model;
  Eigen::VectorXd q, v, tau;
};
LoopCase randomLoopCase(std::mt19937& rng, int bodies, int closures, int first_type = 0);

/// A generated chain of `bodies` rods (engine/builder/system_generator.h) bent into an arc (every
/// joint at 0.08 rad initially), its last link's far end pinned to the world where it is by a
/// revolute closure about y: one planar loop of bodies − 2 degrees of freedom, of any size.
Model pinnedArc(int bodies);

/// A chain with massless bodies (seed 003): a massless cross between two joints (rank restored
/// by its child), a massless slider on a spring–damper carrying the tip (one algebraic velocity)
/// and a massless damped leaf (another).
Model masslessChain();

}  // namespace hilsim::test
