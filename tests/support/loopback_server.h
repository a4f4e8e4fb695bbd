// The configuration of an in-process hilsim-server for client tests: gRPC and UDP on ephemeral
// loopback ports, no metrics, the bundled models, warnings only.
#pragma once

#include "server/server_config.h"

namespace hilsim::test {

inline server::ServerConfig loopbackServerConfig() {
  server::ServerConfig config;
  config.grpc_port = 0;
  config.udp_port_first = config.udp_port_last = 0;
  config.metrics_enabled = false;
  config.viewer_enabled = false;
  config.model_directory = HILSIM_MODEL_DIR;
  config.log_level = "warn";
  return config;
}

}  // namespace hilsim::test
