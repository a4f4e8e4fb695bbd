#include "server/state_publisher.h"

#include <pthread.h>

#include <algorithm>

#include "server/server_session.h"

namespace hilsim::server {

namespace {
/// How long the publisher waits for a round before it looks at its sessions again: bounds how
/// late it sees a change no round announces (a session that faulted between rounds).
constexpr rt::Nanoseconds kRoundPoll = 20'000'000;
}  // namespace

StatePublisher::StatePublisher(rt::Worker& worker) : worker_(worker) {
  thread_ = std::thread([this] { main(); });
}

StatePublisher::~StatePublisher() {
  stop_.store(true, std::memory_order_release);
  worker_.poke();
  thread_.join();
}

void StatePublisher::add(ServerSession* session) {
  {
    std::lock_guard lock(mutex_);
    sessions_.push_back(session);
  }
  worker_.poke();
}

void StatePublisher::remove(ServerSession* session) {
  std::lock_guard lock(mutex_);  // waits for a pass in progress
  sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), session), sessions_.end());
}

void StatePublisher::main() {
  pthread_setname_np(pthread_self(), ("pub-worker-" + std::to_string(worker_.index())).substr(0, 15).c_str());
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint32_t seen = worker_.rounds();
    {
      std::lock_guard lock(mutex_);
      for (ServerSession* session : sessions_) session->publishPass();
    }
    worker_.waitForRound(seen, kRoundPoll);
  }
}

SharedWorkers::SharedWorkers(const rt::WorkersConfig& config) : workers(config) {
  for (int w = 0; w < workers.size(); ++w) {
    publishers.push_back(std::make_unique<StatePublisher>(workers.worker(w)));
  }
}

}  // namespace hilsim::server
