// URDF → Model through urdfdom. urdfdom parses and checks the XML; this file checks what urdfdom
// lets through (numbers, tree shape, inertias, axes) and maps each link/joint to a BodySpec.
#include <console_bridge/console.h>
#include <tinyxml.h>
#include <urdf_parser/urdf_parser.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "engine/model/model_builder.h"

namespace hilsim {

namespace {

using io_detail::rethrowBuildError;

constexpr const char* kSupportedTypes = "revolute, continuous, prismatic, fixed, floating, planar";

// Collects urdfdom's console_bridge errors while it parses: urdfdom reports every problem only
// there, and a bad <inertial> does not even fail the parse. The handler is process-global, so
// parses are serialised; console_bridge calls log() under its own lock.
class ConsoleCapture : public console_bridge::OutputHandler {
 public:
  ConsoleCapture() : lock_(mutex()) { console_bridge::useOutputHandler(this); }
  ~ConsoleCapture() override { stop(); }
  ConsoleCapture(const ConsoleCapture&) = delete;
  ConsoleCapture& operator=(const ConsoleCapture&) = delete;

  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR) errors_.push_back(text);
  }

  /// Uninstalls the handler (so nothing writes errors_ any more) and returns the errors.
  std::vector<std::string> finish() {
    stop();
    return std::move(errors_);
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  void stop() {
    if (active_) console_bridge::restorePreviousOutputHandler();
    active_ = false;
  }

  std::lock_guard<std::mutex> lock_;
  bool active_ = true;
  std::vector<std::string> errors_;
};

// The name in "<word> [name]" or "<word> 'name'" inside a urdfdom message (word matched with
// either capitalisation of its first letter), or nullopt. Plain scanning, not std::regex: the
// messages quote file content, and libstdc++'s regex recurses once per character.
std::optional<std::string> findReference(const std::string& message, std::string word) {
  for (int variant = 0; variant < 2; ++variant) {
    word[0] = static_cast<char>(variant == 0 ? std::tolower(word[0]) : std::toupper(word[0]));
    for (std::size_t at = message.find(word + " "); at != std::string::npos;
         at = message.find(word + " ", at + 1)) {
      const std::size_t open = at + word.size() + 1;
      if (open >= message.size() || (message[open] != '[' && message[open] != '\'')) continue;
      const char close = message[open] == '[' ? ']' : '\'';
      const std::size_t end = message.find(close, open + 1);
      if (end != std::string::npos) return message.substr(open + 1, end - open - 1);
    }
  }
  return std::nullopt;
}

// One line out of urdfdom's messages: the first (root cause) error, with the element it names.
std::string describeParseErrors(const std::vector<std::string>& errors) {
  if (errors.empty()) return "urdfdom could not parse the file";
  for (const std::string& e : errors) {
    const std::size_t at = e.find("] has no known type [");
    if (at == std::string::npos) continue;
    const std::optional<std::string> joint = findReference(e, "joint");
    const std::size_t type_end = e.find(']', at + 21);
    if (!joint || type_end == std::string::npos) continue;
    return "joint '" + *joint + "': unsupported joint type '" +
           e.substr(at + 21, type_end - at - 21) + "' (supported: " + kSupportedTypes + ")";
  }
  std::string cause = errors.front();
  if (cause.find("No root link found") != std::string::npos)
    return "no root link: every link has a parent joint, so the links form a closed loop (closed "
           "loops are not supported)";
  for (const std::string prefix : {"Failed to build tree: ", "Failed to find root link: "}) {
    if (cause.rfind(prefix, 0) == 0) cause.erase(0, prefix.size());
  }
  // drop urdfdom's long advice after the first sentence
  if (const auto cut = cause.find(".  "); cut != std::string::npos) cause.resize(cut + 1);
  for (const char* word : {"joint", "link"}) {
    for (const std::string& e : errors) {
      const std::optional<std::string> name = findReference(e, word);
      if (!name) continue;
      const std::string element = std::string(word) + " '" + *name + "'";
      if (cause == element + " is not unique.") return element + ": duplicate name";
      return element + ": " + cause;
    }
  }
  // tinyxml's own messages ("Error reading end tag.") name no element
  if (cause.rfind("Error", 0) == 0 || cause.rfind("Failed to read", 0) == 0)
    return "malformed XML: " + cause;
  return cause;
}

// True when the document has links and every one of them is some joint's child: the links then
// form a closed loop with no root. urdfdom links its tree before it looks for the root, and the
// loop of shared_ptr it has built by then is never freed, so this case is caught beforehand.
bool everyLinkHasAParent(const std::string& xml) {
  TiXmlDocument document;
  document.Parse(xml.c_str());
  const TiXmlElement* robot = document.Error() ? nullptr : document.FirstChildElement("robot");
  if (robot == nullptr) return false;  // urdfdom reports it
  std::set<std::string> links, children;
  for (const TiXmlElement* e = robot->FirstChildElement("link"); e; e = e->NextSiblingElement("link"))
    if (const char* name = e->Attribute("name")) links.insert(name);
  for (const TiXmlElement* e = robot->FirstChildElement("joint"); e;
       e = e->NextSiblingElement("joint")) {
    const TiXmlElement* child = e->FirstChildElement("child");
    if (const char* link = child ? child->Attribute("link") : nullptr) children.insert(link);
  }
  if (links.empty()) return false;
  for (const std::string& link : links)
    if (children.count(link) == 0) return false;
  return true;
}

// Order in which <joint name="…"> elements first appear in the text. urdfdom keeps joints in a
// name-sorted map; bodies are numbered in file order instead, as MuJoCo does, so that q follows
// the order the author wrote.
std::unordered_map<std::string, int> jointFileOrder(const std::string& xml) {
  std::unordered_map<std::string, int> rank;
  std::size_t at = 0;
  while ((at = xml.find('<', at)) != std::string::npos) {
    if (xml.compare(at, 4, "<!--") == 0) {
      at = xml.find("-->", at + 4);
      if (at == std::string::npos) break;
      continue;
    }
    const std::size_t tag_end = xml.find('>', at);
    if (tag_end == std::string::npos) break;
    const bool is_joint = xml.compare(at, 6, "<joint") == 0 && at + 6 < xml.size() &&
                          std::isspace(static_cast<unsigned char>(xml[at + 6]));
    if (is_joint) {
      // the name attribute: name="…" or name='…'
      for (std::size_t n = xml.find("name", at); n != std::string::npos && n < tag_end;
           n = xml.find("name", n + 4)) {
        if (!std::isspace(static_cast<unsigned char>(xml[n - 1]))) continue;
        std::size_t q = n + 4;
        while (q < tag_end && std::isspace(static_cast<unsigned char>(xml[q]))) ++q;
        if (q >= tag_end || xml[q] != '=') continue;
        ++q;
        while (q < tag_end && std::isspace(static_cast<unsigned char>(xml[q]))) ++q;
        if (q >= tag_end || (xml[q] != '"' && xml[q] != '\'')) continue;
        const std::size_t close = xml.find(xml[q], q + 1);
        if (close == std::string::npos || close > tag_end) break;
        rank.emplace(xml.substr(q + 1, close - q - 1), static_cast<int>(rank.size()));
        break;
      }
    }
    at = tag_end + 1;
  }
  return rank;
}

bool finite(const urdf::Vector3& v) {
  return std::isfinite(v.x) && std::isfinite(v.y) && std::isfinite(v.z);
}
bool finite(const urdf::Pose& p) {
  const urdf::Rotation& r = p.rotation;
  return finite(p.position) && std::isfinite(r.x) && std::isfinite(r.y) && std::isfinite(r.z) &&
         std::isfinite(r.w);
}

Vector3 toEigen(const urdf::Vector3& v) { return Vector3(v.x, v.y, v.z); }

Transform toTransform(const urdf::Pose& pose) {
  const urdf::Rotation& r = pose.rotation;
  const Eigen::Quaterniond q(r.w, r.x, r.y, r.z);
  return Transform(q.normalized().toRotationMatrix(), toEigen(pose.position));
}

class UrdfConverter {
 public:
  UrdfConverter(const urdf::ModelInterface& urdf, std::string source, bool floating_base,
                const std::string& xml)
      : urdf_(urdf),
        source_(std::move(source)),
        floating_base_(floating_base),
        joint_rank_(jointFileOrder(xml)) {}

  Model convert() {
    checkNumbers();
    const std::vector<std::string> order = treeOrder();
    ModelBuilder builder(urdf_.getName().empty() ? "urdf" : urdf_.getName());
    std::vector<BodySpec> specs;
    specs.reserve(order.size());
    for (const std::string& link : order) {
      if (std::optional<BodySpec> spec = bodySpec(link)) specs.push_back(std::move(*spec));
    }
    mergeWeldedInertias(order, specs);
    for (BodySpec& spec : specs) builder.addBody(std::move(spec));
    try {
      return builder.build();
    } catch (const ModelError& e) {
      rethrowBuildError(e, source_, "link");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& element, const std::string& what) const {
    throw ModelError(source_ + ": " + element + ": " + what);
  }
  static std::string linkRef(const std::string& name) { return "link '" + name + "'"; }
  static std::string jointRef(const std::string& name) { return "joint '" + name + "'"; }

  // urdfdom (3.0) rejects "nan" and "inf" in most places, but not all of its versions do, and
  // some values are never parsed by it as doubles: check every number used.
  void checkNumbers() const {
    for (const auto& [name, link] : urdf_.links_) {
      if (!link || !link->inertial) continue;
      const urdf::Inertial& in = *link->inertial;
      if (!finite(in.origin) || !std::isfinite(in.mass) || !std::isfinite(in.ixx) ||
          !std::isfinite(in.iyy) || !std::isfinite(in.izz) || !std::isfinite(in.ixy) ||
          !std::isfinite(in.ixz) || !std::isfinite(in.iyz))
        fail(linkRef(name), "<inertial> contains a non-finite number (NaN or Inf)");
    }
    for (const auto& [name, joint] : urdf_.joints_) {
      if (!joint) continue;
      if (!finite(joint->parent_to_joint_origin_transform))
        fail(jointRef(name), "<origin> contains a non-finite number (NaN or Inf)");
      if (!finite(joint->axis)) fail(jointRef(name), "<axis> contains a non-finite number");
      if (const auto& d = joint->dynamics;
          d && !(std::isfinite(d->damping) && std::isfinite(d->friction)))
        fail(jointRef(name), "<dynamics> contains a non-finite number (NaN or Inf)");
      if (const auto& l = joint->limits;
          l && !(std::isfinite(l->lower) && std::isfinite(l->upper) && std::isfinite(l->effort) &&
                 std::isfinite(l->velocity)))
        fail(jointRef(name), "<limit> contains a non-finite number (NaN or Inf)");
    }
  }

  // Links from the root, depth first, children in file order. Checks that the links form one
  // tree: a link with two parent joints or a loop detached from the root is a closed chain.
  std::vector<std::string> treeOrder() {
    const urdf::LinkConstSharedPtr root = urdf_.getRoot();
    if (!root) throw ModelError(source_ + ": no root link");
    root_ = root->name;
    for (const auto& [name, joint] : urdf_.joints_) {
      const auto [it, inserted] = parent_joint_.emplace(joint->child_link_name, joint.get());
      if (!inserted)
        fail(linkRef(joint->child_link_name), "has two parent joints ('" + it->second->name +
                                                  "' and '" + name +
                                                  "'): closed kinematic loops are not supported");
      children_[joint->parent_link_name].push_back(joint.get());
    }
    const auto rank = [this](const urdf::Joint* j) {
      const auto it = joint_rank_.find(j->name);
      return it == joint_rank_.end() ? std::numeric_limits<int>::max() : it->second;
    };
    for (auto& [parent, joints] : children_) {
      std::stable_sort(
          joints.begin(), joints.end(),
          [&](const urdf::Joint* a, const urdf::Joint* b) { return rank(a) < rank(b); });
    }
    std::vector<std::string> order;
    std::vector<std::string> stack = {root_};
    while (!stack.empty()) {
      const std::string link = stack.back();
      stack.pop_back();
      order.push_back(link);
      const auto it = children_.find(link);
      if (it == children_.end()) continue;
      for (auto j = it->second.rbegin(); j != it->second.rend(); ++j)
        stack.push_back((*j)->child_link_name);
    }
    if (order.size() != urdf_.links_.size()) {
      const std::unordered_set<std::string> reached(order.begin(), order.end());
      for (const auto& [name, link] : urdf_.links_)
        if (!reached.count(name))
          fail(linkRef(name), "is part of a kinematic loop that never reaches the root link '" +
                                  root_ + "' (closed loops are not supported)");
    }
    return order;
  }

  bool rootIsGround() const { return root_ == "world"; }

  // Link inertia in the link frame: URDF gives it about the centre of mass in the <inertial>
  // frame, I_link = R I R^T with com = origin xyz.
  Inertia linkInertia(const urdf::Link& link) const {
    if (!link.inertial) return Inertia();
    const urdf::Inertial& in = *link.inertial;
    if (in.mass < 0.0) {
      std::ostringstream what;
      what << "<mass> " << in.mass << " kg is negative";
      fail(linkRef(link.name), what.str());
    }
    Matrix3 i;
    i << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
    const Transform x = toTransform(in.origin);
    return Inertia(in.mass, x.translation, x.rotation * i * x.rotation.transpose());
  }

  std::optional<BodySpec> bodySpec(const std::string& link_name) {
    const urdf::LinkConstSharedPtr link = urdf_.getLink(link_name);
    BodySpec b;
    b.name = link_name;
    b.inertia = linkInertia(*link);
    if (link_name == root_) {
      if (rootIsGround()) {
        // a root named "world" is the ground itself: its children attach to the builder's world
        if (b.inertia.mass != 0.0 || !b.inertia.inertia_com.isZero(0.0))
          fail(linkRef(link_name),
               "the root link 'world' is the ground and cannot have an inertia");
        if (floating_base_)
          fail(linkRef(link_name),
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
    if (link_name == "world")
      fail(linkRef(link_name), "only the root link may be named 'world' (it is the ground)");
    const urdf::Joint& j = *parent_joint_.at(link_name);
    b.parent = (j.parent_link_name == root_ && rootIsGround()) ? "world" : j.parent_link_name;
    b.joint_name = j.name;
    b.placement = toTransform(j.parent_to_joint_origin_transform);
    const Vector3 axis = toEigen(j.axis);
    const auto needAxis = [&]() {
      if (axis.norm() < 1e-12) fail(jointRef(j.name), "<axis> must be a non-zero vector");
      return axis.normalized();
    };
    switch (j.type) {
      case urdf::Joint::REVOLUTE:
      case urdf::Joint::CONTINUOUS:
        b.joint = Joint::revolute(needAxis());
        break;
      case urdf::Joint::PRISMATIC:
        b.joint = Joint::prismatic(needAxis());
        break;
      case urdf::Joint::PLANAR:
        b.joint = Joint::planar(needAxis());
        break;
      case urdf::Joint::FLOATING:
        b.joint = Joint::freeFlyer();
        break;
      case urdf::Joint::FIXED:
        return b;
      default:
        fail(jointRef(j.name),
             std::string("unsupported joint type (supported: ") + kSupportedTypes + ")");
    }
    if (j.dynamics) b.properties.damping = j.dynamics->damping;
    if (j.limits) {
      if (j.type == urdf::Joint::REVOLUTE || j.type == urdf::Joint::PRISMATIC) {
        b.properties.lower = j.limits->lower;
        b.properties.upper = j.limits->upper;
      }
      b.properties.velocity = j.limits->velocity;
      b.properties.effort = j.limits->effort;
    }
    return b;
  }

  // Moves the inertia of every welded (fixed-joint) link into the moving link it is welded to and
  // checks the composite body, which is what the dynamics sees: URDFs often carry placeholder
  // links with a tiny unphysical inertia (anymal_b's 1e-6 kg "base") welded to a real one.
  void mergeWeldedInertias(const std::vector<std::string>& order, std::vector<BodySpec>& specs) {
    std::unordered_map<std::string, std::size_t> spec_of;
    for (std::size_t k = 0; k < specs.size(); ++k) spec_of.emplace(specs[k].name, k);
    struct Host {
      std::string name;  // moving link, or empty for the ground
      Transform x_host_link;
    };
    std::unordered_map<std::string, Host> host;
    std::unordered_map<std::string, std::vector<std::string>> welded;
    for (const std::string& link : order) {
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
    for (const BodySpec& b : specs) {
      if (!b.joint) continue;
      const std::string why = b.inertia.validate();
      if (why.empty()) continue;
      std::string element = linkRef(b.name);
      if (const auto w = welded.find(b.name); w != welded.end()) {
        element += " (with welded links";
        for (const std::string& name : w->second) element += " '" + name + "'";
        element += ")";
      }
      fail(element, why);
    }
  }

  const urdf::ModelInterface& urdf_;
  std::string source_;
  bool floating_base_;
  std::unordered_map<std::string, int> joint_rank_;
  std::string root_;
  std::unordered_map<std::string, const urdf::Joint*> parent_joint_;
  std::unordered_map<std::string, std::vector<const urdf::Joint*>> children_;
};

}  // namespace

Model loadUrdfString(const std::string& urdf_xml, bool floating_base,
                     const std::string& source_name) {
  try {
    if (everyLinkHasAParent(urdf_xml))
      throw ModelError(source_name + ": " + describeParseErrors({"No root link found."}));
    urdf::ModelInterfaceSharedPtr urdf;
    std::vector<std::string> errors;
    {
      ConsoleCapture capture;
      urdf = urdf::parseURDF(urdf_xml);
      errors = capture.finish();
    }
    // urdfdom links own their children through shared_ptr: a file with a kinematic loop leaves a
    // reference cycle that would outlive the model. Cut the links' child lists when done.
    struct CycleBreaker {
      urdf::ModelInterfaceSharedPtr& model;
      ~CycleBreaker() {
        if (!model) return;
        for (auto& [name, link] : model->links_) {
          link->child_links.clear();
          link->child_joints.clear();
        }
      }
    } cycle_breaker{urdf};
    if (!urdf || !errors.empty())
      throw ModelError(source_name + ": " + describeParseErrors(errors));
    return UrdfConverter(*urdf, source_name, floating_base, urdf_xml).convert();
  } catch (const ModelError&) {
    throw;
  } catch (const std::exception& e) {
    throw ModelError(source_name + ": " + e.what());
  } catch (...) {
    throw ModelError(source_name + ": unknown error while reading the URDF");
  }
}

Model loadUrdf(const std::string& path, bool floating_base) {
  return loadUrdfString(io_detail::readTextFile(path), floating_base, path);
}

}  // namespace hilsim
