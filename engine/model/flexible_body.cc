#include "engine/model/flexible_body.h"

#include <set>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

namespace hilsim {

Inertia FlexibleBody::rigidInertia() const {
  if (mass <= 0.0) return Inertia(0.0, Vector3::Zero(), rotational_inertia);
  const Vector3 com = first_moment / mass;
  const Matrix3 c = skew(com);
  // I_O = I_c − m c̃ c̃  ⇒  I_c = I_O + m c̃ c̃
  Matrix3 inertia_com = rotational_inertia + mass * c * c;
  inertia_com = 0.5 * (inertia_com + inertia_com.transpose()).eval();
  return Inertia(mass, com, inertia_com);
}

int FlexibleBody::nodeIndex(const std::string& node_name) const {
  for (int k = 0; k < static_cast<int>(nodes.size()); ++k)
    if (nodes[k].name == node_name) return k;
  return -1;
}

namespace {

std::string sizeError(const char* what, Eigen::Index rows, Eigen::Index cols, Eigen::Index want_rows,
                      Eigen::Index want_cols) {
  return std::string(what) + " is " + std::to_string(rows) + "x" + std::to_string(cols) +
         ", expected " + std::to_string(want_rows) + "x" + std::to_string(want_cols);
}

template <typename M>
bool hasSize(const M& m, Eigen::Index rows, Eigen::Index cols) {
  return m.rows() == rows && m.cols() == cols;
}

// Symmetric within a relative 1e-9, and eigenvalues ≥ −1e-9·(largest |eigenvalue|) (semi-definite)
// or > 1e-12·(largest) (definite).
std::string checkSymmetric(const Eigen::MatrixXd& m, const char* what, bool definite) {
  const double scale = std::max(m.cwiseAbs().maxCoeff(), 1e-300);
  if ((m - m.transpose()).cwiseAbs().maxCoeff() > 1e-9 * scale)
    return std::string(what) + " is not symmetric";
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(m, Eigen::EigenvaluesOnly);
  const double lowest = eig.eigenvalues().minCoeff();
  const double largest = eig.eigenvalues().cwiseAbs().maxCoeff();
  if (definite && !(lowest > 1e-12 * largest))
    return std::string(what) + " is not positive definite (smallest eigenvalue " +
           std::to_string(lowest) + ")";
  if (!definite && lowest < -1e-9 * largest)
    return std::string(what) + " is not positive semi-definite (smallest eigenvalue " +
           std::to_string(lowest) + ")";
  return {};
}

}  // namespace

std::string FlexibleBody::validate() const {
  const int n = nmodes;
  if (n < 1) return "a flexible body needs at least one mode";
  struct Sized {
    const char* what;
    Eigen::Index rows, cols, want_rows, want_cols;
  };
  const Sized sizes[] = {
      {"first_moment_modes", first_moment_modes.rows(), first_moment_modes.cols(), 3, n},
      {"rotational_inertia_modes", rotational_inertia_modes.rows(), rotational_inertia_modes.cols(),
       3, 3 * n},
      {"rotational_inertia_second", rotational_inertia_second.rows(),
       rotational_inertia_second.cols(), 3, 3 * n * n},
      {"angular_coupling", angular_coupling.rows(), angular_coupling.cols(), 3, n},
      {"angular_coupling_modes", angular_coupling_modes.rows(), angular_coupling_modes.cols(), 3,
       n * n},
      {"modal mass", modal_mass.rows(), modal_mass.cols(), n, n},
      {"stiffness", stiffness.rows(), stiffness.cols(), n, n},
      {"damping", damping.rows(), damping.cols(), n, n},
  };
  for (const Sized& s : sizes)
    if (s.rows != s.want_rows || s.cols != s.want_cols)
      return sizeError(s.what, s.rows, s.cols, s.want_rows, s.want_cols);
  if (geometric_stiffening) {
    if (!hasSize(first_moment_second, 3, n * n) || !hasSize(rotational_inertia_geometric, 3, 3 * n * n) ||
        !hasSize(angular_coupling_geometric, 3, n * n))
      return "geometric stiffening needs the second-order terms (first_moment_second 3x" +
             std::to_string(n * n) + ", rotational_inertia_geometric 3x" +
             std::to_string(3 * n * n) + ", angular_coupling_geometric 3x" + std::to_string(n * n) +
             ")";
  }
  const bool finite = std::isfinite(mass) && first_moment.allFinite() &&
                      first_moment_modes.allFinite() && rotational_inertia.allFinite() &&
                      rotational_inertia_modes.allFinite() && rotational_inertia_second.allFinite() &&
                      angular_coupling.allFinite() && angular_coupling_modes.allFinite() &&
                      modal_mass.allFinite() && stiffness.allFinite() && damping.allFinite() &&
                      first_moment_second.allFinite() && rotational_inertia_geometric.allFinite() &&
                      angular_coupling_geometric.allFinite();
  if (!finite) return "modal data must be finite";
  if (!(mass > 0.0)) return "mass must be > 0";
  if (const std::string why = rigidInertia().validate(1e-9); !why.empty())
    return "rigid inertia: " + why;
  if (std::string why = checkSymmetric(modal_mass, "modal mass", true); !why.empty()) return why;
  if (std::string why = checkSymmetric(stiffness, "stiffness", false); !why.empty()) return why;
  if (std::string why = checkSymmetric(damping, "damping", false); !why.empty()) return why;
  const double inertia_scale = std::max(rotational_inertia.cwiseAbs().maxCoeff(), 1e-300);
  for (int r = 0; r < n; ++r) {
    if (!rotational_inertia_modes.middleCols<3>(3 * r).isApprox(
            rotational_inertia_modes.middleCols<3>(3 * r).transpose(), 1e-9))
      return "rotational_inertia_modes block " + std::to_string(r) + " is not symmetric";
    for (int s = 0; s < n; ++s) {
      const auto a = rotational_inertia_second.middleCols<3>(3 * (r * n + s));
      const auto b = rotational_inertia_second.middleCols<3>(3 * (s * n + r));
      if ((a - a.transpose()).cwiseAbs().maxCoeff() > 1e-9 * inertia_scale ||
          (a - b).cwiseAbs().maxCoeff() > 1e-9 * inertia_scale)
        return "rotational_inertia_second blocks must be symmetric and equal for (r,s) and (s,r)";
    }
  }
  // No mode may duplicate a rigid motion (seed 004 §11 item 16): every null direction of M_m(0)
  // must be a rigid one (a rod of point masses has no inertia about its axis; that is the rigid
  // inertia's business, not the modes').
  Eigen::MatrixXd m0(n + 6, n + 6);
  Matrix6 rigid;
  rigidInertia().matrix(rigid);
  m0.topLeftCorner(n, n) = modal_mass;
  m0.bottomRightCorner<6, 6>() = rigid;
  m0.bottomLeftCorner(6, n).topRows<3>() = angular_coupling;
  m0.bottomLeftCorner(6, n).bottomRows<3>() = first_moment_modes;
  m0.topRightCorner(n, 6) = m0.bottomLeftCorner(6, n).transpose();
  {
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(m0);
    const double largest = eig.eigenvalues().cwiseAbs().maxCoeff();
    for (int k = 0; k < n + 6; ++k) {
      if (eig.eigenvalues()[k] > 1e-10 * largest) continue;
      if (eig.eigenvalues()[k] < -1e-9 * largest || eig.eigenvectors().col(k).head(n).norm() > 1e-6)
        return "the modal mass matrix M_m(0) with the rigid body is not positive definite on the "
               "modes: a mode duplicates a rigid-body motion, or the coupling terms are wrong";
    }
  }

  std::set<std::string> names;
  for (const ModalNode& node : nodes) {
    if (node.name.empty()) return "a node has no name";
    if (!names.insert(node.name).second) return "duplicate node name '" + node.name + "'";
    const std::string who = "node '" + node.name + "': ";
    if (!hasSize(node.slope, 3, n)) return who + sizeError("slope", node.slope.rows(), node.slope.cols(), 3, n);
    if (!hasSize(node.translation, 3, n))
      return who + sizeError("translation", node.translation.rows(), node.translation.cols(), 3, n);
    if (node.second_order.size() != 0 && !hasSize(node.second_order, 3, n * n))
      return who + sizeError("second_order", node.second_order.rows(), node.second_order.cols(), 3,
                             n * n);
    if (!node.position.allFinite() || !node.slope.allFinite() || !node.translation.allFinite() ||
        !node.second_order.allFinite())
      return who + "mode shapes must be finite";
  }
  if (hinge_node < -1 || hinge_node >= static_cast<int>(nodes.size()))
    return "hinge node index out of range";
  return {};
}

Eigen::VectorXd naturalFrequencies(const FlexibleBody& body) {
  if (body.nmodes == 0) return {};
  const Eigen::GeneralizedSelfAdjointEigenSolver<Eigen::MatrixXd> eig(body.stiffness,
                                                                        body.modal_mass);
  return eig.eigenvalues().cwiseMax(0.0).cwiseSqrt();
}

FlexibleBody reduceLumpedMasses(const std::vector<LumpedMassNode>& lumped, int nmodes,
                                bool geometric_stiffening) {
  const int n = nmodes;
  FlexibleBody b;
  b.nmodes = n;
  b.geometric_stiffening = geometric_stiffening;
  b.first_moment_modes = Matrix3X::Zero(3, n);
  b.rotational_inertia_modes = Matrix3X::Zero(3, 3 * n);
  b.rotational_inertia_second = Matrix3X::Zero(3, 3 * n * n);
  b.angular_coupling = Matrix3X::Zero(3, n);
  b.angular_coupling_modes = Matrix3X::Zero(3, n * n);
  b.modal_mass = Eigen::MatrixXd::Zero(n, n);
  b.stiffness = Eigen::MatrixXd::Zero(n, n);
  b.damping = Eigen::MatrixXd::Zero(n, n);
  b.first_moment_second = Matrix3X::Zero(3, n * n);
  b.rotational_inertia_geometric = Matrix3X::Zero(3, 3 * n * n);
  b.angular_coupling_geometric = Matrix3X::Zero(3, n * n);

  // Each lumped mass m sits at l(η) = x₀ + γ η + ½ q(η, η) with angular velocity ω + λ η̇ and
  // rotary inertia J fixed in B's axes. T = Σ ½ m |v + ω × l + (γ + q(·,η)) η̇|²
  //   + ½ (ω + λ η̇)ᵀ J (ω + λ η̇), expanded to the orders kept in FlexibleBody.
  for (const LumpedMassNode& node : lumped) {
    const double m = node.mass;
    const Vector3& x0 = node.position;
    const Matrix3 x0_skew = skew(x0);
    const bool has_q = node.second_order.cols() == n * n;
    b.mass += m;
    b.first_moment += m * x0;
    b.first_moment_modes += m * node.translation;
    b.rotational_inertia += node.rotary_inertia - m * x0_skew * x0_skew;
    b.angular_coupling += node.rotary_inertia * node.slope + m * x0_skew * node.translation;
    b.modal_mass += node.slope.transpose() * node.rotary_inertia * node.slope +
                    m * node.translation.transpose() * node.translation;
    for (int s = 0; s < n; ++s) {
      const Matrix3 g_s = skew(node.translation.col(s));
      // I₁ₛ = −m (x̃₀ γ̃ₛ + γ̃ₛ x̃₀)
      b.rotational_inertia_modes.middleCols<3>(3 * s) -= m * (x0_skew * g_s + g_s * x0_skew);
      for (int r = 0; r < n; ++r) {
        const Matrix3 g_r = skew(node.translation.col(r));
        // I₂ᵣₛ = −½ m (γ̃ᵣ γ̃ₛ + γ̃ₛ γ̃ᵣ)
        b.rotational_inertia_second.middleCols<3>(3 * (r * n + s)) -=
            0.5 * m * (g_r * g_s + g_s * g_r);
        // A₁ₛ column r = m γₛ × γᵣ
        b.angular_coupling_modes.col(s * n + r) += m * node.translation.col(s).cross(
                                                           node.translation.col(r));
        if (has_q) {
          const Vector3 q_rs = node.second_order.col(r * n + s);
          b.first_moment_second.col(r * n + s) += m * q_rs;
          const Matrix3 q_skew = skew(q_rs);
          // ½ Σ_rs (x̃₀ q̃ᵣₛ + q̃ᵣₛ x̃₀) η_r η_s from l̃ l̃
          b.rotational_inertia_geometric.middleCols<3>(3 * (r * n + s)) -=
              0.5 * m * (x0_skew * q_skew + q_skew * x0_skew);
          // ∂/∂η_s of m l × (γᵣ + Σ_s qᵣₛ η_s): m x₀ × qᵣₛ
          b.angular_coupling_geometric.col(s * n + r) += m * x0.cross(q_rs);
        }
      }
    }
  }
  b.modal_mass = 0.5 * (b.modal_mass + b.modal_mass.transpose()).eval();
  return b;
}

}  // namespace hilsim
