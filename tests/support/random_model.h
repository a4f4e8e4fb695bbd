// Random models and states for the cross-checks: trees that mix every joint type.
#pragma once

#include <random>

#include "engine/model/model.h"

namespace hilsim::test {

struct RandomTreeOptions {
  int bodies = 20;              ///< moving bodies
  bool free_flyer_root = true;  ///< first body on a free joint
  bool all_joint_types = true;  ///< revolute, prismatic, spherical, planar (else revolute only)
  double fixed_fraction = 0.1;  ///< share of extra welded bodies
  bool damping_and_armature = true;
};

/// A random tree: random parents (each body's parent among the earlier ones), placements, axes,
/// physically valid inertias (random principal moments obeying the triangle inequality, rotated,
/// centre of mass off the origin).
Model randomTree(std::mt19937& rng, const RandomTreeOptions& options = {});

/// A random valid configuration: unit quaternions, 1-DoF joints uniform within their finite
/// limits, else in [−π, π].
Eigen::VectorXd randomConfiguration(const Model& model, std::mt19937& rng);

/// A vector of standard-normal entries of size n.
Eigen::VectorXd randomVector(int n, std::mt19937& rng, double scale = 1.0);

/// A random physically valid inertia.
Inertia randomInertia(std::mt19937& rng);

}  // namespace hilsim::test
