// Fuzz target: the URDF loader, hilsim::loadUrdfString (engine/io/model_loader.h). Every input
// either loads or throws ModelError; a crash, a sanitizer report, a leak, an exception of any other
// type, more than -timeout seconds, or output on stdout or stderr (fuzz_support.h) is a finding.
//
// Input: the URDF text, then one byte whose lowest bit sets floating_base. Files ending in a
// newline, as the seed models do, load with a fixed base; a final "1" floats it. Bounds: those of
// hilsim-server (model_limits.h).
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
  if (size == 0) return 0;
  const bool floating_base = (data[size - 1] & 1) != 0;
  const std::string text(reinterpret_cast<const char*>(data), size - 1);
  static const hilsim::ModelLimits limits = hilsim::fuzz::serverModelLimits();
  hilsim::fuzz::guardOutput([&] {
    try {
      hilsim::loadUrdfString(text, floating_base, "fuzz.urdf", limits);
    } catch (const hilsim::ModelError&) {
      // the documented outcome of bad input
    }
  });
  return 0;
}
