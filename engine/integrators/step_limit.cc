#include "engine/integrators/step_limit.h"

#include <algorithm>
#include <cmath>
#include <complex>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "engine/algorithms/crba.h"
#include "engine/model/data.h"

namespace hilsim {

namespace {

// |R(z)| for RK4's stability polynomial
double rk4Amplification(std::complex<double> z) {
  return std::abs(1.0 + z * (1.0 + z * (0.5 + z * (1.0 / 6.0 + z / 24.0))));
}

// The largest h with |R(h λ)| ≤ 1 for an eigenvalue λ with Re λ ≤ 0, λ ≠ 0: the region meets
// each ray from the origin into the left half-plane in one interval [0, h|λ|] with h|λ| ≤ 2.83.
double rk4RayLimit(std::complex<double> lambda) {
  double lo = 0.0, hi = 3.0 / std::abs(lambda);
  for (int k = 0; k < 60; ++k) {
    const double mid = 0.5 * (lo + hi);
    if (rk4Amplification(mid * lambda) <= 1.0 + 1e-12) lo = mid;
    else hi = mid;
  }
  return lo;
}

}  // namespace

StepLimit rk4StepLimit(const Model& model, const Eigen::VectorXd& q) {
  StepLimit limit;
  const int n = model.nv;
  if (model.nalgebraic > 0 || model.has_flexible_bodies || n > kStepLimitMaxDofs) return limit;
  limit.computed = true;
  if (model.damping.isZero(0.0) && model.stiffness.isZero(0.0)) return limit;
  Data data(model, DataWorkspace::kJointSpaceInertia);
  const Eigen::MatrixXd& M = crba(model, data, q);  // armature included
  const Eigen::LLT<Eigen::MatrixXd> llt(M);
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(2 * n, 2 * n);
  A.topRightCorner(n, n).setIdentity();
  A.bottomLeftCorner(n, n) = -llt.solve(Eigen::MatrixXd(model.stiffness.asDiagonal()));
  A.bottomRightCorner(n, n) = -llt.solve(Eigen::MatrixXd(model.damping.asDiagonal()));
  const Eigen::EigenSolver<Eigen::MatrixXd> eigen(A);
  if (eigen.info() != Eigen::Success) return limit;
  // a free coordinate has λ = 0, which round-off turns into ±1e-16 or so: zero below 1e-10 of
  // the largest; and Re λ ≤ 0 in exact arithmetic (K, D ≥ 0, M > 0), so a round-off positive
  // real part is cut to 0 rather than read as an unstable mode
  const double largest = eigen.eigenvalues().cwiseAbs().maxCoeff();
  for (int k = 0; k < 2 * n; ++k) {
    std::complex<double> lambda = eigen.eigenvalues()(k);
    if (!(std::abs(lambda) > 1e-10 * largest)) continue;
    lambda.real(std::min(lambda.real(), 0.0));
    const double h = rk4RayLimit(lambda);
    if (h >= limit.max_dt) continue;
    limit.max_dt = h;
    limit.rate = std::abs(lambda);
    // the joint whose velocities move most in this mode
    Eigen::Index dof = 0;
    eigen.eigenvectors().col(k).tail(n).cwiseAbs().maxCoeff(&dof);
    for (int i = 1; i < model.nbodies; ++i) {
      if (dof >= model.idx_v[i] && dof < model.idx_v[i] + model.nv_joint[i]) limit.joint = i;
    }
  }
  return limit;
}

double roundStepBelow(double max_dt, double fraction) {
  const double target = fraction * max_dt;
  if (!(target > 0.0) || !std::isfinite(target)) return target;
  double decade = std::pow(10.0, std::floor(std::log10(target)));
  for (const double m : {5.0, 2.0, 1.0})
    if (m * decade <= target) return m * decade;
  return decade;  // not reached: target ≥ decade
}

}  // namespace hilsim
