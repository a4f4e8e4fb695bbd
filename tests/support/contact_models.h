// Tiny models with rows of every kind beyond the loops (docs/CONTACT.md), shared by the suites
// that need them.
#pragma once

namespace hilsim::test {

/// A leg: crank, knee and a prismatic foot closed by a revolute loop to a rocker, with joint
/// limits, joint friction on the crank and the foot, two contact spheres (toe, heel) and the
/// ground at z = 0 (nv = 4, 5 loop rows, 3 limit rows, 2 friction rows, 6 contact rows): rows
/// of each kind switch on and off as it moves.
inline constexpr const char* kLeggedFourBar = R"(version: 1
name: legged_four_bar
gravity: [0, 0, -9.81]
bodies:
  - name: crank
    joint: {type: revolute, name: crank, axis: [0, 1, 0], friction: 0.3, limits: {lower: -0.5, upper: 0.5}}
    placement: {xyz: [0, 0, 0.5]}
    inertia: {mass: 1.0, com: [0, 0, -0.1], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
  - name: coupler
    parent: crank
    placement: {xyz: [0, 0, -0.2]}
    joint: {type: revolute, name: knee, axis: [0, 1, 0], limits: {lower: -1, upper: 0.2}}
    inertia: {mass: 0.5, com: [0.15, 0, 0], inertia: [0.002, 0.01, 0.01, 0, 0, 0]}
  - name: rocker
    joint: {type: revolute, name: rocker, axis: [0, 1, 0]}
    placement: {xyz: [0.3, 0, 0.5]}
    inertia: {mass: 0.8, com: [0, 0, -0.1], inertia: [0.01, 0.01, 0.01, 0, 0, 0]}
  - name: foot
    parent: coupler
    placement: {xyz: [0.15, 0, -0.3]}
    joint: {type: prismatic, name: foot, axis: [0, 0, 1], friction: 1.0, limits: {lower: -0.05, upper: 0.05}}
    inertia: {mass: 0.2, com: [0, 0, 0], inertia: [0.001, 0.001, 0.001, 0, 0, 0]}
loops:
  - {name: pin, type: revolute, body_a: coupler, frame_a: {xyz: [0.3, 0, 0]}, body_b: rocker, frame_b: {xyz: [0, 0, -0.2]}, axis: [0, 1, 0]}
contacts:
  - {name: toe, body: foot, center: [0, 0, 0], radius: 0.02}
  - {name: heel, body: coupler, center: [0, 0, 0], radius: 0.03}
ground: {height: 0.0, friction: 0.7}
)";

}  // namespace hilsim::test
