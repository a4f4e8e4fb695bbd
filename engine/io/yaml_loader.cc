// Native YAML model format → Model (format reference: docs/MODEL_FORMAT.md). The reader is strict:
// unknown keys, duplicate keys, wrong types and non-finite numbers are errors, each reported as
// "<file>:<line>: <element>: <what>" so that a typo never silently changes the model.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <span>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "engine/model/beam_modes.h"
#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/builder/system_generator.h"
#include "engine/model/names.h"

namespace hilsim {

namespace {

constexpr int kFormatVersion = 1;

using Keys = std::span<const std::string_view>;

// Top-level keys and their meaning are listed in docs/MODEL_FORMAT.md; keep the two in sync.
constexpr std::string_view kTopLevelKeys[] = {
    "version", "name",  "gravity", "bodies",  "urdf",
    "floating_base", "inertia", "massless", "loops", "forces", "initial", "stabilisation", "generate",
    "limits", "ground", "contacts", "softness", "solver"};
// limits, ground contact and their solver (docs/CONTACT.md, docs/MODEL_FORMAT.md)
constexpr std::string_view kGroundKeys[] = {"height", "friction", "enabled"};
constexpr std::string_view kContactKeys[] = {"name", "body", "center", "radius"};
constexpr std::string_view kSoftnessKeys[] = {"limit", "contact", "friction"};
constexpr std::string_view kSoftnessEntryKeys[] = {"time_constant", "damping_ratio", "impedance"};
constexpr std::string_view kSolverKeys[] = {"max_iterations", "tolerance"};
// a generated system (engine/builder/system_generator.h)
constexpr std::string_view kGenerateKeys[] = {"shape",     "bodies",    "joint",
                                              "link_length", "link_mass", "link_radius"};
// loops and force elements (docs/MODEL_FORMAT.md "Loops and force elements")
constexpr std::string_view kLoopKeys[] = {"name",   "type",    "body_a", "frame_a",
                                          "body_b", "frame_b", "axis",   "length"};
constexpr std::string_view kForceKeys[] = {"name",    "type",      "body_a",   "point_a",
                                           "body_b",  "point_b",   "stiffness", "damping",
                                           "rest_length"};
constexpr std::string_view kStabilisationKeys[] = {"baumgarte_alpha", "baumgarte_beta",
                                                   "projection_iterations"};
constexpr std::string_view kBodyKeys[] = {"name",    "parent",   "parent_node", "joint",
                                          "placement", "inertia", "flexible"};
// flexible bodies (docs/MODEL_FORMAT.md "Flexible bodies")
constexpr std::string_view kFlexibleKeys[] = {
    "file",      "beam",      "lumped_masses", "modal_integrals", "modes", "stiffness",
    "damping",   "nodes",     "hinge_node",    "geometric_stiffening"};
constexpr std::string_view kBeamKeys[] = {"youngs_modulus", "area_moment", "density",
                                          "area",           "length",      "modes",
                                          "elements",       "boundary",    "bending",
                                          "damping_ratio"};
constexpr std::string_view kLumpedKeys[] = {"position", "mass", "rotary_inertia", "slope",
                                            "translation", "second_order"};
constexpr std::string_view kNodeKeys[] = {"name", "position", "slope", "translation",
                                          "second_order"};
constexpr std::string_view kIntegralKeys[] = {
    "mass",                      "first_moment",            "first_moment_modes",
    "rotational_inertia",        "rotational_inertia_modes", "rotational_inertia_second",
    "angular_coupling",          "angular_coupling_modes",   "modal_mass",
    "first_moment_second",       "rotational_inertia_geometric",
    "angular_coupling_geometric"};
constexpr std::string_view kJointKeys[] = {"type",     "name",      "axis",
                                           "damping",  "armature",  "stiffness",
                                           "spring_reference", "limits", "friction"};
constexpr std::string_view kLimitKeys[] = {"lower", "upper", "velocity", "effort"};
constexpr std::string_view kPlacementKeys[] = {"xyz", "rpy", "quaternion"};
constexpr std::string_view kInertiaKeys[] = {"mass", "com", "inertia"};

bool contains(Keys keys, std::string_view key) {
  for (std::string_view k : keys)
    if (k == key) return true;
  return false;
}

std::string listOf(Keys keys) {
  std::string out;
  for (std::string_view k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// What yaml-cpp found wrong. Its parser recurses once per level of nesting and stops at a fixed
// depth (500 levels in 0.7) with the unhelpful "bad file": say what it means.
std::string yamlProblem(const YAML::Exception& e) {
  if (const auto* deep = dynamic_cast<const YAML::DeepRecursion*>(&e))
    return "lists and mappings nested deeper than " + std::to_string(deep->depth() - 1) +
           " levels";
  return e.msg;
}

// "body 'arm'" + "joint" → "body 'arm': joint"; "joint" + "axis" → "joint.axis".
std::string childPath(const std::string& path, const std::string& key) {
  if (path.empty()) return key;
  return path + (path.back() == '\'' ? ": " : ".") + key;
}

std::string formatNumber(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

// A checked mapping: known keys only, each once.
struct Mapping {
  YAML::Node node;
  std::string path;
  std::map<std::string, YAML::Node> values;

  bool has(const std::string& key) const { return values.count(key) != 0; }
  const YAML::Node& at(const std::string& key) const { return values.at(key); }
};

// What one model read has consumed so far, shared with the readers of its included files.
// yaml-cpp shares aliased nodes (`*a`), so a short text can name one big node many times: the
// reader counts what it reads, each use of an alias again, so that its work stays bounded by the
// limits however the text is written. Parsing and reading are bounded apart, each by
// max_text_bytes: a file counts once as parsed and its scalars once as read.
struct ReadBudget {
  std::size_t parsed_bytes = 0;  // the text and its included files
  std::size_t scalar_bytes = 0;  // scalars read, each use of an alias again
  long long dofs = 0;            // joint DoFs and modes of the bodies read, against max_dofs
};

struct ParsedBody {
  BodySpec spec;
  YAML::Node node;
  YAML::Node parent_node;
  YAML::Node inertia_node;
  std::string path;
};

class YamlModelReader {
 public:
  YamlModelReader(std::string source, std::string base_directory, const ModelLimits& limits,
                  ReadBudget& budget)
      : source_(std::move(source)),
        base_directory_(std::move(base_directory)),
        limits_(limits),
        budget_(budget) {}

  Model read(const YAML::Node& root) const {
    if (!root.IsDefined() || root.IsNull())
      fail(root, "", "the file is empty; expected a mapping with 'bodies' or 'urdf'");
    const Mapping top = mapping(root, "", kTopLevelKeys);
    if (top.has("version")) {
      const double version = number(top.at("version"), "version");
      if (version != std::floor(version) || version < 1)
        fail(top.at("version"), "version", "must be the integer " + std::to_string(kFormatVersion));
      if (version > kFormatVersion)
        fail(top.at("version"), "version",
             "format version " + formatNumber(version) + " is newer than this loader (supports " +
                 std::to_string(kFormatVersion) + ")");
    }
    if (top.has("urdf") && top.has("bodies"))
      fail(top.at("bodies"), "bodies",
           "cannot be combined with 'urdf' (a file is either a native model or a URDF wrapper)");
    if (top.has("generate") && (top.has("bodies") || top.has("urdf")))
      fail(top.at("generate"), "generate",
           "cannot be combined with 'bodies' or 'urdf' (the generator makes every body)");
    if (top.has("floating_base") && !top.has("urdf"))
      fail(top.at("floating_base"), "floating_base",
           "only applies to a 'urdf' wrapper; a native model declares a 'free' joint instead");
    if (top.has("inertia") && !top.has("urdf"))
      fail(top.at("inertia"), "inertia",
           "only applies to a 'urdf' wrapper; a native model's inertias must be a rigid body's");
    if (top.has("massless") && !top.has("urdf"))
      fail(top.at("massless"), "massless",
           "only applies to a 'urdf' wrapper; a native model gives a massless joint damping or "
           "armature, or makes it fixed");

    Model model;
    if (top.has("urdf")) {
      model = readUrdfWrapper(top);
    } else if (top.has("bodies")) {
      model = readBodies(top);
    } else if (top.has("generate")) {
      model = readGenerated(top.at("generate"));
    } else {
      fail(root, "",
           "expected 'bodies' (a native model), 'urdf' (a URDF wrapper) or 'generate' (a "
           "generated system)");
    }
    if (top.has("name")) {
      // set after the build: checked here by the builder's rule (engine/model/names.h)
      model.name = text(top.at("name"), "name");
      if (const std::string why = nameProblem(model.name); !why.empty())
        fail(top.at("name"), "name", why);
    }
    if (top.has("gravity")) model.gravity = vector3(top.at("gravity"), "gravity");
    if (top.has("initial")) readInitial(top.at("initial"), model);
    if (top.has("loops")) readLoops(top.at("loops"), model);
    if (top.has("forces")) readForces(top.at("forces"), model);
    if (top.has("stabilisation")) readStabilisation(top.at("stabilisation"), model);
    if (top.has("limits")) readLimitsMode(top.at("limits"), model);
    if (top.has("contacts")) readContacts(top.at("contacts"), model);
    if (top.has("ground")) readGround(top.at("ground"), model);
    if (top.has("softness") || top.has("solver"))
      readContactSettings(top.has("softness") ? &top.at("softness") : nullptr,
                          top.has("solver") ? &top.at("solver") : nullptr, model);
    return model;
  }

 private:
  // --- errors ---

  std::string location(const YAML::Node& at) const {
    if (!at.IsDefined()) return source_;
    const YAML::Mark mark = at.Mark();
    if (mark.is_null()) return source_;
    return source_ + ":" + std::to_string(mark.line + 1);
  }

  [[noreturn]] void fail(const YAML::Node& at, const std::string& path,
                         const std::string& what) const {
    throw ModelError(location(at) + ": " + (path.empty() ? "" : path + ": ") + what);
  }

  // --- limits ---

  // Counts the `bytes` of a scalar read (at least one, so that empty ones count too). Without
  // aliases a text reads at most 1.5 times its size (a double-quoted `\L` or `\P` is 2 bytes
  // and reads as 3, as does a UTF-16 character above U+07FF): only aliases make it read more.
  void chargeText(const YAML::Node& at, const std::string& path, std::size_t bytes) const {
    budget_.scalar_bytes += std::max<std::size_t>(bytes, 1);
    if (budget_.scalar_bytes > limits_.max_text_bytes)
      fail(at, path,
           "the text read, each use of an alias counted again, goes beyond the limit of " +
               std::to_string(limits_.max_text_bytes) + " bytes");
  }

  // Counts the `bytes` of an included file before it is parsed: a model that includes a file
  // many times pays for each.
  void chargeParsed(const YAML::Node& at, const std::string& path, std::size_t bytes) const {
    budget_.parsed_bytes += bytes;
    if (budget_.parsed_bytes > limits_.max_text_bytes)
      fail(at, path,
           "included files take the model text beyond the limit of " +
               std::to_string(limits_.max_text_bytes) + " bytes");
  }

  // Counts degrees of freedom before the data that needs them is read or generated.
  void chargeDofs(const YAML::Node& at, const std::string& path, int dofs,
                  const std::string& what) const {
    budget_.dofs += dofs;
    if (budget_.dofs > limits_.max_dofs)
      fail(at, path,
           what + " take the model to " + std::to_string(budget_.dofs) +
               " degrees of freedom, above the limit of " + std::to_string(limits_.max_dofs));
  }

  // A file the text names: resolved against `directory`, and with files_inside_base_directory
  // confined to it (a relative path that does not leave it).
  std::filesystem::path namedFile(const YAML::Node& node, const std::string& path,
                                  const std::string& directory) const {
    const std::filesystem::path file = text(node, path);
    if (limits_.files_inside_base_directory) {
      const std::filesystem::path normal = file.lexically_normal();
      if (file.is_absolute() || normal.empty() || *normal.begin() == ".." ||
          base_directory_.empty())
        fail(node, path,
             "'" + file.string() +
                 "' is outside the model directory (only a relative path inside it is allowed "
                 "here)");
    }
    return file.is_relative() ? std::filesystem::path(directory) / file : file;
  }

  // A list of at most `limit` entries, checked before any is read.
  void checkListSize(const YAML::Node& list, const std::string& path, int limit,
                     const std::string& what) const {
    if (list.size() > static_cast<std::size_t>(std::max(limit, 0)))
      fail(list, path,
           std::to_string(list.size()) + " " + what + " exceed the limit of " +
               std::to_string(limit));
  }

  // --- typed access ---

  Mapping mapping(const YAML::Node& node, const std::string& path, Keys allowed,
                  Keys reserved = {}) const {
    if (!node.IsMap()) fail(node, path, "expected a mapping (key: value, ...)");
    Mapping m{node, path, {}};
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key_node = it->first;
      if (!key_node.IsScalar()) fail(key_node, path, "keys must be plain strings");
      const std::string key = key_node.Scalar();
      chargeText(key_node, path, key.size());
      if (contains(reserved, key))
        fail(key_node, path,
             "key '" + key +
                 "' is reserved for a later version of the format "
                 "and not supported yet");
      if (!contains(allowed, key))
        fail(key_node, path,
             std::string(path.empty() ? "unknown top-level key" : "unknown key") + " '" + key +
                 "' (expected one of: " + listOf(allowed) + ")");
      if (!m.values.emplace(key, it->second).second)
        fail(key_node, path, "duplicate key '" + key + "'");
    }
    return m;
  }

  const YAML::Node& required(const Mapping& m, const std::string& key) const {
    if (!m.has(key)) fail(m.node, m.path, "missing required key '" + key + "'");
    return m.at(key);
  }

  double number(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, path, "expected a number");
    const std::string& s = node.Scalar();
    chargeText(node, path, s.size());
    double x = 0.0;
    if (!YAML::convert<double>::decode(node, x)) {
      std::string lower;
      for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) lower.erase(0, 1);
      if (lower == "nan" || lower == "inf" || lower == "infinity")
        fail(node, path, "must be a finite number, got '" + s + "'");
      fail(node, path, "expected a finite number, got '" + s + "'");
    }
    if (!std::isfinite(x)) fail(node, path, "must be a finite number, got '" + s + "'");
    return x;
  }

  Eigen::VectorXd numbers(const YAML::Node& node, const std::string& path, int n) const {
    if (!node.IsSequence() || static_cast<int>(node.size()) != n)
      fail(node, path, "expected a list of " + std::to_string(n) + " numbers");
    Eigen::VectorXd out(n);
    for (int k = 0; k < n; ++k) out(k) = number(node[k], path + "[" + std::to_string(k) + "]");
    return out;
  }

  Vector3 vector3(const YAML::Node& node, const std::string& path) const {
    return numbers(node, path, 3);
  }

  std::string text(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar() || node.Scalar().empty()) fail(node, path, "expected a non-empty string");
    chargeText(node, path, node.Scalar().size());
    return node.Scalar();
  }

  bool boolean(const YAML::Node& node, const std::string& path) const {
    bool b = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, b))
      fail(node, path, "expected true or false");
    chargeText(node, path, node.Scalar().size());
    return b;
  }

  double nonNegative(const YAML::Node& node, const std::string& path) const {
    const double x = number(node, path);
    if (x < 0.0) fail(node, path, "must be >= 0, got " + formatNumber(x));
    return x;
  }

  // --- beyond the spanning tree: loops, force elements, initial positions ---

  // A `name` for messages as soon as the entry has one.
  static std::string entryPath(const YAML::Node& node, const std::string& kind,
                               const std::string& list_path) {
    if (node.IsMap()) {
      const YAML::Node name = node["name"];
      if (name.IsDefined() && name.IsScalar() && !name.Scalar().empty())
        return kind + " '" + name.Scalar() + "'";
    }
    return list_path;
  }

  // What a loop and a force element both start with: a mapping of `keys` with a name, a type and
  // the two bodies they join.
  struct JoinedEntry {
    Mapping m;
    std::string path, name, type, body_a, body_b;
  };
  JoinedEntry readJoinedEntry(const YAML::Node& node, const std::string& kind,
                              const std::string& list_path, Keys keys) const {
    const std::string path = entryPath(node, kind, list_path);
    JoinedEntry e{mapping(node, path, keys), path, {}, {}, {}, {}};
    e.name = text(required(e.m, "name"), childPath(path, "name"));
    e.type = text(required(e.m, "type"), childPath(path, "type"));
    e.body_a = text(required(e.m, "body_a"), childPath(path, "body_a"));
    e.body_b = text(required(e.m, "body_b"), childPath(path, "body_b"));
    return e;
  }

  void readLoops(const YAML::Node& list, Model& model) const {
    if (!list.IsSequence()) fail(list, "loops", "expected a list of loop closures");
    checkListSize(list, "loops", limits_.max_bodies, "loops");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const YAML::Node& node = list[k];
      const JoinedEntry e =
          readJoinedEntry(node, "loop", "loops[" + std::to_string(k) + "]", kLoopKeys);
      const Mapping& m = e.m;
      const std::string& path = e.path;
      const std::string& type = e.type;
      LoopClosureSpec spec;
      spec.name = e.name;
      spec.body_a = e.body_a;
      spec.body_b = e.body_b;
      static constexpr ClosureType kTypes[] = {ClosureType::kBall, ClosureType::kRevolute,
                                               ClosureType::kPrismatic, ClosureType::kWeld,
                                               ClosureType::kDistance};
      bool known = false;
      for (ClosureType t : kTypes)
        if (closureTypeName(t) == type) spec.type = t, known = true;
      if (!known)
        fail(m.at("type"), childPath(path, "type"),
             "unknown loop type '" + type + "' (expected ball, revolute, prismatic, weld or distance)");
      if (m.has("frame_a")) spec.frame_a = readPlacement(m.at("frame_a"), childPath(path, "frame_a"));
      if (m.has("frame_b")) spec.frame_b = readPlacement(m.at("frame_b"), childPath(path, "frame_b"));
      const bool axial = spec.type == ClosureType::kRevolute || spec.type == ClosureType::kPrismatic;
      if (axial) {
        spec.axis = vector3(required(m, "axis"), childPath(path, "axis"));
        if (spec.axis.norm() < 1e-12) fail(m.at("axis"), childPath(path, "axis"), "must be a non-zero vector");
      } else if (m.has("axis")) {
        fail(m.at("axis"), childPath(path, "axis"), "not used by a '" + type + "' loop");
      }
      if (spec.type == ClosureType::kDistance) {
        spec.length = number(required(m, "length"), childPath(path, "length"));
        if (spec.length <= 0.0)
          fail(m.at("length"), childPath(path, "length"), "must be > 0 [m], got " + formatNumber(spec.length));
      } else if (m.has("length")) {
        fail(m.at("length"), childPath(path, "length"), "only a 'distance' loop has a length");
      }
      if (model.nconstraints + closureRows(spec.type) > limits_.max_constraint_rows)
        fail(node, path,
             "the loops take the model beyond the limit of " +
                 std::to_string(limits_.max_constraint_rows) + " constraint rows");
      try {
        addLoopClosure(model, spec);
      } catch (const ModelError& e) {
        fail(node, path, withoutSubject(e.what(), "loop '" + spec.name + "': "));
      }
    }
  }

  void readForces(const YAML::Node& list, Model& model) const {
    if (!list.IsSequence()) fail(list, "forces", "expected a list of force elements");
    checkListSize(list, "forces", limits_.max_bodies, "force elements");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const YAML::Node& node = list[k];
      const JoinedEntry e =
          readJoinedEntry(node, "force", "forces[" + std::to_string(k) + "]", kForceKeys);
      const Mapping& m = e.m;
      const std::string& path = e.path;
      if (e.type != "spring_damper")
        fail(m.at("type"), childPath(path, "type"),
             "unknown force element type '" + e.type + "' (expected spring_damper)");
      SpringDamperSpec spec;
      spec.name = e.name;
      spec.body_a = e.body_a;
      spec.body_b = e.body_b;
      if (m.has("point_a")) spec.point_a = vector3(m.at("point_a"), childPath(path, "point_a"));
      if (m.has("point_b")) spec.point_b = vector3(m.at("point_b"), childPath(path, "point_b"));
      if (m.has("stiffness")) spec.stiffness = nonNegative(m.at("stiffness"), childPath(path, "stiffness"));
      if (m.has("damping")) spec.damping = nonNegative(m.at("damping"), childPath(path, "damping"));
      if (m.has("rest_length"))
        spec.rest_length = nonNegative(m.at("rest_length"), childPath(path, "rest_length"));
      try {
        addSpringDamper(model, spec);
      } catch (const ModelError& e) {
        fail(node, path, withoutSubject(e.what(), "force '" + spec.name + "': "));
      }
    }
  }

  void readInitial(const YAML::Node& node, Model& model) const {
    if (!node.IsMap()) fail(node, "initial", "expected a mapping of joint names to positions");
    checkListSize(node, "initial", limits_.max_bodies, "initial positions");
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string joint = text(it->first, "initial");
      const std::string path = childPath("initial", joint);
      std::vector<double> values;
      if (it->second.IsSequence()) {
        if (it->second.size() > 7) fail(it->second, path, "expected at most 7 numbers");
        for (std::size_t k = 0; k < it->second.size(); ++k)
          values.push_back(number(it->second[k], path + "[" + std::to_string(k) + "]"));
      } else {
        values.push_back(number(it->second, path));
      }
      try {
        setInitialPosition(model, joint, values);
      } catch (const ModelError& e) {
        fail(it->first, "", e.what());
      }
    }
  }

  void readStabilisation(const YAML::Node& node, Model& model) const {
    const Mapping m = mapping(node, "stabilisation", kStabilisationKeys);
    ConstraintStabilisation s = model.stabilisation;
    if (m.has("baumgarte_alpha"))
      s.baumgarte_alpha = nonNegative(m.at("baumgarte_alpha"), "stabilisation: baumgarte_alpha");
    if (m.has("baumgarte_beta"))
      s.baumgarte_beta = nonNegative(m.at("baumgarte_beta"), "stabilisation: baumgarte_beta");
    if (m.has("projection_iterations")) {
      const YAML::Node& at = m.at("projection_iterations");
      const double n = number(at, "stabilisation: projection_iterations");
      if (n != std::floor(n) || n < 0 || n > 100)
        fail(at, "stabilisation: projection_iterations", "expected an integer from 0 to 100");
      s.projection_iterations = static_cast<int>(n);
    }
    setStabilisation(model, s);
  }

  // --- limits, contact and their solver (docs/CONTACT.md) ---

  void readLimitsMode(const YAML::Node& node, Model& model) const {
    const std::string mode = text(node, "limits");
    if (mode != "enforced" && mode != "data")
      fail(node, "limits", "expected 'enforced' or 'data', got '" + mode + "'");
    try {
      setLimitsEnforced(model, mode == "enforced");
    } catch (const ModelError& e) {
      fail(node, "", e.what());
    }
  }

  void readContacts(const YAML::Node& list, Model& model) const {
    if (!list.IsSequence()) fail(list, "contacts", "expected a list of contact spheres");
    checkListSize(list, "contacts", limits_.max_bodies, "contact spheres");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const YAML::Node& node = list[k];
      const std::string path = entryPath(node, "contact", "contacts[" + std::to_string(k) + "]");
      const Mapping m = mapping(node, path, kContactKeys);
      ContactSphereSpec spec;
      spec.name = text(required(m, "name"), childPath(path, "name"));
      spec.body = text(required(m, "body"), childPath(path, "body"));
      if (m.has("center")) spec.center = vector3(m.at("center"), childPath(path, "center"));
      if (m.has("radius")) spec.radius = nonNegative(m.at("radius"), childPath(path, "radius"));
      try {
        addContactSphere(model, spec);
      } catch (const ModelError& e) {
        fail(node, path, withoutSubject(e.what(), "contact '" + spec.name + "': "));
      }
    }
  }

  void readGround(const YAML::Node& node, Model& model) const {
    const Mapping m = mapping(node, "ground", kGroundKeys);
    GroundPlane ground;
    ground.enabled = !m.has("enabled") || boolean(m.at("enabled"), "ground: enabled");
    if (m.has("height")) ground.height = number(m.at("height"), "ground: height");
    if (m.has("friction")) ground.friction = nonNegative(m.at("friction"), "ground: friction");
    try {
      setGround(model, ground);
    } catch (const ModelError& e) {
      fail(node, "", e.what());
    }
  }

  void readContactSettings(const YAML::Node* softness, const YAML::Node* solver,
                           Model& model) const {
    ContactSettings settings = model.contact_settings;
    if (softness) {
      const Mapping m = mapping(*softness, "softness", kSoftnessKeys);
      const auto entry = [&](const char* key, ConstraintSoftness& out) {
        if (!m.has(key)) return;
        const std::string path = childPath("softness", key);
        const Mapping e = mapping(m.at(key), path, kSoftnessEntryKeys);
        if (e.has("time_constant"))
          out.time_constant = number(e.at("time_constant"), childPath(path, "time_constant"));
        if (e.has("damping_ratio"))
          out.damping_ratio = number(e.at("damping_ratio"), childPath(path, "damping_ratio"));
        if (e.has("impedance"))
          out.impedance = number(e.at("impedance"), childPath(path, "impedance"));
      };
      entry("limit", settings.limit);
      entry("contact", settings.contact);
      entry("friction", settings.friction);
    }
    if (solver) {
      const Mapping m = mapping(*solver, "solver", kSolverKeys);
      if (m.has("max_iterations")) {
        const double n = number(m.at("max_iterations"), "solver: max_iterations");
        if (n != std::floor(n) || n < 1 || n > 10000)
          fail(m.at("max_iterations"), "solver: max_iterations", "expected an integer from 1 to 10000");
        settings.max_iterations = static_cast<int>(n);
      }
      if (m.has("tolerance"))
        settings.tolerance = nonNegative(m.at("tolerance"), "solver: tolerance");
    }
    try {
      setContactSettings(model, settings);
    } catch (const ModelError& e) {
      fail(softness ? *softness : *solver, "", e.what());
    }
  }

  // The builder's message without the subject the path already names.
  static std::string withoutSubject(const std::string& message, const std::string& subject) {
    return message.rfind(subject, 0) == 0 ? message.substr(subject.size()) : message;
  }

  // --- the URDF wrapper ---

  Model readUrdfWrapper(const Mapping& top) const {
    const YAML::Node& node = top.at("urdf");
    const std::filesystem::path path = namedFile(node, "urdf", base_directory_);
    UrdfOptions options;
    options.floating_base =
        top.has("floating_base") && boolean(top.at("floating_base"), "floating_base");
    for (const auto& [key, parse] : {std::pair{"inertia", &parseInertiaPolicy},
                                      std::pair{"massless", &parseMasslessPolicy}}) {
      if (!top.has(key)) continue;
      if (const std::string why = parse(text(top.at(key), key), options); !why.empty())
        fail(top.at(key), key, why);
    }
    try {
      return loadUrdf(path.lexically_normal().string(), options, limits_);
    } catch (const ModelError& e) {
      fail(node, "urdf", e.what());
    }
  }

  // --- generated systems ---

  Model readGenerated(const YAML::Node& node) const {
    const Mapping m = mapping(node, "generate", kGenerateKeys);
    SystemSpec spec;
    if (!m.has("shape")) fail(node, "generate", "needs 'shape' (chain, tree or branch)");
    if (!m.has("bodies")) fail(node, "generate", "needs 'bodies' (how many links)");
    const std::string shape = text(m.at("shape"), "generate.shape");
    if (const auto parsed = parseGeneratedShape(shape))
      spec.shape = *parsed;
    else
      fail(m.at("shape"), "generate.shape", "unknown shape '" + shape + "' (chain, tree or branch)");
    spec.bodies = count(m.at("bodies"), "generate.bodies", limits_.max_bodies, "bodies");
    if (m.has("joint")) {
      const std::string joint = text(m.at("joint"), "generate.joint");
      if (joint == "revolute")
        spec.joint = JointType::kRevolute;
      else if (joint == "spherical")
        spec.joint = JointType::kSpherical;
      else
        fail(m.at("joint"), "generate.joint", "unknown joint '" + joint + "' (revolute or spherical)");
    }
    if (m.has("link_length")) spec.link_length = number(m.at("link_length"), "generate.link_length");
    if (m.has("link_mass")) spec.link_mass = number(m.at("link_mass"), "generate.link_mass");
    if (m.has("link_radius")) spec.link_radius = number(m.at("link_radius"), "generate.link_radius");
    if (const std::string why = checkSystemSpec(spec); !why.empty())
      fail(node, "generate", why);
    chargeDofs(node, "generate", spec.bodies * (spec.joint == JointType::kSpherical ? 3 : 1),
               "the generated links");
    return generateSystem(spec, defaultName());
  }

  // --- native bodies ---

  Model readBodies(const Mapping& top) const {
    const YAML::Node& list = top.at("bodies");
    if (!list.IsSequence()) fail(list, "bodies", "expected a list of bodies");
    if (list.size() == 0) fail(list, "bodies", "must list at least one body");
    checkListSize(list, "bodies", limits_.max_bodies, "bodies");
    std::vector<ParsedBody> bodies;
    bodies.reserve(list.size());
    std::unordered_map<std::string, std::size_t> first_of;
    for (std::size_t k = 0; k < list.size(); ++k) {
      bodies.push_back(readBody(list[k], "bodies[" + std::to_string(k) + "]"));
      // before the next body's flexible data is generated: a list of aliases of one body must
      // not cost a beam each before its names are found to repeat
      const ParsedBody& b = bodies.back();
      if (const auto [it, ok] = first_of.emplace(b.spec.name, k); !ok)
        fail(b.node, b.path,
             "duplicate body name (first defined at " + location(bodies[it->second].node) + ")");
    }
    checkTopology(bodies);
    for (const ParsedBody& b : bodies) {
      if (b.spec.flexible) continue;  // validated with its modal data
      if (const std::string why = b.spec.inertia.validate(); !why.empty())
        fail(b.inertia_node, childPath(b.path, "inertia"), why);
    }

    ModelBuilder builder(defaultName());
    for (const ParsedBody& b : bodies) builder.addBody(b.spec);
    try {
      return builder.build();
    } catch (const ModelError& e) {
      io_detail::rethrowBuildError(e, source_, "body");
    }
  }

  std::string defaultName() const {
    const std::filesystem::path p(source_);
    const std::string ext = p.extension().string();
    if ((ext == ".yaml" || ext == ".yml") && !p.stem().empty()) return p.stem().string();
    return "model";
  }

  ParsedBody readBody(const YAML::Node& node, const std::string& list_path) const {
    // name the body in messages as soon as it has a usable name
    std::string path = list_path;
    if (node.IsMap()) {
      const YAML::Node name = node["name"];
      // (a missing key gives an invalid node, on which IsScalar() throws)
      if (name.IsDefined() && name.IsScalar() && !name.Scalar().empty())
        path = "body '" + name.Scalar() + "'";
    }
    const Mapping m = mapping(node, path, kBodyKeys);
    ParsedBody b;
    b.node = node;
    b.spec.name = text(required(m, "name"), childPath(list_path, "name"));
    b.path = path;
    if (b.spec.name == "world")
      fail(m.at("name"), b.path, "the name 'world' is reserved for the ground");
    if (m.has("parent")) {
      b.parent_node = m.at("parent");
      b.spec.parent = text(b.parent_node, childPath(b.path, "parent"));
    }
    readJoint(required(m, "joint"), childPath(b.path, "joint"), b.spec);
    if (b.spec.joint) {
      chargeDofs(m.at("joint"), childPath(b.path, "joint"), b.spec.joint->nv(),
                 "its joint's DoFs");
    }
    if (m.has("placement"))
      b.spec.placement = readPlacement(m.at("placement"), childPath(b.path, "placement"));
    if (m.has("inertia")) {
      b.inertia_node = m.at("inertia");
      b.spec.inertia = readInertia(b.inertia_node, childPath(b.path, "inertia"));
    }
    if (m.has("parent_node"))
      b.spec.parent_node = text(m.at("parent_node"), childPath(b.path, "parent_node"));
    if (m.has("flexible")) {
      if (m.has("inertia"))
        fail(m.at("inertia"), childPath(b.path, "inertia"),
             "a flexible body takes its inertia from its modal data; remove 'inertia'");
      b.spec.flexible = readFlexible(m.at("flexible"), childPath(b.path, "flexible"), base_directory_);
    }
    return b;
  }

  // --- flexible bodies ---

  // A matrix given as a list of `rows` rows of `cols` numbers.
  Eigen::MatrixXd matrix(const YAML::Node& node, const std::string& path, int rows, int cols) const {
    if (!node.IsSequence() || static_cast<int>(node.size()) != rows)
      fail(node, path, "expected " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                           " numbers");
    Eigen::MatrixXd out(rows, cols);
    for (int r = 0; r < rows; ++r)
      out.row(r) = numbers(node[r], path + "[" + std::to_string(r) + "]", cols).transpose();
    return out;
  }

  // A symmetric 3 × 3 given as [xx, yy, zz, xy, xz, yz].
  Matrix3 symmetric3(const YAML::Node& node, const std::string& path) const {
    const Eigen::VectorXd i = numbers(node, path, 6);
    Matrix3 m;
    m << i(0), i(3), i(4), i(3), i(1), i(5), i(4), i(5), i(2);
    return m;
  }

  // A list of `count` symmetric 3 × 3 blocks, side by side (3 × 3count).
  Matrix3X symmetricBlocks(const YAML::Node& node, const std::string& path, int count) const {
    if (!node.IsSequence() || static_cast<int>(node.size()) != count)
      fail(node, path, "expected a list of " + std::to_string(count) +
                           " symmetric 3x3 matrices [xx, yy, zz, xy, xz, yz]");
    Matrix3X out(3, 3 * count);
    for (int k = 0; k < count; ++k)
      out.middleCols<3>(3 * k) = symmetric3(node[k], path + "[" + std::to_string(k) + "]");
    return out;
  }

  // A whole number of 1 … `limit`; `what` names the limit in the message ("modes per flexible
  // body").
  int count(const YAML::Node& node, const std::string& path, int limit,
            const std::string& what) const {
    const double x = number(node, path);
    if (x != std::floor(x) || x < 1)
      fail(node, path, "expected an integer >= 1, got " + formatNumber(x));
    if (x > limit)
      fail(node, path,
           (x < 1e15 ? std::to_string(static_cast<long long>(x)) : formatNumber(x)) +
               " is above the limit of " + std::to_string(limit) + " " + what);
    return static_cast<int>(x);
  }

  // `included`: read from a `file`, which cannot include another (no chain, no cycle).
  FlexibleBody readFlexible(const YAML::Node& node, const std::string& path,
                            const std::string& directory, bool included = false) const {
    const Mapping m = mapping(node, path, kFlexibleKeys);
    if (m.has("file")) {
      if (included)
        fail(m.at("file"), childPath(path, "file"),
             "an included file holds the flexible data itself; it cannot include another");
      if (m.values.size() != 1)
        fail(m.at("file"), childPath(path, "file"), "'file' stands alone: the file holds the rest");
      const std::filesystem::path file =
          namedFile(m.at("file"), childPath(path, "file"), directory);
      std::string content;
      try {
        content =
            io_detail::readTextFile(file.lexically_normal().string(), limits_.max_text_bytes);
      } catch (const ModelError& e) {
        fail(m.at("file"), childPath(path, "file"), e.what());
      }
      chargeParsed(m.at("file"), childPath(path, "file"), content.size());
      YAML::Node included;
      try {
        included = YAML::Load(content);
      } catch (const YAML::Exception& e) {
        fail(m.at("file"), childPath(path, "file"),
             file.string() + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) +
                 ": malformed YAML: " + yamlProblem(e));
      }
      // errors inside the included file are reported against it
      const YamlModelReader inner(file.lexically_normal().string(), file.parent_path().string(),
                                  limits_, budget_);
      return inner.readFlexible(included, "flexible", file.parent_path().string(), true);
    }
    const int sources = m.has("beam") + m.has("lumped_masses") + m.has("modal_integrals");
    if (sources != 1)
      fail(node, path, "give exactly one of 'beam', 'lumped_masses', 'modal_integrals' (or 'file')");
    // geometric stiffening: on unless switched off; modal integrals without their
    // second-order terms cannot have it, so there the default follows the data
    const bool stiffening_given = m.has("geometric_stiffening");
    const bool stiffening =
        stiffening_given
            ? boolean(m.at("geometric_stiffening"), childPath(path, "geometric_stiffening"))
            : !m.has("modal_integrals") || (m.at("modal_integrals").IsMap() &&
                                            m.at("modal_integrals")["first_moment_second"].IsDefined());
    FlexibleBody body;
    if (m.has("beam")) {
      for (const char* key : {"modes", "stiffness", "damping", "nodes"})
        if (m.has(key))
          fail(m.at(key), childPath(path, key), "a beam's modes, stiffness and nodes are generated");
      body = readBeam(m.at("beam"), childPath(path, "beam"), stiffening);
    } else {
      const YAML::Node& modes = required(m, "modes");
      const int n = count(modes, childPath(path, "modes"), limits_.max_modes,
                          "modes per flexible body");
      chargeDofs(modes, childPath(path, "modes"), n, "its modes");
      if (m.has("lumped_masses")) {
        const std::string lpath = childPath(path, "lumped_masses");
        const YAML::Node& list = m.at("lumped_masses");
        if (!list.IsSequence() || list.size() == 0) fail(list, lpath, "expected a list of masses");
        checkListSize(list, lpath, limits_.max_flexible_entries,
                      "lumped masses in one flexible body");
        std::vector<LumpedMassNode> lumped;
        lumped.reserve(list.size());
        for (std::size_t k = 0; k < list.size(); ++k)
          lumped.push_back(readLumped(list[k], lpath + "[" + std::to_string(k) + "]", n));
        body = reduceLumpedMasses(lumped, n, stiffening);
      } else {
        body = readIntegrals(m.at("modal_integrals"), childPath(path, "modal_integrals"), n);
        body.geometric_stiffening = stiffening;
      }
      body.stiffness = matrix(required(m, "stiffness"), childPath(path, "stiffness"), n, n);
      body.damping = m.has("damping") ? matrix(m.at("damping"), childPath(path, "damping"), n, n)
                                      : Eigen::MatrixXd::Zero(n, n);
      if (m.has("nodes")) {
        const std::string npath = childPath(path, "nodes");
        const YAML::Node& list = m.at("nodes");
        if (!list.IsSequence()) fail(list, npath, "expected a list of nodes");
        checkListSize(list, npath, limits_.max_flexible_entries, "nodes in one flexible body");
        body.nodes.reserve(list.size());
        for (std::size_t k = 0; k < list.size(); ++k)
          body.nodes.push_back(readNode(list[k], npath + "[" + std::to_string(k) + "]", n));
      }
    }
    if (m.has("hinge_node")) {
      const std::string name = text(m.at("hinge_node"), childPath(path, "hinge_node"));
      body.hinge_node = body.nodeIndex(name);
      if (body.hinge_node < 0)
        fail(m.at("hinge_node"), childPath(path, "hinge_node"), "no node named '" + name + "'");
    }
    if (const std::string why = body.validate(); !why.empty()) fail(node, path, why);
    return body;
  }

  FlexibleBody readBeam(const YAML::Node& node, const std::string& path, bool stiffening) const {
    const Mapping m = mapping(node, path, kBeamKeys);
    BeamSpec spec;
    spec.youngs_modulus = number(required(m, "youngs_modulus"), childPath(path, "youngs_modulus"));
    spec.area_moment = number(required(m, "area_moment"), childPath(path, "area_moment"));
    spec.density = number(required(m, "density"), childPath(path, "density"));
    spec.area = number(required(m, "area"), childPath(path, "area"));
    spec.length = number(required(m, "length"), childPath(path, "length"));
    if (m.has("modes"))
      spec.modes = count(m.at("modes"), childPath(path, "modes"), limits_.max_modes,
                         "modes per flexible body");
    if (m.has("elements"))
      spec.elements = count(m.at("elements"), childPath(path, "elements"),
                            limits_.max_beam_elements, "elements per beam");
    if (m.has("boundary")) {
      const std::string b = text(m.at("boundary"), childPath(path, "boundary"));
      if (b == "clamped_free") spec.boundary = BeamSpec::Boundary::kClampedFree;
      else if (b == "free_free") spec.boundary = BeamSpec::Boundary::kFreeFree;
      else fail(m.at("boundary"), childPath(path, "boundary"),
                "expected clamped_free or free_free, got '" + b + "'");
    }
    if (m.has("bending")) {
      const std::string b = text(m.at("bending"), childPath(path, "bending"));
      if (b == "y") spec.bending = BeamSpec::Bending::kY;
      else if (b == "z") spec.bending = BeamSpec::Bending::kZ;
      else if (b == "both") spec.bending = BeamSpec::Bending::kBoth;
      else fail(m.at("bending"), childPath(path, "bending"), "expected y, z or both, got '" + b + "'");
    }
    if (m.has("damping_ratio"))
      spec.damping_ratio = nonNegative(m.at("damping_ratio"), childPath(path, "damping_ratio"));
    spec.geometric_stiffening = stiffening;
    // the defaults too (3 modes, 20 elements) must be within the limits
    if (spec.modes > limits_.max_modes)
      fail(node, path,
           std::to_string(spec.modes) + " modes (the default) are above the limit of " +
               std::to_string(limits_.max_modes) + " modes per flexible body");
    if (spec.elements > limits_.max_beam_elements)
      fail(node, path,
           std::to_string(spec.elements) + " elements (the default) are above the limit of " +
               std::to_string(limits_.max_beam_elements) + " elements per beam");
    if (const std::string why = spec.validate(); !why.empty()) fail(node, path, why);
    // the generator's cost grows as elements³ (a dense eigen-decomposition): counted first
    chargeDofs(node, path, spec.modes, "its modes");
    // identical beams (the same link used twice, or an alias) are generated once
    for (const auto& [known, body] : beams_)
      if (known == spec) return body;
    beams_.emplace_back(spec, eulerBernoulliBeam(spec));
    return beams_.back().second;
  }

  // A node's mode shapes: slope and translation (3 × n), second_order (3 × n², optional).
  void readShapes(const Mapping& m, const std::string& path, int n, Matrix3X& slope,
                  Matrix3X& translation, Matrix3X& second_order) const {
    slope = matrix(required(m, "slope"), childPath(path, "slope"), 3, n);
    translation = matrix(required(m, "translation"), childPath(path, "translation"), 3, n);
    if (m.has("second_order"))
      second_order = matrix(m.at("second_order"), childPath(path, "second_order"), 3, n * n);
  }

  LumpedMassNode readLumped(const YAML::Node& node, const std::string& path, int n) const {
    const Mapping m = mapping(node, path, kLumpedKeys);
    LumpedMassNode l;
    l.position = vector3(required(m, "position"), childPath(path, "position"));
    l.mass = nonNegative(required(m, "mass"), childPath(path, "mass"));
    if (m.has("rotary_inertia"))
      l.rotary_inertia = symmetric3(m.at("rotary_inertia"), childPath(path, "rotary_inertia"));
    readShapes(m, path, n, l.slope, l.translation, l.second_order);
    return l;
  }

  ModalNode readNode(const YAML::Node& node, const std::string& path, int n) const {
    const Mapping m = mapping(node, path, kNodeKeys);
    ModalNode out;
    out.name = text(required(m, "name"), childPath(path, "name"));
    out.position = vector3(required(m, "position"), childPath(path, "position"));
    readShapes(m, path, n, out.slope, out.translation, out.second_order);
    return out;
  }

  FlexibleBody readIntegrals(const YAML::Node& node, const std::string& path, int n) const {
    const Mapping m = mapping(node, path, kIntegralKeys);
    FlexibleBody b;
    b.nmodes = n;
    auto at = [&](const char* key) -> const YAML::Node& { return required(m, key); };
    b.mass = number(at("mass"), childPath(path, "mass"));
    b.first_moment = vector3(at("first_moment"), childPath(path, "first_moment"));
    b.first_moment_modes = matrix(at("first_moment_modes"), childPath(path, "first_moment_modes"), 3, n);
    b.rotational_inertia = symmetric3(at("rotational_inertia"), childPath(path, "rotational_inertia"));
    b.rotational_inertia_modes = symmetricBlocks(at("rotational_inertia_modes"),
                                                 childPath(path, "rotational_inertia_modes"), n);
    b.rotational_inertia_second = symmetricBlocks(at("rotational_inertia_second"),
                                                  childPath(path, "rotational_inertia_second"), n * n);
    b.angular_coupling = matrix(at("angular_coupling"), childPath(path, "angular_coupling"), 3, n);
    b.angular_coupling_modes =
        matrix(at("angular_coupling_modes"), childPath(path, "angular_coupling_modes"), 3, n * n);
    b.modal_mass = matrix(at("modal_mass"), childPath(path, "modal_mass"), n, n);
    if (m.has("first_moment_second"))
      b.first_moment_second =
          matrix(m.at("first_moment_second"), childPath(path, "first_moment_second"), 3, n * n);
    if (m.has("rotational_inertia_geometric"))
      b.rotational_inertia_geometric =
          symmetricBlocks(m.at("rotational_inertia_geometric"),
                          childPath(path, "rotational_inertia_geometric"), n * n);
    if (m.has("angular_coupling_geometric"))
      b.angular_coupling_geometric = matrix(m.at("angular_coupling_geometric"),
                                            childPath(path, "angular_coupling_geometric"), 3, n * n);
    return b;
  }

  void readJoint(const YAML::Node& node, const std::string& path, BodySpec& spec) const {
    const Mapping m = mapping(node, path, kJointKeys);
    const YAML::Node& type_node = required(m, "type");
    const std::string type = text(type_node, childPath(path, "type"));
    const auto axis = [&]() {
      const std::string where = childPath(path, "axis");
      const Vector3 a = vector3(required(m, "axis"), where);
      if (a.norm() < 1e-12) fail(m.at("axis"), where, "must be a non-zero vector");
      return Vector3(a.normalized());
    };
    const auto notUsed = [&](const std::string& key) {
      if (m.has(key)) fail(m.at(key), childPath(path, key), "not used by a '" + type + "' joint");
    };
    bool one_dof = false;
    if (type == "revolute") {
      spec.joint = Joint::revolute(axis());
      one_dof = true;
    } else if (type == "prismatic") {
      spec.joint = Joint::prismatic(axis());
      one_dof = true;
    } else if (type == "planar") {
      spec.joint = Joint::planar(axis());
    } else if (type == "spherical" || type == "free") {
      notUsed("axis");
      spec.joint = type == "free" ? Joint::freeFlyer() : Joint::spherical();
    } else if (type == "fixed") {
      for (const char* key :
           {"axis", "damping", "armature", "stiffness", "spring_reference", "limits", "friction"})
        notUsed(key);
      spec.joint.reset();
    } else {
      fail(type_node, childPath(path, "type"),
           "unsupported joint type '" + type +
               "' (supported: revolute, prismatic, spherical, free, planar, fixed)");
    }
    if (m.has("name")) spec.joint_name = text(m.at("name"), childPath(path, "name"));
    JointProperties& p = spec.properties;
    if (m.has("damping")) p.damping = nonNegative(m.at("damping"), childPath(path, "damping"));
    if (m.has("armature")) p.armature = nonNegative(m.at("armature"), childPath(path, "armature"));
    for (const char* key : {"stiffness", "spring_reference"}) {
      if (m.has(key) && !one_dof)
        fail(m.at(key), childPath(path, key), "joint springs apply to revolute and prismatic joints only");
    }
    if (m.has("friction")) {
      if (!one_dof)
        fail(m.at("friction"), childPath(path, "friction"),
             "joint friction applies to revolute and prismatic joints only");
      p.friction = nonNegative(m.at("friction"), childPath(path, "friction"));
    }
    if (m.has("stiffness")) p.stiffness = nonNegative(m.at("stiffness"), childPath(path, "stiffness"));
    if (m.has("spring_reference"))
      p.spring_reference = number(m.at("spring_reference"), childPath(path, "spring_reference"));
    if (m.has("limits")) {
      const std::string lpath = childPath(path, "limits");
      const Mapping l = mapping(m.at("limits"), lpath, kLimitKeys);
      for (const char* key : {"lower", "upper"}) {
        if (l.has(key) && !one_dof)
          fail(l.at(key), childPath(lpath, key),
               "position limits apply to revolute and prismatic joints only");
      }
      if (l.has("lower")) p.lower = number(l.at("lower"), childPath(lpath, "lower"));
      if (l.has("upper")) p.upper = number(l.at("upper"), childPath(lpath, "upper"));
      if (p.lower > p.upper)
        fail(l.node, lpath,
             "lower " + formatNumber(p.lower) + " exceeds upper " + formatNumber(p.upper));
      if (l.has("velocity"))
        p.velocity = nonNegative(l.at("velocity"), childPath(lpath, "velocity"));
      if (l.has("effort")) p.effort = nonNegative(l.at("effort"), childPath(lpath, "effort"));
    }
  }

  Transform readPlacement(const YAML::Node& node, const std::string& path) const {
    const Mapping m = mapping(node, path, kPlacementKeys);
    Transform x;
    if (m.has("xyz")) x.translation = vector3(m.at("xyz"), childPath(path, "xyz"));
    if (m.has("rpy") && m.has("quaternion"))
      fail(m.at("quaternion"), path, "give either 'rpy' or 'quaternion', not both");
    if (m.has("rpy")) {
      const Vector3 rpy = vector3(m.at("rpy"), childPath(path, "rpy"));
      x.rotation = io_detail::rotationFromRpy(rpy.x(), rpy.y(), rpy.z());
    }
    if (m.has("quaternion")) {
      const std::string where = childPath(path, "quaternion");
      const Eigen::VectorXd wxyz = numbers(m.at("quaternion"), where, 4);
      if (wxyz.norm() < 1e-12) fail(m.at("quaternion"), where, "must be a non-zero quaternion");
      const Eigen::Quaterniond q(wxyz(0), wxyz(1), wxyz(2), wxyz(3));
      x.rotation = q.normalized().toRotationMatrix();
    }
    return x;
  }

  Inertia readInertia(const YAML::Node& node, const std::string& path) const {
    const Mapping m = mapping(node, path, kInertiaKeys);
    Inertia inertia;
    const std::string mass_path = childPath(path, "mass");
    inertia.mass = number(required(m, "mass"), mass_path);
    if (inertia.mass < 0.0)
      fail(m.at("mass"), mass_path, formatNumber(inertia.mass) + " kg is negative");
    if (m.has("com")) inertia.com = vector3(m.at("com"), childPath(path, "com"));
    if (m.has("inertia")) {
      // [ixx, iyy, izz, ixy, ixz, iyz] about the centre of mass, body axes
      const Eigen::VectorXd i = numbers(m.at("inertia"), childPath(path, "inertia"), 6);
      inertia.inertia_com << i(0), i(3), i(4), i(3), i(1), i(5), i(4), i(5), i(2);
    }
    return inertia;
  }

  // Names unique, parents known, no cycles: checked here too so that the message has a line.
  void checkTopology(const std::vector<ParsedBody>& bodies) const {
    std::unordered_map<std::string, int> index;
    std::unordered_map<std::string, int> joint_index;
    for (int k = 0; k < static_cast<int>(bodies.size()); ++k) {
      const ParsedBody& b = bodies[k];
      if (const auto [it, ok] = index.emplace(b.spec.name, k); !ok)
        fail(b.node, b.path,
             "duplicate body name (first defined at " + location(bodies[it->second].node) + ")");
      if (!b.spec.joint) continue;
      const std::string joint = b.spec.joint_name.empty() ? b.spec.name : b.spec.joint_name;
      if (const auto [it, ok] = joint_index.emplace(joint, k); !ok)
        fail(b.node, b.path,
             "duplicate joint name '" + joint + "' (also used by " + bodies[it->second].path + ")");
    }
    for (const ParsedBody& b : bodies) {
      if (b.spec.parent != "world" && !index.count(b.spec.parent))
        fail(b.parent_node, childPath(b.path, "parent"),
             "parent '" + b.spec.parent + "' does not exist");
    }
    // 0 unknown, 1 on the current walk, 2 reaches the world
    std::vector<int> state(bodies.size(), 0);
    for (int k = 0; k < static_cast<int>(bodies.size()); ++k) {
      std::vector<int> walk;
      int i = k;
      while (i >= 0 && state[i] == 0) {
        state[i] = 1;
        walk.push_back(i);
        const std::string& parent = bodies[i].spec.parent;
        i = parent == "world" ? -1 : index.at(parent);
      }
      if (i >= 0 && state[i] == 1)
        fail(bodies[i].node, bodies[i].path,
             "is part of a cycle of parents (never reaches 'world')");
      for (int w : walk) state[w] = 2;
    }
  }

  std::string source_;
  std::string base_directory_;
  ModelLimits limits_;
  mutable std::vector<std::pair<BeamSpec, FlexibleBody>> beams_;  // generated so far
  ReadBudget& budget_;
};

}  // namespace

Model loadYamlString(const std::string& yaml_text, const std::string& base_directory,
                     const std::string& source_name, const ModelLimits& limits) {
  try {
    if (yaml_text.size() > limits.max_text_bytes)
      throw ModelError(source_name + ": " + std::to_string(yaml_text.size()) +
                       " bytes, larger than the limit of " +
                       std::to_string(limits.max_text_bytes) + " bytes for a model text");
    const YAML::Node root = YAML::Load(yaml_text);
    ReadBudget budget;
    budget.parsed_bytes = yaml_text.size();
    return YamlModelReader(source_name, base_directory, limits, budget).read(root);
  } catch (const ModelError& e) {
    // messages quote the file's names and values: keep each one line
    throw ModelError(io_detail::oneLine(e.what()));
  } catch (const YAML::Exception& e) {
    const std::string where =
        e.mark.is_null() ? source_name : source_name + ":" + std::to_string(e.mark.line + 1);
    throw ModelError(io_detail::oneLine(where + ": malformed YAML: " + yamlProblem(e)));
  } catch (const std::exception& e) {
    throw ModelError(io_detail::oneLine(source_name + ": " + e.what()));
  } catch (...) {
    throw ModelError(source_name + ": unknown error while reading the YAML model");
  }
}

Model loadYaml(const std::string& path, const ModelLimits& limits) {
  return loadYamlString(io_detail::readTextFile(path, limits.max_text_bytes),
                        io_detail::directoryOf(path), path, limits);
}

}  // namespace hilsim
