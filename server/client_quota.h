// What each client (a peer address) holds of something the server shares out — StreamStates
// readers of a session, viewer pages — against a limit per client (docs/SERVER.md, "Isolation
// between clients"). Thread-safe; not for the RT path (a mutex and a map).
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace hilsim::server {

class ClientQuota {
 public:
  /// Takes one for `client`; false, taking nothing, when it already holds `limit`.
  bool claim(const std::string& client, int limit) {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(client);
    const int held = it == held_.end() ? 0 : it->second;
    if (held >= limit) return false;
    held_[client] = held + 1;
    return true;
  }
  /// Gives back one that `client` claimed.
  void release(const std::string& client) {
    std::lock_guard lock(mutex_);
    const auto it = held_.find(client);
    if (it == held_.end()) return;
    if (--it->second <= 0) held_.erase(it);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> held_;  // clients holding at least one
};

}  // namespace hilsim::server
