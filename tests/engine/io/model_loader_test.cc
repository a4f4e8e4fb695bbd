// loadModel: every bundled model loads with its documented size and a positive-definite mass
// matrix; names and paths resolve as documented in model_loader.h.
#include "engine/io/model_loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Cholesky>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

struct BundledCase {
  std::string name;
  int nq, nv, nbodies;  // nbodies counts the world
};

void PrintTo(const BundledCase& c, std::ostream* os) { *os << c.name; }

// Sizes as documented in config/models/README.md.
const std::vector<BundledCase> kBundled = {
    {"iiwa14", 7, 7, 8},      {"panda", 9, 9, 10},
    {"ur5", 6, 6, 7},         {"quadruped", 19, 18, 14},
    {"solo12", 12, 12, 13},   {"anymal_b", 12, 12, 13},
    {"humanoid", 36, 35, 31}, {"simple_humanoid", 29, 29, 30},
    {"talos", 51, 50, 46},    {"talos_full_v2", 44, 44, 45},
    {"pendulum", 1, 1, 2},    {"double_pendulum", 2, 2, 3},
    {"flexible_arm", 7, 7, 4},
    {"four_bar", 3, 3, 4},
    {"delta", 10, 9, 5},
};

class BundledModel : public ::testing::TestWithParam<BundledCase> {};

TEST_P(BundledModel, LoadsWithItsSizeAndAPositiveDefiniteMassMatrix) {
  const BundledCase& c = GetParam();
  EXPECT_FALSE(bundledModelPath(c.name).empty());
  const Model m = loadModel(c.name);
  EXPECT_EQ(m.nq, c.nq);
  EXPECT_EQ(m.nv, c.nv);
  EXPECT_EQ(m.nbodies, c.nbodies);
  EXPECT_GT(m.totalMass(), 0.0);
  Data data(m);
  std::mt19937 rng(17);
  for (int trial = 0; trial < 3; ++trial) {
    const Eigen::VectorXd q =
        trial == 0 ? m.neutralConfiguration() : test::randomConfiguration(m, rng);
    const Eigen::MatrixXd M = crba(m, data, q);
    EXPECT_LT(test::relativeDifference(M, M.transpose()), test::kAlgebraTol);
    EXPECT_EQ(Eigen::LLT<Eigen::MatrixXd>(M).info(), Eigen::Success) << "trial " << trial;
    const Eigen::VectorXd v = test::randomVector(m.nv, rng);
    const Eigen::VectorXd tau = test::randomVector(m.nv, rng);
    EXPECT_TRUE(aba(m, data, q, v, tau).allFinite());
  }
}

INSTANTIATE_TEST_SUITE_P(All, BundledModel, ::testing::ValuesIn(kBundled),
                         [](const auto& info) { return info.param.name; });

TEST(ModelLoader, BundledNamesListEveryModelDefaultFirst) {
  const std::vector<std::string> names = bundledModelNames();
  ASSERT_EQ(names.size(), kBundled.size());
  EXPECT_EQ(names.front(), "iiwa14");
  EXPECT_EQ(defaultModelName(), "iiwa14");
  for (const BundledCase& c : kBundled)
    EXPECT_NE(std::find(names.begin(), names.end(), c.name), names.end()) << c.name;
  EXPECT_EQ(loadModel(defaultModelName()).nv, 7);
}

TEST(ModelLoader, FloatingBaseWrappersPutAFreeJointAtTheRoot) {
  for (const char* name : {"quadruped", "humanoid", "talos"}) {
    const Model m = loadModel(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.jointIndex("root_joint"), 1) << name;
    EXPECT_EQ(m.joints[1].type, JointType::kFreeFlyer) << name;
  }
}

TEST(ModelLoader, DispatchesOnTheExtension) {
  EXPECT_EQ(loadModel(HILSIM_MODEL_DIR "/ur5.urdf").nv, 6);
  EXPECT_EQ(loadModel(HILSIM_MODEL_DIR "/double_pendulum.yaml").nv, 2);
  EXPECT_EQ(loadModel(HILSIM_TEST_DATA_DIR "/io/two_link_floating.yaml").nv, 8);
}

TEST(ModelLoader, MissingFileSaysCannotOpen) {
  for (const std::string path :
       {"/nonexistent/robot.urdf", "/nonexistent/robot.yaml", "/nonexistent/robot.yml"}) {
    try {
      loadModel(path);
      ADD_FAILURE() << path;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot open '" + path + "'"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ModelLoader, UnknownNameListsTheBundledNames) {
  for (const std::string name : {"no_such_robot", "", "../config/models/iiwa14"}) {
    try {
      loadModel(name);
      ADD_FAILURE() << name;
    } catch (const ModelError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("unknown model '" + name + "'"), std::string::npos) << message;
      for (const std::string& bundled : bundledModelNames())
        EXPECT_NE(message.find(bundled), std::string::npos) << message;
    }
  }
  EXPECT_TRUE(bundledModelPath("no_such_robot").empty());
  EXPECT_TRUE(bundledModelPath("../models/iiwa14").empty());
}

TEST(ModelLoader, RejectsExistingFilesOfUnknownType) {
  try {
    loadModel(HILSIM_MODEL_DIR "/licenses/drake-BSD-3-Clause.txt");
    ADD_FAILURE();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model file type"), std::string::npos) << e.what();
  }
}

// $HILSIM_MODEL_PATH is searched first, so a user directory can add or override models.
TEST(ModelLoader, ModelPathEnvironmentVariableComesFirst) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hilsim_models_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(HILSIM_MODEL_DIR "/pendulum.yaml", dir / "iiwa14.yaml",
                fs::copy_options::overwrite_existing);
  fs::copy_file(HILSIM_MODEL_DIR "/double_pendulum.yaml", dir / "my_robot.yaml",
                fs::copy_options::overwrite_existing);
  const char* previous = std::getenv("HILSIM_MODEL_PATH");
  const std::string saved = previous ? previous : "";
  setenv("HILSIM_MODEL_PATH", ("/nonexistent::" + dir.string()).c_str(), 1);
  EXPECT_EQ(loadModel("iiwa14").nv, 1);
  EXPECT_EQ(loadModel("my_robot").nv, 2);
  EXPECT_EQ(bundledModelPath("my_robot"), (dir / "my_robot.yaml").string());
  EXPECT_EQ(loadModel("ur5").nv, 6);  // still found in the source tree
  if (previous) {
    setenv("HILSIM_MODEL_PATH", saved.c_str(), 1);
  } else {
    unsetenv("HILSIM_MODEL_PATH");
  }
  fs::remove_all(dir);
  EXPECT_EQ(loadModel("iiwa14").nv, 7);
}

}  // namespace
}  // namespace hilsim
