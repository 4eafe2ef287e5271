#include "lock/lease.hpp"

#include <algorithm>

namespace bufferlock {

Nanos lease_drift(Nanos ttl) { return ttl / 100 + std::chrono::milliseconds(2); }

Nanos lease_renew_period(Nanos ttl) { return std::max(ttl / 3, Nanos(1'000'000)); }

Nanos lease_max_kill_after(Nanos ttl, Nanos attempt) {
  return ttl - lease_renew_period(ttl) - lease_drift(ttl) - 2 * attempt;
}

Nanos lease_attempt_timeout_cap(Nanos ttl) { return ttl / 36; }

Nanos lease_default_kill_after(Nanos ttl, Nanos attempt) {
  return lease_max_kill_after(ttl, attempt) - lease_renew_period(ttl) - attempt;
}

Nanos Lease::jeopardy_at() const {
  // With a --kill-after that fits this is at least renew_at() + attempt; a
  // TTL too short for the timeouts (only allowed without --on-lost term)
  // gets its warning no earlier than that either.
  return std::max(valid_until() - t_.kill_after - t_.attempt, renew_at() + t_.attempt);
}

} // namespace bufferlock
