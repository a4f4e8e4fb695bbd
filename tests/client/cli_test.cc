// The `hilsim` CLI (docs/CLI.md): info/--json against the loaded model, eval against direct calls
// of the algorithms, eval --inverse round trips, simulate rows and energy, and one clear stderr
// line with a non-zero exit code for every class of bad input — the last through the real
// executable, so a crash or an escaped exception would show.
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "client/cli/app.h"
#include "client/cli/commands.h"
#include "client/cli/progress.h"
#include "client/cli/text.h"
#include "engine/algorithms/aba.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/algorithms/rnea.h"
#include "engine/io/loader_util.h"
#include "engine/io/model_loader.h"
#include "engine/builder/model_builder.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

#ifndef HILSIM_CLI_EXE
#error "HILSIM_CLI_EXE (path of the built hilsim executable) must be defined"
#endif

namespace hilsim::cli {
namespace {

namespace fs = std::filesystem;

using test::kFormulationRelTol;
using test::relativeDifference;

/// Energy drift of RK4 on the pendulum over 2 s at dt = 1 ms: the local error is O(h⁵), measured
/// ~1e-13; 1e-9 leaves room for other compilers while catching any first-order integration error.
constexpr double kRk4EnergyRelTol = 1e-9;
/// Semi-implicit Euler is symplectic: its energy error stays bounded at O(h) (measured ~2e-3 at
/// amplitude 1 rad, dt = 1 ms) instead of growing.
constexpr double kEulerEnergyRelTol = 1e-2;
/// Quaternions are renormalised on input, which may move them by an ulp or so; the dynamics of
/// the quadruped amplifies that by no more than its condition number.
constexpr double kRenormalisedRelTol = 1e-12;

// --- running the CLI --------------------------------------------------------------------------

struct RunResult {
  int code = -1;
  std::string out, err;
};

RunResult runInProcess(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  RunResult r;
  r.code = run(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string shellQuote(const std::string& arg) {
  std::string out = "'";
  for (const char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class CliTest : public ::testing::Test {
 protected:
  // A bundled URDF model's tree alone, written beside the test's files: its joint limits as data,
  // no ground (docs/CONTACT.md); the file's path.
  std::string treeModel(const std::string& bundled) {
    const bool quadruped = bundled == "quadruped";
    const fs::path file = path(bundled + "_tree.yaml");
    writeFile(file, std::string("urdf: ") + HILSIM_MODEL_DIR + "/" +
                        (quadruped ? "solo12" : bundled) + ".urdf\n" +
                        (quadruped ? "floating_base: true\n" : "") + "limits: data\n");
    return file.string();
  }

  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("hilsim_cli_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path path(const std::string& name) const { return dir_ / name; }

  /// Runs the built executable with `args`, capturing stdout and stderr.
  RunResult runExe(const std::vector<std::string>& args) const {
    std::string command = shellQuote(HILSIM_CLI_EXE);
    // appended piecewise: `" " + std::string&&` trips a GCC 12 -Wrestrict false positive
    for (const auto& a : args) command.append(" ").append(shellQuote(a));
    const fs::path out = path("stdout.txt"), err = path("stderr.txt");
    command.append(" > ").append(shellQuote(out.string()));
    command.append(" 2> ").append(shellQuote(err.string())).append(" < /dev/null");
    const int status = std::system(command.c_str());
    RunResult r;
    if (status != -1 && WIFEXITED(status)) {
      r.code = WEXITSTATUS(status);
    } else {
      r.code = 1000;  // killed by a signal: a crash
    }
    r.out = readFile(out);
    r.err = readFile(err);
    return r;
  }

  fs::path dir_;
};

/// A failed run: non-zero exit, nothing on stdout, and exactly one line on stderr.
::testing::AssertionResult isOneLineError(const RunResult& r) {
  if (r.code == 0) return ::testing::AssertionFailure() << "exit code 0; stderr: " << r.err;
  if (r.code >= 128) return ::testing::AssertionFailure() << "crashed (" << r.code << "): " << r.err;
  if (!r.out.empty()) return ::testing::AssertionFailure() << "stdout not empty: " << r.out;
  const auto newlines = std::count(r.err.begin(), r.err.end(), '\n');
  if (newlines != 1 || r.err.back() != '\n') {
    return ::testing::AssertionFailure() << "stderr is not one line: [" << r.err << "]";
  }
  if (r.err.rfind("hilsim: error: ", 0) != 0) {
    return ::testing::AssertionFailure() << "stderr does not start with 'hilsim: error: ': " << r.err;
  }
  return ::testing::AssertionSuccess();
}

// --- CSV and JSON helpers ---------------------------------------------------------------------

struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<double>> rows;
};

Csv readCsv(const fs::path& path) {
  Csv csv;
  std::ifstream in(path);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream s(line);
    std::string field;
    while (std::getline(s, field, ',')) fields.push_back(field);
    if (first) {
      csv.header = fields;
      first = false;
      continue;
    }
    std::vector<double> row;
    for (const auto& f : fields) {
      const auto value = parseNumber(f);
      EXPECT_TRUE(value.has_value()) << path << ": " << f;
      row.push_back(value.value_or(NAN));
    }
    csv.rows.push_back(row);
  }
  return csv;
}

void appendVector(std::string& line, const Eigen::VectorXd& x) {
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    line += ",";
    appendNumber(line, x[i]);
  }
}

/// A tiny JSON reader, enough to check that `info --json` is valid JSON and to read its fields.
struct Json {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = Kind::kNull;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  std::vector<Json> array;
  std::vector<std::pair<std::string, Json>> object;

  const Json& operator[](const std::string& key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return v;
    }
    ADD_FAILURE() << "no key " << key;
    static const Json kNull;
    return kNull;
  }
  bool has(const std::string& key) const {
    for (const auto& kv : object) {
      if (kv.first == key) return true;
    }
    return false;
  }
};

class JsonParser {
 public:
  explicit JsonParser(std::string text) : s_(std::move(text)) {}

  /// Parses the whole document; throws std::runtime_error on any syntax error.
  Json parseDocument() {
    Json value = parseValue();
    skipSpace();
    if (pos_ != s_.size()) fail("trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("JSON: " + what + " at offset " + std::to_string(pos_));
  }
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }
  bool literal(const std::string& word) {
    if (s_.compare(pos_, word.size(), word) == 0) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  std::string parseString() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("bad escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) fail("bad \\u escape");
          const unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
          pos_ += 4;
          if (code >= 0x80) fail("test parser handles only ASCII \\u escapes");
          out.push_back(static_cast<char>(code));
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  Json parseValue() {
    skipSpace();
    if (pos_ >= s_.size()) fail("unexpected end");
    Json v;
    const char c = s_[pos_];
    if (c == '{') {
      v.kind = Json::Kind::kObject;
      ++pos_;
      if (consume('}')) return v;
      do {
        skipSpace();
        std::string key = parseString();
        expect(':');
        v.object.emplace_back(std::move(key), parseValue());
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      v.kind = Json::Kind::kArray;
      ++pos_;
      if (consume(']')) return v;
      do {
        v.array.push_back(parseValue());
      } while (consume(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::Kind::kString;
      v.string = parseString();
    } else if (literal("null")) {
      v.kind = Json::Kind::kNull;
    } else if (literal("true")) {
      v.kind = Json::Kind::kBool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Json::Kind::kBool;
    } else {
      // JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
      const std::size_t start = pos_;
      if (s_[pos_] == '-') ++pos_;
      auto digits = [&] {
        const std::size_t d = pos_;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        if (pos_ == d) fail("expected digits");
      };
      if (pos_ < s_.size() && s_[pos_] == '0') {
        ++pos_;
      } else {
        digits();
      }
      if (pos_ < s_.size() && s_[pos_] == '.') {
        ++pos_;
        digits();
      }
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        ++pos_;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        digits();
      }
      v.kind = Json::Kind::kNumber;
      v.number = std::stod(s_.substr(start, pos_ - start));
    }
    return v;
  }

  std::string s_;
  std::size_t pos_ = 0;
};

/// The dof values of joint i as JSON: numbers, null for ±inf.
void expectDofArray(const Json& array, const Model& model, const Eigen::VectorXd& values, int i,
                    const std::string& what) {
  ASSERT_EQ(array.kind, Json::Kind::kArray) << what;
  ASSERT_EQ(static_cast<int>(array.array.size()), model.nv_joint[i]) << what;
  for (int k = 0; k < model.nv_joint[i]; ++k) {
    const double expected = values[model.idx_v[i] + k];
    const Json& got = array.array[k];
    if (std::isfinite(expected)) {
      ASSERT_EQ(got.kind, Json::Kind::kNumber) << what;
      EXPECT_EQ(got.number, expected) << what;
    } else {
      EXPECT_EQ(got.kind, Json::Kind::kNull) << what;
    }
  }
}

// --- info -------------------------------------------------------------------------------------

TEST_F(CliTest, InfoTextDescribesTheDefaultArm) {
  const Model model = loadModel("iiwa14");
  const RunResult r = runInProcess({"info", "--model", "iiwa14"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  EXPECT_NE(r.out.find("model     iiwa14\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nq        7\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nv        7\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mass      " + formatNumber(model.totalMass()) + " kg"), std::string::npos);
  for (int i = 1; i < model.nbodies; ++i) {
    EXPECT_NE(r.out.find(" " + model.joint_names[i] + " "), std::string::npos)
        << model.joint_names[i];
  }
}

// How a URDF is read, from every model command: --floating-base puts its root on a free joint;
// a link whose moments break the triangle inequality loads with a warning `info` shows (text and
// JSON), is balanced or refused with --inertia; a YAML model says these itself.
TEST_F(CliTest, UrdfOptionsReachInfoSimulateAndEval) {
  const fs::path vendor = path("vendor.urdf");
  writeFile(vendor,
            "<robot name='vendor'><link name='a'><inertial><mass value='1'/><inertia ixx='1' "
            "iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link><joint name='j' "
            "type='continuous'><parent link='a'/><child link='b'/><axis xyz='0 0 1'/></joint>"
            "<link name='b'><inertial><mass value='1'/><inertia ixx='1' iyy='1' izz='3' "
            "ixy='0' ixz='0' iyz='0'/></inertial></link></robot>\n");
  RunResult r = runInProcess({"info", "--model", vendor.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nv        1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("warning   " + vendor.string() + ":1: link 'b': principal moments break "
                       "the triangle inequality by 1 kg·m²; loaded as given"),
            std::string::npos)
      << r.out;
  r = runInProcess({"info", "--model", vendor.string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"warnings\": [\""), std::string::npos) << r.out;
  r = runInProcess({"info", "--model", vendor.string(), "--floating-base", "--inertia", "balance"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nv        7\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("balanced: the two smaller moments raised by 0.5 kg·m² each"),
            std::string::npos)
      << r.out;
  r = runInProcess({"simulate", "--model", vendor.string(), "--floating-base", "--duration",
                    "0.01"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = runInProcess({"info", "--model", vendor.string(), "--inertia", "strict"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("violate the triangle inequality"), std::string::npos) << r.err;
  r = runInProcess({"info", "--model", vendor.string(), "--inertia", "loose"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--inertia: 'loose': as_given, balance or strict"), std::string::npos)
      << r.err;
  r = runInProcess({"info", "--model", "pendulum", "--floating-base"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("a YAML model sets its URDF's options itself"), std::string::npos) << r.err;
  // a bundled URDF floats too
  r = runInProcess({"info", "--model", "solo12", "--floating-base"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nv        18\n"), std::string::npos) << r.out;

  // a massless finger: refused with the options named, then welded or geared
  const fs::path finger = path("finger.urdf");
  writeFile(finger,
            "<robot name='finger'><link name='a'/><joint name='j' type='continuous'><parent "
            "link='a'/><child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial>"
            "<mass value='1'/><inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/>"
            "</inertial></link><joint name='f' type='continuous'><parent link='b'/><child "
            "link='c'/></joint><link name='c'/></robot>\n");
  r = runInProcess({"info", "--model", finger.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("massless: weld"), std::string::npos) << r.err;
  r = runInProcess({"info", "--model", finger.string(), "--massless", "weld"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nv        1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("joint 'f' (continuous) welded"), std::string::npos) << r.out;
  // q, v, tau of both joints: the finger's torque of 1 N·m on its armature alone
  writeFile(path("finger.csv"), "q_j,q_f,v_j,v_f,tau_j,tau_f\n0,0,0,0,0,1\n");
  r = runInProcess({"eval", "--model", finger.string(), "--massless", "armature=0.01", "--input",
                    path("finger.csv").string(), "--output", path("finger_qdd.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(readFile(path("finger_qdd.csv")).find(",100\n"), std::string::npos)
      << readFile(path("finger_qdd.csv"));
  r = runInProcess({"simulate", "--model", finger.string(), "--massless", "armature=0.01",
                    "--duration", "0.01"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = runInProcess({"info", "--model", finger.string(), "--massless", "armature=0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--massless: 'armature=0': refuse, weld, or armature=<value>"),
            std::string::npos)
      << r.err;
}

TEST_F(CliTest, InfoJsonMatchesTheLoadedModel) {
  for (const std::string name : {"iiwa14", "quadruped", "double_pendulum"}) {
    SCOPED_TRACE(name);
    const Model model = loadModel(name);
    const RunResult r = runInProcess({"info", "--model", name, "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    Json doc;
    ASSERT_NO_THROW(doc = JsonParser(r.out).parseDocument()) << r.out;
    ASSERT_EQ(doc.kind, Json::Kind::kObject);
    EXPECT_EQ(doc["name"].string, model.name);
    EXPECT_EQ(doc["source"].string, bundledModelPath(name));
    EXPECT_EQ(doc["nq"].number, model.nq);
    EXPECT_EQ(doc["nv"].number, model.nv);
    EXPECT_EQ(doc["nbodies"].number, model.nbodies);
    EXPECT_EQ(doc["total_mass"].number, model.totalMass());
    ASSERT_EQ(doc["gravity"].array.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(doc["gravity"].array[k].number, model.gravity[k]);
    const Json& joints = doc["joints"];
    ASSERT_EQ(static_cast<int>(joints.array.size()), model.nbodies - 1);
    int q_next = 0, v_next = 0;
    for (int i = 1; i < model.nbodies; ++i) {
      const Json& j = joints.array[i - 1];
      const std::string what = name + " joint " + model.joint_names[i];
      EXPECT_EQ(j["index"].number, i);
      EXPECT_EQ(j["name"].string, model.joint_names[i]);
      EXPECT_EQ(j["type"].string, jointTypeName(model.joints[i].type));
      EXPECT_EQ(j["body"].string, model.body_names[i]);
      EXPECT_EQ(j["parent"].string, model.body_names[model.parent[i]]);
      EXPECT_EQ(j["parent_index"].number, model.parent[i]);
      // index ranges tile q and v in joint order
      EXPECT_EQ(j["q_index"].number, q_next);
      EXPECT_EQ(j["v_index"].number, v_next);
      EXPECT_EQ(j["nq"].number, model.nq_joint[i]);
      EXPECT_EQ(j["nv"].number, model.nv_joint[i]);
      q_next += model.nq_joint[i];
      v_next += model.nv_joint[i];
      EXPECT_EQ(j["mass"].number, model.inertias[i].mass);
      expectDofArray(j["damping"], model, model.damping, i, what + " damping");
      expectDofArray(j["armature"], model, model.armature, i, what + " armature");
      expectDofArray(j["lower_limit"], model, model.lower_limit, i, what + " lower");
      expectDofArray(j["upper_limit"], model, model.upper_limit, i, what + " upper");
      expectDofArray(j["velocity_limit"], model, model.velocity_limit, i, what + " velocity");
      expectDofArray(j["effort_limit"], model, model.effort_limit, i, what + " effort");
    }
    EXPECT_EQ(q_next, model.nq);
    EXPECT_EQ(v_next, model.nv);
    EXPECT_EQ(doc["frames"].array.size(), model.frames.size());
  }
}

TEST_F(CliTest, InfoReportsMasslessBodiesRanksAndSprings) {
  // the small-mass oscillator of seed 003 §2.2 with m1 = 0: one algebraic velocity
  writeFile(path("oscillator.yaml"), R"(version: 1
name: oscillator
gravity: [0, 0, 0]
bodies:
  - name: small
    parent: world
    joint: {type: prismatic, name: q1, axis: [1, 0, 0], stiffness: 100.0, damping: 0.1}
    inertia: {mass: 0, com: [0, 0, 0], inertia: [0, 0, 0, 0, 0, 0]}
  - name: large
    parent: small
    joint: {type: prismatic, name: q2, axis: [1, 0, 0], stiffness: 10.0, spring_reference: 0.5,
            damping: 0.1}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [1.0, 1.0, 1.0, 0, 0, 0]}
)");
  const std::string file = path("oscillator.yaml").string();
  const RunResult text = runInProcess({"info", "--model", file});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("  small: joint q1, rank 0 of 1\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("large: joint"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("nalgebraic 1 "), std::string::npos) << text.out;

  const RunResult json = runInProcess({"info", "--model", file, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  Json doc;
  ASSERT_NO_THROW(doc = JsonParser(json.out).parseDocument()) << json.out;
  EXPECT_EQ(doc["nalgebraic"].number, 1.0);
  const Json& small = doc["joints"].array.at(0);
  const Json& large = doc["joints"].array.at(1);
  EXPECT_TRUE(small["singular_inertia"].boolean);
  EXPECT_EQ(small["rank"].number, 0.0);
  EXPECT_EQ(small["stiffness"].array.at(0).number, 100.0);
  EXPECT_FALSE(large["singular_inertia"].boolean);
  EXPECT_EQ(large["rank"].number, 1.0);
  EXPECT_EQ(large["stiffness"].array.at(0).number, 10.0);
  EXPECT_EQ(large["spring_reference"].array.at(0).number, 0.5);

  // a rigid model says nothing about massless bodies
  const RunResult arm = runInProcess({"info", "--model", "iiwa14"});
  ASSERT_EQ(arm.code, 0) << arm.err;
  EXPECT_EQ(arm.out.find("nalgebraic"), std::string::npos) << arm.out;
}

TEST_F(CliTest, InfoJsonEscapesNames) {
  EXPECT_EQ(jsonString("a\"b\\c\n\t\x01/é"), "\"a\\\"b\\\\c\\n\\t\\u0001/é\"");
  EXPECT_EQ(jsonNumber(INFINITY), "null");
  EXPECT_EQ(jsonNumber(-0.25), "-0.25");
  // end to end: a robot and joint name that need escaping
  writeFile(path("odd.urdf"), R"(<?xml version="1.0"?>
<robot name="we&quot;ird\robot">
  <link name="base"/>
  <joint name="j&quot;1" type="revolute">
    <parent link="base"/><child link="arm"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/>
  </joint>
  <link name="arm">
    <inertial><origin xyz="0 0 -0.5"/><mass value="2"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial>
  </link>
</robot>
)");
  const RunResult r = runInProcess({"info", "--json", "--model", path("odd.urdf").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  Json doc;
  ASSERT_NO_THROW(doc = JsonParser(r.out).parseDocument()) << r.out;
  EXPECT_EQ(doc["name"].string, "we\"ird\\robot");
  ASSERT_EQ(doc["joints"].array.size(), 1u);
  EXPECT_EQ(doc["joints"].array[0]["name"].string, "j\"1");
  EXPECT_EQ(doc["joints"].array[0]["lower_limit"].array[0].number, -1.0);
  EXPECT_EQ(doc["joints"].array[0]["effort_limit"].array[0].number, 10.0);
}

TEST_F(CliTest, ModelsListsTheBundledModelsDefaultFirst) {
  const RunResult r = runInProcess({"models"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto names = bundledModelNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(r.out.rfind(defaultModelName(), 0), 0u) << r.out;
  for (const auto& n : names) EXPECT_NE(r.out.find(n), std::string::npos) << n;
  EXPECT_EQ(r.out.find("(not found)"), std::string::npos) << r.out;
}

// --- eval -------------------------------------------------------------------------------------

struct EvalCase {
  Eigen::VectorXd q, v, x;
};

/// Writes random states of `model` as an eval input file; returns them.
std::vector<EvalCase> writeEvalInput(const Model& model, const fs::path& file, int rows,
                                     std::mt19937& rng) {
  std::vector<EvalCase> cases;
  std::string text = "q";  // header: only the column count is checked
  for (int c = 1; c < model.nq + 2 * model.nv; ++c) text += ",c" + std::to_string(c);
  text += "\n";
  for (int r = 0; r < rows; ++r) {
    EvalCase c{test::randomConfiguration(model, rng), test::randomVector(model.nv, rng),
               test::randomVector(model.nv, rng, 10.0)};
    std::string line;
    appendVector(line, c.q);
    appendVector(line, c.v);
    appendVector(line, c.x);
    text += line.substr(1) + "\n";
    cases.push_back(c);
  }
  writeFile(file, text);
  return cases;
}

std::vector<std::string> expectedHeader(const Model& model, const std::string& prefix) {
  std::vector<std::string> header;
  for (const auto& label : coordinateLabels(model, true)) header.push_back(prefix + label);
  return header;
}

TEST_F(CliTest, EvalEqualsDirectForwardDynamicsCalls) {
  std::mt19937 rng(7);
  // the tree's dynamics (treeModel: no constraint stage, which the direct calls below do not run)
  for (const std::string bundled : {"iiwa14", "double_pendulum", "quadruped"}) {
    const std::string name = bundled == "double_pendulum" ? bundled : treeModel(bundled);
    const Model model = loadModel(name);
    const bool has_quaternions = model.nq != model.nv;
    Data data(model);
    const auto cases = writeEvalInput(model, path("in.csv"), 20, rng);
    for (const FormulationInfo& f : formulations()) {
      const std::string solver(f.name);
      SCOPED_TRACE(name + " " + solver);
      const RunResult r = runInProcess({"eval", "--model", name, "--solver", solver, "--input",
                                        path("in.csv").string(), "--output",
                                        path("out.csv").string()});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(r.out.rfind("wrote " + std::to_string(cases.size()) + " rows of qdd (" + solver +
                                "), ",
                            0),
                0u)
          << r.out;  // one line on what was written; the numbers are in the file
      const Csv out = readCsv(path("out.csv"));
      EXPECT_EQ(out.header, expectedHeader(model, "qdd_"));
      ASSERT_EQ(out.rows.size(), cases.size());
      for (std::size_t k = 0; k < cases.size(); ++k) {
        const Eigen::VectorXd got = Eigen::Map<const Eigen::VectorXd>(out.rows[k].data(), model.nv);
        const Eigen::VectorXd expected =
            forwardDynamics(f.id, model, data, cases[k].q, cases[k].v, cases[k].x);
        if (has_quaternions) {
          EXPECT_LT(relativeDifference(got, expected), kRenormalisedRelTol) << "row " << k;
        } else {
          // exactly: shortest round-trip text in both directions, same algorithm
          EXPECT_EQ(got, expected) << "row " << k;
        }
        // and the formulations agree with each other
        EXPECT_LT(relativeDifference(got, aba(model, data, cases[k].q, cases[k].v, cases[k].x)),
                  kFormulationRelTol);
      }
    }
  }
}

TEST_F(CliTest, InfoReportsLoopsMobilityAndAssembly) {
  // the four-bar: one revolute loop of 5 rows, rank 2 in the plane, mobility 1; the delta robot:
  // six rods, rank 6, the platform's 3 translations
  const RunResult text = runInProcess({"info", "--model", "four_bar"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("loops     1  (5 constraint rows, rank 2 at the assembled start: "
                          "mobility 1)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  coupler_rocker_pin: revolute, coupler -> rocker, 5 rows\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("assembly  residual "), std::string::npos) << text.out;

  const RunResult json = runInProcess({"info", "--model", "delta", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  Json doc;
  ASSERT_NO_THROW(doc = JsonParser(json.out).parseDocument()) << json.out;
  EXPECT_EQ(doc["loops"].array.size(), 6u);
  EXPECT_EQ(doc["loops"].array.at(0)["type"].string, "distance");
  EXPECT_EQ(doc["constraint_rows"].number, 6.0);
  EXPECT_EQ(doc["constraint_rank"].number, 6.0);
  EXPECT_EQ(doc["mobility"].number, 3.0);
  EXPECT_LT(doc["assembly_residual"].number, 1e-12);
  EXPECT_EQ(doc["force_elements"].array.size(), 0u);
}

TEST_F(CliTest, SimulateHoldsTheGivenJointForcesOnALoopModel) {
  // the delta robot's three motors lift their arms against gravity (0.8 N·m, about 0.5 N·m hold
  // them): the platform, held by the rods, goes up, the arms staying inside their limits; the
  // summary gives the work the motors did and what the joint damping took out; the wrong number
  // of values is a usage error
  const RunResult r = runInProcess({"simulate", "--model", "delta", "--duration", "0.2",
                                    "--tau", "-0.8,-0.8,-0.8,0,0,0,0,0,0", "--output",
                                    path("delta.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const Csv trajectory = readCsv(path("delta.csv"));
  ASSERT_EQ(trajectory.rows.size(), 201u);
  const std::size_t platform_z = 1 + 3 + 2;  // t, three motors, then x y z of the platform
  EXPECT_EQ(trajectory.header.at(platform_z), "q_platform_joint_2");
  EXPECT_GT(trajectory.rows.back()[platform_z], trajectory.rows.front()[platform_z] + 0.01);
  for (std::size_t motor = 1; motor <= 3; ++motor) {
    EXPECT_LT(trajectory.rows.back()[motor], trajectory.rows.front()[motor] - 0.1);
    EXPECT_GT(trajectory.rows.back()[motor], -0.6);  // the lower limit
  }
  EXPECT_NE(r.out.find("energy balance   applied forces did 1.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" J of work, dampers took out 0.03"), std::string::npos) << r.out;
  const RunResult wrong = runInProcess({"simulate", "--model", "delta", "--tau", "1,2"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("--tau: expected 9 comma-separated values, got 2"), std::string::npos)
      << wrong.err;
}

TEST_F(CliTest, SimulateStopsWhereALoopOpensNamingTheClosure) {
  // 5 N·m held on each motor of the delta (its joint limits kept as data) spins its arms up until
  // a step no longer follows the motion, near 0.28 s: the run stops there naming the rod, not at
  // 1e24
  writeFile(path("delta_free.yaml"),
            io_detail::readTextFile(HILSIM_MODEL_DIR "/delta.yaml", 1 << 20) + "limits: data\n");
  const RunResult r = runInProcess({"simulate", "--model", path("delta_free.yaml").string(),
                                    "--duration", "2",
                                    "--tau", "5,5,5,0,0,0,0,0,0", "--output",
                                    path("delta.csv").string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("simulation stopped at step "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": closure 'rod_"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(distance) stayed open by "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("singular configuration"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rows before it are in "), std::string::npos) << r.err;
  const Csv trajectory = readCsv(path("delta.csv"));
  EXPECT_GT(trajectory.rows.size(), 100u);
  EXPECT_LT(trajectory.rows.size(), 2001u);
  for (const auto& row : trajectory.rows)
    for (double x : row) ASSERT_LT(std::abs(x), 1e4);  // every row kept is a sane one
}

TEST_F(CliTest, EvalOfALoopModelGivesTheConstrainedAccelerations) {
  const Model model = loadModel("four_bar");
  std::mt19937 rng(3);
  const auto cases = writeEvalInput(model, path("in.csv"), 5, rng);
  for (const FormulationInfo& f : formulations()) {
    if (!f.capabilities.closed_loops) continue;  // refused: CliTest.SolverThatCannotRunAModel…
    const RunResult r = runInProcess({"eval", "--model", "four_bar", "--solver", std::string(f.name),
                                      "--input", path("in.csv").string(), "--output",
                                      path("out.csv").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    const Csv out = readCsv(path("out.csv"));
    ASSERT_EQ(out.rows.size(), cases.size());
    Data data(model);
    ConstraintRowStage stage(model, f);
    for (std::size_t k = 0; k < cases.size(); ++k) {
      Eigen::VectorXd expected =
          forwardDynamics(f.id, model, data, cases[k].q, cases[k].v, cases[k].x);
      stage.accelerations(model, data, cases[k].q, cases[k].v, cases[k].x, expected);
      const Eigen::VectorXd got = Eigen::Map<const Eigen::VectorXd>(out.rows[k].data(), model.nv);
      EXPECT_EQ(got, expected) << f.name << " row " << k;
    }
  }
  const RunResult inverse = runInProcess({"eval", "--model", "four_bar", "--inverse", "--input",
                                          path("in.csv").string(), "--output",
                                          path("out.csv").string()});
  EXPECT_EQ(inverse.code, 2);
  EXPECT_NE(inverse.err.find("has loop closures"), std::string::npos) << inverse.err;
}

TEST_F(CliTest, EvalInverseRoundTripsEval) {
  std::mt19937 rng(11);
  // the trees alone: inverse dynamics knows no contact or limit forces
  for (const std::string& name : {treeModel("iiwa14"), treeModel("quadruped")}) {
    SCOPED_TRACE(name);
    const Model model = loadModel(name);
    const auto cases = writeEvalInput(model, path("in.csv"), 15, rng);
    RunResult r = runInProcess({"eval", "-m", name, "-i", path("in.csv").string(), "-o",
                                path("qdd.csv").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    const Csv qdd = readCsv(path("qdd.csv"));
    ASSERT_EQ(qdd.rows.size(), cases.size());

    // q, v, qdd → tau
    std::string text = "header";
    for (int c = 1; c < model.nq + 2 * model.nv; ++c) text += ",h";
    text += "\n";
    for (std::size_t k = 0; k < cases.size(); ++k) {
      std::string line;
      appendVector(line, cases[k].q);
      appendVector(line, cases[k].v);
      appendVector(line, Eigen::Map<const Eigen::VectorXd>(qdd.rows[k].data(), model.nv));
      text += line.substr(1) + "\n";
    }
    writeFile(path("inverse_in.csv"), text);
    r = runInProcess({"eval", "-m", name, "--inverse", "-i", path("inverse_in.csv").string(), "-o",
                      path("tau.csv").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    const Csv tau = readCsv(path("tau.csv"));
    EXPECT_EQ(tau.header, expectedHeader(model, "tau_"));
    ASSERT_EQ(tau.rows.size(), cases.size());
    for (std::size_t k = 0; k < cases.size(); ++k) {
      const Eigen::VectorXd got = Eigen::Map<const Eigen::VectorXd>(tau.rows[k].data(), model.nv);
      EXPECT_LT(relativeDifference(got, cases[k].x), kFormulationRelTol) << "row " << k;
    }
  }
}

TEST_F(CliTest, EvalAcceptsBlankLinesCrlfAndSpaces) {
  writeFile(path("in.csv"), "q, v, tau\r\n\r\n 0.5 , +0.1,2e-1\r\n\n");
  const RunResult r = runInProcess(
      {"eval", "-m", "pendulum", "-i", path("in.csv").string(), "-o", path("out.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const Model model = loadModel("pendulum");
  Data data(model);
  const Eigen::VectorXd expected =
      aba(model, data, Eigen::VectorXd::Constant(1, 0.5), Eigen::VectorXd::Constant(1, 0.1),
          Eigen::VectorXd::Constant(1, 0.2));
  const Csv out = readCsv(path("out.csv"));
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_EQ(out.rows[0][0], expected[0]);
  EXPECT_EQ(out.header, std::vector<std::string>{"qdd_hinge"});
  EXPECT_EQ(r.out, "wrote 1 row of qdd (aba), 1 columns each, to " + path("out.csv").string() +
                       "\n");
}

TEST_F(CliTest, TheReadmesEvalExamplesRun) {
  // the input files examples/eval/ ships, as README and CLI.md use them
  const std::string dir = std::string(HILSIM_SOURCE_DIR) + "/examples/eval/";
  RunResult r = runInProcess({"eval", "-m", "iiwa14", "-s", "crba", "-i",
                              dir + "iiwa14_states.csv", "-o", path("qdd.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(readCsv(path("qdd.csv")).rows.size(), 3u);
  r = runInProcess({"eval", "-m", "iiwa14", "--inverse", "-i", dir + "iiwa14_motion.csv", "-o",
                    path("tau.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(readCsv(path("tau.csv")).rows.size(), 3u);
}

TEST_F(CliTest, EvalQuaternionsWithinToleranceAreRenormalised) {
  // a floating body: q = (x y z, qw qx qy qz), v = 6
  ModelBuilder builder("floater");
  builder.addBody("box", "world", Joint::freeFlyer(), Transform::identity(),
                  Inertia(2.0, Vector3(0.1, 0.0, 0.0), Matrix3(Vector3(0.1, 0.2, 0.3).asDiagonal())));
  const Model model = builder.build();
  Data data(model);
  const double off = 1.0 + 0.5 * kQuaternionNormTol;
  writeFile(path("in.csv"), "h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h\n"
                            "0,0,0," + formatNumber(off) + ",0,0,0,1,2,3,0.1,0.2,0.3,0,0,0,0,0,0\n");
  EXPECT_EQ(evalCsv(model, Formulation::kAba, false, path("in.csv").string(),
                    path("out.csv").string()),
            1);
  Eigen::VectorXd q = model.neutralConfiguration();
  Eigen::VectorXd v(6);
  v << 1, 2, 3, 0.1, 0.2, 0.3;
  const Eigen::VectorXd expected = aba(model, data, q, v, Eigen::VectorXd::Zero(6));
  const Csv out = readCsv(path("out.csv"));
  ASSERT_EQ(out.rows.size(), 1u);
  EXPECT_LT(relativeDifference(Eigen::Map<const Eigen::VectorXd>(out.rows[0].data(), 6), expected),
            kRenormalisedRelTol);
  EXPECT_EQ(out.header.size(), 6u);
  EXPECT_EQ(out.header[0], "qdd_box_0");
  EXPECT_EQ(out.header[5], "qdd_box_5");

  // beyond the tolerance: rejected, naming file, line and joint; no output written
  writeFile(path("bad.csv"), "h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h\n"
                             "0,0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
                             "0,0,0,0.9,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n");
  try {
    evalCsv(model, Formulation::kAba, false, path("bad.csv").string(), path("bad_out.csv").string());
    ADD_FAILURE() << "no error";
  } catch (const CliError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path("bad.csv").string() + ":3: quaternion of joint 'box'"),
              std::string::npos)
        << message;
    EXPECT_EQ(e.exitCode(), 1);
  }
  EXPECT_FALSE(fs::exists(path("bad_out.csv")));
}

// --- simulate ---------------------------------------------------------------------------------

TEST_F(CliTest, ASolverThatCannotRunAModelIsRefusedWithTheReason) {
  // every registry row without a capability a bundled model needs: exit 2, the reason, and the
  // formulations that can
  const std::pair<const char*, bool FormulationCapabilities::*> needs[] = {
      {"four_bar", &FormulationCapabilities::closed_loops},
      {"flexible_arm", &FormulationCapabilities::flexible}};
  int refused = 0;
  for (const auto& [model, capability] : needs) {
    for (const FormulationInfo& f : formulations()) {
      if (f.capabilities.*capability) continue;
      const RunResult r = runInProcess({"simulate", "--model", model, "--solver",
                                        std::string(f.name), "--duration", "0.01", "--output",
                                        path("out.csv").string()});
      EXPECT_EQ(r.code, 2) << model << " " << f.name;
      EXPECT_NE(r.err.find("formulation '" + std::string(f.name) + "'"), std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("'aba'"), std::string::npos) << r.err;
      ++refused;
    }
  }
  if (refused == 0) GTEST_SKIP() << "every formulation runs every bundled model";
}

TEST_F(CliTest, SimulateRunsHdcaOnThreadsWithTheSameResult) {
  // a generated 300-link chain (599 assembly nodes: every pass split between the two threads):
  // hdca's RK4 on (q, p), one run on one thread and one on two
  writeFile(path("chain.yaml"), "generate: {shape: chain, bodies: 300}\n");
  std::string final_state[2];
  for (int k = 0; k < 2; ++k) {
    const std::string threads = k == 0 ? "1" : "2";
    const RunResult r = runInProcess({"simulate", "--model", path("chain.yaml").string(),
                                      "--solver", "hdca", "--threads", threads, "--duration",
                                      "0.02", "--output", path("out" + threads + ".csv").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    if (k == 1) {
      EXPECT_NE(r.out.find("solver           hdca (2 threads)"), std::string::npos) << r.out;
    }
    final_state[k] = readFile(path("out" + threads + ".csv"));
  }
  EXPECT_EQ(final_state[0], final_state[1]);  // the trajectories, bit for bit
  const RunResult refused = runInProcess({"simulate", "--model", path("chain.yaml").string(),
                                          "--solver", "aba", "--threads", "2"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("formulation 'aba' runs on one thread"), std::string::npos)
      << refused.err;
  EXPECT_EQ(runInProcess({"simulate", "--model", path("chain.yaml").string(), "--threads", "0"})
                .code,
            2);
}

TEST_F(CliTest, SimulateRunsAHundredThousandBodySystemWithRtmm) {
  // the issue's large system: a generated rope of 10⁵ links (docs/RICCATI.md), two RK4 steps
  writeFile(path("rope.yaml"),
            "generate: {shape: chain, bodies: 100000, link_length: 0.01, link_mass: 0.001, "
            "link_radius: 0.001}\n");
  const RunResult r = runInProcess({"simulate", "--model", path("rope.yaml").string(), "--solver",
                                    "rtmm", "--dt", "1e-4", "--duration", "2e-4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("nv 100000, 100001 bodies"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("steps            2"), std::string::npos) << r.out;
}

TEST_F(CliTest, SimulatePendulumWritesEveryStepAndConservesEnergy) {
  const Model model = loadModel("pendulum");
  for (const auto& [integrator, tolerance] :
       std::map<std::string, double>{{"rk4", kRk4EnergyRelTol}, {"euler", kEulerEnergyRelTol}}) {
    for (const FormulationInfo& f : formulations()) {
      const std::string solver(f.name);
      SCOPED_TRACE(integrator + " " + solver);
      const RunResult r = runInProcess({"simulate", "--model", "pendulum", "--solver", solver,
                                        "--integrator", integrator, "--dt", "0.001",
                                        "--duration", "2", "--q0", "1.0", "--output",
                                        path("traj.csv").string()});
      ASSERT_EQ(r.code, 0) << r.err;
      EXPECT_TRUE(r.err.empty());
      EXPECT_NE(r.out.find("steps            2000"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("realtime factor"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("(2001 rows)"), std::string::npos) << r.out;

      const Csv traj = readCsv(path("traj.csv"));
      EXPECT_EQ(traj.header, (std::vector<std::string>{"t", "q_hinge", "v_hinge", "energy"}));
      ASSERT_EQ(traj.rows.size(), 2001u);
      EXPECT_EQ(traj.rows.front()[0], 0.0);
      EXPECT_EQ(traj.rows.front()[1], 1.0);
      EXPECT_EQ(traj.rows.front()[2], 0.0);
      EXPECT_DOUBLE_EQ(traj.rows.back()[0], 2.0);
      // E = −m g L cos q at rest; m = L = 1
      const double e0 = -model.totalMass() * 9.81 * std::cos(1.0);
      EXPECT_NEAR(traj.rows.front()[3], e0, 1e-9);
      double worst = 0.0;
      for (const auto& row : traj.rows) {
        ASSERT_EQ(row.size(), 4u);
        worst = std::max(worst, std::abs(row[3] - e0) / std::abs(e0));
      }
      EXPECT_LT(worst, tolerance);
      // the pendulum actually swings through the bottom
      double min_q = 1.0;
      for (const auto& row : traj.rows) min_q = std::min(min_q, row[1]);
      EXPECT_LT(min_q, -0.9);
    }
  }
}

TEST_F(CliTest, SimulateDefaultsToTheBundledArm) {
  const RunResult r = runInProcess({"simulate", "--duration", "0.01"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("model            " + defaultModelName() + " (nq 7, nv 7", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("solver           aba"), std::string::npos);
  EXPECT_NE(r.out.find("integrator       rk4"), std::string::npos);
  EXPECT_NE(r.out.find("steps            10 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("trajectory"), std::string::npos);
}

TEST_F(CliTest, ADivergedSimulationKeepsItsFiniteRowsAndSaysSo) {
  // a stiff spring under explicit Euler at a large step: |q| grows by ~k dt² / m = 10⁸ a step,
  // non-finite within a few dozen steps
  writeFile(path("stiff.yaml"), R"(version: 1
name: stiff
gravity: [0, 0, 0]
bodies:
  - name: slider
    parent: world
    joint: {type: prismatic, name: x, axis: [1, 0, 0], stiffness: 1.0e10}
    inertia: {mass: 1.0, com: [0, 0, 0], inertia: [1.0, 1.0, 1.0, 0, 0, 0]}
)");
  const fs::path out = path("diverged.csv");
  const RunResult r = runInProcess({"simulate", "--model", path("stiff.yaml").string(),
                                    "--integrator", "euler", "--dt", "0.1", "--duration", "100",
                                    "--q0", "0.1", "--output", out.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("simulation diverged at step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" rows before it are in " + out.string()), std::string::npos) << r.err;
  const Csv traj = readCsv(out);
  ASSERT_GT(traj.rows.size(), 2u);
  EXPECT_LT(traj.rows.size(), 1000u);
  EXPECT_EQ(traj.rows.front()[1], 0.1);
  for (const auto& row : traj.rows) {  // q and v (the energy, k q² / 2, may overflow first)
    EXPECT_TRUE(std::isfinite(row[1]));
    EXPECT_TRUE(std::isfinite(row[2]));
  }
}

TEST_F(CliTest, AStepTooLargeForTheJointDampersIsRefusedWithOneThatWorks) {
  // talos_full_v2's gripper: RK4 is stable below 0.52 ms; 1 ms would diverge at step 8
  const RunResult refused = runInProcess({"simulate", "-m", "talos_full_v2", "-T", "0.05"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("is above the largest step RK4 is stable at"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("use --dt 0.0002 or less"), std::string::npos) << refused.err;
  const RunResult ran = runInProcess({"simulate", "-m", "talos_full_v2", "-T", "0.05", "--dt",
                                      "0.0002"});
  EXPECT_EQ(ran.code, 0) << ran.err;
  const RunResult info = runInProcess({"info", "-m", "talos_full_v2"});
  EXPECT_NE(info.out.find("max step  0.000522 s with rk4 (joint gripper_"), std::string::npos)
      << info.out;
}

TEST_F(CliTest, SimulateFloatingBaseFallsFreely) {
  // zero torques, no contact: the quadruped's centre of mass falls with g; the trajectory has
  // nq + nv + 2 columns and quaternion columns stay unit
  const Model model = loadModel(treeModel("quadruped"));
  const RunResult r = runInProcess({"simulate", "-m", treeModel("quadruped"), "-T", "0.1", "-o",
                                    path("traj.csv").string(), "--v0",
                                    "0,0,0,0.1,0.2,0.3,0,0,0,0,0,0,0,0,0,0,0,0"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Csv traj = readCsv(path("traj.csv"));
  ASSERT_EQ(traj.header.size(), static_cast<std::size_t>(model.nq + model.nv + 2));
  EXPECT_EQ(traj.header[1], "q_root_joint_0");
  ASSERT_EQ(traj.rows.size(), 101u);
  for (const auto& row : traj.rows) {
    const double norm = std::sqrt(row[4] * row[4] + row[5] * row[5] + row[6] * row[6] +
                                  row[7] * row[7]);
    EXPECT_NEAR(norm, 1.0, 1e-12);
  }
  // energy of a free system without damping is conserved
  EXPECT_LT(std::abs(traj.rows.back().back() - traj.rows.front().back()), 1e-8);
}

// --- bad input: one line on stderr, non-zero exit, never a crash ------------------------------

TEST_F(CliTest, EveryBadInputClassGivesOneLineAndNonZeroExit) {
  writeFile(path("broken.urdf"), "<robot name='x'><link name='a'>");
  writeFile(path("broken.yaml"), "version: 1\nbodies: [\n");
  writeFile(path("garbage.yaml"), "\x01\x02\xff binary");
  writeFile(path("empty.csv"), "");
  writeFile(path("ok.csv"), "q,v,tau\n0.5,0.1,0.2\n");
  writeFile(path("columns.csv"), "q,v,tau\n0.5,0.1,0.2\n0.5,0.1\n");
  writeFile(path("header.csv"), "q,v\n0.5,0.1,0.2\n");
  writeFile(path("word.csv"), "q,v,tau\n0.5,zero,0.2\n");
  writeFile(path("nan.csv"), "q,v,tau\n0.5,0.1,0.2\n0.5,nan,0.2\n");
  writeFile(path("inf.csv"), "q,v,tau\ninf,0.1,0.2\n");
  writeFile(path("huge.csv"), "q,v,tau\n1e999,0.1,0.2\n");
  writeFile(path("empty_field.csv"), "q,v,tau\n0.5,,0.2\n");
  std::string quat = "h";
  for (int c = 1; c < 19 + 18 + 18; ++c) quat += ",h";
  quat += "\n0,0,0,1.01,0,0,0";
  for (int c = 7; c < 19 + 18 + 18; ++c) quat += ",0";
  writeFile(path("quat.csv"), quat + "\n");
  const std::string out = path("out.csv").string();

  struct Case {
    std::vector<std::string> args;
    std::string expected_in_message;
    int exit_code;
  };
  const std::vector<Case> cases = {
      // command line
      {{}, "subcommand", 2},
      {{"frobnicate"}, "unknown command 'frobnicate'", 2},
      {{"sesion", "list"}, "unknown command 'sesion' (did you mean session?)", 2},
      {{"info"}, "--model", 2},
      {{"info", "--model", "iiwa14", "--bogus"}, "unknown option '--bogus' for 'hilsim info'; see", 2},
      // a mistyped word is named, with the nearest name, rather than what it left missing
      {{"info", "--modle", "iiwa14"},
       "unknown option '--modle' for 'hilsim info' (did you mean --model?)", 2},
      {{"session", "lst"}, "unknown command 'lst' for 'hilsim session' (did you mean list?)", 2},
      {{"session", "create", "--mdoel", "x"}, "(did you mean --model?)", 2},
      {{"simulate", "-m", "pendulum", "--tua", "-1"}, "'--tua' for 'hilsim simulate' (did you mean --tau?)", 2},
      {{"simulate", "--solver", "featherstone"}, "unknown solver 'featherstone'", 2},
      {{"simulate", "--integrator", "leapfrog"}, "unknown integrator 'leapfrog'", 2},
      {{"simulate", "--dt", "0"}, "--dt", 2},
      {{"simulate", "--dt", "-0.001"}, "--dt", 2},
      {{"simulate", "--dt", "nan"}, "--dt", 2},
      {{"simulate", "--dt", "fast"}, "--dt", 2},
      {{"simulate", "--duration", "-1"}, "--duration", 2},
      {{"rt-probe", "--rate", "50"}, "--rate must be within 100 to 10000 Hz", 2},
      {{"rt-probe", "--rate", "fast"}, "--rate: not a number", 2},
      {{"rt-probe", "--duration", "0"}, "--duration must be > 0", 2},
      {{"rt-probe", "--priority", "100"}, "--priority must be within 0 to 99", 2},
      {{"rt-probe", "--model", "nosuch"}, "unknown model 'nosuch'", 1},
      {{"simulate", "--duration", "inf"}, "--duration", 2},
      {{"simulate", "--q0", "1,2,3"}, "--q0: expected 7", 2},
      {{"simulate", "-m", "pendulum", "--q0", "nan"}, "--q0", 2},
      {{"simulate", "-m", "pendulum", "--v0", "x"}, "--v0", 2},
      {{"simulate", "-m", "quadruped", "--q0", "0,0,0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"},
       "quaternion", 2},
      {{"eval", "-m", "pendulum", "-s", "rk4", "-i", path("ok.csv").string(), "-o", out},
       "unknown solver 'rk4'", 2},
      {{"eval", "-m", "pendulum", "-i", path("ok.csv").string()}, "--output", 2},
      // models
      {{"info", "--model", "no_such_robot"}, "no_such_robot", 1},
      {{"info", "--model", path("missing.urdf").string()}, "missing.urdf", 1},
      {{"info", "--model", path("broken.urdf").string()}, "broken.urdf", 1},
      {{"info", "--model", path("broken.yaml").string()}, "broken.yaml", 1},
      {{"info", "--model", path("garbage.yaml").string()}, "garbage.yaml", 1},
      {{"info", "--model", dir_.string()}, dir_.string(), 1},
      {{"simulate", "--model", path("broken.urdf").string()}, "broken.urdf", 1},
      {{"eval", "-m", path("broken.yaml").string(), "-i", path("ok.csv").string(), "-o", out},
       "broken.yaml", 1},
      // input files
      {{"eval", "-m", "pendulum", "-i", path("none.csv").string(), "-o", out}, "none.csv", 1},
      {{"eval", "-m", "pendulum", "-i", dir_.string(), "-o", out}, dir_.string(), 1},
      {{"eval", "-m", "pendulum", "-i", path("empty.csv").string(), "-o", out}, "empty.csv", 1},
      {{"eval", "-m", "pendulum", "-i", path("columns.csv").string(), "-o", out}, "columns.csv:3:",
       1},
      {{"eval", "-m", "pendulum", "-i", path("header.csv").string(), "-o", out}, "header.csv:1:",
       1},
      {{"eval", "-m", "pendulum", "-i", path("word.csv").string(), "-o", out}, "word.csv:2:", 1},
      {{"eval", "-m", "pendulum", "-i", path("nan.csv").string(), "-o", out}, "nan.csv:3:", 1},
      {{"eval", "-m", "pendulum", "-i", path("inf.csv").string(), "-o", out}, "inf.csv:2:", 1},
      {{"eval", "-m", "pendulum", "-i", path("huge.csv").string(), "-o", out}, "huge.csv:2:", 1},
      {{"eval", "-m", "pendulum", "-i", path("empty_field.csv").string(), "-o", out},
       "empty_field.csv:2:", 1},
      {{"eval", "-m", "quadruped", "-i", path("quat.csv").string(), "-o", out},
       "quat.csv:2: quaternion", 1},
      {{"eval", "-m", "quadruped", "--inverse", "-i", path("quat.csv").string(), "-o", out},
       "quat.csv:2: quaternion", 1},
      // output files
      {{"eval", "-m", "pendulum", "-i", path("ok.csv").string(), "-o",
        path("no/such/dir/out.csv").string()},
       "out.csv", 1},
      {{"eval", "-m", "pendulum", "-i", path("ok.csv").string(), "-o", dir_.string()},
       dir_.string(), 1},
      {{"simulate", "-m", "pendulum", "-o", path("no/such/dir/traj.csv").string()}, "traj.csv", 1},
      {{"simulate", "-m", "pendulum", "-o", "/dev/full"}, "/dev/full", 1},
  };
  for (const Case& c : cases) {
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    SCOPED_TRACE("hilsim " + joined);
    const RunResult r = runExe(c.args);
    EXPECT_TRUE(isOneLineError(r));
    EXPECT_EQ(r.code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.expected_in_message), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(out)) << "a failed eval must not leave an output file";
}

// URDF text is outside input: printf directives in an attribute (which once aborted the process
// inside urdfdom) and a tree with two parents and an orphan are one-line errors, through a file and
// through a YAML wrapper.
TEST_F(CliTest, HostileUrdfTextIsOneLineErrorWithExitCode1) {
  std::string iiwa;
  {
    std::ifstream in(HILSIM_MODEL_DIR "/iiwa14.urdf");
    std::ostringstream text;
    text << in.rdbuf();
    iiwa = text.str();
  }
  const std::size_t origin = iiwa.find("xyz=\"", iiwa.find("<joint"));
  ASSERT_NE(origin, std::string::npos);
  const std::size_t close = iiwa.find('"', origin + 5);
  writeFile(path("format.urdf"), iiwa.substr(0, origin + 5) + "0 0 0%1$s%2$n%p" + iiwa.substr(close));
  writeFile(path("wrapper.yaml"), "urdf: format.urdf\nfloating_base: true\n");
  writeFile(path("two_parents.urdf"),
            "<robot name='r'><link name='a'/><link name='b'/><link name='orphan'/>"
            "<joint name='j1' type='fixed'><parent link='a'/><child link='b'/></joint>"
            "<joint name='j2' type='fixed'><parent link='a'/><child link='b'/></joint></robot>");
  for (const auto& [file, expected] :
       std::vector<std::pair<std::string, std::string>>{
           {"format.urdf", "'0%1$s%2$n%p' is not a number"},
           {"wrapper.yaml", "'0%1$s%2$n%p' is not a number"},
           {"two_parents.urdf", "two parent joints"}}) {
    SCOPED_TRACE(file);
    const RunResult r = runExe({"info", "--model", path(file).string()});
    EXPECT_TRUE(isOneLineError(r));
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  }
}

TEST_F(CliTest, RtProbeMeasuresBothLoopsAndPrintsJson) {
  // 0.3 s per phase at 1 kHz: the report's structure and counts, not the host's jitter
  const RunResult r = runExe({"rt-probe", "--rate", "1000", "--duration", "0.3", "--model",
                              "pendulum", "--no-mlock", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* key :
       {"\"baseline\": {\"cycles\": 300,", "\"hilsim\": {\"cycles\": ", "\"wakeup_latency_ns\"",
        "\"overhead_ns\"", "\"step_time_ns\"", "\"wakeup_latency_ratio\"", "\"targets\"",
        "\"host\": \"kernel "}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
  }
  EXPECT_EQ(r.out.find("[info]"), std::string::npos) << "log lines go to stderr";
  EXPECT_EQ(r.out.front(), '{');
  // The cycles of the 0.3 s running window are accounted for: run, or skipped by the overrun
  // policy (many are on a loaded machine under the sanitizers). The window is the caller's
  // sleep between start and pause, so it is 300 cycles only up to the thread's start-up lag and
  // the sleep's overshoot: up to 15 ms and 30 ms on a loaded 2-vCPU machine.
  const std::string key = "\"hilsim\": {\"cycles\": ";
  const std::size_t hilsim = r.out.find(key);
  const long cycles = std::stol(r.out.substr(hilsim + key.size()));
  const std::string skipped_key = "\"skipped_cycles\": ";
  const long skipped =
      std::stol(r.out.substr(r.out.find(skipped_key, hilsim) + skipped_key.size()));
  EXPECT_GT(cycles, 0);
  EXPECT_GE(cycles + skipped, 285);
  EXPECT_LE(cycles + skipped, 330);
}

TEST_F(CliTest, RtProbeTextReport) {
  const RunResult r =
      runExe({"rt-probe", "-r", "500", "-T", "0.2", "-m", "pendulum", "--no-mlock"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* text : {"rt-probe: pendulum at 500 Hz", "baseline wake-up", "hilsim wake-up",
                           "hilsim loop overhead", "wake-up latency hilsim / baseline: p50",
                           "target loop overhead p50 <= 2 µs:", "deadline misses: baseline"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " in " << r.out;
  }
}

TEST_F(CliTest, HelpAndVersionGoToStdoutWithExitZero) {
  RunResult r = runExe({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, versionString() + "\n");
  EXPECT_TRUE(r.err.empty());

  r = runExe({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* command : {"info", "models", "eval", "simulate", "rt-probe"}) {
    EXPECT_NE(r.out.find(command), std::string::npos) << command;
  }
  EXPECT_TRUE(r.err.empty());

  for (const char* command : {"info", "eval", "simulate"}) {
    r = runExe({command, "--help"});
    EXPECT_EQ(r.code, 0) << command;
    EXPECT_NE(r.out.find("--model"), std::string::npos) << command;
  }
}

TEST_F(CliTest, ExecutableRunsTheMainJob) {
  const RunResult r = runExe({"simulate", "--duration", "0.05", "--output", path("t.csv").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("mean"), std::string::npos);
  EXPECT_EQ(readCsv(path("t.csv")).rows.size(), 51u);
}

// --- text helpers -----------------------------------------------------------------------------

TEST(CliText, NumbersRoundTripAndRejectJunk) {
  for (const double x : {0.0, -0.0, 0.1, 1.0 / 3.0, -2.5e-300, 1.7976931348623157e308, 4.9e-324}) {
    EXPECT_EQ(parseNumber(formatNumber(x)).value(), x) << formatNumber(x);
  }
  EXPECT_EQ(parseNumber(" +1.5 ").value(), 1.5);
  EXPECT_EQ(parseNumber("-2E3").value(), -2000.0);
  for (const char* junk : {"", " ", "1.5x", "x", "1,5", "--1", "+-1", "+", "1e", "0x10", "1 2"}) {
    EXPECT_FALSE(parseNumber(junk).has_value()) << "'" << junk << "'";
  }
  EXPECT_FALSE(parseNumber("1e999").has_value());
  EXPECT_FALSE(std::isfinite(parseNumber("nan").value()));
  EXPECT_FALSE(std::isfinite(parseNumber("-inf").value()));
  EXPECT_EQ(oneLine("a\nb\r\n"), "a; b");
}

TEST(CliText, ProgressIsDrawnOnATerminalOnlyAndErasedAtTheEnd) {
  std::ostringstream quiet, shown;
  {
    Progress off("simulate", 10.0, "s", quiet, /*enabled=*/false);
    Progress on("simulate", 10.0, "s", shown, /*enabled=*/true);
    off.update(1.0);
    on.update(1.0);  // within the first half second: not yet
    EXPECT_EQ(shown.str(), "");
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    off.update(5.0);
    on.update(5.0);
    EXPECT_EQ(shown.str(), "\rsimulate  5 / 10 s (50 %)\033[K");
    on.update(6.0);  // at most twice a second
    EXPECT_EQ(shown.str(), "\rsimulate  5 / 10 s (50 %)\033[K");
  }
  EXPECT_EQ(quiet.str(), "");
  EXPECT_EQ(shown.str(), "\rsimulate  5 / 10 s (50 %)\033[K\r\033[K") << "erased at the end";
}

TEST(CliText, NumbersForPeopleHaveTheDigitsThatMeanSomething) {
  EXPECT_EQ(readableNumber(2.4440000000000004), "2.444");
  EXPECT_EQ(readableNumber(77.97288399999996), "77.9729");
  EXPECT_EQ(readableNumber(0.9990000000000008), "0.999");
  EXPECT_EQ(readableNumber(-9.81), "-9.81");
  EXPECT_EQ(readableNumber(1e-4), "0.0001");
  EXPECT_EQ(readableDuration(850.0), "850 ns");
  EXPECT_EQ(readableDuration(12'345.0), "12.3 µs");
  EXPECT_EQ(readableDuration(4'561'000.0), "4.56 ms");
  EXPECT_EQ(readableDuration(764'355'350'900.0), "764 s");
}

}  // namespace
}  // namespace hilsim::cli
