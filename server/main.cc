// hilsim-server: hosts simulation sessions for controllers over gRPC and UDP (docs/SERVER.md).
//   hilsim-server --config config/server.yaml [--log-level debug]
// SIGINT or SIGTERM: every session is stopped, its final statistics logged, exit 0.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "rt/realtime_setup.h"
#include "server/log_format.h"
#include "server/server.h"
#include "server/server_config.h"

namespace {

void configureLogging(const std::string& level, const std::string& format) {
  auto logger = spdlog::stderr_color_mt("hilsim-server");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
  spdlog::set_formatter(hilsim::server::makeLogFormatter(format));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hilsim-server: real-time multibody simulation sessions over gRPC and UDP"};
  std::string config_path;
  std::string log_level;
  app.add_option("--config", config_path, "server configuration (YAML, docs/SERVER.md)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--log-level", log_level,
                 "overrides log.level: trace, debug, info, warn, error, critical, off");
  // CLI11's own exit codes (105 for an unknown option, 106 for a missing file, …) are not the
  // documented ones: a command line that cannot be read is status 2, as a broken configuration
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);  // prints the help, or the error and a hint
    return status == 0 ? 0 : 2;
  }

  hilsim::server::ServerConfig config;
  try {
    config = hilsim::server::loadServerConfig(config_path);
  } catch (const std::exception& e) {
    std::cerr << "hilsim-server: " << e.what() << "\n";
    return 2;
  }
  if (!log_level.empty()) {
    if (spdlog::level::from_str(log_level) == spdlog::level::off && log_level != "off") {
      std::cerr << "hilsim-server: --log-level '" << log_level << "': unknown level\n";
      return 2;
    }
    config.log_level = log_level;
  }
  configureLogging(config.log_level, config.log_format);

  // Every thread the server starts inherits this mask: the signals reach only sigwait below,
  // never an RT or network thread in the middle of a cycle.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  spdlog::info("{}", hilsim::rt::describeHost());
  hilsim::server::Server server(std::move(config));
  try {
    server.start();
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  int received = 0;
  sigwait(&signals, &received);
  spdlog::info("{} received", received == SIGINT ? "SIGINT" : "SIGTERM");
  server.shutdown();
  return 0;
}
