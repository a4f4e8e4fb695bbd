#include "engine/model/beam_modes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include "engine/model/model.h"

namespace hilsim {

namespace {

// Bending modes of one plane: displacement w and rotation θ = dw/dx at every node, per mode.
struct PlaneModes {
  Eigen::VectorXd omega;  ///< natural frequencies [rad/s]
  Eigen::MatrixXd w;      ///< (nodes × modes) [m per unit η]
  Eigen::MatrixXd theta;  ///< (nodes × modes) [rad per unit η]
};

int availableModesPerPlane(const BeamSpec& spec) {
  // translations left after the boundary conditions, less the rigid motions of a free beam
  return spec.boundary == BeamSpec::Boundary::kClampedFree ? spec.elements : spec.elements - 1;
}

PlaneModes planeModes(const BeamSpec& spec, const Eigen::VectorXd& nodal_mass) {
  const int nodes = spec.elements + 1;
  const double l = spec.length / spec.elements;
  const double ei = spec.youngs_modulus * spec.area_moment;
  // global stiffness, dofs [w_0 … w_N, θ_0 … θ_N]
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(2 * nodes, 2 * nodes);
  Eigen::Matrix4d k;
  k << 12, 6 * l, -12, 6 * l,                 //
      6 * l, 4 * l * l, -6 * l, 2 * l * l,    //
      -12, -6 * l, 12, -6 * l,                //
      6 * l, 2 * l * l, -6 * l, 4 * l * l;
  k *= ei / (l * l * l);
  for (int e = 0; e < spec.elements; ++e) {
    const int dof[4] = {e, nodes + e, e + 1, nodes + e + 1};
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) K(dof[a], dof[b]) += k(a, b);
  }
  // free dofs: a clamped root fixes w_0 and θ_0
  const int first = spec.boundary == BeamSpec::Boundary::kClampedFree ? 1 : 0;
  const int nt = nodes - first;
  Eigen::MatrixXd Ktt = K.block(first, first, nt, nt);
  Eigen::MatrixXd Ktr = K.block(first, nodes + first, nt, nt);
  Eigen::MatrixXd Krr = K.block(nodes + first, nodes + first, nt, nt);
  // rotations carry no mass: condense them, θ = −Krr⁻¹ Krt w
  const Eigen::LLT<Eigen::MatrixXd> krr(Krr);
  const Eigen::MatrixXd Krr_inv_Krt = krr.solve(Ktr.transpose());
  const Eigen::MatrixXd Kc = Ktt - Ktr * Krr_inv_Krt;
  // K_c v = ω² M v with M diagonal: symmetric form M^{-1/2} K_c M^{-1/2}
  const Eigen::VectorXd m = nodal_mass.tail(nt);
  const Eigen::VectorXd m_inv_sqrt = m.cwiseSqrt().cwiseInverse();
  const Eigen::MatrixXd A = m_inv_sqrt.asDiagonal() * Kc * m_inv_sqrt.asDiagonal();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(0.5 * (A + A.transpose()));
  const int skip = spec.boundary == BeamSpec::Boundary::kFreeFree ? 2 : 0;  // rigid motions
  const int count = std::min(spec.modes, nt - skip);
  PlaneModes modes;
  modes.omega.resize(count);
  modes.w = Eigen::MatrixXd::Zero(nodes, count);
  modes.theta = Eigen::MatrixXd::Zero(nodes, count);
  for (int r = 0; r < count; ++r) {
    const double lambda = std::max(eig.eigenvalues()[skip + r], 0.0);
    modes.omega[r] = std::sqrt(lambda);
    Eigen::VectorXd w = m_inv_sqrt.asDiagonal() * eig.eigenvectors().col(skip + r);  // wᵀ M w = 1
    if (w[nt - 1] < 0.0) w = -w;  // tip displacement positive
    modes.w.col(r).tail(nt) = w;
    modes.theta.col(r).tail(nt) = -Krr_inv_Krt * w;
  }
  return modes;
}

// ∫ w_r′ w_s′ dx over each element from the Hermite interpolation of (w, θ); three Gauss points
// integrate the quartic exactly.
double elementSlopeProduct(const PlaneModes& p, int e, int r, int s, double l) {
  static const double kPoints[3] = {0.5 - 0.5 * std::sqrt(0.6), 0.5, 0.5 + 0.5 * std::sqrt(0.6)};
  static const double kWeights[3] = {5.0 / 18.0, 8.0 / 18.0, 5.0 / 18.0};
  auto slope = [&](int mode, double t) {
    const double dn1 = (-6.0 * t + 6.0 * t * t) / l, dn2 = 1.0 - 4.0 * t + 3.0 * t * t;
    const double dn3 = (6.0 * t - 6.0 * t * t) / l, dn4 = -2.0 * t + 3.0 * t * t;
    return dn1 * p.w(e, mode) + dn2 * p.theta(e, mode) + dn3 * p.w(e + 1, mode) +
           dn4 * p.theta(e + 1, mode);
  };
  double sum = 0.0;
  for (int g = 0; g < 3; ++g) sum += kWeights[g] * slope(r, kPoints[g]) * slope(s, kPoints[g]);
  return sum * l;
}

struct ModeRef {
  int plane;  ///< 0: displacement along y, 1: along z
  int index;  ///< mode of that plane
  double omega;
};

}  // namespace

std::string BeamSpec::validate() const {
  const double values[] = {youngs_modulus, area_moment, density, area, length};
  for (double x : values)
    if (!std::isfinite(x) || !(x > 0.0))
      return "beam: E, I, density, area and length must be finite and > 0";
  if (!std::isfinite(damping_ratio) || damping_ratio < 0.0)
    return "beam: damping ratio must be finite and >= 0";
  if (elements < 2 || elements > 1000) return "beam: elements must be in 2 … 1000";
  if (modes < 1) return "beam: at least one mode";
  const int planes = bending == Bending::kBoth ? 2 : 1;
  if (modes > planes * availableModesPerPlane(*this))
    return "beam: " + std::to_string(elements) + " elements give at most " +
           std::to_string(planes * availableModesPerPlane(*this)) + " modes";
  return {};
}

FlexibleBody eulerBernoulliBeam(const BeamSpec& spec) {
  if (const std::string why = spec.validate(); !why.empty()) throw ModelError(why);
  const int nodes = spec.elements + 1;
  const double l = spec.length / spec.elements;
  Eigen::VectorXd nodal_mass = Eigen::VectorXd::Constant(nodes, spec.density * spec.area * l);
  nodal_mass[0] *= 0.5;
  nodal_mass[nodes - 1] *= 0.5;
  // one plane's modes serve both: the section is the same in y and z
  const PlaneModes plane = planeModes(spec, nodal_mass);

  std::vector<ModeRef> refs;
  for (int k = 0; k < plane.omega.size(); ++k) {
    if (spec.bending != BeamSpec::Bending::kZ) refs.push_back({0, k, plane.omega[k]});
    if (spec.bending != BeamSpec::Bending::kY) refs.push_back({1, k, plane.omega[k]});
  }
  std::stable_sort(refs.begin(), refs.end(),
                   [](const ModeRef& a, const ModeRef& b) { return a.omega < b.omega; });
  refs.resize(spec.modes);
  const int n = spec.modes;

  // foreshortening u_x(x) = −½ Σ_rs η_r η_s ∫ w_r′ w_s′ from the reference node: the root of a
  // cantilever, the middle of a free beam
  const int reference = spec.boundary == BeamSpec::Boundary::kClampedFree ? 0 : spec.elements / 2;
  std::vector<Eigen::MatrixXd> cumulative(nodes, Eigen::MatrixXd::Zero(n, n));
  auto element = [&](int e) {
    Eigen::MatrixXd h = Eigen::MatrixXd::Zero(n, n);
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s)
        if (refs[r].plane == refs[s].plane)
          h(r, s) = elementSlopeProduct(plane, e, refs[r].index, refs[s].index, l);
    return h;
  };
  for (int j = reference + 1; j < nodes; ++j) cumulative[j] = cumulative[j - 1] + element(j - 1);
  for (int j = reference - 1; j >= 0; --j) cumulative[j] = cumulative[j + 1] - element(j);

  std::vector<LumpedMassNode> lumped(nodes);
  std::vector<ModalNode> modal_nodes(nodes);
  for (int j = 0; j < nodes; ++j) {
    LumpedMassNode& node = lumped[j];
    node.position = Vector3(j * l, 0.0, 0.0);
    node.mass = nodal_mass[j];
    // torsional inertia ρ J l with J = 2I, so that the rod is not singular about its axis; it
    // does not enter the bending modes
    node.rotary_inertia(0, 0) = spec.density * 2.0 * spec.area_moment * nodal_mass[j] /
                                (spec.density * spec.area);    node.slope = Matrix3X::Zero(3, n);
    node.translation = Matrix3X::Zero(3, n);
    node.second_order = Matrix3X::Zero(3, n * n);
    for (int r = 0; r < n; ++r) {
      const double w = plane.w(j, refs[r].index), theta = plane.theta(j, refs[r].index);
      if (refs[r].plane == 0) {
        node.translation(1, r) = w;   // along y,
        node.slope(2, r) = theta;     // turning about z
      } else {
        node.translation(2, r) = w;   // along z,
        node.slope(1, r) = -theta;    // turning about −y
      }
      for (int s = 0; s < n; ++s) node.second_order(0, r * n + s) = -cumulative[j](r, s);
    }
    ModalNode& m = modal_nodes[j];
    if (j == 0) {
      m.name = "root";
    } else if (j == nodes - 1) {
      m.name = "tip";
    } else {
      char name[16];  // (GCC 12 warns falsely on "n" + std::to_string(j): -Wrestrict)
      std::snprintf(name, sizeof name, "n%d", j);
      m.name = name;
    }
    m.position = node.position;
    m.slope = node.slope;
    m.translation = node.translation;
    m.second_order = node.second_order;
  }

  FlexibleBody body = reduceLumpedMasses(lumped, n, spec.geometric_stiffening);
  body.stiffness = Eigen::MatrixXd::Zero(n, n);
  body.damping = Eigen::MatrixXd::Zero(n, n);
  for (int r = 0; r < n; ++r) {
    body.stiffness(r, r) = refs[r].omega * refs[r].omega;
    body.damping(r, r) = 2.0 * spec.damping_ratio * refs[r].omega;
  }
  body.nodes = std::move(modal_nodes);
  body.hinge_node = -1;
  return body;
}

}  // namespace hilsim
