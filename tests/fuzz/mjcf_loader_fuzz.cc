// Fuzz target: the MJCF loader, hilsim::loadMjcfString (engine/io/model_loader.h), MuJoCo's
// compiler included. Every input either loads or throws ModelError; a crash, a sanitizer report,
// a leak, an exception of any other type, more than -timeout seconds, or output on stdout or
// stderr (fuzz_support.h) is a finding. A text never reads a file: the loader refuses <include>
// and file attributes before MuJoCo sees the text, and MuJoCo reads the text itself from a
// virtual file system. Bounds: those of hilsim-server (model_limits.h).
//
// MuJoCo (libmujoco 2.2.2) is not instrumented: coverage guides the fuzzing through hilsim's
// precheck and conversion; findings inside MuJoCo still show as crashes, reports of the
// sanitizers' interceptors (malloc, memcpy) and timeouts.
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
      hilsim::loadMjcfString(text, "fuzz.xml", limits);
    } catch (const hilsim::ModelError&) {
      // the documented outcome of bad input
    }
  });
  return 0;
}
