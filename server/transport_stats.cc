#include "server/transport_stats.h"

#include "hilsim/v1/session.pb.h"

namespace hilsim::server {

std::string_view rejectionName(Rejection rejection) {
  switch (rejection) {
    case Rejection::kNone: return "accepted";
    case Rejection::kOversize: return "oversize";
    case Rejection::kMalformed: return "malformed";
    case Rejection::kUnknownSession: return "unknown_session";
    case Rejection::kUnauthenticated: return "unauthenticated";
    case Rejection::kReplayed: return "replayed";
    case Rejection::kStale: return "stale";
    case Rejection::kDuplicate: return "duplicate";
    case Rejection::kWrongSize: return "wrong_size";
    case Rejection::kNonFinite: return "non_finite";
    case Rejection::kTooManySteps: return "too_many_steps";
    case Rejection::kTooCostly: return "too_costly";
    case Rejection::kOverBudget: return "over_budget";
    case Rejection::kInactive: return "inactive";
    case Rejection::kDropped: return "dropped";
  }
  return "unknown";
}

void TransportCounters::count(Rejection outcome) {
  std::atomic<std::uint64_t>* counter = nullptr;
  switch (outcome) {
    case Rejection::kNone: counter = &accepted; break;
    case Rejection::kOversize: counter = &oversize; break;
    case Rejection::kMalformed: counter = &malformed; break;
    case Rejection::kUnknownSession: counter = &unknown_session; break;
    case Rejection::kUnauthenticated: counter = &unauthenticated; break;
    case Rejection::kReplayed: counter = &replayed; break;
    case Rejection::kStale: counter = &stale; break;
    case Rejection::kDuplicate: counter = &duplicate; break;
    case Rejection::kWrongSize: counter = &wrong_size; break;
    case Rejection::kNonFinite: counter = &non_finite; break;
    case Rejection::kTooManySteps: counter = &too_many_steps; break;
    case Rejection::kTooCostly: counter = &too_costly; break;
    case Rejection::kOverBudget: counter = &over_budget; break;
    case Rejection::kInactive: counter = &inactive; break;
    case Rejection::kDropped: counter = &dropped; break;
  }
  counter->fetch_add(1, std::memory_order_relaxed);
}

void TransportCounters::toProto(v1::TransportStats* out) const {
  constexpr auto r = std::memory_order_relaxed;
  out->set_received(received.load(r));
  out->set_accepted(accepted.load(r));
  out->set_oversize(oversize.load(r));
  out->set_malformed(malformed.load(r));
  out->set_unknown_session(unknown_session.load(r));
  out->set_unauthenticated(unauthenticated.load(r));
  out->set_replayed(replayed.load(r));
  out->set_stale(stale.load(r));
  out->set_duplicate(duplicate.load(r));
  out->set_wrong_size(wrong_size.load(r));
  out->set_non_finite(non_finite.load(r));
  out->set_too_many_steps(too_many_steps.load(r));
  out->set_too_costly(too_costly.load(r));
  out->set_over_budget(over_budget.load(r));
  out->set_inactive(inactive.load(r));
  out->set_dropped(dropped.load(r));
  out->set_states_sent(states_sent.load(r));
  out->set_states_skipped(states_skipped.load(r));
  out->set_send_errors(send_errors.load(r));
}

void TransportCounters::reset() {
  for (auto* c : {&received, &accepted, &oversize, &malformed, &unknown_session, &unauthenticated,
                  &replayed, &stale, &duplicate, &wrong_size, &non_finite, &too_many_steps, &too_costly, &over_budget, &inactive,
                  &dropped, &states_sent, &states_skipped, &send_errors}) {
    c->store(0, std::memory_order_relaxed);
  }
}

}  // namespace hilsim::server
