// SDFormat → Model. libsdformat reads the XML and builds its DOM (version conversion, frame
// semantics, every pose resolved through its pose graph); the links and joints of that DOM are
// turned into ModelBuilder bodies here. What libsdformat does beyond that is kept away from
// outside input: a text is pre-checked before it reaches the library, the library's console is
// silenced, and the library is used by one thread at a time (docs/MODEL_FORMAT.md, "SDFormat").
#include <sdf/Collision.hh>
#include <sdf/Console.hh>
#include <sdf/Element.hh>
#include <sdf/Error.hh>
#include <sdf/Geometry.hh>
#include <sdf/Joint.hh>
#include <sdf/JointAxis.hh>
#include <sdf/Link.hh>
#include <sdf/Model.hh>
#include <sdf/ParserConfig.hh>
#include <sdf/Plane.hh>
#include <sdf/Root.hh>
#include <sdf/SDFImpl.hh>
#include <sdf/SemanticPose.hh>
#include <sdf/Sphere.hh>
#include <sdf/World.hh>
#include <sdf/parser.hh>
#include <tinyxml2.h>

#include <Eigen/Geometry>
#include <cctype>
#include <cmath>
#include <deque>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"

// libsdformat 12 appends every console line (its debug lines too: one per element it does not
// know) to $HOME/.sdformat/sdformat.log and offers no switch for it. A server that reads texts
// from its clients must not grow a file per request, so the loader closes that stream once. The
// stream sits behind the private sdf::Console::dataPtr, named here through an explicit
// instantiation, the one place where C++ waives access checks.
namespace hilsim {
namespace {
template <auto kMember>
struct ConsoleDataAccess {
  friend auto consoleDataMember() { return kMember; }
};
template struct ConsoleDataAccess<&sdf::Console::dataPtr>;
auto consoleDataMember();
}  // namespace
}  // namespace hilsim

namespace hilsim {

namespace {

using io_detail::printable;

std::string linkRef(std::string_view name) { return "link '" + printable(name) + "'"; }
std::string jointRef(std::string_view name) { return "joint '" + printable(name) + "'"; }

Transform toTransform(const ignition::math::Pose3d& pose) {
  const ignition::math::Quaterniond& q = pose.Rot();
  return Transform(Eigen::Quaterniond(q.W(), q.X(), q.Y(), q.Z()).normalized().toRotationMatrix(),
                   Vector3(pose.Pos().X(), pose.Pos().Y(), pose.Pos().Z()));
}

Vector3 toVector(const ignition::math::Vector3d& v) { return Vector3(v.X(), v.Y(), v.Z()); }

bool isFinite(const Transform& x) {
  return x.rotation.allFinite() && x.translation.allFinite();
}

// The library's output off (its messages reach the loader as sdf::Errors), once per process.
void silenceLibrary() {
  static std::once_flag once;
  std::call_once(once, [] {
    const sdf::ConsolePtr console = sdf::Console::Instance();
    console->SetQuiet(true);
    console->GetMsgStream().SetStream(nullptr);
    console->GetLogStream().SetStream(nullptr);
    (console.get()->*consoleDataMember())->logFileStream.close();
  });
}

// libsdformat keeps process-wide state (its console, cached element descriptions) and says
// nothing of threads: sessions created at once take turns.
std::mutex& libraryMutex() {
  static std::mutex mutex;
  return mutex;
}

// A link of the model and its nested models, in the top model's frame M.
struct LinkItem {
  std::string name;  // scoped: "<nested>::<link>" for a nested model's link
  const sdf::Link* link = nullptr;
  Transform x_m_l;   // the link frame in M
};

// A joint of the model and its nested models.
struct JointItem {
  std::string name;  // scoped like the links
  const sdf::Joint* joint = nullptr;
  std::string type;  // as the file writes it
  int parent = -1;   // link index; −1: the world
  int child = -1;
  Transform x_m_j;   // the joint frame in M
  Vector3 axis = Vector3::UnitZ();  // unit, in the joint frame (revolute, prismatic)
};

int dofsOf(const std::string& type) {
  if (type == "revolute" || type == "continuous" || type == "prismatic") return 1;
  return type == "ball" ? 3 : 0;
}

class SdfReader {
 public:
  SdfReader(std::string source, std::string directory, const UrdfOptions& options,
            const ModelLimits& limits)
      : source_(std::move(source)),
        directory_(std::move(directory)),
        options_(options),
        limits_(limits) {}

  Model read(const std::string& xml) {
    // a link without <inertial> has SDFormat's default of 1 kg, so a massless link is one its
    // author wrote so: give it armature, or mass (weld is for URDF's links without <inertial>)
    if (options_.massless == MasslessPolicy::kWeld)
      failAt(0, "massless: weld applies to URDF models; an SDFormat model takes "
                "massless: armature=<kg·m²>");
    preCheck(xml);
    silenceLibrary();
    const std::lock_guard<std::mutex> lock(libraryMutex());
    sdf::Root root;
    parse(xml, root);
    const sdf::Model& model = selectModel(root);
    name_ = model.Name();
    collectLinks(model, "", Transform());  // in M: bodyFrame() puts M in the world
    if (static_cast<long long>(links_.size()) > limits_.max_bodies)
      fail(model.Element(), "", std::to_string(links_.size()) +
                                    " links, more than the limit of " +
                                    std::to_string(limits_.max_bodies));
    for (std::size_t k = 0; k < links_.size(); ++k) link_index_.emplace(links_[k].name, k);
    collectJoints(model, "", Transform());
    spanningTree(model);
    return convert(model);
  }

 private:
  // --- errors ---

  [[noreturn]] void fail(const sdf::ElementPtr& element, const std::string& what_element,
                         const std::string& what) const {
    std::string message = source_;
    if (element) {
      if (const std::optional<int> line = element->LineNumber(); line && *line > 0)
        message += ":" + std::to_string(*line);
    }
    message += ": ";
    if (!what_element.empty()) message += what_element + ": ";
    throw ModelError(message + what);
  }

  [[noreturn]] void failAt(int line, const std::string& what) const {
    throw ModelError(source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " + what);
  }

  // libsdformat's errors as one line: the first with its line and element path, the next two
  // after it, and how many more there were.
  [[noreturn]] void failWith(const sdf::Errors& errors) const {
    std::string message = source_;
    const sdf::Error& first = errors.front();
    if (first.LineNumber() && *first.LineNumber() > 0)
      message += ":" + std::to_string(*first.LineNumber());
    message += ": ";
    if (first.XmlPath() && !first.XmlPath()->empty())
      message += printable(*first.XmlPath(), 200) + ": ";
    message += printable(first.Message(), 300);
    const std::size_t shown = std::min<std::size_t>(errors.size(), 3);
    for (std::size_t k = 1; k < shown; ++k) {
      message += "; ";
      if (errors[k].LineNumber() && *errors[k].LineNumber() > 0)
        message += "line " + std::to_string(*errors[k].LineNumber()) + ": ";
      message += printable(errors[k].Message(), 200);
    }
    if (errors.size() > shown)
      message += "; and " + std::to_string(errors.size() - shown) + " more";
    throw ModelError(message);
  }

  // A pose resolved by libsdformat's pose graph (in the entity's model frame by default).
  Transform resolved(const sdf::SemanticPose& pose, const std::string& to = "__model__") const {
    ignition::math::Pose3d out;
    if (const sdf::Errors errors = pose.Resolve(out, to); !errors.empty()) failWith(errors);
    return toTransform(out);
  }

  // --- before libsdformat ---

  // What the library must never see. (1) A text whose root is not <sdf>: the library reads text
  // it cannot read as SDFormat again as URDF through urdfdom 3.0, whose error paths format the
  // file's text as a printf format (docs/MODEL_FORMAT.md, "How URDF is read"); the library's
  // element-tree reader used below does not fall back, and a text holding anything a reader could
  // take for a <robot> element is refused besides, whatever a lenient XML parser makes of it.
  // (2) <include> in a text: the library would read any file the text names. In a file, a
  // relative path inside the file's directory. (3) Tags of very many attributes (tinyxml2 checks
  // each against the earlier ones: quadratic).
  void preCheck(const std::string& xml) const {
    if (xml.size() > limits_.max_text_bytes)
      failAt(0, std::to_string(xml.size()) + " bytes, larger than the limit of " +
                    std::to_string(limits_.max_text_bytes) + " bytes for a model text");
    constexpr int kMaxAttributes = 64;
    if (const int line = io_detail::tagWithTooManyAttributes(xml, kMaxAttributes))
      failAt(line, "an element with more than " + std::to_string(kMaxAttributes) + " attributes");
    int line = 1;
    for (std::size_t k = 0; k < xml.size(); ++k) {
      if (xml[k] == '\n') ++line;
      if (xml[k] != '<') continue;
      std::size_t j = k + 1;
      while (j < xml.size() && std::isspace(static_cast<unsigned char>(xml[j]))) ++j;
      if (xml.compare(j, 5, "robot") == 0)
        failAt(line, "a <robot> element: a URDF is read as URDF (a .urdf file, loadUrdf), not as "
                     "SDFormat");
    }
    tinyxml2::XMLDocument document;
    if (document.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS)
      failAt(document.ErrorLineNum(),
             std::string("malformed XML (") + document.ErrorName() + ")");
    const tinyxml2::XMLElement* sdf = document.RootElement();
    if (sdf == nullptr || std::string_view(sdf->Name()) != "sdf" ||
        sdf->NextSiblingElement() != nullptr)
      failAt(sdf ? sdf->GetLineNum() : 0, "the document must be one <sdf> element");
    // every element, iteratively (tinyxml2 nests at most 100 deep, but no recursion is needed)
    std::vector<const tinyxml2::XMLElement*> stack = {sdf};
    while (!stack.empty()) {
      const tinyxml2::XMLElement* e = stack.back();
      stack.pop_back();
      if (std::string_view(e->Name()) == "include") checkInclude(*e);
      // libsdformat prints this error to std::cerr itself (found by fuzzing): refused first
      if (const char* name = e->Attribute("name");
          name != nullptr && std::string_view(name).find("::") != std::string_view::npos)
        failAt(e->GetLineNum(), "<" + printable(e->Name()) + " name='" + printable(name) +
                                    "'>: '::' is SDFormat's scope delimiter, not part of a name");
      for (const tinyxml2::XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement())
        stack.push_back(c);
    }
  }

  void checkInclude(const tinyxml2::XMLElement& include) const {
    const int line = include.GetLineNum();
    if (directory_.empty())
      failAt(line, "<include>: a model sent as text cannot include files (send one text with "
                   "every model in it)");
    const tinyxml2::XMLElement* uri = include.FirstChildElement("uri");
    const char* text = uri ? uri->GetText() : nullptr;
    if (text == nullptr) failAt(line, "<include> has no <uri>");
    const std::string name = text;
    namespace fs = std::filesystem;
    const fs::path relative(name);
    bool inside = !name.empty() && name.find("://") == std::string::npos &&
                  relative.is_relative();
    for (const fs::path& part : relative) inside = inside && part != "..";
    if (!inside)
      failAt(line, "<include> <uri>" + printable(name) + "</uri>: only a relative path inside " +
                       "the file's directory is read (no URI scheme, no '..', not absolute)");
    // libsdformat looks in the working directory before it asks the loader's callback
    std::error_code ec;
    const fs::path local = fs::current_path(ec) / relative;
    const fs::path wanted = fs::path(directory_) / relative;
    if (!ec && fs::exists(local, ec) && !fs::equivalent(local, wanted, ec))
      failAt(line, "<include> <uri>" + printable(name) + "</uri> names a file in the working "
                                                         "directory as well; run from elsewhere");
  }

  // --- libsdformat ---

  void parse(const std::string& xml, sdf::Root& root) {
    sdf::ParserConfig config;
    const std::string directory = directory_;
    config.SetFindCallback([directory](const std::string& name) -> std::string {
      if (directory.empty()) return {};
      std::error_code ec;
      const std::filesystem::path file = std::filesystem::path(directory) / name;
      return std::filesystem::exists(file, ec) ? file.string() : std::string();
    });
    // The element-tree reader: unlike sdf::Root::LoadSdfString, it never retries the text as URDF.
    sdf::SDFPtr document(new sdf::SDF);
    sdf::init(document);
    sdf::Errors errors;
    if (!sdf::readString(xml, config, document->Root(), errors) && errors.empty())
      errors.emplace_back(sdf::ErrorCode::STRING_READ, "not a readable SDFormat document");
    if (!errors.empty()) failWith(errors);
    errors = root.Load(document, config);
    // libsdformat refuses principal moments that break the triangle inequality, yet keeps them in
    // its DOM: the inertia policy decides (mergeWeldedInertias), as for URDF
    std::erase_if(errors, [](const sdf::Error& e) {
      return e.Code() == sdf::ErrorCode::LINK_INERTIA_INVALID;
    });
    if (!errors.empty()) failWith(errors);
  }

  // The robot: the <model>, or the one model of the <world> that is not static scenery.
  const sdf::Model& selectModel(const sdf::Root& root) {
    if (const sdf::Model* model = root.Model()) {
      model_pose_ = toTransform(model->RawPose());
      return *model;
    }
    if (root.WorldCount() != 1)
      failAt(0, root.WorldCount() == 0 ? "no <model> and no <world>"
                                       : "more than one <world>");
    const sdf::World& world = *root.WorldByIndex(0);
    gravity_ = toVector(world.Gravity());
    if (!gravity_.allFinite()) fail(world.Element(), "", "<gravity> must be finite");
    std::vector<const sdf::Model*> robots, scenery;
    for (uint64_t k = 0; k < world.ModelCount(); ++k) {
      const sdf::Model* m = world.ModelByIndex(k);
      (m->Static() ? scenery : robots).push_back(m);
    }
    if (robots.empty() && scenery.size() == 1 && !readGround(*scenery.front()))
      robots.push_back(scenery.front());  // one static model: the robot, fixed
    if (robots.size() != 1) {
      std::string names;
      for (const sdf::Model* m : robots)
        names += (names.empty() ? "'" : ", '") + printable(m->Name()) + "'";
      fail(world.Element(), "world '" + printable(world.Name()) + "'",
           robots.empty() ? "has no model that moves (a model that is not <static>)"
                          : "has " + std::to_string(robots.size()) + " models that move (" +
                                names + "): hilsim loads one robot per file");
    }
    for (const sdf::Model* m : scenery) {
      if (m == robots.front() || readGround(*m)) continue;
      warnings_.push_back(source_ + ": static model '" + printable(m->Name()) +
                          "' is scenery without a ground plane: not loaded");
    }
    ignition::math::Pose3d pose;
    if (!robots.front()->SemanticPose().Resolve(pose, "world").empty())
      pose = robots.front()->RawPose();
    model_pose_ = toTransform(pose);
    return *robots.front();
  }

  // A static model with a <plane> collision whose normal is +z in the world: the ground
  // (GroundPlane: z = height, friction μ from <surface><friction><ode><mu>, default 1).
  bool readGround(const sdf::Model& model) {
    ignition::math::Pose3d model_pose;
    if (!model.SemanticPose().Resolve(model_pose, "world").empty()) model_pose = model.RawPose();
    for (uint64_t l = 0; l < model.LinkCount(); ++l) {
      const sdf::Link& link = *model.LinkByIndex(l);
      ignition::math::Pose3d link_pose;
      if (!link.SemanticPose().Resolve(link_pose, "__model__").empty()) continue;
      for (uint64_t c = 0; c < link.CollisionCount(); ++c) {
        const sdf::Collision& collision = *link.CollisionByIndex(c);
        const sdf::Plane* plane = collision.Geom() ? collision.Geom()->PlaneShape() : nullptr;
        if (plane == nullptr) continue;
        ignition::math::Pose3d pose;
        if (!collision.SemanticPose().Resolve(pose).empty()) continue;
        const Transform x = toTransform(model_pose) * toTransform(link_pose) * toTransform(pose);
        const Vector3 normal = x.rotation * toVector(plane->Normal()).normalized();
        if (!isFinite(x) || !normal.allFinite() || (normal - Vector3::UnitZ()).norm() > 1e-9) {
          warnings_.push_back(source_ + ": model '" + printable(model.Name()) +
                              "': a ground plane must face +z in the world; not loaded");
          continue;
        }
        if (ground_) return true;  // the first plane is the ground
        GroundPlane ground;
        ground.enabled = true;
        ground.height = x.translation.z();
        if (sdf::ElementPtr e = collision.Element()) {
          for (const char* child : {"surface", "friction", "ode", "mu"})
            e = e ? e->FindElement(child) : nullptr;
          if (e) ground.friction = e->Get<double>();
        }
        if (!std::isfinite(ground.friction) || ground.friction < 0.0)
          fail(collision.Element(), "model '" + printable(model.Name()) + "'",
               "<mu> of the ground must be finite and >= 0");
        ground_ = ground;
        return true;
      }
    }
    return false;
  }

  // --- the DOM, flattened ---

  void collectLinks(const sdf::Model& model, const std::string& prefix,
                    const Transform& x_m_model) {
    for (uint64_t k = 0; k < model.LinkCount(); ++k) {
      const sdf::Link& link = *model.LinkByIndex(k);
      const Transform x = x_m_model * resolved(link.SemanticPose());
      if (!isFinite(x)) fail(link.Element(), linkRef(prefix + link.Name()), "pose is not finite");
      links_.push_back({prefix + link.Name(), &link, x});
    }
    for (uint64_t k = 0; k < model.ModelCount(); ++k) {
      const sdf::Model& nested = *model.ModelByIndex(k);
      collectLinks(nested, prefix + nested.Name() + "::",
                   x_m_model * resolved(nested.SemanticPose()));
    }
  }

  int linkIndex(const sdf::Joint& joint, const std::string& prefix, const std::string& name,
                const std::string& ref) const {
    if (name == "world") return -1;
    const auto it = link_index_.find(prefix + name);
    if (it == link_index_.end())
      fail(joint.Element(), ref, "no link named '" + printable(prefix + name) + "'");
    return static_cast<int>(it->second);
  }

  void collectJoints(const sdf::Model& model, const std::string& prefix,
                     const Transform& x_m_model) {
    for (uint64_t k = 0; k < model.JointCount(); ++k) {
      const sdf::Joint& joint = *model.JointByIndex(k);
      JointItem item;
      item.name = prefix + joint.Name();
      item.joint = &joint;
      const std::string ref = jointRef(item.name);
      item.type = joint.Element() ? joint.Element()->Get<std::string>("type") : "";
      switch (joint.Type()) {
        case sdf::JointType::REVOLUTE:
        case sdf::JointType::CONTINUOUS:
        case sdf::JointType::PRISMATIC:
        case sdf::JointType::BALL:
        case sdf::JointType::FIXED: break;
        case sdf::JointType::UNIVERSAL:
        case sdf::JointType::REVOLUTE2:
          fail(joint.Element(), ref,
               "joint type '" + printable(item.type) +
                   "' is not supported: write it as two revolute joints through a link between "
                   "them (supported: revolute, continuous, prismatic, ball, fixed)");
        default:
          fail(joint.Element(), ref, "unsupported joint type '" + printable(item.type) +
                                         "' (supported: revolute, continuous, prismatic, ball, "
                                         "fixed)");
      }
      std::string parent, child;
      if (const sdf::Errors errors = joint.ResolveParentLink(parent); !errors.empty())
        failWith(errors);
      if (const sdf::Errors errors = joint.ResolveChildLink(child); !errors.empty())
        failWith(errors);
      item.parent = linkIndex(joint, prefix, parent, ref);
      item.child = linkIndex(joint, prefix, child, ref);
      if (item.child < 0) fail(joint.Element(), ref, "the world cannot be a joint's child");
      if (item.parent == item.child)
        fail(joint.Element(), ref, "link '" + printable(links_[item.child].name) +
                                       "' cannot be its own parent");
      const Transform x_model_j = resolved(joint.SemanticPose());
      item.x_m_j = x_m_model * x_model_j;
      if (!isFinite(item.x_m_j)) fail(joint.Element(), ref, "pose is not finite");
      if (dofsOf(item.type) == 1) {
        const sdf::JointAxis* axis = joint.Axis(0);
        if (axis == nullptr) fail(joint.Element(), ref, "no <axis>");
        ignition::math::Vector3d xyz;
        if (const sdf::Errors errors = axis->ResolveXyz(xyz, "__model__"); !errors.empty())
          failWith(errors);
        // expressed in its model's frame, turned into the joint frame
        item.axis = x_model_j.rotation.transpose() * toVector(xyz);
        if (!item.axis.allFinite() || item.axis.norm() < 1e-12)
          fail(joint.Element(), ref, "<axis><xyz> must be a finite non-zero vector");
        item.axis.normalize();
      }
      joints_.push_back(std::move(item));
    }
    for (uint64_t k = 0; k < model.ModelCount(); ++k) {
      const sdf::Model& nested = *model.ModelByIndex(k);
      collectJoints(nested, prefix + nested.Name() + "::",
                    x_m_model * resolved(nested.SemanticPose()));
    }
  }

  // --- topology ---

  // The tree: breadth-first from the world along joints (parent to child, file order), then from
  // each link still unreached (the canonical link first): such a root is free. A joint whose child
  // is reached already closes a loop. Bodies are then numbered depth-first, children in file
  // order, as for URDF.
  void spanningTree(const sdf::Model& model) {
    const int n = static_cast<int>(links_.size());
    std::vector<std::vector<int>> out(n + 1);  // joints by parent; out[0]: the world's
    std::vector<bool> has_parent(n, false);
    for (int j = 0; j < static_cast<int>(joints_.size()); ++j) {
      out[joints_[j].parent + 1].push_back(j);
      has_parent[joints_[j].child] = true;
    }
    tree_joint_.assign(n, -1);
    std::vector<bool> reached(n, false);
    std::vector<std::vector<int>> tree_children(n + 1);
    const auto grow = [&](int start) {
      std::deque<int> queue = {start};
      while (!queue.empty()) {
        const int node = queue.front();
        queue.pop_front();
        for (int j : out[node + 1]) {
          const int child = joints_[j].child;
          if (reached[child]) {
            loop_joints_.push_back(j);
            continue;
          }
          reached[child] = true;
          tree_joint_[child] = j;
          tree_children[node + 1].push_back(child);
          queue.push_back(child);
        }
      }
    };
    grow(-1);
    // the canonical link (the first link unless the model names one), by its scoped name
    int canonical = -1;
    if (const auto [link, name] = model.CanonicalLinkAndRelativeName(); link != nullptr)
      if (const auto it = link_index_.find(name); it != link_index_.end())
        canonical = static_cast<int>(it->second);
    while (true) {
      int root = canonical >= 0 && !reached[canonical] ? canonical : -1;
      for (int l = 0; l < n && root < 0; ++l)
        if (!reached[l] && !has_parent[l]) root = l;
      for (int l = 0; l < n && root < 0; ++l)
        if (!reached[l]) root = l;
      if (root < 0) break;
      reached[root] = true;
      free_roots_.push_back(root);
      grow(root);
    }
    // depth-first numbering
    std::vector<int> stack;
    for (auto it = free_roots_.rbegin(); it != free_roots_.rend(); ++it) stack.push_back(*it);
    for (auto it = tree_children[0].rbegin(); it != tree_children[0].rend(); ++it)
      stack.push_back(*it);
    while (!stack.empty()) {
      const int link = stack.back();
      stack.pop_back();
      order_.push_back(link);
      for (auto it = tree_children[link + 1].rbegin(); it != tree_children[link + 1].rend(); ++it)
        stack.push_back(*it);
    }
    is_static_ = model.Static();
  }

  // --- conversion ---

  // The body frame of each link in the world: its tree joint's frame when that joint moves (a
  // body's frame is its joint's child frame), else the link frame.
  Transform bodyFrame(int link) const {
    const int j = tree_joint_[link];
    const bool moving = j >= 0 && joints_[j].type != "fixed";
    return model_pose_ * (moving ? joints_[j].x_m_j : links_[link].x_m_l);
  }

  Model convert(const sdf::Model& model) {
    const int n = static_cast<int>(links_.size());
    x_w_b_.resize(n);
    for (int l = 0; l < n; ++l) x_w_b_[l] = bodyFrame(l);
    // the moving joints' degrees of freedom, and the free roots'
    long long dofs = 0;
    for (int l = 0; l < n; ++l)
      if (tree_joint_[l] >= 0) dofs += dofsOf(joints_[tree_joint_[l]].type);
    std::vector<BodySpec> specs;
    specs.reserve(order_.size());
    int free_count = 0;
    for (int link : order_) {
      specs.push_back(bodySpec(link, free_count));
      if (specs.back().joint && specs.back().joint->nv() == 6) dofs += 6;
    }
    if (dofs > limits_.max_dofs)
      fail(model.Element(), "", std::to_string(dofs) +
                                    " degrees of freedom, more than the limit of " +
                                    std::to_string(limits_.max_dofs));
    mergeWeldedInertias(specs);
    ModelBuilder builder(name_);
    builder.setGravity(gravity_);
    if (options_.massless == MasslessPolicy::kArmature)
      builder.setMasslessArmature(options_.massless_armature);
    for (BodySpec& spec : specs) builder.addBody(std::move(spec));
    Model built;
    try {
      built = builder.build();
    } catch (const ModelError& e) {
      io_detail::rethrowBuildError(e, source_, "link");
    }
    addLoops(built);
    addContactSpheres(built);
    if (ground_) {
      try {
        setGround(built, *ground_);
      } catch (const ModelError& e) {
        failAt(0, std::string("ground plane: ") + e.what());
      }
    }
    // the reader's notes first, then the builder's (armature added to massless joints)
    built.load_warnings.insert(built.load_warnings.begin(), warnings_.begin(), warnings_.end());
    return built;
  }

  BodySpec bodySpec(int link, int& free_count) {
    const LinkItem& item = links_[link];
    BodySpec b;
    b.name = item.name;
    b.inertia = linkInertia(link);
    const int j = tree_joint_[link];
    if (j < 0) {
      // a root without a joint to the world: free, unless the model is static
      b.placement = x_w_b_[link];
      if (!is_static_ || options_.floating_base) {
        b.joint = Joint::freeFlyer();
        b.joint_name = free_count++ == 0 ? "root_joint" : item.name + "_root_joint";
      }
      return b;
    }
    const JointItem& joint = joints_[j];
    const std::string ref = jointRef(joint.name);
    b.parent = joint.parent < 0 ? "world" : links_[joint.parent].name;
    b.joint_name = joint.name;
    const Transform x_w_parent = joint.parent < 0 ? Transform() : x_w_b_[joint.parent];
    b.placement = x_w_parent.inverse() * x_w_b_[link];
    if (joint.type == "fixed") {
      if (joint.parent < 0 && options_.floating_base) {
        // floating_base: the weld to the world becomes a free joint, as for a URDF's root link
        b.joint = Joint::freeFlyer();
        ++free_count;
      }
      return b;
    }
    if (joint.parent < 0 && options_.floating_base)
      fail(joint.joint->Element(), ref,
           "floating_base needs a model that is free or welded to the world; this joint moves "
           "its link against the world already");
    if (joint.type == "ball") {
      b.joint = Joint::spherical();
    } else if (joint.type == "prismatic") {
      b.joint = Joint::prismatic(joint.axis);
    } else {
      b.joint = Joint::revolute(joint.axis);
    }
    readDynamics(joint, b.properties);
    return b;
  }

  // <axis><dynamics> and <axis><limit>: damping for every joint, the rest for 1-DoF joints.
  void readDynamics(const JointItem& joint, JointProperties& p) const {
    const sdf::JointAxis* axis = joint.joint->Axis(0);
    if (axis == nullptr) return;
    const std::string ref = jointRef(joint.name);
    const auto check = [&](double value, const char* what) {
      if (!std::isfinite(value) || value < 0.0)
        fail(joint.joint->Element(), ref, std::string(what) + " must be finite and >= 0");
      return value;
    };
    p.damping = check(axis->Damping(), "<dynamics><damping>");
    if (dofsOf(joint.type) != 1) return;
    p.friction = check(axis->Friction(), "<dynamics><friction>");
    p.stiffness = check(axis->SpringStiffness(), "<dynamics><spring_stiffness>");
    p.spring_reference = axis->SpringReference();
    if (!std::isfinite(p.spring_reference))
      fail(joint.joint->Element(), ref, "<dynamics><spring_reference> must be finite");
    // SDFormat writes "no limit" as ±1e16 (position) and as a negative or infinite value
    // (effort, velocity)
    constexpr double kNoLimit = 1e16;
    constexpr double kInf = std::numeric_limits<double>::infinity();
    if (joint.type != "continuous") {
      if (std::isnan(axis->Lower()) || std::isnan(axis->Upper()))
        fail(joint.joint->Element(), ref, "<limit> lower and upper must be numbers");
      p.lower = axis->Lower() <= -kNoLimit ? -kInf : axis->Lower();
      p.upper = axis->Upper() >= kNoLimit ? kInf : axis->Upper();
      if (p.lower > p.upper)
        fail(joint.joint->Element(), ref, "<limit> lower limit must not exceed upper limit");
    }
    p.effort = axis->Effort() >= 0.0 && std::isfinite(axis->Effort()) ? axis->Effort() : kInf;
    p.velocity =
        axis->MaxVelocity() >= 0.0 && std::isfinite(axis->MaxVelocity()) ? axis->MaxVelocity()
                                                                         : kInf;
  }

  // The link's <inertial> (the tensor about the centre of mass in the rotated <inertial> frame,
  // whose pose is given in the link frame) in the link's body frame.
  Inertia linkInertia(int link) const {
    const ignition::math::Inertiald& inertial = links_[link].link->Inertial();
    const ignition::math::MassMatrix3d& mass = inertial.MassMatrix();
    const ignition::math::Vector3d d = mass.DiagonalMoments(), o = mass.OffDiagonalMoments();
    Matrix3 about_com;
    about_com << d.X(), o.X(), o.Y(), o.X(), d.Y(), o.Z(), o.Y(), o.Z(), d.Z();
    const Transform x_l_i = toTransform(inertial.Pose());
    const Inertia in_link(mass.Mass(), x_l_i.translation,
                          x_l_i.rotation * about_com * x_l_i.rotation.transpose());
    if (std::isnan(mass.Mass()) || mass.Mass() < 0.0)
      fail(links_[link].link->Element(), linkRef(links_[link].name), "<mass> must be >= 0");
    return in_link.transformed(linkInBody(link));
  }

  // X_BL: the link frame in its body frame (identity unless a moving joint's frame is elsewhere).
  Transform linkInBody(int link) const {
    const int j = tree_joint_[link];
    if (j < 0 || joints_[j].type == "fixed") return Transform();
    return joints_[j].x_m_j.inverse() * links_[link].x_m_l;
  }

  // The inertia of welded links moved into the moving body they ride on, and each moving body's
  // composite checked by the inertia policy, as for URDF (docs/MODEL_FORMAT.md, "Inertia policy").
  void mergeWeldedInertias(std::vector<BodySpec>& specs) {
    std::unordered_map<std::string, std::size_t> spec_of;
    for (std::size_t k = 0; k < specs.size(); ++k) spec_of.emplace(specs[k].name, k);
    // per welded body: the moving body it rides on (none: the world) and its pose there
    std::unordered_map<std::string, std::pair<std::string, Transform>> host;
    std::unordered_map<std::string, std::string> parts;  // "'a' 'b'" per moving body
    for (BodySpec& b : specs) {
      if (b.joint) {
        host[b.name] = {b.name, Transform()};
        continue;
      }
      const auto parent = b.parent == "world" ? std::pair<std::string, Transform>{"", Transform()}
                                              : host.at(b.parent);
      host[b.name] = {parent.first, parent.second * b.placement};
      if (!parent.first.empty()) {
        BodySpec& target = specs[spec_of.at(parent.first)];
        target.inertia = target.inertia + b.inertia.transformed(host[b.name].second);
        parts[parent.first] += " '" + printable(b.name) + "'";
      }
      b.inertia = Inertia();
    }
    for (BodySpec& b : specs) {
      if (!b.joint) continue;
      std::string element = linkRef(b.name);
      if (const auto p = parts.find(b.name); p != parts.end())
        element += " (with welded links" + p->second + ")";
      const sdf::ElementPtr at = links_[link_index_.at(b.name)].link->Element();
      const io_detail::InertiaCheck check = io_detail::applyInertiaPolicy(b, options_.inertia);
      if (!check.error.empty()) fail(at, element, check.error);
      if (check.warning.empty()) continue;
      std::string where = source_;
      if (at && at->LineNumber()) where += ":" + std::to_string(*at->LineNumber());
      warnings_.push_back(where + ": " + element + ": " + check.warning);
    }
  }

  // Each joint left out of the tree: a loop closure between its parent's and its child's body
  // frames, both at the joint frame (assembled, they coincide).
  void addLoops(Model& model) const {
    long long rows = 0;
    for (int j : loop_joints_) {
      const JointItem& joint = joints_[j];
      LoopClosureSpec spec;
      spec.name = joint.name;
      if (joint.type == "revolute" || joint.type == "continuous") {
        spec.type = ClosureType::kRevolute;
      } else if (joint.type == "prismatic") {
        spec.type = ClosureType::kPrismatic;
      } else if (joint.type == "ball") {
        spec.type = ClosureType::kBall;
      } else {
        spec.type = ClosureType::kWeld;
      }
      rows += closureRows(spec.type);
      if (rows > limits_.max_constraint_rows)
        fail(joint.joint->Element(), jointRef(joint.name),
             "closing a loop, it takes the model beyond the limit of " +
                 std::to_string(limits_.max_constraint_rows) + " constraint rows");
      const Transform x_w_j = model_pose_ * joint.x_m_j;
      spec.body_a = joint.parent < 0 ? "world" : links_[joint.parent].name;
      spec.frame_a = joint.parent < 0 ? x_w_j : x_w_b_[joint.parent].inverse() * x_w_j;
      spec.body_b = links_[joint.child].name;
      spec.frame_b = x_w_b_[joint.child].inverse() * x_w_j;
      spec.axis = joint.axis;
      try {
        addLoopClosure(model, spec);
      } catch (const ModelError& e) {
        fail(joint.joint->Element(), jointRef(joint.name),
             std::string("as a loop closure: ") + e.what());
      }
    }
  }

  // <collision><geometry><sphere>: a contact sphere on the body its link moves with, named
  // "<link>::<collision>"; those of links welded to the world are the world's shape and left out.
  void addContactSpheres(Model& model) const {
    for (std::size_t l = 0; l < links_.size(); ++l) {
      const sdf::Link& link = *links_[l].link;
      const int frame = model.frameIndex(links_[l].name);
      if (frame < 0 || model.frames[frame].body == 0) continue;
      const Transform x_b_l = linkInBody(static_cast<int>(l));
      for (uint64_t c = 0; c < link.CollisionCount(); ++c) {
        const sdf::Collision& collision = *link.CollisionByIndex(c);
        const sdf::Sphere* sphere = collision.Geom() ? collision.Geom()->SphereShape() : nullptr;
        if (sphere == nullptr) continue;
        const Transform x_l_c = resolved(collision.SemanticPose(), "");
        const std::string ref = linkRef(links_[l].name);
        if (!(sphere->Radius() > 0.0) || !std::isfinite(sphere->Radius()))
          fail(collision.Element(), ref, "<collision> <sphere><radius> must be positive");
        ContactSphereSpec spec;
        spec.name = links_[l].name + "::" + collision.Name();
        spec.body = links_[l].name;
        spec.center = x_b_l.actPoint(x_l_c.translation);
        spec.radius = sphere->Radius();
        try {
          addContactSphere(model, spec);
        } catch (const ModelError& e) {
          fail(collision.Element(), ref, e.what());
        }
      }
    }
  }

  std::string source_;
  std::string directory_;  // of the file; empty for a text (nothing is read from disk)
  UrdfOptions options_;
  ModelLimits limits_;
  std::vector<std::string> warnings_;  // Model::load_warnings
  std::string name_;
  Vector3 gravity_ = Vector3(0.0, 0.0, -9.81);
  Transform model_pose_;               // the model frame M in the world
  std::optional<GroundPlane> ground_;
  std::vector<LinkItem> links_;
  std::vector<JointItem> joints_;
  std::unordered_map<std::string, std::size_t> link_index_;
  std::vector<int> tree_joint_;   // per link: the joint of the tree that moves it, −1 for a root
  std::vector<int> free_roots_;   // roots without a joint to the world, in the order chosen
  std::vector<int> loop_joints_;  // joints left out of the tree
  std::vector<int> order_;        // links, depth-first
  std::vector<Transform> x_w_b_;  // per link: its body frame in the world
  bool is_static_ = false;
};

}  // namespace

Model loadSdfString(const std::string& xml, const UrdfOptions& options,
                    const std::string& source_name, const ModelLimits& limits) {
  try {
    return SdfReader(source_name, "", options, limits).read(xml);
  } catch (const std::exception& e) {
    // names quoted by the model builder and libsdformat's messages are the file's text too
    throw ModelError(io_detail::oneLine(e.what()));
  }
}

Model loadSdf(const std::string& path, const UrdfOptions& options, const ModelLimits& limits) {
  const std::string xml = io_detail::readTextFile(path, limits.max_text_bytes);
  std::error_code ec;
  const std::filesystem::path directory =
      std::filesystem::absolute(io_detail::directoryOf(path), ec);
  try {
    return SdfReader(path, ec ? io_detail::directoryOf(path) : directory.string(), options, limits)
        .read(xml);
  } catch (const std::exception& e) {
    throw ModelError(io_detail::oneLine(e.what()));
  }
}

}  // namespace hilsim
