// Fuzz target: the native YAML model loader, hilsim::loadYamlString (engine/io/model_loader.h).
// Every input either loads or throws ModelError; a crash, a sanitizer report, a leak, an exception
// of any other type, more than -timeout seconds, or output on stdout or stderr (fuzz_support.h) is
// a finding.
//
// Bounds: those of hilsim-server (model_limits.h), under which `urdf:` and `flexible: {file: ...}`
// may only name relative paths inside the base directory. That is /nonexistent, which Debian
// keeps absent: such references fail with ModelError and no file is ever read. The URDF reader
// behind `urdf:` has a target of its own.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/io/model_loader.h"
#include "tests/fuzz/model_limits.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hilsim::fuzz::initFuzzTarget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const hilsim::ModelLimits limits = hilsim::fuzz::serverModelLimits();
  hilsim::fuzz::guardOutput([&] {
    try {
      hilsim::loadYamlString(text, "/nonexistent", "fuzz.yaml", limits);
    } catch (const hilsim::ModelError&) {
      // the documented outcome of bad input
    }
  });
  return 0;
}
