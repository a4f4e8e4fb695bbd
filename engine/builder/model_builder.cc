#include "engine/builder/model_builder.h"

#include <cmath>
#include <unordered_map>

#include "engine/algorithms/joint_rank.h"
#include "engine/model/names.h"

namespace hilsim {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ModelError(what); }

bool isRotation(const Matrix3& r) {
  return r.allFinite() && (r * r.transpose() - Matrix3::Identity()).cwiseAbs().maxCoeff() < 1e-9 &&
         r.determinant() > 0.0;
}

void checkBody(const BodySpec& b) {
  const std::string who = "body '" + b.name + "'";
  if (!b.placement.translation.allFinite() || !isRotation(b.placement.rotation))
    fail(who + ": joint placement must be a finite rigid transform");
  if (b.flexible) {
    if (!b.joint) fail(who + ": a flexible body needs a moving joint");
    if (const std::string why = b.flexible->validate(); !why.empty()) fail(who + ": " + why);
  } else if (const std::string why = b.inertia_as_given ? b.inertia.validateDefinite()
                                                         : b.inertia.validate();
             !why.empty()) {
    fail(who + ": " + why);
  }
  if (!b.joint) return;
  const std::string joint = "joint '" + (b.joint_name.empty() ? b.name : b.joint_name) + "'";
  const Vector3& axis = b.joint->axis;
  if (!axis.allFinite() || std::abs(axis.norm() - 1.0) > 1e-9)
    fail(joint + ": axis must be a finite non-zero vector");
  const JointProperties& p = b.properties;
  if (!(p.damping >= 0.0) || !std::isfinite(p.damping))
    fail(joint + ": damping must be finite and >= 0");
  if (!(p.armature >= 0.0) || !std::isfinite(p.armature))
    fail(joint + ": armature must be finite and >= 0");
  if (!(p.stiffness >= 0.0) || !std::isfinite(p.stiffness) || !std::isfinite(p.spring_reference))
    fail(joint + ": stiffness must be finite and >= 0, spring reference finite");
  if (p.stiffness > 0.0 && b.joint->nv() != 1)
    fail(joint + ": a joint spring needs a revolute or prismatic joint");
  if (std::isnan(p.lower) || std::isnan(p.upper) || p.lower > p.upper)
    fail(joint + ": lower limit must not exceed upper limit");
  if (std::isnan(p.velocity) || p.velocity < 0.0 || std::isnan(p.effort) || p.effort < 0.0)
    fail(joint + ": velocity and effort limits must be >= 0");
  if (!(p.friction >= 0.0) || !std::isfinite(p.friction))
    fail(joint + ": friction must be finite and >= 0");
  if (p.friction > 0.0 && b.joint->nv() != 1)
    fail(joint + ": joint friction needs a revolute or prismatic joint");
}

}  // namespace

ModelBuilder& ModelBuilder::addBody(const std::string& name, const std::string& parent,
                                    const Joint& joint, const Transform& placement,
                                    const Inertia& inertia, const JointProperties& properties) {
  BodySpec b;
  b.name = name;
  b.parent = parent;
  b.joint = joint;
  b.placement = placement;
  b.inertia = inertia;
  b.properties = properties;
  return addBody(std::move(b));
}

ModelBuilder& ModelBuilder::addFixedBody(const std::string& name, const std::string& parent,
                                         const Transform& placement, const Inertia& inertia) {
  BodySpec b;
  b.name = name;
  b.parent = parent;
  b.placement = placement;
  b.inertia = inertia;
  return addBody(std::move(b));
}

Model ModelBuilder::build() const {
  const int n = static_cast<int>(bodies_.size());
  if (!gravity_.allFinite()) fail("gravity must be finite");
  // names reach the wire contract, logs and metrics: checked before any is quoted
  if (const std::string why = nameProblem(name_); !why.empty()) fail("model name: " + why);
  for (int k = 0; k < n; ++k) {
    const BodySpec& b = bodies_[k];
    if (b.name.empty()) fail("body #" + std::to_string(k) + " has no name");
    if (const std::string why = nameProblem(b.name); !why.empty())
      fail("body #" + std::to_string(k) + ": " + why);
    if (b.joint_name.empty()) continue;
    if (const std::string why = nameProblem(b.joint_name); !why.empty())
      fail("body #" + std::to_string(k) + ": joint " + why);
  }

  // names and parents
  std::unordered_map<std::string, int> index;
  for (int k = 0; k < n; ++k) {
    const BodySpec& b = bodies_[k];
    if (b.name == "world") fail("body name 'world' is reserved for the ground");
    if (!index.emplace(b.name, k).second) fail("duplicate body name '" + b.name + "'");
  }
  std::vector<std::vector<int>> children(n + 1);  // slot n: children of the world
  for (int k = 0; k < n; ++k) {
    const BodySpec& b = bodies_[k];
    if (b.parent == "world") {
      children[n].push_back(k);
      continue;
    }
    const auto it = index.find(b.parent);
    if (it == index.end())
      fail("body '" + b.name + "': parent '" + b.parent + "' does not exist");
    if (it->second == k) fail("body '" + b.name + "' is its own parent");
    children[it->second].push_back(k);
  }
  {
    std::unordered_map<std::string, int> joint_index;
    for (int k = 0; k < n; ++k) {
      if (!bodies_[k].joint) continue;
      const std::string jn = bodies_[k].joint_name.empty() ? bodies_[k].name : bodies_[k].joint_name;
      if (!joint_index.emplace(jn, k).second) fail("duplicate joint name '" + jn + "'");
    }
  }

  // depth-first order from the world: parents before children, subtrees contiguous
  std::vector<int> order;
  order.reserve(n);
  std::vector<int> stack(children[n].rbegin(), children[n].rend());
  while (!stack.empty()) {
    const int k = stack.back();
    stack.pop_back();
    order.push_back(k);
    for (auto it = children[k].rbegin(); it != children[k].rend(); ++it) stack.push_back(*it);
  }
  if (static_cast<int>(order.size()) != n) {
    std::vector<bool> seen(n, false);
    for (int k : order) seen[k] = true;
    for (int k = 0; k < n; ++k)
      if (!seen[k]) fail("body '" + bodies_[k].name + "' is part of a cycle (never reaches 'world')");
  }

  Model m;
  m.name = name_;
  m.gravity = gravity_;
  m.body_names = {"world"};
  m.joint_names = {""};
  m.parent = {-1};
  m.joints = {Joint()};
  m.joint_placement = {Transform()};
  m.inertias = {Inertia()};
  m.idx_q = {0};
  m.idx_v = {0};
  m.nq_joint = {0};
  m.nv_joint = {0};
  m.frames = {Frame{"world", 0, Transform()}};
  m.nmodes = {0};
  m.flexible = {FlexibleBody()};
  m.parent_node = {-1};
  std::vector<JointProperties> properties = {JointProperties()};

  // where each spec body ended up: its host (moving) body and its pose in the host frame
  std::vector<int> host(n, 0);
  std::vector<Transform> x_host_body(n);
  for (int k : order) {
    const BodySpec& b = bodies_[k];
    checkBody(b);
    const int parent_spec = b.parent == "world" ? -1 : index.at(b.parent);
    const int parent_host = parent_spec < 0 ? 0 : host[parent_spec];
    const Transform x_host_parent = parent_spec < 0 ? Transform() : x_host_body[parent_spec];
    int parent_node = -1;
    if (!b.parent_node.empty()) {
      if (parent_host == 0 || m.nmodes[parent_host] == 0 || parent_spec < 0 ||
          x_host_body[parent_spec].rotation != Matrix3::Identity() ||
          !x_host_body[parent_spec].translation.isZero(0.0))
        fail("body '" + b.name + "': parent node '" + b.parent_node + "' given, but parent '" +
             b.parent + "' is not a flexible body");
      parent_node = m.flexible[parent_host].nodeIndex(b.parent_node);
      if (parent_node < 0)
        fail("body '" + b.name + "': parent '" + b.parent + "' has no node '" + b.parent_node + "'");
    }
    if (!b.joint) {
      if (parent_host > 0 && m.nmodes[parent_host] > 0 && b.inertia.mass != 0.0)
        fail("body '" + b.name + "': welded to flexible body '" + m.body_names[parent_host] +
             "' with mass; attach it by a joint or include its mass in the modal data");
      if (parent_node >= 0)
        fail("body '" + b.name + "': a welded body cannot attach to a node");
      host[k] = parent_host;
      x_host_body[k] = x_host_parent * b.placement;
      if (parent_host > 0) m.inertias[parent_host] = m.inertias[parent_host] + b.inertia.transformed(x_host_body[k]);
      m.frames.push_back(Frame{b.name, parent_host, x_host_body[k]});
      continue;
    }
    if (b.joint->type == JointType::kFreeFlyer && parent_host != 0)
      fail("joint '" + (b.joint_name.empty() ? b.name : b.joint_name) +
           "': a free joint must attach its body to the world");
    const int i = m.nbodies++;
    host[k] = i;
    x_host_body[k] = Transform();
    m.body_names.push_back(b.name);
    m.joint_names.push_back(b.joint_name.empty() ? b.name : b.joint_name);
    m.parent.push_back(parent_host);
    m.joints.push_back(*b.joint);
    m.joint_placement.push_back(x_host_parent * b.placement);
    m.inertias.push_back(b.flexible ? b.flexible->rigidInertia() : b.inertia);
    m.idx_q.push_back(m.nq);
    m.idx_v.push_back(m.nv);
    m.nq_joint.push_back(b.joint->nq());
    m.nv_joint.push_back(b.joint->nv());
    const int modes = b.flexible ? b.flexible->nmodes : 0;
    m.nmodes.push_back(modes);
    m.flexible.push_back(b.flexible ? *b.flexible : FlexibleBody());
    m.parent_node.push_back(parent_node);
    m.has_flexible_bodies = m.has_flexible_bodies || modes > 0;
    m.nq += b.joint->nq() + modes;
    m.nv += b.joint->nv() + modes;
    m.frames.push_back(Frame{b.name, i, Transform()});
    properties.push_back(b.properties);
  }

  m.dof_parent.assign(m.nv, -1);
  m.dof_body.assign(m.nv, 0);
  m.damping.resize(m.nv);
  m.armature.resize(m.nv);
  m.stiffness.resize(m.nv);
  m.spring_reference.resize(m.nv);
  m.lower_limit.resize(m.nv);
  m.upper_limit.resize(m.nv);
  m.velocity_limit.resize(m.nv);
  m.effort_limit.resize(m.nv);
  m.friction.resize(m.nv);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int i = 1; i < m.nbodies; ++i) {
    const JointProperties& p = properties[i];
    const int parent = m.parent[i];
    // the dofs of body i form a chain (joint, then modes) hanging from the last dof of its parent
    const int n_i = m.nv_joint[i] + m.nmodes[i];
    const int parent_last = parent > 0 ? m.idx_v[parent] + m.nv_joint[parent] + m.nmodes[parent] - 1 : -1;
    for (int k = 0; k < n_i; ++k) {
      const int d = m.idx_v[i] + k;
      const bool modal = k >= m.nv_joint[i];
      m.dof_body[d] = i;
      m.dof_parent[d] = k > 0 ? d - 1 : parent_last;
      // modal damping is the matrix C of the flexible body, not a per-dof coefficient
      m.damping[d] = modal ? 0.0 : p.damping;
      m.armature[d] = modal ? 0.0 : p.armature;
      m.stiffness[d] = modal ? 0.0 : p.stiffness;
      m.spring_reference[d] = modal ? 0.0 : p.spring_reference;
      const bool one_dof = !modal && m.nv_joint[i] == 1;
      m.lower_limit[d] = one_dof ? p.lower : -kInf;
      m.upper_limit[d] = one_dof ? p.upper : kInf;
      m.velocity_limit[d] = modal ? kInf : p.velocity;
      m.effort_limit[d] = modal ? kInf : p.effort;
      m.friction[d] = one_dof ? p.friction : 0.0;
    }
  }
  m.packSweepData();
  analyzeJointRanks(m, massless_armature_);
  // the constraint stage's operators need a model of full joint rank (docs/CONTACT.md)
  m.limits_enforced = m.nalgebraic == 0;
  if (!m.limits_enforced)
    for (int d = 0; d < m.nv; ++d)
      if (m.friction[d] > 0.0)
        throw ModelError("joint '" + m.joint_names[m.dof_body[d]] +
                         "': joint friction on a model with massless joint motion is not "
                         "supported yet");
  m.initial_configuration = m.neutralConfiguration();
  return m;
}

}  // namespace hilsim
