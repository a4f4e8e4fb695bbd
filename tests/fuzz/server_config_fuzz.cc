// Fuzz target: hilsim-server's configuration parser, hilsim::server::parseServerConfig
// (server/server_config.h). Every input either parses or throws ConfigError; a crash, a sanitizer
// report, a leak, an exception of any other type, more than -timeout seconds, or output on stdout
// or stderr (fuzz_support.h) is a finding.
//
// The source is /nonexistent/server.yaml, so relative TLS, token and model-directory paths resolve
// into a directory Debian keeps absent and fail with ConfigError. HILSIM_ACCESS_TOKEN is unset:
// the outcome depends on the input alone.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/server_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hilsim::fuzz::initFuzzTarget();
  ::unsetenv("HILSIM_ACCESS_TOKEN");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  hilsim::fuzz::guardOutput([&] {
    try {
      hilsim::server::parseServerConfig(text, "/nonexistent/server.yaml");
    } catch (const hilsim::server::ConfigError&) {
      // the documented outcome of bad input
    }
  });
  return 0;
}
