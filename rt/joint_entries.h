// Configuration entries that name a model's joints (drives, actuators, sensors): each names a
// joint (Model::joint_names) or "*" for every joint no other entry names.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace hilsim::rt {

template <typename Entry>
struct JointEntries {
  std::vector<const Entry*> named;  ///< per body: the entry naming its joint (nullptr: none)
  const Entry* fallback = nullptr;  ///< the "*" entry (nullptr: none)
};

/// Resolves `entries` (each with a `joint` member) against `model`. `check(entry, body, where)`
/// validates each entry (body −1 for "*"; `where` is "<label>[k] (joint 'name')") and throws
/// std::invalid_argument itself; an unknown joint, a joint named twice and a second "*" are
/// refused here, naming the entry.
template <typename Entry, typename Check>
JointEntries<Entry> resolveJointEntries(const Model& model, const std::vector<Entry>& entries,
                                        const std::string& label, const Check& check) {
  JointEntries<Entry> out;
  out.named.assign(static_cast<std::size_t>(model.nbodies), nullptr);
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const Entry& entry = entries[e];
    const std::string where = label + "[" + std::to_string(e) + "] (joint '" + entry.joint + "')";
    if (entry.joint == "*") {
      if (out.fallback != nullptr) throw std::invalid_argument(where + ": a second '*' entry");
      check(entry, -1, where);
      out.fallback = &entry;
      continue;
    }
    const auto named = std::find(model.joint_names.begin() + 1, model.joint_names.end(), entry.joint);
    if (named == model.joint_names.end()) {
      throw std::invalid_argument(where + ": the model '" + model.name + "' has no such joint");
    }
    const auto body = static_cast<std::size_t>(named - model.joint_names.begin());
    if (out.named[body] != nullptr) throw std::invalid_argument(where + ": named twice");
    check(entry, static_cast<int>(body), where);
    out.named[body] = &entry;
  }
  return out;
}

}  // namespace hilsim::rt
