// hilsim-server's configuration file: a strict YAML reader. Every key is known, every value is
// range-checked, and every problem is one ConfigError line naming the file, the line, the key path
// and what is allowed (docs/SERVER.md is the reference of the layout).
#include "server/server_config.h"

#include <arpa/inet.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "engine/io/model_loader.h"
#include "rt/session_limits.h"

namespace hilsim::server {

namespace {

namespace fs = std::filesystem;

// Bounds of the file's values. The session ones are the contract's (session.proto).
using rt::kMaxControlRate;
using rt::kMinControlRate;
constexpr std::int64_t kMaxSubsteps = rt::kMaxSubsteps;
constexpr std::int64_t kMaxFifoPriority = 99;
constexpr std::int64_t kMaxCpu = 1023;                // CPU_SETSIZE − 1
constexpr std::int64_t kMaxWorkers = 1024;            // rt.workers.count
constexpr std::int64_t kMaxWorkerCapacity = 4096;     // sessions per worker
constexpr std::int64_t kMaxPrefaultBytes = 64 << 20;  // as CreateSession allows
constexpr std::int64_t kMaxCommandCapacity = 65'536;  // ~1 KiB per queued command
constexpr double kMaxIdleTimeout = 1e6;  // [s], 11.6 days: beyond that, 0 (never) says it
constexpr std::int64_t kMaxSessionsLimit = 1024;
constexpr std::int64_t kMinModelTextBytes = 1 << 10;
constexpr std::int64_t kMaxModelTextBytes = 256 << 20;
// The model loaders' own bounds for files (ModelLimits): the server may only be stricter.
constexpr std::int64_t kMaxModelBodies = 200'000;
constexpr std::int64_t kMaxModelModes = 64;
constexpr std::int64_t kMaxBeamElements = 1000;  // BeamSpec::validate
constexpr std::int64_t kMinBeamElements = 2;
constexpr std::int64_t kMaxFlexibleEntries = 4096;
constexpr std::int64_t kMaxStepCycles = std::numeric_limits<std::uint32_t>::max();  // Command.steps
constexpr std::int64_t kMaxStreamReaders = 1024;
constexpr std::int64_t kMaxCoordinates = 128;  // rt::kMaxCoordinates
constexpr const char* kTokenEnvironment = "HILSIM_ACCESS_TOKEN";
constexpr const char* kOperatorSecretEnvironment = "HILSIM_OPERATOR_SECRET";
constexpr double kInfinity = std::numeric_limits<double>::infinity();  // no bound

// The values of a v1::SessionConfig that a request leaving every field 0 gets (session.proto).
v1::SessionConfig builtInSessionDefaults() {
  v1::SessionConfig c;
  c.set_mode(v1::SESSION_MODE_REALTIME);
  c.set_control_rate_hz(1000.0);
  c.set_substeps(1);
  c.set_formulation(v1::FORMULATION_ABA);
  c.set_integrator(v1::INTEGRATOR_RK4);
  c.mutable_watchdog()->set_policy(v1::WATCHDOG_POLICY_HOLD);
  c.mutable_watchdog()->set_missed_cycles_limit(20);
  c.mutable_watchdog()->set_damping_gain(1.0);
  c.mutable_overrun()->set_policy(v1::OVERRUN_POLICY_SKIP);
  c.mutable_overrun()->set_max_catch_up(10);
  c.mutable_thread()->set_lock_memory(true);
  c.mutable_thread()->set_prefault_stack_bytes(256 * 1024);
  c.mutable_thread()->set_fifo_priority(0);
  c.mutable_thread()->set_cpu(-1);
  c.mutable_thread()->set_minimal_timer_slack(true);
  c.mutable_thread()->set_dedicated(false);
  c.set_max_speed(1e4);
  c.set_command_capacity(64);
  return c;
}

std::string formatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// A value of the file: the node, where it is, and its key path ("sessions[0].config.mode").
struct Item {
  YAML::Node node;
  YAML::Mark mark;  // the key's position for a mapping value (null values have no own mark)
  std::string path;
};

// How a value reads in a message: its text, quoted, or its kind.
std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    default:
      return "nothing";
  }
}

std::string errnoText(int error) { return std::strerror(error); }

// Files the configuration names (TLS certificate and key, token file) and the file itself hold a
// few kilobytes; the bound keeps /dev/zero from filling memory.
constexpr std::uintmax_t kMaxReferencedFileBytes = 1 << 20;
constexpr std::uintmax_t kMaxConfigFileBytes = 4 << 20;

// The content of the regular file `file` of at most `max_bytes` bytes, or why not (then `error`
// is set). A FIFO or device is refused before it is opened: opening a FIFO blocks until a writer
// comes, reading a device may never end.
std::string readBoundedFile(const fs::path& file, std::uintmax_t max_bytes, std::string& error) {
  std::error_code ec;
  const fs::file_status status = fs::status(file, ec);
  if (ec) {
    error = ec.message();
    return {};
  }
  if (fs::is_directory(status)) {
    error = "is a directory";
    return {};
  }
  if (!fs::is_regular_file(status)) {
    error = "is not a regular file";
    return {};
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    error = errnoText(errno);
    return {};
  }
  std::string content;
  char buffer[1 << 14];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    content.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (content.size() > max_bytes) {
      error = "larger than " + std::to_string(max_bytes) + " bytes";
      return {};
    }
  }
  if (in.bad()) error = "read error";
  return content;
}

class Parser {
 public:
  Parser(std::string source, fs::path base_directory)
      : source_(std::move(source)), base_(std::move(base_directory)) {}

  ServerConfig parse(const std::string& text);

 private:
  // A mapping whose keys are all known: unknown keys (typos) and repeated keys are errors.
  class Mapping {
   public:
    Mapping(const Parser& parser, const Item& item, std::initializer_list<std::string_view> keys)
        : Mapping(parser, item, std::vector<std::string_view>(keys)) {}
    Mapping(const Parser& parser, const Item& item, const std::vector<std::string_view>& keys);
    std::optional<Item> get(std::string_view key) const;

   private:
    std::vector<std::pair<std::string, Item>> entries_;
  };

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& path,
                         const std::string& problem) const;
  [[noreturn]] void fail(const Item& item, const std::string& problem) const {
    fail(item.mark, item.path, problem);
  }

  // scalars
  const std::string& scalar(const Item& item, const char* expected) const;
  std::string text(const Item& item) const { return scalar(item, "a text"); }
  std::int64_t integer(const Item& item, std::int64_t min, std::int64_t max) const;
  double number(const Item& item, double min, double max, bool min_exclusive = false) const;
  bool boolean(const Item& item) const;
  std::string choice(const Item& item, const std::vector<std::string>& allowed) const;
  template <typename Enum>
  Enum enumeration(const Item& item, const google::protobuf::EnumDescriptor* descriptor) const {
    return static_cast<Enum>(enumNumber(item, descriptor));
  }
  int enumNumber(const Item& item, const google::protobuf::EnumDescriptor* descriptor) const;
  /// A mapping onto a message whose fields are scalars, enumerations or repeated numbers, keyed
  /// by the field names (`except`: fields parsed by the caller); ranges are the session's to check.
  void flatMessage(const Item& item, google::protobuf::Message* out,
                   std::initializer_list<std::string_view> except = {}) const;
  void parseSensors(const Item& item, v1::SensorsConfig* out) const;
  void parseFaults(const Item& item, v1::FaultsConfig* out) const;
  std::vector<Item> list(const Item& item) const;
  fs::path path(const Item& item) const;
  std::string readFile(const Item& item, const fs::path& file, const char* what) const;

  // sections
  void parseListen(const Item& item);
  void parseSecurity(const Item& item);
  /// A secret given as `key`, or as the content of the file `file_key` names (without its
  /// trailing whitespace), not both; `what` names it in messages ("access token"). `target` is
  /// left as it is when neither is given.
  void readSecret(const Mapping& m, const char* key, const char* file_key, const char* what,
                  std::string* target) const;
  void parseLimits(const Item& item);
  void parseModels(const Item& item);
  void parseSessionConfig(const Item& item, v1::SessionConfig& out, bool per_session) const;
  void checkLimits(const v1::SessionConfig& c, const Item& item) const;
  void parseSessions(const Item& item);
  void parseLog(const Item& item);
  void parseRealtime(const Item& item);
  void applyEnvironmentToken();
  void checkToken(const std::string& token, const YAML::Mark& mark, const std::string& path) const;
  bool modelExists(const std::string& name) const;
  std::vector<std::string> knownModels() const;

  std::string source_;
  fs::path base_;
  ServerConfig config_;
};

Parser::Mapping::Mapping(const Parser& parser, const Item& item,
                         const std::vector<std::string_view>& keys) {
  // an empty section (every line commented out) reads as null: no keys
  if (item.node.IsNull()) return;
  if (!item.node.IsMap()) {
    parser.fail(item, describe(item.node) + " is not a mapping (allowed keys: " +
                          joined({keys.begin(), keys.end()}) + ")");
  }
  for (const auto& entry : item.node) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) parser.fail(key.Mark(), item.path, "a key must be a plain name");
    const std::string name = key.Scalar();
    const std::string path = item.path.empty() ? name : item.path + "." + name;
    if (std::find(keys.begin(), keys.end(), name) == keys.end()) {
      std::vector<std::string> allowed(keys.begin(), keys.end());
      parser.fail(key.Mark(), path, "unknown key (allowed here: " + joined(allowed) + ")");
    }
    for (const auto& seen : entries_) {
      if (seen.first == name) parser.fail(key.Mark(), path, "repeated key");
    }
    entries_.push_back({name, Item{entry.second, key.Mark(), path}});
  }
}

std::optional<Item> Parser::Mapping::get(std::string_view key) const {
  for (const auto& entry : entries_) {
    if (entry.first == key) return entry.second;
  }
  return std::nullopt;
}

void Parser::fail(const YAML::Mark& mark, const std::string& path,
                  const std::string& problem) const {
  std::string where = source_;
  if (!mark.is_null()) where += ":" + std::to_string(mark.line + 1);
  // one line, whatever the value quoted in it holds
  std::string message;
  for (const char c : where + ": " + (path.empty() ? "" : path + ": ") + problem) {
    if (c == '\n') {
      message += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      message += '?';
    } else {
      message += c;
    }
  }
  throw ConfigError(message);
}

const std::string& Parser::scalar(const Item& item, const char* expected) const {
  if (item.node.IsNull()) fail(item, std::string("no value (expected ") + expected + ")");
  if (!item.node.IsScalar()) fail(item, describe(item.node) + " is not " + expected);
  return item.node.Scalar();
}

std::int64_t Parser::integer(const Item& item, std::int64_t min, std::int64_t max) const {
  const std::string& s = scalar(item, "an integer");
  const std::string range = "allowed: " + std::to_string(min) + " to " + std::to_string(max);
  // a quoted "8" is a string to YAML: say so rather than guess
  if (item.node.Tag() == "!") fail(item, describe(item.node) + " is quoted text, not an integer");
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error == std::errc::result_out_of_range)
    fail(item, "'" + s + "' is out of range (" + range + ")");
  if (error != std::errc() || end != s.data() + s.size() || s.empty()) {
    fail(item, "'" + s + "' is not an integer (" + range + ")");
  }
  if (value < min || value > max) fail(item, "'" + s + "' is out of range (" + range + ")");
  return value;
}

double Parser::number(const Item& item, double min, double max, bool min_exclusive) const {
  const std::string& s = scalar(item, "a number");
  std::string range = "allowed: ";
  if (std::isinf(min) && std::isinf(max)) {
    range += "any finite number";
  } else if (std::isinf(max)) {
    range += std::string("a finite number ") + (min_exclusive ? "above " : "at least ") +
             formatNumber(min);
  } else {
    range += formatNumber(min) + " to " + formatNumber(max);
  }
  if (item.node.Tag() == "!") fail(item, describe(item.node) + " is quoted text, not a number");
  double value = 0.0;
  const auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (error != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(value)) {
    fail(item, "'" + s + "' is not a finite number (" + range + ")");
  }
  if (value < min || value > max || (min_exclusive && value == min)) {
    fail(item, "'" + s + "' is out of range (" + range + ")");
  }
  return value;
}

bool Parser::boolean(const Item& item) const {
  scalar(item, "true or false");
  bool value = false;
  if (item.node.Tag() == "!" || !YAML::convert<bool>::decode(item.node, value)) {
    fail(item, describe(item.node) + " is not true or false");
  }
  return value;
}

std::string Parser::choice(const Item& item, const std::vector<std::string>& allowed) const {
  const std::string& s = scalar(item, "a name");
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    fail(item, "'" + s + "' is not allowed (allowed: " + joined(allowed) + ")");
  }
  return s;
}

// A contract enumeration by the lower-case name after its prefix: "catch_up" for
// OVERRUN_POLICY_CATCH_UP. Value 0 (UNSPECIFIED) is never a choice.
int Parser::enumNumber(const Item& item,
                      const google::protobuf::EnumDescriptor* descriptor) const {
  const std::string unspecified = descriptor->FindValueByNumber(0)->name();
  const std::size_t prefix = unspecified.size() - std::string_view("UNSPECIFIED").size();
  std::vector<std::string> names;
  std::vector<int> numbers;
  for (int k = 0; k < descriptor->value_count(); ++k) {
    const auto* value = descriptor->value(k);
    if (value->number() == 0) continue;
    std::string name = value->name().substr(prefix);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names.push_back(name);
    numbers.push_back(value->number());
  }
  const std::string name = choice(item, names);
  const auto at = std::find(names.begin(), names.end(), name) - names.begin();
  return numbers[static_cast<std::size_t>(at)];
}

void Parser::flatMessage(const Item& item, google::protobuf::Message* out,
                         std::initializer_list<std::string_view> except) const {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* descriptor = out->GetDescriptor();
  const google::protobuf::Reflection* reflection = out->GetReflection();
  std::vector<std::string_view> keys;
  for (int k = 0; k < descriptor->field_count(); ++k) keys.push_back(descriptor->field(k)->name());
  const Mapping m(*this, item, keys);
  for (int k = 0; k < descriptor->field_count(); ++k) {
    const FieldDescriptor* field = descriptor->field(k);
    if (std::find(except.begin(), except.end(), field->name()) != except.end()) continue;
    const auto v = m.get(field->name());
    if (!v) continue;
    if (field->is_repeated()) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE) fail(*v, "not a list of numbers");
      reflection->ClearField(out, field);
      const std::vector<Item> elements = list(*v);
      if (elements.size() > 64) fail(*v, std::to_string(elements.size()) + " values: at most 64");
      for (const Item& element : elements) {
        reflection->AddDouble(out, field, number(element, -kInfinity, kInfinity));
      }
      continue;
    }
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        reflection->SetDouble(out, field, number(*v, -kInfinity, kInfinity));
        break;
      case FieldDescriptor::CPPTYPE_STRING: reflection->SetString(out, field, text(*v)); break;
      case FieldDescriptor::CPPTYPE_BOOL: reflection->SetBool(out, field, boolean(*v)); break;
      case FieldDescriptor::CPPTYPE_ENUM:
        reflection->SetEnumValue(out, field, enumNumber(*v, field->enum_type()));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(out, field, static_cast<std::uint32_t>(integer(*v, 0, 1'000'000)));
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        reflection->SetUInt64(out, field,
                              static_cast<std::uint64_t>(
                                  integer(*v, 0, std::numeric_limits<std::int64_t>::max())));
        break;
      default: fail(*v, "not a setting this file can give");
    }
  }
}

void Parser::parseSensors(const Item& item, v1::SensorsConfig* out) const {
  flatMessage(item, out, {"joints", "imu"});
  const Mapping m(*this, item,
                  {"joints", "imu", "contact_force_noise", "delay_cycles", "seed"});
  if (auto joints = m.get("joints")) {
    out->clear_joints();
    for (const Item& joint : list(*joints)) flatMessage(joint, out->add_joints());
  }
  if (auto imu = m.get("imu")) flatMessage(*imu, out->mutable_imu());
}

void Parser::parseFaults(const Item& item, v1::FaultsConfig* out) const {
  flatMessage(item, out, {"schedule"});
  const Mapping m(*this, item, {"schedule", "seed", "max_delay_cycles"});
  if (auto schedule = m.get("schedule")) {
    out->clear_schedule();
    for (const Item& fault : list(*schedule)) flatMessage(fault, out->add_schedule(), {"id"});
  }
}

std::vector<Item> Parser::list(const Item& item) const {
  if (!item.node.IsSequence()) fail(item, describe(item.node) + " is not a list");
  std::vector<Item> items;
  std::size_t k = 0;
  for (const YAML::Node& element : item.node) {
    const YAML::Mark mark = element.Mark().is_null() ? item.mark : element.Mark();
    items.push_back(Item{element, mark, item.path + "[" + std::to_string(k++) + "]"});
  }
  return items;
}

// A file or directory named in the file: relative to the file's own directory.
fs::path Parser::path(const Item& item) const {
  const std::string s = text(item);
  if (s.empty()) fail(item, "empty path");
  const fs::path p(s);
  return (p.is_absolute() ? p : base_ / p).lexically_normal();
}

std::string Parser::readFile(const Item& item, const fs::path& file, const char* what) const {
  std::string error;
  std::string content = readBoundedFile(file, kMaxReferencedFileBytes, error);
  if (!error.empty())
    fail(item, "cannot read " + std::string(what) + " '" + file.string() + "': " + error);
  return content;
}

ServerConfig Parser::parse(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(e.mark, "", "not valid YAML: " + e.msg);
  }
  config_.source = source_;
  config_.session_defaults = builtInSessionDefaults();

  const Item top{root, root.Mark(), ""};
  if (!root.IsNull() && !root.IsMap()) fail(top, "the file must be a mapping of sections");
  const Mapping sections(
      *this, top,
      {"listen", "security", "limits", "models", "rt", "session_defaults", "sessions", "log"});
  // limits first: the session sections are checked against them
  if (auto item = sections.get("listen")) parseListen(*item);
  if (auto item = sections.get("security")) parseSecurity(*item);
  if (auto item = sections.get("limits")) parseLimits(*item);
  if (auto item = sections.get("models")) parseModels(*item);
  if (auto item = sections.get("rt")) parseRealtime(*item);
  const Item defaults = sections.get("session_defaults")
                            .value_or(Item{YAML::Node(), root.Mark(), "session_defaults"});
  parseSessionConfig(defaults, config_.session_defaults, false);
  checkLimits(config_.session_defaults, defaults);
  if (auto item = sections.get("sessions")) parseSessions(*item);
  if (auto item = sections.get("log")) parseLog(*item);
  applyEnvironmentToken();
  return config_;
}

void Parser::parseListen(const Item& item) {
  const Mapping m(*this, item, {"address", "grpc_port", "udp", "metrics", "viewer"});
  if (auto address = m.get("address")) {
    const std::string s = text(*address);
    // IPv4 only: the metrics endpoint's web server (Debian's civetweb) has no IPv6
    in_addr buffer{};
    if (inet_pton(AF_INET, s.c_str(), &buffer) != 1) {
      fail(*address, "'" + s + "' is not an IPv4 address (e.g. 127.0.0.1, 0.0.0.0)");
    }
    config_.bind_address = s;
  }
  if (auto port = m.get("grpc_port")) {
    config_.grpc_port = static_cast<std::uint16_t>(integer(*port, 0, 65535));
  }
  if (auto udp = m.get("udp")) {
    const Mapping u(*this, *udp, {"enabled", "ports", "authentication"});
    if (auto enabled = u.get("enabled")) config_.udp_enabled = boolean(*enabled);
    if (auto scheme = u.get("authentication")) {
      config_.udp_authentication = choice(*scheme, {"mac", "token"}) == "mac"
                                       ? v1::UDP_AUTHENTICATION_MAC
                                       : v1::UDP_AUTHENTICATION_TOKEN;
    }
    if (auto ports = u.get("ports")) {
      const std::vector<Item> range = list(*ports);
      if (range.size() != 2) {
        fail(*ports, "must be a list of two ports [first, last] ([0, 0]: ephemeral ports)");
      }
      const auto first = integer(range[0], 0, 65535);
      const auto last = integer(range[1], 0, 65535);
      if ((first == 0) != (last == 0) || first > last) {
        fail(*ports, "[" + std::to_string(first) + ", " + std::to_string(last) +
                         "] is not a port range (allowed: 1 <= first <= last <= 65535, or [0, 0] "
                         "for ephemeral ports)");
      }
      config_.udp_port_first = static_cast<std::uint16_t>(first);
      config_.udp_port_last = static_cast<std::uint16_t>(last);
    }
  }
  if (auto metrics = m.get("metrics")) {
    const Mapping p(*this, *metrics, {"enabled", "port"});
    if (auto enabled = p.get("enabled")) config_.metrics_enabled = boolean(*enabled);
    if (auto port = p.get("port")) {
      config_.metrics_port = static_cast<std::uint16_t>(integer(*port, 0, 65535));
      if (config_.metrics_enabled && config_.metrics_port != 0 &&
          config_.metrics_port == config_.grpc_port) {
        fail(*port, std::to_string(config_.metrics_port) +
                        " is listen.grpc_port too (both are TCP ports on the same address)");
      }
    }
  }
  if (auto viewer = m.get("viewer")) {
    const Mapping p(*this, *viewer, {"enabled", "port", "rate_hz"});
    if (auto enabled = p.get("enabled")) config_.viewer_enabled = boolean(*enabled);
    if (auto rate = p.get("rate_hz")) config_.viewer_rate_hz = number(*rate, 1.0, 120.0);
    if (auto port = p.get("port")) {
      config_.viewer_port = static_cast<std::uint16_t>(integer(*port, 0, 65535));
      if (config_.viewer_enabled && config_.viewer_port != 0 &&
          (config_.viewer_port == config_.grpc_port ||
           (config_.metrics_enabled && config_.viewer_port == config_.metrics_port))) {
        fail(*port, std::to_string(config_.viewer_port) +
                        " is listen.grpc_port or listen.metrics.port too (TCP ports on the same "
                        "address)");
      }
    }
  }
}

void Parser::checkToken(const std::string& token, const YAML::Mark& mark,
                        const std::string& path) const {
  if (token.empty()) fail(mark, path, "the access token is empty");
  // sent as `authorization: Bearer <token>` metadata: visible ASCII only
  for (const char c : token) {
    if (c < 0x21 || c > 0x7e) {
      fail(mark, path,
           "the access token may hold only visible ASCII characters (no spaces or control "
           "characters)");
    }
  }
}

void Parser::parseSecurity(const Item& item) {
  const Mapping m(*this, item, {"tls", "access_token", "access_token_file", "operator_secret",
                                "operator_secret_file"});
  if (auto tls = m.get("tls")) {
    const Mapping t(*this, *tls, {"certificate", "key"});
    const auto certificate = t.get("certificate");
    const auto key = t.get("key");
    if (certificate.has_value() != key.has_value()) {
      fail(*tls, std::string("gives only the ") + (certificate ? "certificate" : "key") +
                     ": TLS needs both certificate and key (or neither)");
    }
    if (certificate) {
      for (const auto& [file_item, what, target] :
           {std::tuple{*certificate, "a PEM certificate", &config_.tls_certificate_file},
            std::tuple{*key, "a PEM private key", &config_.tls_key_file}}) {
        const fs::path file = path(file_item);
        const std::string pem = readFile(file_item, file, what);
        if (pem.find("-----BEGIN ") == std::string::npos) {
          fail(file_item, "'" + file.string() + "' is not " + what + " (no -----BEGIN line)");
        }
        *target = file.string();
      }
    }
  }
  readSecret(m, "access_token", "access_token_file", "access token", &config_.access_token);
  readSecret(m, "operator_secret", "operator_secret_file", "operator secret",
             &config_.operator_secret);
}

void Parser::readSecret(const Mapping& m, const char* key, const char* file_key, const char* what,
                        std::string* target) const {
  const auto value = m.get(key);
  const auto file_item = m.get(file_key);
  if (value && file_item) {
    fail(*file_item, std::string("give ") + key + " or " + file_key + ", not both");
  }
  if (value) {
    *target = text(*value);
    checkToken(*target, value->mark, value->path);
  }
  if (file_item) {
    const fs::path file = path(*file_item);
    std::string content = readFile(*file_item, file, (std::string("an ") + what + " file").c_str());
    // the file's trailing newline is not part of the secret
    while (!content.empty() && std::isspace(static_cast<unsigned char>(content.back()))) {
      content.pop_back();
    }
    if (content.empty()) fail(*file_item, "'" + file.string() + "' is empty: no " + what);
    checkToken(content, file_item->mark, file_item->path + " ('" + file.string() + "')");
    *target = content;
  }
}

void Parser::parseRealtime(const Item& item) {
  const Mapping m(*this, item, {"workers"});
  const auto workers = m.get("workers");
  if (!workers) return;
  const Mapping w(*this, *workers,
                  {"count", "cpus", "fifo_priority", "lock_memory", "max_utilisation", "capacity"});
  rt::WorkersConfig& c = config_.workers;
  if (auto v = w.get("count")) c.count = static_cast<int>(integer(*v, 0, kMaxWorkers));
  if (auto v = w.get("cpus")) {
    c.cpus.clear();
    for (const Item& cpu : list(*v)) {
      const int value = static_cast<int>(integer(cpu, 0, kMaxCpu));
      if (std::find(c.cpus.begin(), c.cpus.end(), value) != c.cpus.end())
        fail(cpu, "CPU " + std::to_string(value) + " is listed twice");
      if (!config_.allowed_cpus.empty() &&
          std::find(config_.allowed_cpus.begin(), config_.allowed_cpus.end(), value) ==
              config_.allowed_cpus.end()) {
        fail(cpu, "CPU " + std::to_string(value) + " is not in limits.allowed_cpus");
      }
      c.cpus.push_back(value);
    }
  }
  if (auto v = w.get("fifo_priority")) {
    c.fifo_priority = static_cast<int>(integer(*v, 0, config_.max_fifo_priority));
  }
  if (auto v = w.get("lock_memory")) c.lock_memory = boolean(*v);
  if (auto v = w.get("max_utilisation")) c.max_utilisation = number(*v, 0.01, 1.0);
  if (auto v = w.get("capacity")) c.capacity = static_cast<int>(integer(*v, 1, kMaxWorkerCapacity));
}

void Parser::applyEnvironmentToken() {
  if (config_.operator_secret.empty()) {
    const char* secret = std::getenv(kOperatorSecretEnvironment);
    if (secret != nullptr && *secret != '\0') {
      checkToken(secret, YAML::Mark::null_mark(),
                 std::string(kOperatorSecretEnvironment) + " (environment)");
      config_.operator_secret = secret;
    }
  }
  if (!config_.access_token.empty()) return;
  const char* env = std::getenv(kTokenEnvironment);
  if (env == nullptr || *env == '\0') return;
  const std::string token = env;
  checkToken(token, YAML::Mark::null_mark(), std::string(kTokenEnvironment) + " (environment)");
  config_.access_token = token;
}

void Parser::parseLimits(const Item& item) {
  const Mapping m(*this, item,
                  {"max_sessions", "max_control_rate_hz", "max_substeps", "max_fifo_priority",
                   "allowed_cpus", "max_model_text_bytes", "max_model_bodies", "max_model_modes",
                   "max_beam_elements", "max_flexible_entries", "max_step_cycles",
                   "max_stream_readers", "max_request_cpu_s", "max_queued_cpu_s",
                   "max_sessions_per_client", "max_stream_readers_per_client",
                   "max_viewer_pages_per_client", "handshake_timeout_s"});
  if (auto v = m.get("max_sessions")) {
    config_.max_sessions = static_cast<int>(integer(*v, 1, kMaxSessionsLimit));
  }
  if (auto v = m.get("max_control_rate_hz")) {
    config_.max_control_rate_hz = number(*v, kMinControlRate, kMaxControlRate);
  }
  if (auto v = m.get("max_substeps")) {
    config_.max_substeps = static_cast<int>(integer(*v, 1, kMaxSubsteps));
  }
  if (auto v = m.get("max_fifo_priority")) {
    config_.max_fifo_priority = static_cast<int>(integer(*v, 0, kMaxFifoPriority));
  }
  if (auto v = m.get("allowed_cpus")) {
    config_.allowed_cpus.clear();
    for (const Item& cpu : list(*v)) {
      const int value = static_cast<int>(integer(cpu, 0, kMaxCpu));
      if (std::find(config_.allowed_cpus.begin(), config_.allowed_cpus.end(), value) !=
          config_.allowed_cpus.end()) {
        fail(cpu, "CPU " + std::to_string(value) + " is listed twice");
      }
      config_.allowed_cpus.push_back(value);
    }
  }
  if (auto v = m.get("max_model_text_bytes")) {
    config_.max_model_text_bytes =
        static_cast<std::size_t>(integer(*v, kMinModelTextBytes, kMaxModelTextBytes));
  }
  if (auto v = m.get("max_model_bodies")) {
    config_.max_model_bodies = static_cast<int>(integer(*v, 1, kMaxModelBodies));
  }
  if (auto v = m.get("max_model_modes")) {
    config_.max_model_modes = static_cast<int>(integer(*v, 1, kMaxModelModes));
  }
  if (auto v = m.get("max_beam_elements")) {
    config_.max_beam_elements =
        static_cast<int>(integer(*v, kMinBeamElements, kMaxBeamElements));
  }
  if (auto v = m.get("max_flexible_entries")) {
    config_.max_flexible_entries = static_cast<int>(integer(*v, 1, kMaxFlexibleEntries));
  }
  if (auto v = m.get("max_step_cycles")) {
    config_.max_step_cycles = static_cast<std::uint32_t>(integer(*v, 1, kMaxStepCycles));
  }
  if (auto v = m.get("max_stream_readers")) {
    config_.max_stream_readers = static_cast<int>(integer(*v, 1, kMaxStreamReaders));
  }
  if (auto v = m.get("max_request_cpu_s")) config_.max_request_cpu_s = number(*v, 1e-3, 3600.0);
  if (auto v = m.get("max_queued_cpu_s")) config_.max_queued_cpu_s = number(*v, 1e-3, 86400.0);
  if (config_.max_queued_cpu_s < config_.max_request_cpu_s) {
    fail(item, "limits.max_queued_cpu_s (" + std::to_string(config_.max_queued_cpu_s) +
                   " s) is below limits.max_request_cpu_s (" +
                   std::to_string(config_.max_request_cpu_s) + " s): no request could be queued");
  }
  if (auto v = m.get("max_sessions_per_client")) {
    config_.max_sessions_per_client = static_cast<int>(integer(*v, 1, kMaxSessionsLimit));
  }
  if (auto v = m.get("max_stream_readers_per_client")) {
    config_.max_stream_readers_per_client = static_cast<int>(integer(*v, 1, kMaxStreamReaders));
  }
  if (auto v = m.get("max_viewer_pages_per_client")) {
    config_.max_viewer_pages_per_client = static_cast<int>(integer(*v, 1, 16));
  }
  if (auto v = m.get("handshake_timeout_s")) config_.handshake_timeout_s = number(*v, 0.1, 120.0);
}

// Whether `name` is a model the server can load: a bundled name, or, with models.directory, a
// <name>.yaml, .yml or .urdf file there (the registry offers both).
bool Parser::modelExists(const std::string& name) const {
  const std::vector<std::string> names = bundledModelNames();
  if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  return !config_.model_directory.empty() &&
         !modelFileIn(config_.model_directory, name).empty();
}

std::vector<std::string> Parser::knownModels() const {
  if (config_.model_directory.empty()) return bundledModelNames();
  const std::vector<std::string> bundled = bundledModelNames();
  std::set<std::string> names(bundled.begin(), bundled.end());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_.model_directory, ec)) {
    const std::string extension = entry.path().extension().string();
    if (extension == ".yaml" || extension == ".yml" || extension == ".urdf") {
      names.insert(entry.path().stem().string());
    }
  }
  return {names.begin(), names.end()};
}

void Parser::parseModels(const Item& item) {
  const Mapping m(*this, item, {"directory", "default"});
  if (auto directory = m.get("directory")) {
    // an empty string keeps the default search (model_loader.h)
    if (!text(*directory).empty()) {
      const fs::path dir = path(*directory);
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) fail(*directory, "'" + dir.string() + "' is not a directory");
      config_.model_directory = dir.string();
    }
  }
  if (auto name = m.get("default")) {
    const std::string s = text(*name);
    if (!modelExists(s)) {
      fail(*name, "'" + s + "' is not a known model (known: " + joined(knownModels()) + ")");
    }
    config_.default_model = s;
  }
}

void Parser::parseSessionConfig(const Item& item, v1::SessionConfig& out, bool per_session) const {
  // initial q and v depend on the model: only a session's own configuration may give them
  const std::initializer_list<std::string_view> defaults_keys = {
      "mode",     "control_rate_hz", "substeps", "formulation", "integrator",
      "watchdog", "overrun",         "thread",   "max_speed",   "command_capacity",
      "idle_timeout_s", "threads"};
  const std::initializer_list<std::string_view> session_keys = {
      "mode",    "control_rate_hz", "substeps",  "formulation",      "integrator", "watchdog",
      "overrun", "thread",          "max_speed", "command_capacity", "initial_q",  "initial_v",
      "idle_timeout_s", "threads", "drives", "actuators", "sensors", "faults"};
  const Mapping m(*this, item, per_session ? session_keys : defaults_keys);

  if (auto v = m.get("mode"))
    out.set_mode(enumeration<v1::SessionMode>(*v, v1::SessionMode_descriptor()));
  if (auto v = m.get("control_rate_hz")) {
    out.set_control_rate_hz(number(*v, kMinControlRate, kMaxControlRate));
  }
  if (auto v = m.get("substeps"))
    out.set_substeps(static_cast<std::uint32_t>(integer(*v, 1, kMaxSubsteps)));
  if (auto v = m.get("threads")) out.set_threads(static_cast<std::uint32_t>(integer(*v, 1, 64)));
  if (auto v = m.get("formulation")) {
    out.set_formulation(enumeration<v1::Formulation>(*v, v1::Formulation_descriptor()));
  }
  if (auto v = m.get("integrator")) {
    out.set_integrator(enumeration<v1::Integrator>(*v, v1::Integrator_descriptor()));
  }
  if (auto watchdog = m.get("watchdog")) {
    const Mapping w(*this, *watchdog, {"policy", "missed_cycles_limit", "damping_gain"});
    v1::WatchdogConfig& c = *out.mutable_watchdog();
    if (auto v = w.get("policy")) {
      c.set_policy(enumeration<v1::WatchdogPolicy>(*v, v1::WatchdogPolicy_descriptor()));
    }
    if (auto v = w.get("missed_cycles_limit")) {
      c.set_missed_cycles_limit(static_cast<std::uint32_t>(integer(*v, 1, 1'000'000)));
    }
    if (auto v = w.get("damping_gain")) c.set_damping_gain(number(*v, 0.0, kInfinity));
  }
  if (auto overrun = m.get("overrun")) {
    const Mapping o(*this, *overrun, {"policy", "max_catch_up"});
    v1::OverrunConfig& c = *out.mutable_overrun();
    if (auto v = o.get("policy")) {
      c.set_policy(enumeration<v1::OverrunPolicy>(*v, v1::OverrunPolicy_descriptor()));
    }
    if (auto v = o.get("max_catch_up"))
      c.set_max_catch_up(static_cast<std::uint32_t>(integer(*v, 0, 1000)));
  }
  if (auto thread = m.get("thread")) {
    const Mapping t(
        *this, *thread,
        {"lock_memory", "prefault_stack_bytes", "fifo_priority", "cpu", "minimal_timer_slack",
         "dedicated"});
    v1::RtThreadConfig& c = *out.mutable_thread();
    if (auto v = t.get("lock_memory")) c.set_lock_memory(boolean(*v));
    if (auto v = t.get("prefault_stack_bytes")) {
      c.set_prefault_stack_bytes(static_cast<std::uint64_t>(integer(*v, 0, kMaxPrefaultBytes)));
    }
    if (auto v = t.get("fifo_priority")) {
      c.set_fifo_priority(static_cast<std::uint32_t>(integer(*v, 0, kMaxFifoPriority)));
    }
    if (auto v = t.get("cpu")) c.set_cpu(static_cast<std::int32_t>(integer(*v, -1, kMaxCpu)));
    if (auto v = t.get("minimal_timer_slack")) c.set_minimal_timer_slack(boolean(*v));
    if (auto v = t.get("dedicated")) c.set_dedicated(boolean(*v));
  }
  if (auto v = m.get("max_speed")) out.set_max_speed(number(*v, 0.0, kInfinity, true));
  if (auto v = m.get("idle_timeout_s")) out.set_idle_timeout_s(number(*v, 0.0, kMaxIdleTimeout));
  if (auto v = m.get("command_capacity")) {
    out.set_command_capacity(static_cast<std::uint32_t>(integer(*v, 1, kMaxCommandCapacity)));
  }
  // the model's joints: a session's own configuration only (names, gains and ranges are checked
  // when the session is made)
  if (auto drives = m.get("drives")) {
    out.clear_drives();
    for (const Item& drive : list(*drives)) flatMessage(drive, out.add_drives());
  }
  if (auto actuators = m.get("actuators")) {
    out.clear_actuators();
    for (const Item& actuator : list(*actuators)) flatMessage(actuator, out.add_actuators());
  }
  if (auto sensors = m.get("sensors")) parseSensors(*sensors, out.mutable_sensors());
  if (auto faults = m.get("faults")) parseFaults(*faults, out.mutable_faults());
  for (const auto& [key, values] : {std::pair{"initial_q", out.mutable_initial_q()},
                                    std::pair{"initial_v", out.mutable_initial_v()}}) {
    const auto v = m.get(key);
    if (!v) continue;
    values->Clear();
    const std::vector<Item> elements = list(*v);
    if (elements.size() > static_cast<std::size_t>(kMaxCoordinates)) {
      fail(*v, std::to_string(elements.size()) + " values: sessions hold at most " +
                   std::to_string(kMaxCoordinates) + " coordinates");
    }
    for (const Item& element : elements) values->Add(number(element, -kInfinity, kInfinity));
  }
}

// What the limits section allows every session: checked on the effective values, so that a
// built-in default above a lowered limit is reported too.
void Parser::checkLimits(const v1::SessionConfig& c, const Item& item) const {
  const std::string at = item.path.empty() ? "" : item.path + ".";
  if (c.control_rate_hz() > config_.max_control_rate_hz) {
    fail(item.mark, at + "control_rate_hz",
         formatNumber(c.control_rate_hz()) + " Hz is above limits.max_control_rate_hz (" +
             formatNumber(config_.max_control_rate_hz) + " Hz)");
  }
  if (c.substeps() > static_cast<std::uint32_t>(config_.max_substeps)) {
    fail(item.mark, at + "substeps",
         std::to_string(c.substeps()) + " is above limits.max_substeps (" +
             std::to_string(config_.max_substeps) + ")");
  }
  if (c.thread().fifo_priority() > static_cast<std::uint32_t>(config_.max_fifo_priority)) {
    fail(item.mark, at + "thread.fifo_priority",
         std::to_string(c.thread().fifo_priority()) + " is above limits.max_fifo_priority (" +
             std::to_string(config_.max_fifo_priority) + ")");
  }
  const int cpu = c.thread().has_cpu() ? c.thread().cpu() : -1;
  if (cpu >= 0 && !config_.allowed_cpus.empty() &&
      std::find(config_.allowed_cpus.begin(), config_.allowed_cpus.end(), cpu) ==
          config_.allowed_cpus.end()) {
    std::vector<std::string> cpus;
    for (const int allowed : config_.allowed_cpus) cpus.push_back(std::to_string(allowed));
    fail(item.mark, at + "thread.cpu",
         "CPU " + std::to_string(cpu) + " is not in limits.allowed_cpus (" + joined(cpus) + ")");
  }
}

void Parser::parseSessions(const Item& item) {
  if (item.node.IsNull()) return;
  const std::vector<Item> entries = list(item);
  if (entries.size() > static_cast<std::size_t>(config_.max_sessions)) {
    fail(item, std::to_string(entries.size()) + " sessions exceed limits.max_sessions (" +
                   std::to_string(config_.max_sessions) + ")");
  }
  const bool ephemeral_udp = config_.udp_port_first == 0;
  for (const Item& entry : entries) {
    const Mapping m(*this, entry, {"name", "model", "start", "udp_port", "udp_key_file", "config"});
    StartupSession session;
    session.config = config_.session_defaults;

    const auto name = m.get("name");
    if (!name) fail(entry, "a start-up session needs a name");
    const std::string session_name = text(*name);
    if (session_name.empty()) fail(*name, "empty name");
    for (const StartupSession& other : config_.startup_sessions) {
      if (other.config.name() == session_name) {
        fail(*name, "'" + session_name + "' names another start-up session too");
      }
    }
    session.config.set_name(session_name);

    if (auto model = m.get("model")) {
      session.model = text(*model);
      if (!modelExists(session.model)) {
        fail(*model,
             "'" + session.model + "' is not a known model (known: " + joined(knownModels()) + ")");
      }
    } else {
      session.model = config_.default_model.empty() ? defaultModelName() : config_.default_model;
      if (!modelExists(session.model)) {
        fail(entry, "no model given, and the default '" + session.model + "' is not in " +
                        config_.model_directory);
      }
    }
    if (auto start = m.get("start")) session.start = boolean(*start);
    if (auto port = m.get("udp_port")) {
      const auto value = integer(*port, 0, 65535);
      if (value != 0) {
        if (!config_.udp_enabled) fail(*port, "listen.udp.enabled is false: no UDP port");
        if (!ephemeral_udp && (value < config_.udp_port_first || value > config_.udp_port_last)) {
          fail(*port, std::to_string(value) + " is outside listen.udp.ports [" +
                          std::to_string(config_.udp_port_first) + ", " +
                          std::to_string(config_.udp_port_last) + "]");
        }
        for (const StartupSession& other : config_.startup_sessions) {
          if (other.udp_port == value) {
            fail(*port, std::to_string(value) + " is the UDP port of session '" +
                            other.config.name() + "' too");
          }
        }
      }
      session.udp_port = static_cast<std::uint16_t>(value);
    }
    if (auto key_file = m.get("udp_key_file")) {
      if (!config_.udp_enabled) fail(*key_file, "listen.udp.enabled is false: no UDP key");
      if (config_.udp_authentication != v1::UDP_AUTHENTICATION_MAC) {
        fail(*key_file, "listen.udp.authentication is token: no UDP key");
      }
      const fs::path file = path(*key_file);
      const std::string content = readFile(*key_file, file, "a UDP key file");
      // 64 hexadecimal digits, then at most white space; never quoted back in a message
      std::string key;
      std::size_t k = 0;
      for (; k + 1 < content.size() && key.size() < 32; k += 2) {
        const auto digit = [](char c) {
          if (c >= '0' && c <= '9') return c - '0';
          if (c >= 'a' && c <= 'f') return c - 'a' + 10;
          if (c >= 'A' && c <= 'F') return c - 'A' + 10;
          return -1;
        };
        const int high = digit(content[k]), low = digit(content[k + 1]);
        if (high < 0 || low < 0) break;
        key += static_cast<char>(high * 16 + low);
      }
      bool rest_blank = true;
      for (; k < content.size(); ++k) {
        rest_blank = rest_blank && std::isspace(static_cast<unsigned char>(content[k]));
      }
      if (key.size() != 32 || !rest_blank) {
        fail(*key_file, "'" + file.string() +
                            "' must hold a 32-byte key as 64 hexadecimal digits (e.g. made by "
                            "`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`)");
      }
      session.udp_key = std::move(key);
    }
    const Item config =
        m.get("config").value_or(Item{YAML::Node(), entry.mark, entry.path + ".config"});
    parseSessionConfig(config, session.config, true);
    checkLimits(session.config, config);
    config_.startup_sessions.push_back(std::move(session));
  }
}

void Parser::parseLog(const Item& item) {
  const Mapping m(*this, item, {"level", "format"});
  if (auto v = m.get("level")) {
    config_.log_level = choice(*v, {"trace", "debug", "info", "warn", "error", "critical", "off"});
  }
  if (auto v = m.get("format")) config_.log_format = choice(*v, {"text", "json"});
}

}  // namespace

ServerConfig loadServerConfig(const std::string& path) {
  std::string error;
  const std::string text = readBoundedFile(path, kMaxConfigFileBytes, error);
  if (!error.empty()) throw ConfigError(path + ": cannot read: " + error);
  return parseServerConfig(text, path);
}

ServerConfig parseServerConfig(const std::string& yaml_text, const std::string& source) {
  // relative paths in the file resolve against the directory of `source`
  std::error_code ec;
  fs::path base = fs::absolute(fs::path(source).parent_path(), ec);
  if (ec || fs::path(source).parent_path().empty()) base = fs::current_path(ec);
  return Parser(source, base).parse(yaml_text);
}

}  // namespace hilsim::server
