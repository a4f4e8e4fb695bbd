#include "engine/model/model.h"

namespace hilsim {

namespace {
int indexOf(const std::vector<std::string>& names, const std::string& name, int first) {
  for (int i = first; i < static_cast<int>(names.size()); ++i)
    if (names[i] == name) return i;
  return -1;
}
}  // namespace

int Model::bodyIndex(const std::string& body_name) const {
  return indexOf(body_names, body_name, 0);
}

int Model::jointIndex(const std::string& joint_name) const {
  return indexOf(joint_names, joint_name, 1);
}

int Model::frameIndex(const std::string& frame_name) const {
  for (int i = 0; i < static_cast<int>(frames.size()); ++i)
    if (frames[i].name == frame_name) return i;
  return -1;
}

void Model::packSweepData() {
  joint_type.clear();
  for (const Joint& joint : joints) joint_type.push_back(joint.type);

  // R_PJ R_J(θ) with R_J = cos θ 1 + sin θ [a]× + (1 − cos θ) a aᵀ; a prismatic joint's is R_PJ
  axial_joint_terms.assign(nbodies, AxialJointTerms());
  for (int i = 1; i < nbodies; ++i) {
    const JointType type = joints[i].type;
    if (type != JointType::kRevolute && type != JointType::kPrismatic) continue;
    const Matrix3& r_pj = joint_placement[i].rotation;
    const Vector3& a = joints[i].axis;
    AxialJointTerms& t = axial_joint_terms[i];
    t.axis_parent = r_pj * a;
    t.origin_parent = joint_placement[i].translation;
    if (type == JointType::kPrismatic) {
      t.k0 = r_pj;
      continue;
    }
    t.k0 = t.axis_parent * a.transpose();
    t.k_cos = r_pj - t.k0;
    t.k_sin = r_pj * skew(a);
  }
  dof_parameters.resize(nv);
  for (int d = 0; d < nv; ++d)
    dof_parameters[d] = {armature[d], damping[d], stiffness[d], spring_reference[d]};
}

Eigen::VectorXd Model::neutralConfiguration() const {
  Eigen::VectorXd q(nq);
  for (int i = 1; i < nbodies; ++i) {
    jointNeutral(joints[i], q.data() + idx_q[i]);
    q.segment(idxModesQ(i), nmodes[i]).setZero();
  }
  return q;
}

int Model::constraintRowCapacity() const {
  int rows = nconstraints;
  for (int d = 0; d < nv; ++d) rows += (limitEnforced(d) ? 1 : 0) + (friction[d] > 0.0 ? 1 : 0);
  if (ground.enabled) rows += 3 * static_cast<int>(contact_spheres.size());
  return rows;
}

double Model::totalMass() const {
  double m = 0.0;
  for (int i = 1; i < nbodies; ++i) m += inertias[i].mass;
  return m;
}

std::vector<std::string> coordinateLabels(const Model& model, bool velocity) {
  std::vector<std::string> labels;
  labels.reserve(static_cast<std::size_t>(velocity ? model.nv : model.nq));
  for (int i = 1; i < model.nbodies; ++i) {
    const int n = velocity ? model.nv_joint[i] : model.nq_joint[i];
    const std::string& name = model.joint_names[i];
    if (n == 1) {
      labels.push_back(name);
    } else {
      for (int k = 0; k < n; ++k) labels.push_back(name + "_" + std::to_string(k));
    }
    for (int k = 0; k < model.nmodes[i]; ++k)
      labels.push_back(model.body_names[i] + "_mode_" + std::to_string(k));
  }
  return labels;
}

}  // namespace hilsim
