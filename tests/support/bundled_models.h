// The bundled models the rt and server suites run sessions of, each loaded once per test binary
// and shared read-only (a Model is immutable).
#pragma once

#include <memory>

#include "engine/io/model_loader.h"

namespace hilsim::test {

inline std::shared_ptr<const Model> pendulum() {
  static const auto model = std::make_shared<const Model>(loadModel("pendulum"));
  return model;
}

inline std::shared_ptr<const Model> arm() {
  static const auto model = std::make_shared<const Model>(loadModel("iiwa14"));
  return model;
}

}  // namespace hilsim::test
