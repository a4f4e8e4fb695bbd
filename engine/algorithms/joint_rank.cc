#include "engine/algorithms/joint_rank.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/joint_kinematics.h"
#include "engine/algorithms/algebraic_velocity.h"

namespace hilsim {

namespace {

// Zero as given: a principal moment below 1e-12 of the largest is the round-off of rotating a
// tensor with an exact zero (a thin rod, a point mass), not a light body.
bool hasSingularInertia(const Inertia& inertia) {
  if (inertia.mass == 0.0) return true;
  const Eigen::SelfAdjointEigenSolver<Matrix3> eig(inertia.inertia_com, Eigen::EigenvaluesOnly);
  const Vector3& moments = eig.eigenvalues();  // ascending
  return moments(0) <= 1e-12 * moments(2) || moments(2) == 0.0;
}

void randomConfiguration(const Model& model, std::mt19937& rng, Eigen::VectorXd& q) {
  std::uniform_real_distribution<double> angle(-3.0, 3.0), unit(-1.0, 1.0);
  q = model.neutralConfiguration();
  for (int i = 1; i < model.nbodies; ++i) {
    double* q_i = q.data() + model.idx_q[i];
    switch (model.joints[i].type) {
      case JointType::kRevolute: q_i[0] = angle(rng); break;
      case JointType::kPrismatic: q_i[0] = 0.5 * unit(rng); break;
      case JointType::kPlanar:
        q_i[0] = 0.5 * unit(rng);
        q_i[1] = 0.5 * unit(rng);
        q_i[2] = angle(rng);
        break;
      case JointType::kFreeFlyer:
        for (int k = 0; k < 3; ++k) q_i[k] = unit(rng);
        q_i += 3;
        [[fallthrough]];
      case JointType::kSpherical: {
        Eigen::Map<Eigen::Vector4d> quaternion(q_i);
        for (int k = 0; k < 4; ++k) quaternion(k) = unit(rng);
        quaternion.normalize();
        break;
      }
    }
  }
}

// Ranks of every joint's D at q by the inward sweep of seed 003 (17a) with pseudo-inverses.
void jointRanksAt(const Model& model, Data& data, const Eigen::VectorXd& q,
                  std::vector<int>& ranks) {
  for (int i = 1; i < model.nbodies; ++i) {
    detail::jointPositionStep(model, data, i, q.data());
    detail::bodyInertiaStep(model, data, i);
    data.inertia_W[i].matrix(data.P_W[i]);
  }
  // a structural zero, not a light body: below 1e-14 of the model's mass times 1 m²
  const double floor = 1e-14 * std::max(model.totalMass(), 1e-12);
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int n = model.nv_joint[i];
    const auto S = data.S_W.middleCols(model.idx_v[i], n);
    const Matrix6& P = data.P_W[i];
    const Eigen::MatrixXd U = P * S;
    Eigen::MatrixXd D = S.transpose() * U;
    D.diagonal() += model.armature.segment(model.idx_v[i], n);
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(D);
    const double largest = eig.eigenvalues()(n - 1);
    Eigen::MatrixXd D_pinv = Eigen::MatrixXd::Zero(n, n);
    int rank = 0;
    for (int c = 0; c < n; ++c) {
      const double lambda = eig.eigenvalues()(c);
      if (lambda <= floor || lambda <= 1e-10 * largest) continue;
      ++rank;
      D_pinv += eig.eigenvectors().col(c) * eig.eigenvectors().col(c).transpose() / lambda;
    }
    ranks[i] = rank;
    if (model.parent[i] > 0) data.P_W[model.parent[i]] += P - U * D_pinv * U.transpose();
  }
}

}  // namespace

void analyzeJointRanks(Model& m, double massless_armature) {
  m.singular_inertia.assign(m.nbodies, 0);
  m.joint_rank.assign(m.nv_joint.begin(), m.nv_joint.end());
  m.idx_algebraic.assign(m.nbodies, -1);
  m.nalgebraic = 0;
  int flagged = 0;
  for (int i = 1; i < m.nbodies; ++i) {
    if (m.nmodes[i] > 0 || !hasSingularInertia(m.inertias[i])) continue;
    m.singular_inertia[i] = 1;
    flagged = flagged == 0 ? i : flagged;
  }
  if (flagged == 0) return;

  Data data(m);
  Eigen::VectorXd q;
  std::vector<int> ranks(m.nbodies, 0), first(m.nbodies, 0), lowest(m.nbodies, 0),
      changed(m.nbodies, -1);
  // the same five configurations each time: the neutral one and four pseudo-random ones; per
  // joint the rank at the first, the lowest, and the rank at the first that differs (or -1)
  const auto sampleRanks = [&] {
    std::mt19937 rng(2013);
    q = m.neutralConfiguration();
    lowest = m.joint_rank;
    changed.assign(m.nbodies, -1);
    for (int sample = 0; sample < 5; ++sample) {
      if (sample > 0) randomConfiguration(m, rng, q);
      jointRanksAt(m, data, q, ranks);
      if (sample == 0) first = ranks;
      for (int i = 1; i < m.nbodies; ++i) {
        lowest[i] = std::min(lowest[i], ranks[i]);
        if (changed[i] < 0 && ranks[i] != first[i]) changed[i] = ranks[i];
      }
    }
  };
  sampleRanks();
  if (massless_armature > 0.0) {
    // every deficient joint at once: a massless parent of a massless leaf stays deficient
    // whatever the leaf gets, so one pass finds them all; the second sampling confirms it
    bool added = false;
    for (int i = 1; i < m.nbodies; ++i) {
      if (!m.singular_inertia[i] || lowest[i] == m.nv_joint[i]) continue;
      m.armature.segment(m.idx_v[i], m.nv_joint[i]).array() += massless_armature;
      std::ostringstream note;
      note << "joint '" << m.joint_names[i] << "': massless body '" << m.body_names[i]
           << "' leaves " << m.nv_joint[i] - lowest[i]
           << " direction(s) of this joint without inertia somewhere; armature "
           << massless_armature << " added to its DoFs (massless_armature)";
      m.load_warnings.push_back(note.str());
      added = true;
    }
    if (added) {
      m.packSweepData();
      sampleRanks();
    }
  }
  for (int i = 1; i < m.nbodies; ++i) {
    if (!m.singular_inertia[i] || changed[i] < 0) continue;
    throw ModelError("joint '" + m.joint_names[i] + "': the inertia its massless body '" +
                     m.body_names[i] + "' carries has rank " + std::to_string(first[i]) +
                     " at the neutral configuration and " + std::to_string(changed[i]) +
                     " elsewhere; a rank that changes with the configuration is not supported");
  }
  for (int i = 1; i < m.nbodies; ++i) {
    if (!m.singular_inertia[i] || first[i] == m.nv_joint[i]) continue;
    if (m.has_flexible_bodies)
      throw ModelError("joint '" + m.joint_names[i] + "': massless body '" + m.body_names[i] +
                       "' leaves joint motion without inertia; this is not supported in a model "
                       "with flexible bodies");
    m.joint_rank[i] = first[i];
    m.idx_algebraic[i] = m.nalgebraic;
    m.nalgebraic += m.nv_joint[i] - first[i];
  }
  if (m.nalgebraic == 0) return;

  // index 1: ∂γ/∂ζ must be regular (seed 003 §3.5), which damping on the massless motion gives
  Data check(m);
  q = m.neutralConfiguration();
  Eigen::VectorXd v = Eigen::VectorXd::Zero(m.nv), tau = Eigen::VectorXd::Zero(m.nv);
  aba(m, check, q, v, tau);
  AlgebraicVelocities algebraic(m);
  algebraic.capture(m, check);
  algebraic.newtonStep(m, check, q, v, tau, 0.0);
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(algebraic.jacobian(), Eigen::ComputeFullV);
  const Eigen::VectorXd& sigma = svd.singularValues();  // descending
  const double largest = sigma(0);
  if (sigma(m.nalgebraic - 1) > 1e-9 * largest && sigma(m.nalgebraic - 1) > 0.0) return;
  // name the joint whose massless motion dominates the undetermined direction
  int worst = 0;
  svd.matrixV().col(m.nalgebraic - 1).cwiseAbs().maxCoeff(&worst);
  for (int i = 1; i < m.nbodies; ++i) {
    const int offset = m.idx_algebraic[i];
    if (offset < 0 || worst < offset || worst >= offset + m.nv_joint[i] - m.joint_rank[i]) continue;
    throw ModelError("joint '" + m.joint_names[i] + "': massless body '" + m.body_names[i] +
                     "' leaves " + std::to_string(m.nv_joint[i] - m.joint_rank[i]) +
                     " direction(s) of this joint without inertia and without damping, so its "
                     "motion is undetermined; give the joint damping or armature, or the body "
                     "mass");
  }
}

}  // namespace hilsim
