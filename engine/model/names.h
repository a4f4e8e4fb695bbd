// Names of models, bodies, joints and frames. They travel far — into the wire contract (proto3
// strings must be UTF-8), log lines, metrics labels and error messages — so every name is checked
// once, where a Model is built.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hilsim {

/// Longest name a Model accepts [bytes].
inline constexpr std::size_t kMaxNameBytes = 256;

/// Empty when `name` is a usable name: 1 to kMaxNameBytes bytes of valid UTF-8 without control
/// characters (U+0000–U+001F, U+007F). Otherwise what is wrong with it, without quoting it.
std::string nameProblem(std::string_view name);

/// True when `text` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool isValidUtf8(std::string_view text);

}  // namespace hilsim
