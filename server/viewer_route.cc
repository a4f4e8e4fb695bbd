#include "server/viewer_route.h"

#include <charconv>

namespace hilsim::server {
namespace {

/// A decimal number of 1 to 20 digits that fits 64 bits (0 allowed: mesh indices start there).
bool parseIndex(std::string_view text, std::uint64_t* index) {
  if (text.empty() || text.size() > 20) return false;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *index);
  return error == std::errc() && end == text.data() + text.size();
}

bool parseSessionId(std::string_view text, std::uint64_t* id) {
  std::uint64_t value = 0;
  if (!parseIndex(text, &value) || value == 0) return false;  // ids start at 1
  *id = value;
  return true;
}

bool isAssetName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
    if (!allowed) return false;
  }
  return true;
}

/// Splits off the first segment of `rest` (after a leading '/'); false when `rest` does not
/// start with '/'.
bool nextSegment(std::string_view& rest, std::string_view* segment) {
  if (rest.empty() || rest.front() != '/') return false;
  rest.remove_prefix(1);
  const std::size_t slash = rest.find('/');
  *segment = rest.substr(0, slash);
  rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  return true;
}

ViewerRoute withMethod(ViewerRoute route, std::string_view method, std::string_view wanted) {
  if (method != wanted) {
    route = ViewerRoute{};
    route.kind = ViewerRoute::Kind::kMethodNotAllowed;
  }
  return route;
}

}  // namespace

ViewerRoute parseViewerRoute(std::string_view method, std::string_view path) {
  ViewerRoute route;
  if (path == "/" || path == "/index.html") {
    route.kind = ViewerRoute::Kind::kAsset;
    route.asset = "index.html";
    return withMethod(route, method, "GET");
  }
  std::string_view rest = path;
  std::string_view first;
  if (!nextSegment(rest, &first)) return route;
  if (rest.empty()) {
    if (!isAssetName(first)) return route;
    route.kind = ViewerRoute::Kind::kAsset;
    route.asset = first;
    return withMethod(route, method, "GET");
  }
  std::string_view second, id_text, last;
  if ((first != "api" && first != "ws") || !nextSegment(rest, &second) || second != "sessions") {
    return route;
  }
  if (rest.empty()) {
    if (first != "api") return route;
    route.kind = ViewerRoute::Kind::kSessions;
    return withMethod(route, method, "GET");
  }
  if (!nextSegment(rest, &id_text) || !parseSessionId(id_text, &route.session_id)) {
    return ViewerRoute{};
  }
  if (first == "ws") {
    if (!rest.empty()) return ViewerRoute{};
    route.kind = ViewerRoute::Kind::kFrames;
    return withMethod(route, method, "GET");
  }
  if (!nextSegment(rest, &last)) return ViewerRoute{};
  if (last == "meshes") {
    std::string_view index;
    if (!nextSegment(rest, &index) || !rest.empty() || !parseIndex(index, &route.mesh)) {
      return ViewerRoute{};
    }
    route.kind = ViewerRoute::Kind::kMesh;
    return withMethod(route, method, "GET");
  }
  if (!rest.empty()) return ViewerRoute{};
  if (last == "scene") {
    route.kind = ViewerRoute::Kind::kScene;
    return withMethod(route, method, "GET");
  }
  route.kind = ViewerRoute::Kind::kAction;
  if (last == "start") {
    route.action = ViewerRoute::Action::kStart;
  } else if (last == "pause") {
    route.action = ViewerRoute::Action::kPause;
  } else if (last == "reset") {
    route.action = ViewerRoute::Action::kReset;
  } else {
    return ViewerRoute{};
  }
  return withMethod(route, method, "POST");
}

}  // namespace hilsim::server
