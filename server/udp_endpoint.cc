#include "server/udp_endpoint.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <exception>
#include <system_error>

#include "rt/futex.h"

namespace hilsim::server {

namespace {

/// The session's scheme: MAC with its key, else TOKEN.
DatagramScreen makeScreen(const ServerSession& session) {
  if (const udp::Key* key = session.udpKey()) return DatagramScreen(session.id(), *key);
  return DatagramScreen(session.id(), session.udpToken());
}

}  // namespace

UdpEndpoint::UdpEndpoint(ServerSession& session, const std::string& address, std::uint16_t port)
    : session_(session),
      counters_(session.udpCounters()),
      mode_(session.mode()),
      socket_(io_),
      screen_(makeScreen(session)) {
  asio::error_code ec;
  const asio::ip::address ip = asio::ip::make_address(address, ec);
  if (ec) {
    throw std::system_error(std::make_error_code(std::errc::invalid_argument),
                            "UDP endpoint: '" + address + "' is not an IP address");
  }
  const Endpoint local(ip, port);
  socket_.open(local.protocol(), ec);
  if (!ec) socket_.bind(local, ec);
  if (ec) {
    throw std::system_error(ec, "UDP endpoint: cannot bind " + address + ":" +
                                    std::to_string(port));
  }
  port_ = socket_.local_endpoint().port();
  fd_ = socket_.native_handle();
  message_.mutable_state();  // created once, reused for every state sent
  // queued commands, the one being applied, and one more in flight
  owed_.resize(session.session().config().command_capacity + 2);
}

void UdpEndpoint::oweAnswer(std::uint64_t sequence) {
  if (owed_count_ == owed_.size()) {  // cannot be answered any more: the oldest was dropped
    owed_head_ = (owed_head_ + 1) % owed_.size();
    --owed_count_;
    counters_.states_skipped.fetch_add(1, std::memory_order_relaxed);
  }
  owed_[(owed_head_ + owed_count_) % owed_.size()] = sequence;
  ++owed_count_;
}

void UdpEndpoint::markAnswered(std::uint64_t sequence) {
  answered_ = sequence;
  std::uint64_t covered = 0;
  while (owed_count_ > 0 && owed_[owed_head_] <= sequence) {
    owed_head_ = (owed_head_ + 1) % owed_.size();
    --owed_count_;
    ++covered;
  }
  // a pipelining controller: one state answered several commands, the others' were never sent
  if (covered > 1) counters_.states_skipped.fetch_add(covered - 1, std::memory_order_relaxed);
}

UdpEndpoint::~UdpEndpoint() { stop(); }

void UdpEndpoint::start() {
  if (started_.exchange(true) || stopped_.load()) return;
  // spdlog's registry is created on first use: make that this thread, before the network thread
  // can log, rather than a race between the two.
  spdlog::default_logger_raw();
  receiveNext();
  thread_ = std::thread([this] {
    try {
      io_.run();
    } catch (const std::exception& e) {
      // handlers report errors through error codes; this is a last line of defence
      spdlog::error("session {}: UDP endpoint on port {} stopped: {}", session_.id(), port_,
                    e.what());
    }
  });
  const std::string name = "udp-" + std::to_string(session_.id());
  pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
  session_.addSink(this);
}

void UdpEndpoint::stop() {
  if (stopped_.exchange(true)) return;
  // first no more states from the publisher, then no more datagrams in or out
  if (started_.load()) session_.removeSink(this);
  io_.stop();
  if (thread_.joinable()) thread_.join();
  asio::error_code ignored;
  socket_.close(ignored);
}

void UdpEndpoint::receiveNext() {
  socket_.async_receive_from(
      asio::buffer(receive_buffer_), sender_,
      [this](const asio::error_code& ec, std::size_t bytes) {
        // stamp first: the receive time is part of the command's age
        const rt::Nanoseconds now = rt::monotonicNow();
        if (ec == asio::error::operation_aborted) return;
        if (!ec) onDatagram(bytes, now);
        receiveNext();
      });
}

void UdpEndpoint::onDatagram(std::size_t bytes, rt::Nanoseconds receive_time) {
  counters_.received.fetch_add(1, std::memory_order_relaxed);
  // TOKEN: the source's own sequence gate (none for a new source); MAC: the key's window
  const Source* source = screen_.mac() ? nullptr : findSource(sender_);
  Rejection outcome = screen_.screen({receive_buffer_.data(), bytes},
                                     source != nullptr ? &source->gate : nullptr);
  if (outcome == Rejection::kNone) outcome = session_.submit(screen_.command(), receive_time);
  counters_.count(outcome);
  if (outcome == Rejection::kNone) afterAccepted(screen_.command(), receive_time);
}

UdpEndpoint::Source* UdpEndpoint::findSource(const Endpoint& address) {
  for (Source& s : sources_) {
    if (s.in_use && s.address == address) return &s;
  }
  return nullptr;
}

void UdpEndpoint::rememberAccepted(const Endpoint& address, std::uint64_t sequence) {
  Source* source = findSource(address);
  if (source == nullptr) {
    // a free slot, else the least recently accepted source
    source = &*std::min_element(sources_.begin(), sources_.end(),
                                [](const Source& a, const Source& b) {
                                  if (a.in_use != b.in_use) return !a.in_use;
                                  return a.last_used < b.last_used;
                                });
    source->address = address;
    source->gate.restart();
    source->in_use = true;
  }
  source->gate.accept(sequence);
  source->last_used = ++accept_counter_;
}

void UdpEndpoint::afterAccepted(const v1::Command& command, rt::Nanoseconds receive_time) {
  if (!screen_.mac()) rememberAccepted(sender_, command.sequence());
  const bool sync = isSync(command);
  const bool lockstep = mode_ == rt::SessionMode::kLockstep;
  const bool step_request = sync && lockstep && command.steps() >= 1;
  // the cycle the step request starts from (commands still queued ahead of it are not counted)
  const std::uint64_t from_cycle = step_request ? session_.session().publishedCycle() : 0;
  bool new_peer = false;
  {
    std::lock_guard lock(send_mutex_);
    if (!has_peer_ || peer_ != sender_) {
      new_peer = true;
      peer_ = sender_;
      has_peer_ = true;
      if (!screen_.mac()) {
        // TOKEN: a new peer has its own sequence space, nothing owed to it yet. Under MAC the
        // key's one space goes on: what was answered stays answered (a state of the old peer's
        // last command is no answer to the new peer's first).
        newest_command_ = 0;
        answered_ = 0;
        owed_count_ = 0;
      }
      step_target_ = 0;
      has_gap_base_ = false;
      has_last_sent_ = false;
    }
    peer_accepted_at_ = receive_time;
    if (lockstep && !sync) {
      newest_command_ = command.sequence();
      oweAnswer(command.sequence());
    }
    if (step_request) step_target_ = std::max(step_target_, from_cycle) + command.steps();
  }
  if (new_peer) {
    spdlog::info("session {}: UDP peer is now {}:{}", session_.id(),
                 sender_.address().to_string(), sender_.port());
  }

  if (step_request) {
    // answered by the publisher once the cycles have run
    session_.session().requestSteps(command.steps());
    return;
  }
  if (sync) {
    const rt::StateSnapshot latest = session_.session().latestState();
    std::lock_guard lock(send_mutex_);
    sendLocked(latest, sender_, false);
    return;
  }
  if (lockstep) {
    // The answer usually follows within microseconds: this thread, idle until the next
    // datagram anyway, watches for it up to lockstep_spin and sends it itself, which saves the
    // publisher's wake-up. Later answers are the publisher's. The first look also covers a cycle
    // that ran before newest_command_ was set, when the publisher could not yet know the state
    // was owed (answered_ keeps a state from going out twice).
    const rt::Session& rt_session = session_.session();
    const rt::Nanoseconds until = rt::monotonicNow() + rt_session.config().lockstep_spin;
    std::uint64_t looked_at = ~std::uint64_t{0};
    for (;;) {
      const std::uint64_t cycle = rt_session.publishedCycle();
      if (cycle != looked_at) {
        looked_at = cycle;
        const rt::StateSnapshot latest = session_.session().latestState();
        std::lock_guard lock(send_mutex_);
        if (!(has_peer_ && peer_ == sender_)) return;
        if (owesCommandAnswer(latest)) {
          markAnswered(latest.command_sequence);
          sendLocked(latest, peer_, false);
          return;
        }
        if (answered_ >= command.sequence()) return;  // the publisher was first
      }
      if (rt::monotonicNow() >= until) return;
      rt::cpuRelax();
    }
  }
}

bool UdpEndpoint::owesCommandAnswer(const rt::StateSnapshot& state) const {
  return state.command_steps_left == 0 && state.command_sequence > answered_ &&
         state.command_sequence <= newest_command_;
}

void UdpEndpoint::onState(const rt::StateSnapshot& state, bool state_changed) {
  std::lock_guard lock(send_mutex_);
  // The first call after addSink carries state_changed without a change: only a state that
  // differs from the one seen before is a life-cycle change.
  const bool changed = state_changed && has_seen_state_ && state.state != seen_state_;
  seen_state_ = state.state;
  has_seen_state_ = true;
  if (changed && state.state == rt::SessionState::kCreated) {
    // a reset: cycles restart at 0 and pending step requests were dropped with the session's
    step_target_ = 0;
    owed_count_ = 0;  // discarded with the command channel: nothing is owed any more
    has_gap_base_ = false;
  }
  if (!has_peer_) return;
  if (rt::monotonicNow() - peer_accepted_at_ > kPeerTimeout) {
    has_gap_base_ = false;  // a silence ends the run: no gap is counted across it
    return;
  }
  // the peer learns a life-cycle state at once, unless a state it was sent already showed it
  bool send = state_changed && (has_last_sent_ ? state.state != last_sent_state_ : changed);
  switch (mode_) {
    case rt::SessionMode::kRealtime:
    case rt::SessionMode::kFree:
      send = true;
      break;
    case rt::SessionMode::kLockstep:
      if (owesCommandAnswer(state)) {
        markAnswered(state.command_sequence);
        send = true;
      }
      if (step_target_ != 0 && state.cycle >= step_target_) {
        step_target_ = 0;
        send = true;
      }
      break;
  }
  // never the same state twice in a row (e.g. a change the network thread's answer showed first)
  if (has_last_sent_ && state.cycle == last_sent_cycle_ && state.state == last_sent_state_) {
    send = false;
  }
  if (send) sendLocked(state, peer_, true);
}

void UdpEndpoint::sendLocked(const rt::StateSnapshot& state, const Endpoint& to,
                             bool from_publisher) {
  // an injected fault lost it on its way (SessionStats.faults.states_withheld counts it, not
  // states_skipped: the gap it leaves starts after it)
  if (state.withheld && state.state == rt::SessionState::kRunning) {
    if (from_publisher && (!has_gap_base_ || state.cycle > gap_base_)) {
      gap_base_ = state.cycle;
      has_gap_base_ = true;
    }
    return;
  }
  if (from_publisher && mode_ == rt::SessionMode::kRealtime && has_gap_base_ &&
      state.cycle > gap_base_ + 1) {
    // cycles published while the previous state was on its way: the newest won
    counters_.states_skipped.fetch_add(state.cycle - gap_base_ - 1, std::memory_order_relaxed);
  }
  if (from_publisher || !has_gap_base_ || state.cycle > gap_base_) {
    gap_base_ = state.cycle;
    has_gap_base_ = true;
  }
  last_sent_cycle_ = state.cycle;
  last_sent_state_ = state.state;
  has_last_sent_ = true;

  v1::State* out = message_.mutable_state();
  session_.toState(state, out);
  out->set_send_time_ns(rt::monotonicNow());
  // MAC: the payload goes after the frame's header, then the header and the tag around it
  const std::size_t offset = screen_.mac() ? udp::kHeaderBytes : 0;
  const std::size_t payload = message_.ByteSizeLong();
  if (payload + offset + (screen_.mac() ? udp::kTagBytes : 0) > send_buffer_.size()) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  message_.SerializeWithCachedSizesToArray(send_buffer_.data() + offset);
  std::size_t size = payload;
  if (const udp::Key* key = session_.udpKey()) {
    size = udp::seal(*key, udp::Direction::kState, ++send_counter_, send_buffer_, payload);
  }
  const ssize_t sent = ::sendto(fd_, send_buffer_.data(), size, MSG_DONTWAIT | MSG_NOSIGNAL,
                                to.data(), static_cast<socklen_t>(to.size()));
  if (sent < 0 || static_cast<std::size_t>(sent) != size) {
    counters_.send_errors.fetch_add(1, std::memory_order_relaxed);  // never wait for room
    return;
  }
  counters_.states_sent.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace hilsim::server

