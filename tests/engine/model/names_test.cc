// Names: what a Model accepts (valid UTF-8, no control characters, at most kMaxNameBytes), and
// that ModelBuilder refuses every other name before any message quotes it.
#include <gtest/gtest.h>

#include <string>

#include "engine/builder/model_builder.h"
#include "engine/model/names.h"

namespace hilsim {
namespace {

TEST(Names, Utf8IsCheckedByTheStandardsRanges) {
  EXPECT_TRUE(isValidUtf8(""));
  EXPECT_TRUE(isValidUtf8("link_1"));
  EXPECT_TRUE(isValidUtf8("Gelenk_\xC3\xBC"));           // ü
  EXPECT_TRUE(isValidUtf8("\xE2\x82\xAC"));              // €
  EXPECT_TRUE(isValidUtf8("\xF0\x9F\xA4\x96"));          // U+1F916
  EXPECT_TRUE(isValidUtf8("\xF4\x8F\xBF\xBF"));          // U+10FFFF, the last code point
  EXPECT_FALSE(isValidUtf8("\xED\xA0\x80"));             // U+D800, a surrogate
  EXPECT_FALSE(isValidUtf8("\xF4\x90\x80\x80"));         // above U+10FFFF
  EXPECT_FALSE(isValidUtf8("\xC0\xAF"));                 // overlong '/'
  EXPECT_FALSE(isValidUtf8("\xE0\x80\xAF"));             // overlong, three bytes
  EXPECT_FALSE(isValidUtf8("\xC3"));                     // truncated
  EXPECT_FALSE(isValidUtf8("\x80"));                     // a lone continuation byte
  EXPECT_FALSE(isValidUtf8("\xFF"));
}

TEST(Names, ProblemsAreNamedWithoutQuotingTheName) {
  EXPECT_EQ(nameProblem("upper_arm"), "");
  EXPECT_EQ(nameProblem(std::string(kMaxNameBytes, 'a')), "");
  EXPECT_EQ(nameProblem(""), "empty name");
  EXPECT_EQ(nameProblem(std::string(kMaxNameBytes + 1, 'a')),
            "name of 257 bytes, more than the limit of 256");
  EXPECT_EQ(nameProblem("two\nlines"), "name contains a control character");
  EXPECT_EQ(nameProblem("del\x7f"), "name contains a control character");
  EXPECT_EQ(nameProblem("\xED\xA0\x80"), "name is not valid UTF-8");
}

TEST(Names, TheBuilderRefusesBadModelBodyAndJointNames) {
  const Inertia link(1.0, Vector3::Zero(), Matrix3::Identity() * 0.01);
  const auto error = [](ModelBuilder& builder) -> std::string {
    try {
      builder.build();
    } catch (const ModelError& e) {
      return e.what();
    }
    return "";
  };
  ModelBuilder bad_model(std::string("robot\xED\xA0\x80"));
  bad_model.addBody("a", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link);
  EXPECT_EQ(error(bad_model), "model name: name is not valid UTF-8");

  ModelBuilder bad_body("r");
  bad_body.addBody("a\tb", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link);
  EXPECT_EQ(error(bad_body), "body #0: name contains a control character");

  ModelBuilder bad_joint("r");
  BodySpec spec;
  spec.name = "a";
  spec.joint = Joint::revolute(Vector3::UnitZ());
  spec.joint_name = std::string(300, 'j');
  spec.inertia = link;
  bad_joint.addBody(spec);
  EXPECT_EQ(error(bad_joint), "body #0: joint name of 300 bytes, more than the limit of 256");
}

}  // namespace
}  // namespace hilsim
