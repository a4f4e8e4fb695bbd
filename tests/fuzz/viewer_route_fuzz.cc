// Fuzz target: the viewer's URL parser, hilsim::server::parseViewerRoute (server/viewer_route.h),
// which every request to the viewer's port goes through. The first byte picks the method (a
// known one or the bytes themselves), the rest is the path. Beyond crashes and sanitizer reports,
// the documented properties are checked: an asset name is a view into the path and a plain file
// name; a route naming a session carries a non-zero id, which the path spells in decimal; only a
// mesh route carries a mesh index.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/viewer_route.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  hilsim::fuzz::initFuzzTarget();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static constexpr std::string_view kMethods[] = {"GET", "POST", "PUT", "DELETE", "HEAD"};
  const std::string method(kMethods[data[0] % 5]);
  const std::string path(reinterpret_cast<const char*>(data + 1), size - 1);
  using hilsim::server::ViewerRoute;
  hilsim::fuzz::guardOutput([&] {
    const ViewerRoute route = hilsim::server::parseViewerRoute(method, path);
    if (route.kind == ViewerRoute::Kind::kAsset) {
      const bool index = route.asset == "index.html";
      const bool inside = route.asset.data() >= path.data() &&
                          route.asset.data() + route.asset.size() <= path.data() + path.size();
      if ((!index && !inside) || route.asset.empty() || route.asset.front() == '.' ||
          route.asset.find('/') != std::string_view::npos || method != "GET") {
        std::abort();
      }
    }
    const bool names_session =
        route.kind == ViewerRoute::Kind::kScene || route.kind == ViewerRoute::Kind::kAction ||
        route.kind == ViewerRoute::Kind::kFrames || route.kind == ViewerRoute::Kind::kMesh;
    if (names_session && (route.session_id == 0 ||
                          path.find(std::to_string(route.session_id)) == std::string::npos)) {
      std::abort();
    }
    if (route.kind == ViewerRoute::Kind::kAction && route.action == ViewerRoute::Action::kNone) {
      std::abort();
    }
    if (route.kind != ViewerRoute::Kind::kMesh && route.mesh != 0) std::abort();
  });
  return 0;
}
