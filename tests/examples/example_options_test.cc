// The example controllers' command line (examples/example_options.h): --help is a request, not an
// error; every bad value is refused with the option named.
#include "examples/example_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hilsim::examples {
namespace {

ExampleOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parseExampleOptions(static_cast<int>(argv.size()), argv.data(), "pd_controller", 5.0);
}

std::string errorOf(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ExampleOptions, HelpIsARequestAndTheRestParses) {
  EXPECT_TRUE(parse({"pd_controller", "--help"}).help);
  EXPECT_TRUE(parse({"pd_controller", "--duration", "2", "-h"}).help);
  const ExampleOptions o = parse({"pd_controller", "--server", "10.0.0.2:6000", "--duration", "2.5"});
  EXPECT_FALSE(o.help);
  EXPECT_EQ(o.server, "10.0.0.2:6000");
  EXPECT_EQ(o.duration, 2.5);
  EXPECT_EQ(parse({"pd_controller"}).duration, 5.0);
}

TEST(ExampleOptions, BadValuesAreRefusedWithTheOptionNamed) {
  EXPECT_NE(errorOf({"pd_controller", "--duration", "-1"}).find("--duration: expected seconds"),
            std::string::npos);
  EXPECT_NE(errorOf({"pd_controller", "--duration", "abc"}).find("got 'abc'"), std::string::npos);
  EXPECT_NE(errorOf({"pd_controller", "--duration", "inf"}).find("--duration"), std::string::npos);
  EXPECT_NE(errorOf({"pd_controller", "--bogus", "1"}).find("unknown option '--bogus'"),
            std::string::npos);
  EXPECT_NE(errorOf({"pd_controller", "--server"}).find("usage: pd_controller"), std::string::npos);
}

}  // namespace
}  // namespace hilsim::examples
