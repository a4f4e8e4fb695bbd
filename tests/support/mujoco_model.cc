#include "tests/support/mujoco_model.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <Eigen/Geometry>

#include "engine/builder/model_builder.h"

namespace hilsim::test {

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

// ---- minimal URDF text scanning (enough to find the root link and edit one attribute) ----

/// The text with every XML comment blanked (same length, so offsets carry over to the original).
std::string withoutComments(std::string text) {
  for (std::size_t open = text.find("<!--"); open != std::string::npos;
       open = text.find("<!--", open)) {
    const std::size_t close = text.find("-->", open + 4);
    const std::size_t end = close == std::string::npos ? text.size() : close + 3;
    for (std::size_t k = open; k < end; ++k)
      if (text[k] != '\n') text[k] = ' ';
    open = end;
  }
  return text;
}

struct Tag {
  std::size_t begin = 0;  // offset of '<'
  std::size_t end = 0;    // one past '>'
  bool self_closing = false;
  std::string text;
};

/// Opening tags `<name ...>` in order (the name followed by a space, '/', or '>').
std::vector<Tag> findTags(const std::string& text, const std::string& name) {
  std::vector<Tag> tags;
  const std::string open = "<" + name;
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const std::size_t after = at + open.size();
    if (after >= text.size()) break;
    const char c = text[after];
    if (!(c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '/' || c == '>')) continue;
    const std::size_t close = text.find('>', after);
    if (close == std::string::npos) fail("URDF: unterminated <" + name + "> tag");
    Tag tag;
    tag.begin = at;
    tag.end = close + 1;
    tag.self_closing = text[close - 1] == '/';
    tag.text = text.substr(at, tag.end - at);
    tags.push_back(std::move(tag));
  }
  return tags;
}

/// Position of the value of attribute `name` in `tag` and its length; npos if absent.
std::pair<std::size_t, std::size_t> attributeSpan(const std::string& tag, const std::string& name) {
  for (std::size_t at = tag.find(name); at != std::string::npos; at = tag.find(name, at + 1)) {
    const char before = tag[at - 1];
    if (!(before == ' ' || before == '\t' || before == '\n' || before == '\r')) continue;
    std::size_t k = at + name.size();
    while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
    if (k >= tag.size() || tag[k] != '=') continue;
    ++k;
    while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
    if (k >= tag.size() || (tag[k] != '"' && tag[k] != '\'')) continue;
    const std::size_t close = tag.find(tag[k], k + 1);
    if (close == std::string::npos) fail("URDF: unterminated attribute in " + tag);
    return {k + 1, close - k - 1};
  }
  return {std::string::npos, 0};
}

std::string attribute(const std::string& tag, const std::string& name) {
  const auto [at, length] = attributeSpan(tag, name);
  return at == std::string::npos ? std::string() : tag.substr(at, length);
}

bool allZero(const std::string& numbers) {
  std::istringstream in(numbers);
  double x = 0.0;
  while (in >> x)
    if (x != 0.0) return false;
  return true;
}

/// Principal-axes inertia of MuJoCo body b, as hilsim's minimal form in the body frame.
Inertia mujocoBodyInertia(const mjModel* m, int b) {
  const mjtNum* iq = m->body_iquat + 4 * b;
  const Matrix3 r = Eigen::Quaterniond(iq[0], iq[1], iq[2], iq[3]).normalized().toRotationMatrix();
  const Vector3 principal(m->body_inertia[3 * b], m->body_inertia[3 * b + 1],
                          m->body_inertia[3 * b + 2]);
  Matrix3 i_c = r * principal.asDiagonal() * r.transpose();
  i_c = 0.5 * (i_c + i_c.transpose()).eval();
  return Inertia(m->body_mass[b], Vector3(m->body_ipos[3 * b], m->body_ipos[3 * b + 1],
                                          m->body_ipos[3 * b + 2]),
                 i_c);
}

std::string mujocoName(const mjModel* m, mjtObj type, int id) {
  const char* name = mj_id2name(m, type, id);
  return name ? std::string(name) : std::string();
}

/// MuJoCo joint that moves hilsim body i: by joint name, the free joint by type.
int matchingMujocoJoint(const Model& model, const mjModel* m, int i) {
  if (model.joints[i].type == JointType::kFreeFlyer) {
    for (int j = 0; j < m->njnt; ++j)
      if (m->jnt_type[j] == mjJNT_FREE) return j;
    return -1;
  }
  return mj_name2id(m, mjOBJ_JOINT, model.joint_names[i].c_str());
}

}  // namespace

std::string urdfForMujoco(const std::string& urdf_xml, bool floating_base, bool balance_inertia) {
  const std::string scan = withoutComments(urdf_xml);
  const std::vector<Tag> robot = findTags(scan, "robot");
  if (robot.size() != 1 || robot[0].self_closing) fail("URDF: expected one <robot> element");
  if (!findTags(scan, "mujoco").empty())
    fail("URDF: already has a <mujoco> element; merging compiler options is not supported");

  std::string text = urdf_xml;
  std::string insert;
  if (balance_inertia) insert += "<mujoco><compiler balanceinertia=\"true\"/></mujoco>";

  if (floating_base) {
    std::vector<std::string> links, children;
    for (const Tag& t : findTags(scan, "link")) links.push_back(attribute(t.text, "name"));
    for (const Tag& t : findTags(scan, "child")) children.push_back(attribute(t.text, "link"));
    std::vector<std::string> roots;
    for (const std::string& l : links)
      if (std::find(children.begin(), children.end(), l) == children.end()) roots.push_back(l);
    if (roots.size() != 1) fail("URDF: expected exactly one root link");

    if (roots[0] != "world") {
      insert += "<link name=\"hilsim_world\"/><joint name=\"hilsim_root_free\" type=\"floating\">"
                "<parent link=\"hilsim_world\"/><child link=\"" +
                roots[0] + "\"/></joint>";
    } else {
      // the joints out of "world": exactly one, at the identity, becomes the free joint
      const std::vector<Tag> joints = findTags(scan, "joint");
      const Tag* from_world = nullptr;
      for (const Tag& j : joints) {
        if (j.self_closing) continue;
        const std::size_t close = scan.find("</joint>", j.end);
        if (close == std::string::npos) fail("URDF: unterminated <joint>");
        const std::string body = scan.substr(j.end, close - j.end);
        const std::vector<Tag> parent = findTags(body, "parent");
        if (parent.empty() || attribute(parent[0].text, "link") != "world") continue;
        if (from_world) fail("URDF: more than one joint out of the 'world' link");
        for (const Tag& o : findTags(body, "origin"))
          if (!allZero(attribute(o.text, "xyz")) || !allZero(attribute(o.text, "rpy")))
            fail("URDF: the joint out of 'world' must be at the identity for a floating base");
        from_world = &j;
      }
      if (!from_world) fail("URDF: no joint out of the 'world' link");
      const auto [at, length] = attributeSpan(from_world->text, "type");
      if (at == std::string::npos) fail("URDF: joint out of 'world' has no type");
      text.replace(from_world->begin + at, length, "floating");
    }
  }
  text.insert(robot[0].end, insert);
  return text;
}

MujocoModel::MujocoModel(const std::string& urdf_path, bool floating_base) {
  std::ifstream in(urdf_path);
  if (!in) fail("cannot read " + urdf_path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string original = buffer.str();

  // mjVFS holds 2000 file names of 1000 characters: too big for the stack
  auto vfs = std::make_unique<mjVFS>();
  std::string error;
  for (const bool balance : {false, true}) {
    const std::string text = urdfForMujoco(original, floating_base, balance);
    mj_defaultVFS(vfs.get());
    const char* name = "model.urdf";
    if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(text.size())) != 0)
      fail("MuJoCo VFS: cannot add " + urdf_path);
    std::copy(text.begin(), text.end(), static_cast<char*>(vfs->filedata[0]));
    std::array<char, 1000> message{};
    m_ = mj_loadXML(name, vfs.get(), message.data(), static_cast<int>(message.size()));
    mj_deleteVFS(vfs.get());
    if (m_) {
      balanced_inertia_ = balance;
      break;
    }
    error = message.data();
    if (error.find("balanceinertia") == std::string::npos) break;
  }
  if (!m_) fail("MuJoCo cannot load " + urdf_path + ": " + error);
  m_->opt.disableflags |= kMujocoSmoothDynamicsOnly;
  d_ = mj_makeData(m_);
  if (!d_) {
    mj_deleteModel(m_);
    fail("MuJoCo: mj_makeData failed for " + urdf_path);
  }
}

MujocoModel::MujocoModel(const Mjcf& mjcf) {
  auto vfs = std::make_unique<mjVFS>();
  mj_defaultVFS(vfs.get());
  const char* name = "model.xml";
  if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(mjcf.xml.size())) != 0)
    fail("MuJoCo VFS: cannot add the MJCF text");
  std::copy(mjcf.xml.begin(), mjcf.xml.end(), static_cast<char*>(vfs->filedata[0]));
  std::array<char, 1000> message{};
  m_ = mj_loadXML(name, vfs.get(), message.data(), static_cast<int>(message.size()));
  mj_deleteVFS(vfs.get());
  if (!m_) fail(std::string("MuJoCo cannot load the MJCF text: ") + message.data());
  if (!mjcf.contacts) m_->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  d_ = mj_makeData(m_);
  if (!d_) {
    mj_deleteModel(m_);
    fail("MuJoCo: mj_makeData failed for the MJCF text");
  }
}

MujocoModel::~MujocoModel() {
  if (d_) mj_deleteData(d_);
  if (m_) mj_deleteModel(m_);
}

void CoordinateMap::setMujocoState(const mjModel* m, mjData* d, const Eigen::VectorXd& q_hilsim,
                                   const Eigen::VectorXd& v_hilsim,
                                   const Eigen::VectorXd& tau_hilsim) const {
  for (std::size_t k = 0; k < q.size(); ++k) d->qpos[q[k]] = q_hilsim(static_cast<int>(k));
  for (std::size_t k = 0; k < v.size(); ++k) {
    d->qvel[v[k]] = v_hilsim(static_cast<int>(k));
    d->qfrc_applied[v[k]] = tau_hilsim(static_cast<int>(k));
  }
  mju_zero(d->xfrc_applied, 6 * m->nbody);
  if (m->nu > 0) mju_zero(d->ctrl, m->nu);
}

Eigen::VectorXd CoordinateMap::dofVector(const mjtNum* mujoco_vector) const {
  Eigen::VectorXd out(static_cast<int>(v.size()));
  for (std::size_t k = 0; k < v.size(); ++k) out(static_cast<int>(k)) = mujoco_vector[v[k]];
  return out;
}

Eigen::MatrixXd CoordinateMap::dofMatrix(const mjtNum* mujoco_full_matrix) const {
  const int n = static_cast<int>(v.size());
  Eigen::MatrixXd out(n, n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) out(r, c) = mujoco_full_matrix[v[r] * n + v[c]];
  return out;
}

CoordinateMap mapCoordinates(const Model& model, const mjModel* m) {
  if (model.nq != m->nq || model.nv != m->nv)
    fail("hilsim model '" + model.name + "' has nq " + std::to_string(model.nq) + ", nv " +
         std::to_string(model.nv) + "; MuJoCo has nq " + std::to_string(m->nq) + ", nv " +
         std::to_string(m->nv));
  CoordinateMap map;
  map.q.assign(model.nq, -1);
  map.v.assign(model.nv, -1);
  std::vector<bool> used(m->njnt, false);
  for (int i = 1; i < model.nbodies; ++i) {
    const int j = matchingMujocoJoint(model, m, i);
    if (j < 0) fail("joint '" + model.joint_names[i] + "' has no MuJoCo counterpart");
    if (used[j]) fail("joint '" + model.joint_names[i] + "' matched twice");
    used[j] = true;
    int expected = -1;
    switch (model.joints[i].type) {
      case JointType::kRevolute: expected = mjJNT_HINGE; break;
      case JointType::kPrismatic: expected = mjJNT_SLIDE; break;
      case JointType::kSpherical: expected = mjJNT_BALL; break;
      case JointType::kFreeFlyer: expected = mjJNT_FREE; break;
      case JointType::kPlanar: break;
    }
    if (m->jnt_type[j] != expected)
      fail("joint '" + model.joint_names[i] + "' has a different type in MuJoCo");
    for (int k = 0; k < model.nq_joint[i]; ++k) map.q[model.idx_q[i] + k] = m->jnt_qposadr[j] + k;
    for (int k = 0; k < model.nv_joint[i]; ++k) map.v[model.idx_v[i] + k] = m->jnt_dofadr[j] + k;
  }
  return map;
}

Model modelFromMujoco(const mjModel* m) {
  // the model's name is the first entry of MuJoCo's name buffer
  ModelBuilder builder(m->names[0] != '\0' ? std::string(m->names) : std::string("mujoco"));
  builder.setGravity(Vector3(m->opt.gravity[0], m->opt.gravity[1], m->opt.gravity[2]));
  for (int b = 1; b < m->nbody; ++b) {
    BodySpec body;
    body.name = mujocoName(m, mjOBJ_BODY, b);
    if (body.name.empty()) body.name = "body" + std::to_string(b);
    const int parent = m->body_parentid[b];
    body.parent = parent == 0 ? std::string("world") : mujocoName(m, mjOBJ_BODY, parent);
    const mjtNum* bq = m->body_quat + 4 * b;
    body.placement = Transform(
        Eigen::Quaterniond(bq[0], bq[1], bq[2], bq[3]).normalized().toRotationMatrix(),
        Vector3(m->body_pos[3 * b], m->body_pos[3 * b + 1], m->body_pos[3 * b + 2]));
    body.inertia = mujocoBodyInertia(m, b);
    if (m->body_jntnum[b] > 1) fail("MuJoCo body '" + body.name + "' has several joints");
    if (m->body_jntnum[b] == 1) {
      const int j = m->body_jntadr[b];
      body.joint_name = mujocoName(m, mjOBJ_JOINT, j);
      const mjtNum* p = m->jnt_pos + 3 * j;
      if (p[0] != 0.0 || p[1] != 0.0 || p[2] != 0.0)
        fail("MuJoCo joint '" + body.joint_name + "' is not at its body's origin");
      const Vector3 axis =
          Vector3(m->jnt_axis[3 * j], m->jnt_axis[3 * j + 1], m->jnt_axis[3 * j + 2]).normalized();
      const int dof = m->jnt_dofadr[j];
      switch (m->jnt_type[j]) {
        case mjJNT_FREE:
          if (parent != 0) fail("MuJoCo free joint '" + body.joint_name + "' is not at the root");
          body.joint = Joint::freeFlyer();
          body.placement = Transform();  // qpos is the pose in the world
          break;
        case mjJNT_BALL: body.joint = Joint::spherical(); break;
        case mjJNT_SLIDE: body.joint = Joint::prismatic(axis); break;
        case mjJNT_HINGE: body.joint = Joint::revolute(axis); break;
        default: fail("MuJoCo joint '" + body.joint_name + "' has an unknown type");
      }
      if ((m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE) &&
          m->qpos0[m->jnt_qposadr[j]] != 0.0)
        fail("MuJoCo joint '" + body.joint_name + "' has a non-zero reference position");
      body.properties.damping = m->dof_damping[dof];
      body.properties.armature = m->dof_armature[dof];
      if (m->jnt_limited[j] &&
          (m->jnt_type[j] == mjJNT_HINGE || m->jnt_type[j] == mjJNT_SLIDE)) {
        body.properties.lower = m->jnt_range[2 * j];
        body.properties.upper = m->jnt_range[2 * j + 1];
      }
    }
    builder.addBody(std::move(body));
  }
  return builder.build();
}

double useMujocoInertias(const mjModel* m, Model& model) {
  double largest_change = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    int b = -1;
    if (const int j = matchingMujocoJoint(model, m, i); j >= 0) b = m->jnt_bodyid[j];
    if (b < 0) b = mj_name2id(m, mjOBJ_BODY, model.body_names[i].c_str());
    if (b < 0) fail("body '" + model.body_names[i] + "' has no MuJoCo counterpart");
    const Inertia mj = mujocoBodyInertia(m, b);
    Inertia& h = model.inertias[i];
    const double scale = std::max(h.inertia_com.cwiseAbs().maxCoeff(), 1e-300);
    largest_change =
        std::max(largest_change, (mj.inertia_com - h.inertia_com).cwiseAbs().maxCoeff() / scale);
    h = mj;
  }
  return largest_change;
}

std::string mjcfWithLoops(const Model& model, const Eigen::VectorXd& q_assembled, double timestep,
                          const std::string& solref) {
  const auto numbers = [](const auto& v) {
    std::ostringstream out;
    out.precision(17);
    for (Eigen::Index k = 0; k < v.size(); ++k) out << (k > 0 ? " " : "") << v[k];
    return out.str();
  };
  std::ostringstream xml;
  xml.precision(17);
  xml << "<mujoco>\n<compiler angle=\"radian\"/>\n<option gravity=\"" << numbers(model.gravity)
      << "\" timestep=\"" << timestep << "\" integrator=\"RK4\"/>\n<worldbody>\n";
  // bodies nest as the tree; parent[i] < i, so a child follows its parent's open tag
  std::vector<int> open;
  for (int i = 1; i < model.nbodies; ++i) {
    if (model.joints[i].type != JointType::kRevolute)
      fail("mjcfWithLoops: joint '" + model.joint_names[i] + "' is not revolute");
    while (!open.empty() && open.back() != model.parent[i]) {
      xml << "</body>\n";
      open.pop_back();
    }
    const double angle = q_assembled[model.idx_q[i]];
    const Vector3& axis = model.joints[i].axis;
    const Eigen::Quaterniond rotation(model.joint_placement[i].rotation *
                                      Eigen::AngleAxisd(angle, axis).toRotationMatrix());
    const Inertia& inertia = model.inertias[i];
    const Matrix3& I = inertia.inertia_com;
    xml << "<body name=\"" << model.body_names[i] << "\" pos=\""
        << numbers(model.joint_placement[i].translation) << "\" quat=\"" << rotation.w() << " "
        << rotation.x() << " " << rotation.y() << " " << rotation.z() << "\">\n"
        << "<joint name=\"" << model.joint_names[i] << "\" type=\"hinge\" axis=\"" << numbers(axis)
        << "\" ref=\"" << angle << "\" damping=\"" << model.damping[model.idx_v[i]] << "\"/>\n"
        << "<inertial pos=\"" << numbers(inertia.com) << "\" mass=\"" << inertia.mass
        << "\" fullinertia=\"" << I(0, 0) << " " << I(1, 1) << " " << I(2, 2) << " " << I(0, 1)
        << " " << I(0, 2) << " " << I(1, 2) << "\"/>\n";
    open.push_back(i);
  }
  for (std::size_t k = 0; k < open.size(); ++k) xml << "</body>\n";
  xml << "</worldbody>\n<equality>\n";
  for (const LoopClosure& c : model.loops) {
    if (c.type != ClosureType::kBall && c.type != ClosureType::kRevolute)
      fail("mjcfWithLoops: loop '" + c.name + "' is neither ball nor revolute");
    if (c.body_a == 0) fail("mjcfWithLoops: loop '" + c.name + "' must start on a body");
    xml << "<connect body1=\"" << model.body_names[c.body_a] << "\" body2=\""
        << model.body_names[c.body_b] << "\" anchor=\"" << numbers(c.frame_a.translation)
        << "\" solref=\"" << solref << "\"/>\n";
  }
  xml << "</equality>\n</mujoco>\n";
  return xml.str();
}

std::string mjcfWithContacts(const Model& model, double timestep, const std::string& integrator) {
  const auto numbers = [](const auto& v) {
    std::ostringstream out;
    out.precision(17);
    for (Eigen::Index k = 0; k < v.size(); ++k) out << (k > 0 ? " " : "") << v[k];
    return out.str();
  };
  if (model.nbodies < 2 || model.joints[1].type != JointType::kFreeFlyer)
    fail("mjcfWithContacts: body 1 must be the free-floating base");
  const ConstraintSoftness& soft = model.contact_settings.contact;
  std::ostringstream contact;
  contact.precision(17);
  contact << "friction=\"" << model.ground.friction << " 0 0\" solref=\"" << soft.time_constant << " "
          << soft.damping_ratio << "\" solimp=\"" << soft.impedance << " " << soft.impedance
          << " 0.001 0.5 2\" condim=\"3\"";
  std::ostringstream xml;
  xml.precision(17);
  xml << "<mujoco>\n<compiler angle=\"radian\"/>\n<option gravity=\"" << numbers(model.gravity)
      << "\" timestep=\"" << timestep << "\" integrator=\"" << integrator
      << "\" cone=\"elliptic\"/>\n<worldbody>\n<geom name=\"ground\" type=\"plane\" size=\"0 0 1\" "
      << "pos=\"0 0 " << model.ground.height << "\" " << contact.str() << "/>\n";
  // bodies nest as the tree; parent[i] < i, so a child follows its parent's open tag
  std::vector<int> open;
  for (int i = 1; i < model.nbodies; ++i) {
    const JointType type = model.joints[i].type;
    if (i > 1 && type != JointType::kRevolute)
      fail("mjcfWithContacts: joint '" + model.joint_names[i] + "' is not revolute");
    for (int d = model.idx_v[i]; d < model.idx_v[i] + model.nv_joint[i]; ++d)
      if (model.limitEnforced(d))
        fail("mjcfWithContacts: joint '" + model.joint_names[i] + "' has enforced limits");
    while (!open.empty() && open.back() != model.parent[i]) {
      xml << "</body>\n";
      open.pop_back();
    }
    const Eigen::Quaterniond rotation(model.joint_placement[i].rotation);
    const Inertia& inertia = model.inertias[i];
    const Matrix3& I = inertia.inertia_com;
    xml << "<body name=\"" << model.body_names[i] << "\" pos=\""
        << numbers(model.joint_placement[i].translation) << "\" quat=\"" << rotation.w() << " "
        << rotation.x() << " " << rotation.y() << " " << rotation.z() << "\">\n";
    if (type == JointType::kFreeFlyer)
      xml << "<freejoint name=\"" << model.joint_names[i] << "\"/>\n";
    else
      xml << "<joint name=\"" << model.joint_names[i] << "\" type=\"hinge\" axis=\""
          << numbers(model.joints[i].axis) << "\" damping=\"" << model.damping[model.idx_v[i]]
          << "\" armature=\"" << model.armature[model.idx_v[i]] << "\"/>\n";
    xml << "<inertial pos=\"" << numbers(inertia.com) << "\" mass=\"" << inertia.mass
        << "\" fullinertia=\"" << I(0, 0) << " " << I(1, 1) << " " << I(2, 2) << " " << I(0, 1)
        << " " << I(0, 2) << " " << I(1, 2) << "\"/>\n";
    for (const ContactSphere& sphere : model.contact_spheres)
      if (sphere.body == i)
        xml << "<geom name=\"" << sphere.name << "\" type=\"sphere\" size=\"" << sphere.radius
            << "\" pos=\"" << numbers(sphere.center) << "\" " << contact.str() << "/>\n";
    open.push_back(i);
  }
  for (std::size_t k = 0; k < open.size(); ++k) xml << "</body>\n";
  xml << "</worldbody>\n</mujoco>\n";
  return xml.str();
}

}  // namespace hilsim::test
