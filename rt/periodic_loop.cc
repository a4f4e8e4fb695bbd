#include "rt/periodic_loop.h"

namespace hilsim::rt {

std::optional<OverrunPolicy> parseOverrunPolicy(std::string_view name) {
  if (name == "skip") return OverrunPolicy::kSkip;
  if (name == "catch_up") return OverrunPolicy::kCatchUp;
  if (name == "fault") return OverrunPolicy::kFault;
  return std::nullopt;
}

std::string_view overrunPolicyName(OverrunPolicy policy) {
  switch (policy) {
    case OverrunPolicy::kSkip: return "skip";
    case OverrunPolicy::kCatchUp: return "catch_up";
    case OverrunPolicy::kFault: return "fault";
  }
  return "?";
}

}  // namespace hilsim::rt
