// The viewer's URL space (docs/VIEWER.md): what a request's method and path ask for. Outside
// input: parsed here, in one pure function with a fuzz target (tests/fuzz/viewer_route_fuzz.cc).
#pragma once

#include <cstdint>
#include <string_view>

namespace hilsim::server {

struct ViewerRoute {
  enum class Kind {
    kNotFound,          ///< no such path (404)
    kMethodNotAllowed,  ///< a known path with the wrong method (405)
    kAsset,             ///< GET a file of the page: `asset` ("index.html" for "/")
    kSessions,          ///< GET /api/sessions
    kScene,             ///< GET /api/sessions/<id>/scene
    kAction,            ///< POST /api/sessions/<id>/<start|pause|reset>
    kFrames,            ///< GET /ws/sessions/<id>: the WebSocket of frames
    kMesh,              ///< GET /api/sessions/<id>/meshes/<k>: visual k's mesh file
  };
  enum class Action { kNone, kStart, kPause, kReset };
  Kind kind = Kind::kNotFound;
  std::string_view asset;      ///< kAsset: the file's name (a view into the path)
  std::uint64_t session_id = 0;  ///< kScene, kAction, kFrames: never 0
  Action action = Action::kNone;
  std::uint64_t mesh = 0;      ///< kMesh: index k in the model's visuals
};

/// What `method` on `path` (without its query string) asks for. A session id is a decimal
/// number of 1 to 20 digits that fits 64 bits and is not 0 (a mesh index the same, 0 allowed); an
/// asset name is one path segment of
/// letters, digits, '.', '-' and '_' not starting with '.'. Anything else is kNotFound.
ViewerRoute parseViewerRoute(std::string_view method, std::string_view path);

}  // namespace hilsim::server
