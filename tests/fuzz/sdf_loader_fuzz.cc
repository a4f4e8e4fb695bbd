// Fuzz target: the SDFormat loader, hilsim::loadSdfString (engine/io/model_loader.h), with
// libsdformat under it. Every input either loads or throws ModelError; a crash, a sanitizer report,
// a leak, an exception of any other type, more than -timeout seconds, output on stdout or stderr
// (fuzz_support.h), or a file opened (a text must never make the loader read one) is a finding.
//
// Input: the SDFormat text, then one byte whose lowest bit sets floating_base and whose next two
// bits pick the inertia policy. Files ending in a newline, as the seeds do, load as written.
// Bounds: those of hilsim-server (model_limits.h).
#include <dlfcn.h>
#include <fcntl.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/io/model_loader.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/model_limits.h"

namespace {

// Set while the loader runs: any open() then is a finding (libsdformat resolves <include> and
// URIs through the file system; the loader must refuse them in text before it asks).
bool loading = false;

[[noreturn]] void fileOpened(const char* path) {
  std::fprintf(stderr, "fuzz: the loader opened a file: %s\n", path ? path : "(null)");
  std::abort();
}

}  // namespace

// The C library's ways to open a file by name, watched (libstdc++'s streams use fopen64, others
// open): each defers to the next definition, the C library's.
#define HILSIM_WATCH_OPEN(name)                                                    \
  extern "C" int name(const char* path, int flags, ...) {                          \
    if (loading) fileOpened(path);                                                 \
    using Real = int (*)(const char*, int, ...);                                   \
    static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, #name));      \
    mode_t mode = 0;                                                               \
    if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {              \
      va_list args;                                                                \
      va_start(args, flags);                                                       \
      mode = static_cast<mode_t>(va_arg(args, int));                               \
      va_end(args);                                                                \
    }                                                                              \
    return real(path, flags, mode);                                                \
  }
#define HILSIM_WATCH_FOPEN(name)                                                   \
  extern "C" FILE* name(const char* path, const char* mode) {                      \
    if (loading) fileOpened(path);                                                 \
    using Real = FILE* (*)(const char*, const char*);                              \
    static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, #name));      \
    return real(path, mode);                                                       \
  }
HILSIM_WATCH_OPEN(open)
HILSIM_WATCH_OPEN(open64)
HILSIM_WATCH_FOPEN(fopen)
HILSIM_WATCH_FOPEN(fopen64)

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hilsim::fuzz::initFuzzTarget();
  // libsdformat's console opens its log file when first used, before the loader closes it
  // (docs/MODEL_FORMAT.md, "SDFormat"): once here, not counted as the text's doing
  hilsim::loadSdfString("<sdf version='1.9'><model name='m'><link name='a'/></model></sdf>");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  hilsim::UrdfOptions options;
  options.floating_base = (data[size - 1] & 1) != 0;
  options.inertia = static_cast<hilsim::InertiaPolicy>((data[size - 1] >> 1) % 3);
  const std::string text(reinterpret_cast<const char*>(data), size - 1);
  static const hilsim::ModelLimits limits = hilsim::fuzz::serverModelLimits();
  hilsim::fuzz::guardOutput([&] {
    loading = true;
    try {
      hilsim::loadSdfString(text, options, "fuzz.sdf", limits);
    } catch (const hilsim::ModelError&) {
      // the documented outcome of bad input
    }
    loading = false;
  });
  return 0;
}
