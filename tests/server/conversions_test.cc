// The server's proto → engine mapping of a session configuration: every Formulation and
// Integrator value of the wire contract reaches the engine as the formulation or integrator of
// the same name, and values the engine does not know are refused, never run as another.
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <string>

#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "hilsim/v1/session.pb.h"
#include "hilsim/v1/types.pb.h"
#include "rt/session.h"
#include "server/conversions.h"
#include "server/server_config.h"

namespace hilsim::server {
namespace {

std::string lowercaseSuffix(const std::string& name, const std::string& prefix) {
  std::string out = name.substr(prefix.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class ConversionsTest : public ::testing::Test {
 protected:
  // A lockstep session of the pendulum with `formulation` and `integrator` (0: the default);
  // returns resolveSessionConfig's message.
  std::string resolve(int formulation, int integrator) {
    v1::SessionConfig request;
    request.set_mode(v1::SESSION_MODE_LOCKSTEP);
    request.set_formulation(static_cast<v1::Formulation>(formulation));
    request.set_integrator(static_cast<v1::Integrator>(integrator));
    return resolveSessionConfig(request, server_, model_, 1, &config_, &effective_);
  }

  ServerConfig server_;
  std::shared_ptr<const Model> model_ = std::make_shared<const Model>(loadModel("pendulum"));
  rt::SessionConfig config_;
  v1::SessionConfig effective_;
};

TEST_F(ConversionsTest, EveryFormulationValueReachesTheEngineUnchanged) {
  const auto* descriptor = v1::Formulation_descriptor();
  int mapped = 0;
  for (int k = 0; k < descriptor->value_count(); ++k) {
    const auto* value = descriptor->value(k);
    SCOPED_TRACE(value->name());
    ASSERT_EQ(resolve(value->number(), 0), "");
    if (value->number() == v1::FORMULATION_UNSPECIFIED) {
      // the server's default
      EXPECT_EQ(config_.formulation, Formulation::kAba);
      EXPECT_EQ(effective_.formulation(), v1::FORMULATION_ABA);
      continue;
    }
    EXPECT_EQ(formulationName(config_.formulation), lowercaseSuffix(value->name(), "FORMULATION_"));
    EXPECT_EQ(effective_.formulation(), value->number());
    ++mapped;
  }
  EXPECT_EQ(mapped, static_cast<int>(formulations().size()));
  // a number that is no value of the contract
  EXPECT_NE(resolve(97, 0).find("config.formulation"), std::string::npos);
}

TEST_F(ConversionsTest, ThreadsReachTheSessionForAParallelFormulationOnly) {
  v1::SessionConfig request;
  request.set_formulation(v1::FORMULATION_HDCA);
  request.set_threads(2);
  ASSERT_EQ(resolveSessionConfig(request, server_, model_, 1, &config_, &effective_), "");
  EXPECT_EQ(config_.threads, 2);
  EXPECT_EQ(effective_.threads(), 2u);
  request.set_threads(0);  // the default
  ASSERT_EQ(resolveSessionConfig(request, server_, model_, 1, &config_, &effective_), "");
  EXPECT_EQ(config_.threads, 1);
  EXPECT_EQ(effective_.threads(), 1u);
  request.set_threads(65);
  EXPECT_NE(resolveSessionConfig(request, server_, model_, 1, &config_, &effective_)
                .find("config.threads = 65: allowed 1 … 64"),
            std::string::npos);
  request.set_formulation(v1::FORMULATION_ABA);
  request.set_threads(2);
  EXPECT_NE(resolveSessionConfig(request, server_, model_, 1, &config_, &effective_)
                .find("formulation 'aba' runs on one thread"),
            std::string::npos);
}

TEST_F(ConversionsTest, EveryIntegratorValueReachesTheEngineUnchanged) {
  const auto* descriptor = v1::Integrator_descriptor();
  for (int k = 0; k < descriptor->value_count(); ++k) {
    const auto* value = descriptor->value(k);
    if (value->number() == v1::INTEGRATOR_UNSPECIFIED) continue;
    SCOPED_TRACE(value->name());
    ASSERT_EQ(resolve(0, value->number()), "");
    EXPECT_EQ(integratorName(config_.integrator), lowercaseSuffix(value->name(), "INTEGRATOR_"));
  }
  EXPECT_NE(resolve(0, 97).find("config.integrator"), std::string::npos);
}

}  // namespace
}  // namespace hilsim::server
