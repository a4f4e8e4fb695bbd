// The capacities of a session's fixed-size records (commands, states, sensor readings): models
// above them are refused. Fixed sizes keep every copy through the channels free of allocation.
#pragma once

namespace hilsim::rt {

/// Most coordinates (nq) and DoFs (nv) a session holds.
constexpr int kMaxCoordinates = 128;
/// Most contact spheres a session's states carry.
constexpr int kMaxContacts = 64;

}  // namespace hilsim::rt
