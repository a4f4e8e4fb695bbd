// Engine names ↔ wire enum values. A formulation (or integrator) travels as the proto enum value
// whose name is the prefix plus the engine's name in capitals (FORMULATION_CRBA ↔ "crba"), so
// the mapping needs no table of its own: a new formulation is its registry row and its proto
// value, and a proto value the engine does not know is refused by name, never run as another.
#pragma once

#include <google/protobuf/descriptor.h>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>

namespace hilsim::proto_names {

/// The engine name of enum value `value` of `descriptor` ("crba" for FORMULATION_CRBA), or empty
/// when the value is unknown, or has no `prefix` (and so for the *_UNSPECIFIED values too, whose
/// remainder "unspecified" names nothing in the engine).
inline std::string engineName(const google::protobuf::EnumDescriptor* descriptor, int value,
                              std::string_view prefix) {
  const google::protobuf::EnumValueDescriptor* v = descriptor->FindValueByNumber(value);
  if (v == nullptr) return {};
  const std::string& full = v->name();
  if (full.size() <= prefix.size() || full.compare(0, prefix.size(), prefix) != 0) return {};
  std::string name = full.substr(prefix.size());
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

/// The value of `descriptor` for engine name `name` (FORMULATION_CRBA for "crba"), or nullopt.
inline std::optional<int> protoValue(const google::protobuf::EnumDescriptor* descriptor,
                                     std::string_view prefix, std::string_view name) {
  std::string full(prefix);
  for (char c : name) full += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const google::protobuf::EnumValueDescriptor* v = descriptor->FindValueByName(full);
  if (v == nullptr) return std::nullopt;
  return v->number();
}

}  // namespace hilsim::proto_names
