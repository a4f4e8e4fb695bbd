// URDF → Model. The XML is parsed by tinyxml2; the URDF elements are read here, each number and
// reference checked, and every error names the file, the line and the element. hilsim reads URDF
// itself rather than through urdfdom: urdfdom 3.0 (Debian bookworm) formats text of the file as a
// printf format string in its error paths and leaks the half-built tree of some invalid files, so
// one request could abort the server (docs/MODEL_FORMAT.md, "How URDF is read").
#include <tinyxml2.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "engine/builder/model_builder.h"
#include "engine/builder/closure_builder.h"
#include "engine/model/names.h"

namespace hilsim {

namespace {

using tinyxml2::XMLDocument;
using tinyxml2::XMLElement;
using io_detail::printable;

constexpr const char* kSupportedTypes = "revolute, continuous, prismatic, fixed, floating, planar";

std::string linkRef(std::string_view name) { return "link '" + printable(name) + "'"; }
std::string jointRef(std::string_view name) { return "joint '" + printable(name) + "'"; }

// What tinyxml2's error codes mean, for the "malformed XML" message.
std::string describeXmlError(tinyxml2::XMLError error) {
  switch (error) {
    case tinyxml2::XML_ERROR_EMPTY_DOCUMENT: return "the document is empty";
    case tinyxml2::XML_ERROR_MISMATCHED_ELEMENT:
      return "the element starting here is closed by another element's end tag";
    case tinyxml2::XML_ERROR_PARSING_ELEMENT: return "an element is not closed or is malformed";
    case tinyxml2::XML_ERROR_PARSING_ATTRIBUTE: return "an attribute is malformed";
    case tinyxml2::XML_ERROR_PARSING_TEXT: return "text is malformed";
    case tinyxml2::XML_ERROR_PARSING_CDATA: return "a CDATA section is malformed";
    case tinyxml2::XML_ERROR_PARSING_COMMENT: return "a comment is not closed";
    case tinyxml2::XML_ERROR_PARSING_DECLARATION: return "a declaration is malformed";
    case tinyxml2::XML_ERROR_PARSING_UNKNOWN: return "a <! ... > construct is malformed";
    case tinyxml2::XML_ELEMENT_DEPTH_EXCEEDED:
      return "elements are nested more than " + std::to_string(TINYXML2_MAX_ELEMENT_DEPTH) +
             " deep";
    default: return "parse error";
  }
}

// A URDF <link> as read from the file.
struct LinkElement {
  std::string name;
  int line = 0;
  Inertia inertia;  // in the link frame
  std::vector<VisualShape> visuals;  // placements in the link frame; body set after the build
  struct Sphere {
    std::string name;  // the <collision>'s, or empty
    Vector3 center;    // in the link frame [m]
    double radius;
  };
  std::vector<Sphere> contact_spheres;  // its <collision><sphere> elements
};

// A URDF <joint> as read from the file.
struct JointElement {
  std::string name;
  std::string type;
  int line = 0;
  std::string parent, child;
  Transform origin;                  // X_PJ: the joint frame in the parent link frame
  Vector3 axis = Vector3::UnitX();   // URDF's default
  bool has_limit = false;
  double lower = 0.0, upper = 0.0;   // URDF's defaults when <limit> omits them
  double effort = 0.0, velocity = 0.0;
  double damping = 0.0;
  double friction = 0.0;
};

class UrdfReader {
 public:
  UrdfReader(std::string source, const UrdfOptions& options, const ModelLimits& limits)
      : source_(std::move(source)),
        floating_base_(options.floating_base),
        inertia_policy_(options.inertia),
        massless_(options.massless),
        massless_armature_(options.massless_armature),
        limits_(limits) {}

  Model read(const std::string& xml) {
    io_detail::checkXmlShape(xml, limits_.max_text_bytes, source_);
    XMLDocument document;
    if (document.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
      const int line = document.ErrorLineNum();
      throw ModelError(source_ + (line > 0 ? ":" + std::to_string(line) : "") +
                       ": malformed XML: " + describeXmlError(document.ErrorID()));
    }
    const XMLElement* robot = document.RootElement();
    if (robot == nullptr || std::string_view(robot->Name()) != "robot")
      fail(robot ? robot->GetLineNum() : 0, "", "the root element must be <robot>");
    if (const char* name = robot->Attribute("name"); name && *name) name_ = name;
    readElements(*robot);
    const std::vector<int> order = treeOrder();
    if (massless_ == MasslessPolicy::kWeld) weldMasslessSubtrees(order);
    Model model = convert(order);
    noteLimitsAtTheStart();
    noteWeldedRoot(order);
    // the reader's notes first, then the builder's (armature added to massless joints), which
    // name a joint: give them its line too
    for (std::string& warning : model.load_warnings) {
      int line = 0;
      if (warning.rfind("joint '", 0) == 0)
        if (const std::size_t close = warning.find("': ", 7); close != std::string::npos)
          if (const auto it = joint_index_.find(warning.substr(7, close - 7));
              it != joint_index_.end())
            line = joints_[it->second].line;
      warning = source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + warning;
    }
    model.load_warnings.insert(model.load_warnings.begin(), warnings_.begin(), warnings_.end());
    return model;
  }

 private:
  // --- errors ---

  [[noreturn]] void fail(int line, const std::string& element, const std::string& what) const {
    std::string message = source_;
    if (line > 0) message += ":" + std::to_string(line);
    message += ": ";
    if (!element.empty()) message += element + ": ";
    throw ModelError(message + what);
  }

  // --- numbers ---

  // The whitespace-separated numbers of attribute `attribute` of `e`: exactly `count` finite
  // numbers in the C locale, or an error naming the element and the attribute.
  template <int N>
  Eigen::Matrix<double, N, 1> numbers(const XMLElement& e, const char* attribute,
                                      const std::string& owner) const {
    const char* text = e.Attribute(attribute);
    const std::string where = "<" + std::string(e.Name()) + " " + attribute + "=\"" +
                              printable(text ? text : "") + "\">";
    if (text == nullptr) fail(e.GetLineNum(), owner, "<" + std::string(e.Name()) + "> has no " +
                                                         attribute + " attribute");
    Eigen::Matrix<double, N, 1> out;
    const std::string_view all(text);
    std::size_t at = 0;
    int count = 0;
    while (true) {
      while (at < all.size() && std::isspace(static_cast<unsigned char>(all[at]))) ++at;
      if (at == all.size()) break;
      std::size_t end = at;
      while (end < all.size() && !std::isspace(static_cast<unsigned char>(all[end]))) ++end;
      if (count == N)
        fail(e.GetLineNum(), owner, where + ": expected " + std::to_string(N) + " number" +
                                        (N > 1 ? "s" : "") + ", got more");
      const std::string_view token = all.substr(at, end - at);
      // from_chars takes no leading '+', which URDF writers do emit
      std::string_view digits = token;
      if (digits.size() > 1 && digits[0] == '+' && digits[1] != '-') digits.remove_prefix(1);
      double x = 0.0;
      auto [ptr, error] = std::from_chars(digits.data(), digits.data() + digits.size(), x);
      if (error == std::errc::result_out_of_range && ptr == digits.data() + digits.size()) {
        // below the smallest double reads as zero (or a subnormal), as strtod and urdfdom read
        // it; above the largest it is an error
        const std::string copy(digits);
        x = std::strtod(copy.c_str(), nullptr);
        if (std::abs(x) <= std::numeric_limits<double>::min()) error = std::errc();
      }
      if (error == std::errc::result_out_of_range)
        fail(e.GetLineNum(), owner, where + ": '" + printable(token) + "' is out of range");
      if (error != std::errc() || ptr != digits.data() + digits.size())
        fail(e.GetLineNum(), owner, where + ": '" + printable(token) + "' is not a number");
      if (!std::isfinite(x))
        fail(e.GetLineNum(), owner, where + " contains a non-finite number (NaN or Inf)");
      out(count++) = x;
      at = end;
    }
    if (count != N)
      fail(e.GetLineNum(), owner, where + ": expected " + std::to_string(N) + " number" +
                                      (N > 1 ? "s" : "") + ", got " + std::to_string(count));
    return out;
  }

  double number(const XMLElement& e, const char* attribute, const std::string& owner) const {
    return numbers<1>(e, attribute, owner)(0);
  }

  std::optional<double> optionalNumber(const XMLElement& e, const char* attribute,
                                       const std::string& owner) const {
    if (e.Attribute(attribute) == nullptr) return std::nullopt;
    return number(e, attribute, owner);
  }

  // <origin xyz="…" rpy="…">, both optional: R = Rz(yaw) Ry(pitch) Rx(roll), fixed axes.
  Transform pose(const XMLElement* origin, const std::string& owner) const {
    Transform x;
    if (origin == nullptr) return x;
    if (origin->Attribute("xyz")) x.translation = numbers<3>(*origin, "xyz", owner);
    if (origin->Attribute("rpy")) {
      const Vector3 rpy = numbers<3>(*origin, "rpy", owner);
      x.rotation = io_detail::rotationFromRpy(rpy.x(), rpy.y(), rpy.z());
    }
    return x;
  }

  // --- elements ---

  void readElements(const XMLElement& robot) {
    int links = 0, joints = 0;
    for (const XMLElement* e = robot.FirstChildElement(); e; e = e->NextSiblingElement()) {
      const std::string_view tag = e->Name();
      links += tag == "link";
      joints += tag == "joint";
    }
    if (links > limits_.max_bodies || joints > limits_.max_bodies)
      fail(robot.GetLineNum(), "", std::to_string(std::max(links, joints)) + " " +
                                       (links >= joints ? "links" : "joints") +
                                       ", more than the limit of " +
                                       std::to_string(limits_.max_bodies));
    if (links == 0) fail(robot.GetLineNum(), "", "<robot> has no <link>");
    links_.reserve(links);
    joints_.reserve(joints);
    // Named materials first: a link's <visual> may use one defined further down.
    for (const XMLElement* e = robot.FirstChildElement("material"); e;
         e = e->NextSiblingElement("material")) {
      const char* name = e->Attribute("name");
      const XMLElement* color = e->FirstChildElement("color");
      if (name != nullptr && color != nullptr && color->Attribute("rgba") != nullptr)
        if (auto rgba = colour(*color, "material")) materials_[name] = *rgba;
    }
    for (const XMLElement* e = robot.FirstChildElement(); e; e = e->NextSiblingElement()) {
      const std::string_view tag = e->Name();
      if (tag == "link") readLink(*e);
      if (tag == "joint") readJoint(*e);
      // <transmission>, <gazebo> and other extensions carry nothing the dynamics uses
    }
  }

  std::string requiredName(const XMLElement& e) const {
    const char* name = e.Attribute("name");
    if (name == nullptr || *name == '\0')
      fail(e.GetLineNum(), "", "<" + std::string(e.Name()) + "> without a name");
    return name;
  }

  void readLink(const XMLElement& e) {
    LinkElement link;
    link.name = requiredName(e);
    link.line = e.GetLineNum();
    const std::string ref = linkRef(link.name);
    if (const auto [it, inserted] = link_index_.emplace(link.name, links_.size()); !inserted)
      fail(link.line, ref, "duplicate name (first defined at line " +
                               std::to_string(links_[it->second].line) + ")");
    if (const XMLElement* inertial = e.FirstChildElement("inertial"))
      link.inertia = readInertial(*inertial, ref);
    // <collision><sphere>: a contact sphere (docs/CONTACT.md); other collision geometry is not
    // read. A sphere without a positive radius is an error: the model would touch differently.
    for (const XMLElement* c = e.FirstChildElement("collision"); c;
         c = c->NextSiblingElement("collision")) {
      const XMLElement* geometry = c->FirstChildElement("geometry");
      const XMLElement* sphere = geometry ? geometry->FirstChildElement("sphere") : nullptr;
      if (sphere == nullptr) continue;
      const double radius = number(*sphere, "radius", ref);
      if (!(radius > 0.0))
        fail(sphere->GetLineNum(), ref, "<collision> <sphere radius> must be positive");
      const Transform origin = pose(c->FirstChildElement("origin"), ref);
      const char* name = c->Attribute("name");
      link.contact_spheres.push_back({name ? name : "", origin.translation, radius});
    }
    // <visual> for viewers (the dynamics has no geometry). A malformed visual is left out: the
    // model it decorates still loads and runs.
    for (const XMLElement* v = e.FirstChildElement("visual"); v;
         v = v->NextSiblingElement("visual")) {
      try {
        if (std::optional<VisualShape> shape = readVisual(*v, ref)) link.visuals.push_back(*shape);
      } catch (const ModelError&) {
      }
    }
    links_.push_back(std::move(link));
  }

  // <visual>: <origin>, <geometry> with one of box size="x y z", cylinder radius length, sphere
  // radius, mesh filename [scale]; <material> by name or with its own <color rgba>. Another
  // geometry (an extension) is skipped; a malformed one throws ModelError (readLink skips it).
  std::optional<VisualShape> readVisual(const XMLElement& visual, const std::string& ref) const {
    const XMLElement* geometry = visual.FirstChildElement("geometry");
    if (geometry == nullptr) fail(visual.GetLineNum(), ref, "<visual> has no <geometry>");
    const XMLElement* g = geometry->FirstChildElement();
    if (g == nullptr) fail(geometry->GetLineNum(), ref, "<geometry> is empty");
    VisualShape shape;
    shape.placement = pose(visual.FirstChildElement("origin"), ref);
    const std::string_view kind = g->Name();
    auto positive = [&](double value, const char* what) {
      if (!(value > 0.0)) fail(g->GetLineNum(), ref, std::string(what) + " must be positive");
      return value;
    };
    if (kind == "box") {
      shape.geometry = VisualShape::Geometry::kBox;
      shape.size = numbers<3>(*g, "size", ref);
      for (int k = 0; k < 3; ++k) positive(shape.size[k], "<box size>");
    } else if (kind == "cylinder") {
      shape.geometry = VisualShape::Geometry::kCylinder;
      shape.size = Vector3(positive(number(*g, "radius", ref), "<cylinder radius>"),
                           positive(number(*g, "length", ref), "<cylinder length>"), 0.0);
    } else if (kind == "sphere") {
      shape.geometry = VisualShape::Geometry::kSphere;
      shape.size = Vector3(positive(number(*g, "radius", ref), "<sphere radius>"), 0.0, 0.0);
    } else if (kind == "mesh") {
      shape.geometry = VisualShape::Geometry::kMesh;
      const char* file = g->Attribute("filename");
      if (file == nullptr || *file == '\0') fail(g->GetLineNum(), ref, "<mesh> has no filename");
      shape.mesh = file;
      if (g->Attribute("scale")) shape.scale = numbers<3>(*g, "scale", ref);
    } else {
      return std::nullopt;
    }
    if (const XMLElement* material = visual.FirstChildElement("material")) {
      if (const XMLElement* color = material->FirstChildElement("color")) {
        const std::optional<Eigen::Vector4d> rgba = colour(*color, ref);
        if (!rgba) fail(color->GetLineNum(), ref, "<color rgba> must be four numbers in 0 … 1");
        shape.rgba = *rgba;
      } else if (const char* name = material->Attribute("name")) {
        if (const auto it = materials_.find(name); it != materials_.end()) shape.rgba = it->second;
      }
    }
    return shape;
  }

  // <color rgba="r g b a">, each in 0 … 1; nullopt when malformed.
  std::optional<Eigen::Vector4d> colour(const XMLElement& color, const std::string& ref) const {
    try {
      const Eigen::Vector4d rgba = numbers<4>(color, "rgba", ref);
      if ((rgba.array() >= 0.0).all() && (rgba.array() <= 1.0).all()) return rgba;
    } catch (const ModelError&) {
    }
    return std::nullopt;
  }

  // URDF gives the inertia about the centre of mass in the <inertial> frame (origin xyz/rpy in the
  // link frame): in the link frame, com = xyz and I = R I' Rᵀ.
  Inertia readInertial(const XMLElement& inertial, const std::string& ref) const {
    const XMLElement* mass = inertial.FirstChildElement("mass");
    if (mass == nullptr) fail(inertial.GetLineNum(), ref, "<inertial> has no <mass value=...>");
    const double m = number(*mass, "value", ref);
    if (m < 0.0) {
      std::ostringstream what;
      what << "<mass> " << m << " kg is negative";
      fail(mass->GetLineNum(), ref, what.str());
    }
    const XMLElement* moments = inertial.FirstChildElement("inertia");
    if (moments == nullptr)
      fail(inertial.GetLineNum(), ref, "<inertial> has no <inertia ixx=... iyy=... izz=...>");
    double i[6];
    const char* names[6] = {"ixx", "iyy", "izz", "ixy", "ixz", "iyz"};
    for (int k = 0; k < 6; ++k) i[k] = number(*moments, names[k], ref);
    Matrix3 about_com;
    about_com << i[0], i[3], i[4], i[3], i[1], i[5], i[4], i[5], i[2];
    const Transform x = pose(inertial.FirstChildElement("origin"), ref);
    return Inertia(m, x.translation, x.rotation * about_com * x.rotation.transpose());
  }

  void readJoint(const XMLElement& e) {
    JointElement joint;
    joint.name = requiredName(e);
    joint.line = e.GetLineNum();
    const std::string ref = jointRef(joint.name);
    if (const auto [it, inserted] = joint_index_.emplace(joint.name, joints_.size()); !inserted)
      fail(joint.line, ref, "duplicate name (first defined at line " +
                                std::to_string(joints_[it->second].line) + ")");
    const char* type = e.Attribute("type");
    if (type == nullptr) fail(joint.line, ref, "no type (supported: " + std::string(kSupportedTypes) + ")");
    joint.type = type;
    const bool axial = joint.type == "revolute" || joint.type == "continuous" ||
                       joint.type == "prismatic" || joint.type == "planar";
    if (!axial && joint.type != "fixed" && joint.type != "floating")
      fail(joint.line, ref, "unsupported joint type '" + printable(joint.type) +
                                "' (supported: " + kSupportedTypes + ")");
    for (const char* end : {"parent", "child"}) {
      const XMLElement* link = e.FirstChildElement(end);
      const char* name = link ? link->Attribute("link") : nullptr;
      if (name == nullptr || *name == '\0')
        fail(joint.line, ref, "no <" + std::string(end) + " link=...>");
      (std::string_view(end) == "parent" ? joint.parent : joint.child) = name;
    }
    joint.origin = pose(e.FirstChildElement("origin"), ref);
    if (axial) {
      if (const XMLElement* axis = e.FirstChildElement("axis")) {
        joint.axis = numbers<3>(*axis, "xyz", ref);
        if (joint.axis.norm() < 1e-12)
          fail(axis->GetLineNum(), ref, "<axis> must be a non-zero vector");
        joint.axis.normalize();
      }
    }
    if (const XMLElement* limit = e.FirstChildElement("limit")) {
      joint.has_limit = true;
      joint.lower = optionalNumber(*limit, "lower", ref).value_or(0.0);
      joint.upper = optionalNumber(*limit, "upper", ref).value_or(0.0);
      joint.effort = number(*limit, "effort", ref);
      joint.velocity = number(*limit, "velocity", ref);
      if (joint.effort < 0.0 || joint.velocity < 0.0)
        fail(limit->GetLineNum(), ref, "<limit> effort and velocity must be >= 0");
      if ((joint.type == "revolute" || joint.type == "prismatic") && joint.lower > joint.upper)
        fail(limit->GetLineNum(), ref, "<limit> lower limit must not exceed upper limit");
    } else if (joint.type == "revolute" || joint.type == "prismatic") {
      fail(joint.line, ref, "a " + joint.type +
                                " joint needs <limit lower upper effort velocity> (URDF requires "
                                "limits for revolute and prismatic joints; continuous has none)");
    }
    if (const XMLElement* dynamics = e.FirstChildElement("dynamics")) {
      joint.damping = optionalNumber(*dynamics, "damping", ref).value_or(0.0);
      if (joint.damping < 0.0)
        fail(dynamics->GetLineNum(), ref, "<dynamics> damping must be >= 0");
      joint.friction = optionalNumber(*dynamics, "friction", ref).value_or(0.0);
      if (joint.friction < 0.0)
        fail(dynamics->GetLineNum(), ref, "<dynamics> friction must be >= 0");
    }
    // <mimic>: the joint stays independent (docs/MODEL_FORMAT.md); <calibration> and
    // <safety_controller> concern the real robot's drivers
    joints_.push_back(std::move(joint));
  }

  // --- topology ---

  // Links from the root, depth first, children in file order. Checks that the links form one
  // tree: a link with two parent joints, or links that never reach the root, are closed chains.
  std::vector<int> treeOrder() {
    std::vector<int> parent_joint(links_.size(), -1);
    std::vector<std::vector<int>> children(links_.size());  // joints, in file order
    for (int j = 0; j < static_cast<int>(joints_.size()); ++j) {
      const JointElement& joint = joints_[j];
      const auto parent = link_index_.find(joint.parent);
      if (parent == link_index_.end())
        fail(joint.line, jointRef(joint.name),
             "parent link '" + printable(joint.parent) + "' does not exist");
      const auto child = link_index_.find(joint.child);
      if (child == link_index_.end())
        fail(joint.line, jointRef(joint.name),
             "child link '" + printable(joint.child) + "' does not exist");
      if (parent->second == child->second)
        fail(joint.line, jointRef(joint.name),
             "link '" + printable(joint.child) + "' cannot be its own parent");
      int& first = parent_joint[child->second];
      if (first >= 0)
        fail(joint.line, linkRef(joint.child),
             "has two parent joints ('" + printable(joints_[first].name) + "' and '" +
                 printable(joint.name) + "'): closed kinematic loops are not supported");
      first = j;
      children[parent->second].push_back(j);
    }
    root_ = -1;
    for (int l = 0; l < static_cast<int>(links_.size()); ++l) {
      if (parent_joint[l] >= 0) continue;
      if (root_ >= 0)
        fail(links_[l].line, linkRef(links_[l].name),
             "a second root link (no parent joint) besides '" + printable(links_[root_].name) +
                 "': the links must form one tree");
      root_ = l;
    }
    if (root_ < 0)
      fail(0, "", "no root link: every link has a parent joint, so the links form a closed loop "
                  "(closed loops are not supported)");
    std::vector<int> order;
    order.reserve(links_.size());
    std::vector<int> stack = {root_};
    while (!stack.empty()) {
      const int link = stack.back();
      stack.pop_back();
      order.push_back(link);
      for (auto j = children[link].rbegin(); j != children[link].rend(); ++j)
        stack.push_back(link_index_.at(joints_[*j].child));
    }
    if (order.size() != links_.size()) {
      std::vector<bool> reached(links_.size(), false);
      for (int l : order) reached[l] = true;
      for (int l = 0; l < static_cast<int>(links_.size()); ++l)
        if (!reached[l])
          fail(links_[l].line, linkRef(links_[l].name),
               "is part of a kinematic loop that never reaches the root link '" +
                   printable(links_[root_].name) + "' (closed loops are not supported)");
    }
    parent_joint_ = std::move(parent_joint);
    return order;
  }

  // --- what loads but deserves a word ---

  // A legged robot's trunk welded to the world stands still in the air: say so, and how to float
  // it. The root's mass is that of the links welded to it as well (a1: a massless base_link
  // with the 6 kg trunk welded to it).
  void noteWeldedRoot(const std::vector<int>& order) {
    if (floating_base_ || rootIsGround()) return;
    std::vector<char> on_root(links_.size(), 0);
    double mass = 0.0;
    for (int link : order) {
      const int j = parent_joint_[link];
      on_root[link] = link == root_ ||
                      (joints_[j].type == "fixed" && on_root[link_index_.at(joints_[j].parent)]);
      if (on_root[link]) mass += links_[link].inertia.mass;
    }
    if (!(mass > 0.0)) return;
    const LinkElement& root = links_[root_];
    std::ostringstream note;
    note << source_ << ":" << root.line << ": " << linkRef(root.name) << " (" << mass
         << " kg with the links welded to it) is the root and is welded to the world: a fixed "
         << "base; a robot that moves its base needs floating_base (the YAML wrapper's "
         << "floating_base: true, --floating-base, ModelSource.floating_base)";
    warnings_.insert(warnings_.begin(), note.str());
  }

  // Simulations start at q = 0 (a URDF names no other pose): a limit range that excludes it
  // makes the limit rows throw the joint back into range at the first step (kinova gains 40 J
  // in 0.2 s), and a zero range (an exporter's placeholder <limit lower="0" upper="0">) locks it.
  void noteLimitsAtTheStart() {
    std::string outside;
    int count = 0;
    for (const JointElement& j : joints_) {
      if (!j.has_limit || (j.type != "revolute" && j.type != "prismatic")) continue;
      if (j.lower == j.upper) {
        std::ostringstream note;
        note << source_ << ":" << j.line << ": " << jointRef(j.name) << ": <limit lower=\""
             << j.lower << "\" upper=\"" << j.upper << "\">: a zero range, which locks this "
             << j.type << " joint when limits are enforced (a YAML wrapper's limits: data "
             << "leaves them unenforced)";
        warnings_.push_back(note.str());
      } else if (j.lower > 0.0 || j.upper < 0.0) {
        std::ostringstream range;
        range << " [" << j.lower << ", " << j.upper << "]";
        outside += (count++ == 0 ? "" : ", ") + jointRef(j.name) + range.str();
      }
    }
    if (count == 0) return;
    warnings_.push_back(source_ + ": q = 0, where a simulation starts unless told otherwise, lies "
                        "outside the limits of " + outside + "; the limit rows push " +
                        (count == 1 ? "it" : "them") + " into range at the first steps (start "
                        "inside: a YAML wrapper's initial:, simulate --q0, "
                        "SessionConfig.initial_q)");
  }

  // --- massless links ---

  // massless: weld. A moving joint whose child link and every link beyond it have no mass moves
  // nothing: its motion is undetermined, and welding it changes no other body's dynamics. Its
  // links stay frames (a finger's tip can still be named).
  void weldMasslessSubtrees(const std::vector<int>& order) {
    std::vector<double> subtree_mass(links_.size(), 0.0);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const int link = *it;
      subtree_mass[link] += links_[link].inertia.mass;
      if (parent_joint_[link] >= 0)
        subtree_mass[link_index_.at(joints_[parent_joint_[link]].parent)] += subtree_mass[link];
    }
    for (int link : order) {
      if (parent_joint_[link] < 0 || subtree_mass[link] != 0.0) continue;
      JointElement& joint = joints_[parent_joint_[link]];
      if (joint.type == "fixed") continue;
      std::ostringstream note;
      note << source_ << ":" << joint.line << ": " << jointRef(joint.name) << " (" << joint.type
           << ") welded: its child link '" << printable(joint.child)
           << "' and the links beyond it have no mass (massless: weld)";
      warnings_.push_back(note.str());
      joint.type = "fixed";
    }
  }

  // --- conversion ---

  bool rootIsGround() const { return links_[root_].name == "world"; }

  Model convert(const std::vector<int>& order) {
    int dofs = floating_base_ && !rootIsGround() ? 6 : 0;
    for (const JointElement& j : joints_)
      dofs += j.type == "floating" ? 6 : j.type == "planar" ? 3 : j.type == "fixed" ? 0 : 1;
    if (dofs > limits_.max_dofs)
      fail(0, "", std::to_string(dofs) + " degrees of freedom, more than the limit of " +
                      std::to_string(limits_.max_dofs));
    ModelBuilder builder(name_);
    if (massless_ == MasslessPolicy::kArmature) builder.setMasslessArmature(massless_armature_);
    std::vector<BodySpec> specs;
    specs.reserve(order.size());
    for (int link : order) {
      if (std::optional<BodySpec> spec = bodySpec(link)) specs.push_back(std::move(*spec));
    }
    mergeWeldedInertias(order, specs);
    for (BodySpec& spec : specs) builder.addBody(std::move(spec));
    Model model;
    try {
      model = builder.build();
    } catch (const ModelError& e) {
      rethrowBuildError(e.what());
    }
    attachVisuals(model);
    attachContactSpheres(model);
    return model;
  }

  // Each link's collision spheres on the body its frame moves with; those of links welded to
  // the ground are the ground's own shape, not contacts, and are left out. Named after the
  // <collision> where it has a name not yet taken, else `<link>_sphere_<k>`.
  void attachContactSpheres(Model& model) const {
    for (const LinkElement& link : links_) {
      for (std::size_t k = 0; k < link.contact_spheres.size(); ++k) {
        const LinkElement::Sphere& sphere = link.contact_spheres[k];
        const int f = model.frameIndex(link.name);
        if (f < 0 || model.frames[f].body == 0) continue;
        std::string name = sphere.name;
        const auto taken = [&](const std::string& n) {
          for (const ContactSphere& c : model.contact_spheres)
            if (c.name == n) return true;
          return false;
        };
        if (name.empty() || !nameProblem(name).empty() || taken(name))
          name = link.name + "_sphere_" + std::to_string(k);
        try {
          addContactSphere(model, {name, link.name, sphere.center, sphere.radius});
        } catch (const ModelError& e) {
          fail(0, linkRef(link.name), e.what());
        }
      }
    }
  }

  // Each link's visuals go to the body its frame moves with (a welded link's, through the weld);
  // the ground root's, and those of links welded to the ground, to the world (body 0).
  void attachVisuals(Model& model) const {
    std::unordered_map<std::string_view, const Frame*> frame_of;
    for (const Frame& frame : model.frames) frame_of.emplace(frame.name, &frame);
    const Frame world_frame{"", 0, Transform()};
    for (const LinkElement& link : links_) {
      if (link.visuals.empty()) continue;
      const auto found = frame_of.find(link.name);
      const Frame& f = found != frame_of.end() ? *found->second : world_frame;
      for (VisualShape shape : link.visuals) {
        shape.body = f.body;
        shape.placement = f.placement * shape.placement;
        model.visuals.push_back(std::move(shape));
      }
    }
  }

  // The builder names bodies and joints; the file's links and joints have lines.
  [[noreturn]] void rethrowBuildError(std::string message) const {
    if (message.rfind("body '", 0) == 0) message = "link" + message.substr(4);
    // a vendor file cannot be edited for every load: name the options that load it as it is
    if (message.find("massless body") != std::string::npos &&
        message.find("flexible") == std::string::npos)
      message += " (without editing the file: the option massless: weld welds joints whose links "
                 "have no mass, massless: armature=<kg·m²> adds that armature to each such "
                 "joint; docs/MODEL_FORMAT.md, \"Massless links\")";
    int line = 0;
    for (const auto& [word, index, lines] :
         {std::tuple{"link '", &link_index_, 0}, std::tuple{"joint '", &joint_index_, 1}}) {
      if (message.rfind(word, 0) != 0) continue;
      const std::size_t open = std::string_view(word).size();
      // the name ends at one of the next quotes (names may hold quotes): try a few, not all, so
      // that a name of many quotes costs no quadratic search
      int tries = 0;
      for (std::size_t close = message.find('\'', open);
           close != std::string::npos && line == 0 && tries < 8;
           close = message.find('\'', close + 1), ++tries) {
        const auto it = index->find(message.substr(open, close - open));
        if (it != index->end()) line = lines == 0 ? links_[it->second].line : joints_[it->second].line;
      }
    }
    fail(line, "", message);
  }

  std::optional<BodySpec> bodySpec(int index) {
    const LinkElement& link = links_[index];
    BodySpec b;
    b.name = link.name;
    b.inertia = link.inertia;
    if (index == root_) {
      if (rootIsGround()) {
        // a root named "world" is the ground itself: its children attach to the builder's world
        if (b.inertia.mass != 0.0 || !b.inertia.inertia_com.isZero(0.0))
          fail(link.line, linkRef(link.name),
               "the root link 'world' is the ground and cannot have an inertia");
        if (floating_base_)
          fail(link.line, linkRef(link.name),
               "floating_base needs a root link other than 'world' (this URDF fixes its robot to "
               "the ground already)");
        return std::nullopt;
      }
      b.parent = "world";
      if (floating_base_) {
        b.joint = Joint::freeFlyer();
        b.joint_name = "root_joint";
      }
      return b;
    }
    if (link.name == "world")
      fail(link.line, linkRef(link.name),
           "only the root link may be named 'world' (it is the ground)");
    const JointElement& j = joints_[parent_joint_[index]];
    b.parent = (j.parent == links_[root_].name && rootIsGround()) ? "world" : j.parent;
    b.joint_name = j.name;
    b.placement = j.origin;
    if (j.type == "revolute" || j.type == "continuous") {
      b.joint = Joint::revolute(j.axis);
    } else if (j.type == "prismatic") {
      b.joint = Joint::prismatic(j.axis);
    } else if (j.type == "planar") {
      b.joint = Joint::planar(j.axis);
    } else if (j.type == "floating") {
      b.joint = Joint::freeFlyer();
    } else {
      return b;  // fixed: welded
    }
    b.properties.damping = j.damping;
    // Coulomb friction: a row of 1-DoF joints (docs/CONTACT.md); not read for others
    if (b.joint->nv() == 1) b.properties.friction = j.friction;
    if (j.has_limit) {
      if (j.type == "revolute" || j.type == "prismatic") {
        b.properties.lower = j.lower;
        b.properties.upper = j.upper;
      }
      b.properties.velocity = j.velocity;
      b.properties.effort = j.effort;
    }
    return b;
  }

  // Moves the inertia of every welded (fixed-joint) link into the moving link it is welded to and
  // checks the composite body, which is what the dynamics sees: URDFs often carry placeholder
  // links with a tiny unphysical inertia (anymal_b's 1e-6 kg "base") welded to a real one.
  void mergeWeldedInertias(const std::vector<int>& order, std::vector<BodySpec>& specs) const {
    std::unordered_map<std::string, std::size_t> spec_of;
    for (std::size_t k = 0; k < specs.size(); ++k) spec_of.emplace(specs[k].name, k);
    struct Host {
      std::string name;  // moving link, or empty for the ground
      Transform x_host_link;
    };
    std::unordered_map<std::string, Host> host;
    std::unordered_map<std::string, std::vector<std::string>> welded;
    for (int index : order) {
      const std::string& link = links_[index].name;
      const auto s = spec_of.find(link);
      if (s == spec_of.end()) {
        host[link] = Host{"", Transform()};  // the ground root
        continue;
      }
      BodySpec& b = specs[s->second];
      if (b.joint) {
        host[link] = Host{link, Transform()};
        continue;
      }
      const Host parent = b.parent == "world" ? Host{"", Transform()} : host.at(b.parent);
      const Host h{parent.name, parent.x_host_link * b.placement};
      host[link] = h;
      if (!h.name.empty()) {
        BodySpec& target = specs[spec_of.at(h.name)];
        target.inertia = target.inertia + b.inertia.transformed(h.x_host_link);
        welded[h.name].push_back(link);
      }
      b.inertia = Inertia();
    }
    for (BodySpec& b : specs) {
      if (!b.joint) continue;
      std::string element = linkRef(b.name);
      if (const auto w = welded.find(b.name); w != welded.end()) {
        element += " (with welded links";
        for (const std::string& name : w->second) element += " '" + printable(name) + "'";
        element += ")";
      }
      const int line = links_[link_index_.at(b.name)].line;
      const io_detail::InertiaCheck check = io_detail::applyInertiaPolicy(b, inertia_policy_);
      if (!check.error.empty()) fail(line, element, check.error);
      if (!check.warning.empty())
        warnings_.push_back(source_ + ":" + std::to_string(line) + ": " + element + ": " +
                            check.warning);
    }
  }

  std::string source_;
  bool floating_base_;
  InertiaPolicy inertia_policy_;
  MasslessPolicy massless_;
  double massless_armature_;
  ModelLimits limits_;
  mutable std::vector<std::string> warnings_;  // Model::load_warnings (gathered while reading)
  std::string name_ = "urdf";
  std::vector<LinkElement> links_;
  std::vector<JointElement> joints_;
  std::unordered_map<std::string, std::size_t> link_index_, joint_index_;
  std::vector<int> parent_joint_;  // per link: the joint whose child it is, −1 for the root
  std::unordered_map<std::string, Eigen::Vector4d> materials_;  // <robot>'s named materials
  int root_ = -1;
};

}  // namespace

const char* inertiaPolicyName(InertiaPolicy policy) {
  switch (policy) {
    case InertiaPolicy::kAsGiven: return "as_given";
    case InertiaPolicy::kBalance: return "balance";
    case InertiaPolicy::kStrict: return "strict";
  }
  return "?";
}

const char* masslessPolicyName(MasslessPolicy policy) {
  switch (policy) {
    case MasslessPolicy::kRefuse: return "refuse";
    case MasslessPolicy::kWeld: return "weld";
    case MasslessPolicy::kArmature: return "armature";
  }
  return "?";
}

bool UrdfOptions::any() const {
  return floating_base || inertia != InertiaPolicy::kAsGiven ||
         massless != MasslessPolicy::kRefuse;
}

std::string parseInertiaPolicy(std::string_view text, UrdfOptions& options) {
  for (InertiaPolicy policy :
       {InertiaPolicy::kAsGiven, InertiaPolicy::kBalance, InertiaPolicy::kStrict}) {
    if (text != inertiaPolicyName(policy)) continue;
    options.inertia = policy;
    return {};
  }
  return "'" + io_detail::printable(text) + "': as_given, balance or strict";
}

std::string parseMasslessPolicy(std::string_view text, UrdfOptions& options) {
  constexpr std::string_view kArmature = "armature=";
  if (text == "refuse" || text == "weld") {
    options.massless = text == "weld" ? MasslessPolicy::kWeld : MasslessPolicy::kRefuse;
    options.massless_armature = 0.0;
    return {};
  }
  if (text.substr(0, kArmature.size()) == kArmature) {
    const std::string value(text.substr(kArmature.size()));
    char* end = nullptr;
    const double armature = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
    // a heavier rotor than 1e6 kg·m² is a typo, not a model
    if (!value.empty() && end == value.c_str() + value.size() && armature > 0.0 &&
        armature <= 1e6) {
      options.massless = MasslessPolicy::kArmature;
      options.massless_armature = armature;
      return {};
    }
  }
  return "'" + io_detail::printable(text) +
         "': refuse, weld, or armature=<value> with 0 < value <= 1e6 [kg·m² or kg]";
}

Model loadUrdfString(const std::string& urdf_xml, const UrdfOptions& options,
                     const std::string& source_name, const ModelLimits& limits) {
  try {
    return UrdfReader(source_name, options, limits).read(urdf_xml);
  } catch (const std::exception& e) {
    // names quoted by the model builder are the file's text too
    throw ModelError(io_detail::oneLine(e.what()));
  }
}

Model loadUrdfString(const std::string& urdf_xml, bool floating_base,
                     const std::string& source_name, const ModelLimits& limits) {
  UrdfOptions options;
  options.floating_base = floating_base;
  return loadUrdfString(urdf_xml, options, source_name, limits);
}

namespace {

// The file a mesh name stands for, looked up in the URDF's own directory and its subdirectories
// only: "package://<package>/<path>" and a relative name are <directory>/<path>; "file://<path>"
// and an absolute name count only when they lie inside the directory. Empty when there is no
// such regular file: a model file must not make a viewer read whatever its author names.
std::string findMeshFile(const std::filesystem::path& directory, const std::string& name) {
  namespace fs = std::filesystem;
  std::string_view rest = name;
  fs::path candidate;
  if (rest.rfind("package://", 0) == 0) {
    rest.remove_prefix(10);
    const std::size_t slash = rest.find('/');
    if (slash == std::string_view::npos) return {};
    candidate = directory / fs::path(std::string(rest.substr(slash + 1)));
  } else {
    if (rest.rfind("file://", 0) == 0) rest.remove_prefix(7);
    const fs::path given{std::string(rest)};
    candidate = given.is_absolute() ? given : directory / given;
  }
  std::error_code error;
  const fs::path root = fs::weakly_canonical(directory, error);
  if (error) return {};
  const fs::path file = fs::weakly_canonical(candidate, error);
  if (error || !fs::is_regular_file(file, error)) return {};
  // inside the directory: the canonical root is a prefix of the canonical file, segment-wise
  auto r = root.begin(), f = file.begin();
  for (; r != root.end(); ++r, ++f) {
    if (f == file.end() || *r != *f) return {};
  }
  return file.string();
}

}  // namespace

Model loadUrdf(const std::string& path, bool floating_base, const ModelLimits& limits) {
  UrdfOptions options;
  options.floating_base = floating_base;
  return loadUrdf(path, options, limits);
}

Model loadUrdf(const std::string& path, const UrdfOptions& options, const ModelLimits& limits) {
  Model model = loadUrdfString(io_detail::readTextFile(path, limits.max_text_bytes), options,
                               path, limits);
  const std::filesystem::path directory = std::filesystem::path(path).parent_path();
  for (VisualShape& visual : model.visuals) {
    if (visual.geometry == VisualShape::Geometry::kMesh) {
      visual.mesh_file = findMeshFile(directory.empty() ? "." : directory, visual.mesh);
    }
  }
  return model;
}

}  // namespace hilsim
