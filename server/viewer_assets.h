// The viewer page's files (viewer/dist: index.html and the bundle esbuild made of the page's
// code and its npm libraries), built into hilsim-server at compile time so that the page works
// offline and from any working directory. server/CMakeLists.txt generates the definitions.
#pragma once

#include <string_view>

namespace hilsim::server {

struct ViewerAsset {
  std::string_view name;          ///< file name in viewer/dist, e.g. "viewer.js"
  std::string_view content_type;  ///< its MIME type
  std::string_view bytes;         ///< its content
};

/// The file called `name`, or null.
const ViewerAsset* findViewerAsset(std::string_view name);

}  // namespace hilsim::server
