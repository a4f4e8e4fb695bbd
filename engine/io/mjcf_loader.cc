// MJCF → Model. MuJoCo's own compiler (libmujoco 2.2.2) parses and compiles the file, defaults,
// units and all, into an mjModel; the compiled arrays are then read here into a ModelBuilder. What
// hilsim cannot represent is refused or named in Model::load_warnings, never dropped unsaid
// (docs/MODEL_FORMAT.md, "MJCF").
//
// The text is checked before MuJoCo sees it (precheck): MuJoCo opens <include> and asset files
// from disk even when it is given a virtual file system, its compiler allocates what some counts
// ask (a texture's width × height, <size nkey>) without a bound, its convex hull library (qhull)
// writes errors to stderr, and it parses with the same tinyxml2 whose attribute lookup is
// quadratic.
#include <mujoco/mujoco.h>
#include <tinyxml2.h>

#include <Eigen/Geometry>
#include <array>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"

namespace hilsim {

namespace {

using io_detail::printable;

// mj_loadXML swaps MuJoCo's global error and warning handlers while it compiles: one load at a
// time in this process.
std::mutex& mujocoLoadMutex() {
  static std::mutex mutex;
  return mutex;
}

// MuJoCo's parser warns outside its compiler's handlers ("XML contains a 'NaN'"), through
// mju_user_warning, whose default prints to stdout (the server's log): while a load holds the
// mutex, warnings are gathered here instead, and an error (whose default handler exits the
// process) becomes an exception.
std::string& mujocoWarnings() {
  static std::string warnings;
  return warnings;
}
void gatherWarning(const char* message) {
  mujocoWarnings() += (mujocoWarnings().empty() ? "" : "; ") + std::string(message);
}
void throwError(const char* message) { throw ModelError(std::string("MuJoCo: ") + message); }

class MujocoHandlers {
 public:
  MujocoHandlers() : warning_(mju_user_warning), error_(mju_user_error) {
    mujocoWarnings().clear();
    mju_user_warning = gatherWarning;
    mju_user_error = throwError;
  }
  ~MujocoHandlers() {
    mju_user_warning = warning_;
    mju_user_error = error_;
  }
  MujocoHandlers(const MujocoHandlers&) = delete;
  MujocoHandlers& operator=(const MujocoHandlers&) = delete;

 private:
  void (*warning_)(const char*);
  void (*error_)(const char*);
};

// Largest count the precheck lets through for what MuJoCo's compiler allocates per unit without
// a bound of its own: texture and height-field sides, <size nkey>/<size nuser_*>, <numeric size>.
constexpr double kMaxTextureSide = 4096;
constexpr double kMaxHfieldSide = 4096;
// ... and their area: a cube texture holds six faces of 3 bytes per pixel, 75 MB at this bound
// (a 512 × 3072 skybox, as MuJoCo's examples have, is 1.6 M pixels)
constexpr double kMaxGridArea = 1 << 22;
constexpr double kMaxSizeCount = 10000;
constexpr double kMaxNumericSize = 100000;

// --- before MuJoCo: the text ---

class Precheck {
 public:
  Precheck(const std::string& source, const ModelLimits& limits, bool text_only)
      : source_(source), limits_(limits), text_only_(text_only) {}

  void run(const std::string& xml) {
    io_detail::checkXmlShape(xml, limits_.max_text_bytes, source_);
    tinyxml2::XMLDocument document;
    if (document.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
      const int line = document.ErrorLineNum();
      throw ModelError(source_ + (line > 0 ? ":" + std::to_string(line) : "") +
                       ": malformed XML (" + document.ErrorName() + ")");
    }
    const tinyxml2::XMLElement* root = document.RootElement();
    if (root == nullptr || std::string_view(root->Name()) != "mujoco")
      fail(root, "the root element must be <mujoco> (an MJCF model)");
    // tinyxml2 bounds the depth (TINYXML2_MAX_ELEMENT_DEPTH), so the recursion is bounded too
    visit(*root);
    if (bodies_ > limits_.max_bodies)
      fail(root, std::to_string(bodies_) + " bodies, more than the limit of " +
                     std::to_string(limits_.max_bodies));
    if (joints_ > limits_.max_dofs)
      fail(root, std::to_string(joints_) + " joints, more than the limit of " +
                     std::to_string(limits_.max_dofs) + " degrees of freedom");
  }

 private:
  [[noreturn]] void fail(const tinyxml2::XMLElement* e, const std::string& what) const {
    std::string message = source_;
    if (e != nullptr) message += ":" + std::to_string(e->GetLineNum()) + ": <" +
                                 printable(e->Name()) + ">";
    throw ModelError(message + ": " + what);
  }

  // A count attribute above `bound` (not a number: MuJoCo's compiler says so itself).
  // Returns the value (0 when absent).
  double bounded(const tinyxml2::XMLElement& e, const char* attribute, double bound) const {
    const char* text = e.Attribute(attribute);
    if (text == nullptr) return 0.0;
    const double value = std::strtod(text, nullptr);
    if (value > bound)
      fail(&e, std::string(attribute) + " '" + printable(text) + "' is larger than " +
                   std::to_string(static_cast<long>(bound)) + " (hilsim's bound for a model text)");
    return value;
  }

  // Two sides, each bounded, and their product.
  void boundedGrid(const tinyxml2::XMLElement& e, const char* a, const char* b, double side) const {
    const double area = bounded(e, a, side) * bounded(e, b, side);
    if (area > kMaxGridArea)
      fail(&e, std::string(a) + " × " + b + " is " + std::to_string(static_cast<long>(area)) +
                   ", more than " + std::to_string(static_cast<long>(kMaxGridArea)) +
                   " (hilsim's bound for a model text)");
  }

  void visit(const tinyxml2::XMLElement& e) {
    const std::string_view tag = e.Name();
    bodies_ += tag == "body";
    joints_ += tag == "joint" || tag == "freejoint";
    if (tag == "include" && text_only_)
      fail(&e, "a model text cannot include files (only a model file on disk can)");
    if (tag == "composite")
      fail(&e, "composite objects (MuJoCo's generated particle, grid, rope, cloth and skin "
               "bodies with their tendons) are not supported");
    if (tag == "texture") boundedGrid(e, "width", "height", kMaxTextureSide);
    if (tag == "hfield") boundedGrid(e, "nrow", "ncol", kMaxHfieldSide);
    if (tag == "size") {
      for (const tinyxml2::XMLAttribute* a = e.FirstAttribute(); a; a = a->Next()) {
        const std::string_view name = a->Name();
        if (name == "nkey" || name.rfind("nuser_", 0) == 0) bounded(e, a->Name(), kMaxSizeCount);
      }
    }
    if (tag == "numeric") bounded(e, "size", kMaxNumericSize);
    if (tag == "mesh" && text_only_)
      fail(&e, "a model text cannot hold meshes: MuJoCo's convex hull (qhull) writes its errors "
               "to stderr (meshes are not contacts in hilsim; primitive geoms or a model file "
               "can stand for them)");
    if (text_only_) {
      // skin, hfield and texture files (texture: file, fileright, fileleft, ...)
      for (const tinyxml2::XMLAttribute* a = e.FirstAttribute(); a; a = a->Next())
        if (std::string_view(a->Name()).rfind("file", 0) == 0)
          fail(&e, std::string("'") + printable(a->Name()) +
                       "': a model text cannot name files (only a model file on disk can)");
    }
    for (const tinyxml2::XMLElement* c = e.FirstChildElement(); c; c = c->NextSiblingElement())
      visit(*c);
  }

  const std::string& source_;
  const ModelLimits& limits_;
  bool text_only_;
  int bodies_ = 0, joints_ = 0;
};

// MuJoCo's message (often two lines: what, then the element) as one.
std::string mujocoMessage(const char* text) {
  std::string message(text);
  while (!message.empty() && (message.back() == '\n' || message.back() == ' '))
    message.pop_back();
  for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at))
    message.replace(at, 1, "; ");
  return message;
}

struct MjModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
using MjModelPtr = std::unique_ptr<mjModel, MjModelDeleter>;

struct Compiled {
  MjModelPtr model;
  std::string warning;  // MuJoCo's compiler warning, or empty
};

// MuJoCo's compiler on the text (a file of a virtual file system: nothing else is read, the
// precheck having refused includes and file names) or on the file at `path` (its includes and
// assets resolved by MuJoCo, beside it).
Compiled compile(const std::string* text, const std::string& path, const std::string& source) {
  std::array<char, 1024> message{};
  Compiled out;
  std::lock_guard<std::mutex> lock(mujocoLoadMutex());
  const MujocoHandlers handlers;
  if (text != nullptr) {
    // mjVFS holds 2000 names of 1000 bytes: too large for the stack
    auto vfs = std::make_unique<mjVFS>();
    mj_defaultVFS(vfs.get());
    const char* name = "model.xml";
    if (mj_makeEmptyFileVFS(vfs.get(), name, static_cast<int>(text->size())) != 0)
      throw ModelError(source + ": MuJoCo's virtual file system refused the text");
    std::copy(text->begin(), text->end(), static_cast<char*>(vfs->filedata[0]));
    out.model.reset(mj_loadXML(name, vfs.get(), message.data(), static_cast<int>(message.size())));
    mj_deleteVFS(vfs.get());
  } else {
    out.model.reset(mj_loadXML(path.c_str(), nullptr, message.data(),
                               static_cast<int>(message.size())));
  }
  if (!out.model)
    throw ModelError(source + ": MuJoCo: " +
                     (message[0] != '\0' ? mujocoMessage(message.data()) : "cannot compile"));
  if (message[0] != '\0') out.warning = mujocoMessage(message.data());
  if (!mujocoWarnings().empty())
    out.warning += (out.warning.empty() ? "" : "; ") + mujocoMessage(mujocoWarnings().c_str());
  return out;
}

// --- after MuJoCo: the compiled model ---

Matrix3 rotation(const mjtNum* quaternion_wxyz) {
  return Eigen::Quaterniond(quaternion_wxyz[0], quaternion_wxyz[1], quaternion_wxyz[2],
                            quaternion_wxyz[3])
      .normalized()
      .toRotationMatrix();
}

Vector3 vector3(const mjtNum* v) { return Vector3(v[0], v[1], v[2]); }

// "1 sensor", "2 sensors".
std::string count(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// A number of the model in a message, as short as it reads: 2, 0.1, 1e-05.
std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

const char* geomTypeName(int type) {
  switch (type) {
    case mjGEOM_PLANE: return "plane";
    case mjGEOM_HFIELD: return "hfield";
    case mjGEOM_SPHERE: return "sphere";
    case mjGEOM_CAPSULE: return "capsule";
    case mjGEOM_ELLIPSOID: return "ellipsoid";
    case mjGEOM_CYLINDER: return "cylinder";
    case mjGEOM_BOX: return "box";
    case mjGEOM_MESH: return "mesh";
    default: return "geom";
  }
}

const char* jointTypeWord(int type) {
  switch (type) {
    case mjJNT_FREE: return "free";
    case mjJNT_BALL: return "ball";
    case mjJNT_SLIDE: return "slide";
    default: return "hinge";
  }
}

class MjcfConverter {
 public:
  MjcfConverter(const mjModel* m, std::string source, const ModelLimits& limits)
      : m_(m), source_(std::move(source)), limits_(limits) {}

  Model convert(const std::string& compiler_warning) {
    if (!compiler_warning.empty()) note("MuJoCo: " + compiler_warning);
    nameEverything();
    refuseUnsupported();
    checkSizes();
    ModelBuilder builder(modelName());
    builder.setGravity((m_->opt.disableflags & mjDSBL_GRAVITY) ? Vector3::Zero()
                                                               : vector3(m_->opt.gravity));
    const std::vector<double> efforts = actuatorEfforts();
    for (int b = 1; b < m_->nbody; ++b) addBody(builder, b, efforts);
    Model model;
    try {
      model = builder.build();
    } catch (const ModelError& e) {
      throw ModelError(source_ + ": " + e.what());
    }
    for (const auto& [joint, q] : free_initial_) {
      try {
        setInitialPosition(model, joint, q);
      } catch (const ModelError& e) {
        throw ModelError(source_ + ": " + e.what());
      }
    }
    addSites(model);
    addContacts(model);
    addEqualities(model);
    noteOptions();
    model.load_warnings = std::move(warnings_);
    return model;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelError(source_ + ": " + what);
  }
  void note(const std::string& what) { warnings_.push_back(source_ + ": " + what); }

  std::string name(mjtObj type, int id) const {
    const char* n = mj_id2name(m_, type, id);
    return n != nullptr ? std::string(n) : std::string();
  }
  std::string quoted(const std::string& n) const { return "'" + printable(n) + "'"; }

  std::string modelName() const {
    // the model's name is the first entry of MuJoCo's name buffer
    return m_->names[0] != '\0' ? std::string(m_->names) : std::string("mjcf");
  }

  // What has no counterpart in hilsim and changes the motion: refused.
  void refuseUnsupported() const {
    if (m_->ntendon > 0)
      fail("tendon " + quoted(name(mjOBJ_TENDON, 0)) + " (of " + std::to_string(m_->ntendon) +
           "): tendons are not supported");
    for (int j = 0; j < m_->njnt; ++j) {
      const int type = m_->jnt_type[j];
      if ((type == mjJNT_BALL || type == mjJNT_FREE) && m_->jnt_stiffness[j] != 0.0)
        fail(std::string(jointTypeWord(type)) + " joint " + quoted(joint_name_[j]) +
             ": stiffness " + number(m_->jnt_stiffness[j]) +
             ": hilsim's joint springs are on hinge and slide joints only");
      if (type == mjJNT_FREE && m_->body_jntnum[m_->jnt_bodyid[j]] > 1)
        fail("free joint " + quoted(joint_name_[j]) +
             ": its body has other joints as well");
    }
  }

  // hilsim names for MuJoCo's bodies and joints, many of which may be unnamed: a body's own
  // name or body<k>; a joint's own name, else its body's (one joint) or <body>_joint<k>.
  void nameEverything() {
    std::unordered_set<std::string> taken = {"world"};
    for (int b = 1; b < m_->nbody; ++b)
      if (std::string n = name(mjOBJ_BODY, b); !n.empty()) taken.insert(n);
    const auto unique = [&](std::string base) {
      std::string n = base;
      for (int k = 2; taken.count(n) != 0; ++k) n = base + "_" + std::to_string(k);
      taken.insert(n);
      return n;
    };
    body_name_.assign(m_->nbody, "world");
    for (int b = 1; b < m_->nbody; ++b) {
      body_name_[b] = name(mjOBJ_BODY, b);
      if (body_name_[b].empty()) body_name_[b] = unique("body" + std::to_string(b));
    }
    std::unordered_set<std::string> joint_taken;
    for (int j = 0; j < m_->njnt; ++j)
      if (std::string n = name(mjOBJ_JOINT, j); !n.empty()) joint_taken.insert(n);
    joint_name_.resize(m_->njnt);
    for (int j = 0; j < m_->njnt; ++j) {
      joint_name_[j] = name(mjOBJ_JOINT, j);
      if (!joint_name_[j].empty()) continue;
      const int b = m_->jnt_bodyid[j];
      std::string base = m_->body_jntnum[b] == 1
                             ? body_name_[b]
                             : body_name_[b] + "_joint" + std::to_string(j - m_->body_jntadr[b]);
      std::string n = base;
      for (int k = 2; joint_taken.count(n) != 0; ++k) n = base + "_" + std::to_string(k);
      joint_taken.insert(n);
      joint_name_[j] = n;
    }
    // the moving bodies a body's joints make (all but the last massless, docs/MODEL_FORMAT.md)
    chain_name_.resize(m_->njnt);
    for (int b = 1; b < m_->nbody; ++b) {
      const int first = m_->body_jntadr[b], count = m_->body_jntnum[b];
      for (int k = 0; k < count; ++k) {
        const int j = first + k;
        const bool carries_body = k == count - 1 && anchor(j).isZero(0.0);
        chain_name_[j] = carries_body ? body_name_[b] : unique(body_name_[b] + "/" + joint_name_[j]);
      }
    }
    body_count_ = static_cast<int>(taken.size()) - 1;
  }

  Vector3 anchor(int j) const {
    // MuJoCo ignores a free joint's anchor: its qpos is the body frame's pose
    return m_->jnt_type[j] == mjJNT_FREE ? Vector3::Zero() : vector3(m_->jnt_pos + 3 * j);
  }

  void checkSizes() const {
    if (body_count_ > limits_.max_bodies)
      fail(std::to_string(body_count_) + " bodies (with one per joint), more than the limit of " +
           std::to_string(limits_.max_bodies));
    if (m_->nv > limits_.max_dofs)
      fail(std::to_string(m_->nv) + " degrees of freedom, more than the limit of " +
           std::to_string(limits_.max_dofs));
  }

  // Inertia of MuJoCo body b in its frame: principal moments about the inertial frame.
  Inertia bodyInertia(int b) const {
    const Matrix3 r = rotation(m_->body_iquat + 4 * b);
    Matrix3 i_c = r * vector3(m_->body_inertia + 3 * b).asDiagonal() * r.transpose();
    i_c = 0.5 * (i_c + i_c.transpose()).eval();
    return Inertia(m_->body_mass[b], vector3(m_->body_ipos + 3 * b), i_c);
  }

  // Per joint, the effort limit of a motor that drives it alone and cleanly (gain × ctrl, no
  // dynamics, no bias), |τ| ≤ |gear| · min(forcerange, |gain| · ctrlrange) for symmetric ranges;
  // +inf otherwise. Every actuator is named in the warnings: hilsim's input is the joint forces.
  std::vector<double> actuatorEfforts() {
    std::vector<double> effort(m_->njnt, std::numeric_limits<double>::infinity());
    std::string motors, others;
    for (int a = 0; a < m_->nu; ++a) {
      const std::string n = quoted(name(mjOBJ_ACTUATOR, a).empty() ? "actuator" + std::to_string(a)
                                                                   : name(mjOBJ_ACTUATOR, a));
      const int j = m_->actuator_trnid[2 * a];
      const bool motor = m_->actuator_trntype[a] == mjTRN_JOINT &&
                         (m_->jnt_type[j] == mjJNT_HINGE || m_->jnt_type[j] == mjJNT_SLIDE) &&
                         m_->actuator_dyntype[a] == mjDYN_NONE &&
                         m_->actuator_gaintype[a] == mjGAIN_FIXED &&
                         m_->actuator_biastype[a] == mjBIAS_NONE;
      if (!motor) {
        others += (others.empty() ? "" : ", ") + n;
        continue;
      }
      motors += (motors.empty() ? "" : ", ") + n + " on " + quoted(joint_name_[j]);
      double force = std::numeric_limits<double>::infinity();
      bool clean = true;
      const auto symmetric = [&](bool limited, const mjtNum* range, double scale) {
        if (!limited) return;
        if (range[0] != -range[1]) clean = false;
        force = std::min(force, std::abs(scale) * std::abs(range[1]));
      };
      symmetric(m_->actuator_forcelimited[a], m_->actuator_forcerange + 2 * a, 1.0);
      symmetric(m_->actuator_ctrllimited[a], m_->actuator_ctrlrange + 2 * a,
                m_->actuator_gainprm[a * mjNGAIN]);
      if (!clean) {
        note("actuator " + n + ": an asymmetric ctrlrange or forcerange is not an effort limit "
             "(hilsim's is |τ| ≤ effort); not read");
        continue;
      }
      effort[j] = std::min(effort[j], std::abs(m_->actuator_gear[6 * a]) * force);
    }
    if (!motors.empty())
      note("motors " + motors + ": hilsim takes the joint forces τ (gear × ctrl) as its input; "
           "their symmetric force and control ranges are the joints' effort limits");
    if (!others.empty())
      note("actuators " + others + " are not converted (servos, dynamics, gains, biases or "
           "transmissions other than one hinge or slide joint): hilsim's input is the joint "
           "forces τ");
    return effort;
  }

  void addBody(ModelBuilder& builder, int b, const std::vector<double>& efforts) {
    const std::string& n = body_name_[b];
    const std::string& parent = body_name_[m_->body_parentid[b]];
    const Transform placement(rotation(m_->body_quat + 4 * b), vector3(m_->body_pos + 3 * b));
    if (m_->body_mocapid[b] >= 0)
      note("body " + quoted(n) + " is a mocap body: welded to its parent at its initial pose");
    const int first = m_->body_jntadr[b], count = m_->body_jntnum[b];
    if (count == 0) {
      builder.addFixedBody(n, parent, placement, bodyInertia(b));
      return;
    }
    // one hilsim body per joint, in MuJoCo's order: each joint turns the frame the previous ones
    // left, about its anchor (a point of the body frame): X = P · T(a₁) R₁ T(−a₁) · T(a₂) R₂ …
    std::string chain_parent = parent;
    Transform chain_placement = placement;
    Vector3 previous_anchor = Vector3::Zero();
    for (int k = 0; k < count; ++k) {
      const int j = first + k;
      BodySpec spec;
      spec.name = chain_name_[j];
      spec.parent = chain_parent;
      spec.joint_name = joint_name_[j];
      spec.properties = jointProperties(j, efforts[j]);
      const Vector3 axis = vector3(m_->jnt_axis + 3 * j);
      switch (m_->jnt_type[j]) {
        case mjJNT_FREE: {
          spec.joint = Joint::freeFlyer();
          chain_placement = Transform();  // its qpos is the pose in the world
          const int adr = m_->jnt_qposadr[j];
          free_initial_.emplace_back(joint_name_[j],
                                     std::vector<double>(m_->qpos0 + adr, m_->qpos0 + adr + 7));
          break;
        }
        case mjJNT_BALL: spec.joint = Joint::spherical(); break;
        case mjJNT_SLIDE: spec.joint = Joint::prismatic(axis.normalized()); break;
        default: spec.joint = Joint::revolute(axis.normalized()); break;
      }
      const Vector3 a = anchor(j);
      spec.placement = chain_placement * Transform(Matrix3::Identity(), a - previous_anchor);
      if (spec.name == n) spec.inertia = bodyInertia(b);
      builder.addBody(std::move(spec));
      chain_parent = chain_name_[j];
      chain_placement = Transform();
      previous_anchor = a;
    }
    // the last joint off the body's origin: the body frame sits at −anchor from its joint's
    if (chain_name_[first + count - 1] != n)
      builder.addFixedBody(n, chain_parent, Transform(Matrix3::Identity(), -previous_anchor),
                           bodyInertia(b));
  }

  JointProperties jointProperties(int j, double effort) {
    JointProperties p;
    const int dof = m_->jnt_dofadr[j], type = m_->jnt_type[j];
    const std::string who = std::string(jointTypeWord(type)) + " joint " + quoted(joint_name_[j]);
    p.damping = m_->dof_damping[dof];
    p.armature = m_->dof_armature[dof];
    const int nv = type == mjJNT_FREE ? 6 : type == mjJNT_BALL ? 3 : 1;
    for (int k = 1; k < nv; ++k)
      if (m_->dof_damping[dof + k] != p.damping || m_->dof_armature[dof + k] != p.armature)
        fail(who + ": damping or armature differs between its degrees of freedom");
    if (nv > 1) {
      if (m_->dof_frictionloss[dof] != 0.0)
        note(who + ": frictionloss " + number(m_->dof_frictionloss[dof]) +
             " not read (hilsim's joint friction is on hinge and slide joints only)");
      if (m_->jnt_limited[j])
        note(who + ": its range (a cone) is not read (hilsim's limits are on hinge and slide "
             "joints only)");
      return p;
    }
    // hilsim's q is zero at the compiled pose, MuJoCo's qpos at qpos0 (the joint's ref)
    const double ref = m_->qpos0[m_->jnt_qposadr[j]];
    if (ref != 0.0)
      note(who + ": ref " + number(ref) + ": hilsim's coordinate is MuJoCo's qpos − " +
           number(ref) + " (zero at the model's pose); its range and spring reference "
           "are shifted alike");
    p.stiffness = m_->jnt_stiffness[j];
    p.spring_reference = m_->qpos_spring[m_->jnt_qposadr[j]] - ref;
    p.friction = m_->dof_frictionloss[dof];
    if (m_->jnt_limited[j]) {
      p.lower = m_->jnt_range[2 * j] - ref;
      p.upper = m_->jnt_range[2 * j + 1] - ref;
    }
    p.effort = effort;
    return p;
  }

  // Named sites become frames of the body they are on (FK and Jacobians can name them).
  void addSites(Model& model) {
    for (int s = 0; s < m_->nsite; ++s) {
      const std::string n = name(mjOBJ_SITE, s);
      if (n.empty()) continue;  // nothing could name it
      if (model.frameIndex(n) >= 0) {
        note("site " + quoted(n) + " has the name of a body or frame: not kept as a frame");
        continue;
      }
      const Frame& host = model.frames[model.frameIndex(body_name_[m_->site_bodyid[s]])];
      model.frames.push_back(
          Frame{n, host.body,
                host.placement * Transform(rotation(m_->site_quat + 4 * s),
                                           vector3(m_->site_pos + 3 * s))});
    }
  }

  // Sphere geoms on moving bodies are contact spheres, a horizontal plane on the world the ground
  // (docs/CONTACT.md); every other colliding geom is named as not a contact.
  void addContacts(Model& model) {
    int plane = -1;
    std::vector<int> spheres;
    std::vector<std::string> ignored;
    const auto describe = [&](int g) {
      const std::string n = name(mjOBJ_GEOM, g);
      return std::string(geomTypeName(m_->geom_type[g])) + " " +
             quoted(n.empty() ? "geom" + std::to_string(g) : n) + " on " +
             quoted(body_name_[m_->geom_bodyid[g]]);
    };
    for (int g = 0; g < m_->ngeom; ++g) {
      if (m_->geom_contype[g] == 0 && m_->geom_conaffinity[g] == 0) continue;  // visual only
      const int b = m_->geom_bodyid[g];
      const bool on_world = m_->body_weldid[b] == 0;
      const int type = m_->geom_type[g];
      if (type == mjGEOM_SPHERE && !on_world) {
        spheres.push_back(g);
      } else if (type == mjGEOM_PLANE && on_world && plane < 0 && horizontal(model, g)) {
        plane = g;
      } else {
        ignored.push_back(describe(g));
      }
    }
    const bool contacts = !(m_->opt.disableflags & (mjDSBL_CONTACT | mjDSBL_CONSTRAINT));
    for (int g : spheres) {
      const int b = m_->geom_bodyid[g];
      std::string n = name(mjOBJ_GEOM, g);
      if (n.empty() || model.frameIndex(n) >= 0) n = body_name_[b] + "_sphere" + std::to_string(g);
      if (plane >= 0 && !((m_->geom_contype[g] & m_->geom_conaffinity[plane]) ||
                          (m_->geom_contype[plane] & m_->geom_conaffinity[g]))) {
        ignored.push_back(describe(g) + " (its contype/conaffinity exclude the plane)");
        continue;
      }
      if (plane >= 0 && m_->geom_friction[3 * g] > m_->geom_friction[3 * plane])
        note("sphere " + quoted(n) + ": friction " + number(m_->geom_friction[3 * g]) +
             " above the plane's; hilsim's contacts all use the plane's (MuJoCo the larger)");
      try {
        addContactSphere(model, {n, body_name_[b], vector3(m_->geom_pos + 3 * g),
                                 m_->geom_size[3 * g]});
      } catch (const ModelError& e) {
        fail(std::string("geom ") + e.what());
      }
    }
    if (plane >= 0 && contacts) {
      GroundPlane ground;
      ground.enabled = true;
      ground.height = planeFrame(model, plane).translation.z();
      ground.friction = m_->geom_friction[3 * plane];
      try {
        setGround(model, ground);
      } catch (const ModelError& e) {
        fail("plane " + quoted(name(mjOBJ_GEOM, plane)) + ": " + e.what());
      }
    } else if (plane >= 0) {
      note("contacts are disabled (option flag): the plane is not the ground");
    }
    if (!ignored.empty()) {
      std::string line = count(ignored.size(), "colliding geom") +
                         " not contacts in hilsim (its contacts are spheres on moving bodies "
                         "against one horizontal plane on the world): ";
      const std::size_t shown = std::min<std::size_t>(ignored.size(), 8);
      for (std::size_t k = 0; k < shown; ++k) line += (k > 0 ? ", " : "") + ignored[k];
      if (shown < ignored.size()) line += ", ...";
      note(line);
    }
  }

  Transform planeFrame(const Model& model, int g) const {
    const Frame& host = model.frames[model.frameIndex(body_name_[m_->geom_bodyid[g]])];
    return host.placement *
           Transform(rotation(m_->geom_quat + 4 * g), vector3(m_->geom_pos + 3 * g));
  }

  bool horizontal(const Model& model, int g) const {
    return (planeFrame(model, g).rotation.col(2) - Vector3::UnitZ()).norm() < 1e-12;
  }

  // connect → ball closure, weld → weld closure, at MuJoCo's compiled anchors (eq_data: connect
  // [anchor in body 1, anchor in body 2]; weld [anchor in body 2, the same point in body 1, the
  // relative orientation quat₁⁻¹ quat₂, torquescale]).
  void addEqualities(Model& model) {
    int rows = 0;
    for (int e = 0; e < m_->neq; ++e) {
      std::string n = name(mjOBJ_EQUALITY, e);
      if (n.empty()) n = "equality" + std::to_string(e);
      const int type = m_->eq_type[e];
      if (type != mjEQ_CONNECT && type != mjEQ_WELD)
        fail("equality " + quoted(n) + ": " +
             (type == mjEQ_JOINT ? "joint" : type == mjEQ_TENDON ? "tendon" : "distance") +
             " equality constraints are not supported (connect and weld are)");
      if (!m_->eq_active[e]) {
        note("equality " + quoted(n) + " is inactive: not loaded");
        continue;
      }
      const mjtNum* data = m_->eq_data + mjNEQDATA * e;
      LoopClosureSpec spec;
      spec.name = n;
      spec.body_a = body_name_[m_->eq_obj1id[e]];
      spec.body_b = body_name_[m_->eq_obj2id[e]];
      if (type == mjEQ_CONNECT) {
        spec.type = ClosureType::kBall;
        spec.frame_a = Transform(Matrix3::Identity(), vector3(data));
        spec.frame_b = Transform(Matrix3::Identity(), vector3(data + 3));
      } else {
        spec.type = ClosureType::kWeld;
        spec.frame_a = Transform(rotation(data + 6), vector3(data + 3));
        spec.frame_b = Transform(Matrix3::Identity(), vector3(data));
        if (data[10] != 1.0)
          note("weld " + quoted(n) + ": torquescale " + number(data[10]) +
               " not read (hilsim's weld is rigid)");
      }
      rows += closureRows(spec.type);
      if (rows > limits_.max_constraint_rows)
        fail("equality " + quoted(n) + ": " + std::to_string(rows) +
             " constraint rows, more than the limit of " +
             std::to_string(limits_.max_constraint_rows));
      try {
        addLoopClosure(model, spec);
      } catch (const ModelError& error) {
        fail("equality " + quoted(n) + ": " + error.what());
      }
    }
  }

  // MuJoCo's options with no counterpart in hilsim, named when they are set.
  void noteOptions() {
    const mjOption& o = m_->opt;
    if (o.density != 0.0 || o.viscosity != 0.0 || o.wind[0] != 0.0 || o.wind[1] != 0.0 ||
        o.wind[2] != 0.0)
      note("option density, viscosity or wind: fluid forces are not modelled in hilsim");
    const int unread = o.disableflags & ~(mjDSBL_GRAVITY | mjDSBL_CONTACT | mjDSBL_CONSTRAINT);
    if (unread != 0)
      note("option flags disabling MuJoCo's passive forces, limits, friction loss, equality or "
           "actuation are not carried over: hilsim applies what the model gives");
    if (m_->nskin > 0) note(count(m_->nskin, "skin") + " (visual only) not read");
    if (m_->nsensor > 0)
      note(count(m_->nsensor, "sensor") + " not read (hilsim reports the state itself)");
    if (m_->nkey > 0) note(count(m_->nkey, "keyframe") + " not read");
  }

  const mjModel* m_;
  std::string source_;
  const ModelLimits& limits_;
  std::vector<std::string> warnings_;
  std::vector<std::string> body_name_;   // [nbody]
  std::vector<std::string> joint_name_;  // [njnt]
  std::vector<std::string> chain_name_;  // [njnt]: the hilsim body joint j moves
  int body_count_ = 0;
  std::vector<std::pair<std::string, std::vector<double>>> free_initial_;
};

Model load(const std::string& text, const std::string* path, const std::string& source,
           const ModelLimits& limits) {
  try {
    Precheck(source, limits, path == nullptr).run(text);
    Compiled compiled = compile(path == nullptr ? &text : nullptr, path ? *path : "", source);
    return MjcfConverter(compiled.model.get(), source, limits).convert(compiled.warning);
  } catch (const std::exception& e) {
    // names quoted by MuJoCo and the model builder are the file's text too
    throw ModelError(io_detail::oneLine(e.what()));
  }
}

}  // namespace

Model loadMjcfString(const std::string& xml, const std::string& source_name,
                     const ModelLimits& limits) {
  return load(xml, nullptr, source_name, limits);
}

Model loadMjcf(const std::string& path, const ModelLimits& limits) {
  return load(io_detail::readTextFile(path, limits.max_text_bytes), &path, path, limits);
}

}  // namespace hilsim
