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

std::optional<LeaseMisfit> fit_lease(RedisLockSettings& r, const LeaseGiven& given) {
  const bool term = r.on_lost == OnLost::term;
  if (term) {
    const Nanos cap = lease_attempt_timeout_cap(r.ttl);
    if (!given.connect_timeout) r.renew_connect_timeout = std::min(r.connect_timeout, cap);
    if (!given.io_timeout) r.renew_io_timeout = std::min(r.io_timeout, cap);
  }
  const Nanos attempt = r.renew_connect() + r.renew_io();
  const Nanos most = lease_max_kill_after(r.ttl, attempt);
  if (!term) {
    if (!given.kill_after && most >= Nanos(0)) r.kill_after = std::min(r.kill_after, most);
    return std::nullopt;
  }
  if (most < Nanos(0)) return LeaseMisfit{LeaseMisfit::Kind::ttl_short, attempt, most};
  if (!given.kill_after) {
    // Room for retries when there is some; the most that fits otherwise.
    const Nanos room = lease_default_kill_after(r.ttl, attempt);
    r.kill_after = std::min(r.kill_after, room >= Nanos(0) ? room : most);
    return std::nullopt;
  }
  if (r.kill_after <= most) return std::nullopt;
  return LeaseMisfit{LeaseMisfit::Kind::kill_after_long, attempt, most};
}

Nanos Lease::jeopardy_at() const {
  // With a --kill-after that fits this is at least renew_at() + attempt; a
  // TTL too short for the timeouts (only allowed without --on-lost term)
  // gets its warning no earlier than that either.
  return std::max(valid_until() - t_.kill_after - t_.attempt, renew_at() + t_.attempt);
}

} // namespace bufferlock
