// Tolerances shared by the test suites, each with the reason for its size.
#pragma once

#include <algorithm>

#include <Eigen/Core>

namespace hilsim::test {

/// Identities of the spatial algebra in double precision: a few roundings on O(1) numbers.
inline constexpr double kAlgebraTol = 1e-12;

/// Agreement of two exact formulations (ABA, CRBA + LᵀDL, RNEA) relative to the size of the
/// result, on trees of up to 200 bodies: both are backward-stable O(n) or O(n d²) recursions whose
/// rounding grows with depth and the condition of M; 1e-10 is the engine's contract.
inline constexpr double kFormulationRelTol = 1e-10;

/// hilsim's q̈ of a model loaded from MJCF against MuJoCo's qacc on the same compiled mjModel,
/// relative to the size of q̈: the same numbers (masses, inertias, poses) through two exact
/// recursions in double precision (MuJoCo: CRB and a sparse LᵀDL), on models of a few bodies;
/// hilsim's loops go through one more factorisation (the Delassus matrix), as the reference does.
/// Measured: at most 1.5e-13 on the trees, 3.2e-11 on the loops (hdca; MuJoCo's J̇v there by
/// Richardson-extrapolated differences, ~1e-12); 1e-9 is about thirty times the worst.
inline constexpr double kMujocoCompiledRelTol = 1e-9;

/// Relative difference ‖a − b‖∞ / max(1, ‖a‖∞, ‖b‖∞); NaN when either holds a NaN, so that no
/// comparison against a tolerance passes on one.
template <typename A, typename B>
double relativeDifference(const A& a, const B& b) {
  const double scale = std::max({1.0, a.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>(),
                                 b.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>()});
  return (a - b).cwiseAbs().template maxCoeff<Eigen::PropagateNaN>() / scale;
}

}  // namespace hilsim::test
