// The holder's side of a Redis lock's lifetime (SPEC §7): a lease that ends
// before the server's, as Chubby's "jeopardy" does. Pure arithmetic on
// monotonic times; RedisLock's renewal ticker acts on it.
//
// The timeline, from S = when the request that last set or renewed the TTL
// was sent (the server started its TTL no earlier):
//
//   S        S+P             J = V-K-A          J+K = V-A     V = S+TTL-drift   S+TTL
//   |--------|-- renewals ---|------------------|-------------|-----------------|
//   confirmed  retried while  SIGTERM (or one    SIGKILL       our lease ends    the server's
//              one attempt    warning), unless   (K after the                    may end: someone
//              fits before J  renewal confirmed  SIGTERM)                        else can take it
//
// P is the renewal period (TTL/3), A one renewal attempt (the connect and io
// timeouts of renewals; with --on-lost term the defaulted ones are at most
// TTL/36 each: lease_attempt_timeout_cap): no retry starts that could still
// be running at J, so the SIGTERM is on time, and nothing is sent after it.
// K is --kill-after, the drift allowance 1 % of the TTL + 2 ms (SPEC §13).
// For the first renewal to have a whole attempt before J, K may be at most
// TTL - P - drift - 2A (lease_max_kill_after). A defaulted K leaves the
// renewals another P + A to retry in (lease_default_kill_after), so that a
// partition shorter than a renewal period loses nothing: with the shortened
// timeouts (A = TTL/18), K = TTL/6 - drift.
#pragma once

#include "lock/settings.hpp"
#include "util/duration.hpp"

#include <optional>

namespace bufferlock {

// SPEC §13's allowance for clocks that run at different rates: 1 % + 2 ms.
Nanos lease_drift(Nanos ttl);

// About TTL/3 (at least 1 ms): how often a held lock is renewed.
Nanos lease_renew_period(Nanos ttl);

// The longest --kill-after that fits in `ttl` with renewals that may take
// `attempt` each: TTL - TTL/3 - drift - 2 attempts. Negative when not even
// a kill-after of 0 fits (the TTL is too short for the timeouts).
Nanos lease_max_kill_after(Nanos ttl, Nanos attempt);

// The longest connect or io timeout of a renewal attempt that --on-lost
// term shortens a default one to: TTL/36, so that an attempt takes at most
// TTL/18 and lease_default_kill_after (TTL/6 - drift) is positive for any
// TTL from 15 ms up.
Nanos lease_attempt_timeout_cap(Nanos ttl);

// The longest default --kill-after: lease_max_kill_after less another
// renewal period and attempt, in which a failed renewal is retried (a
// partition shorter than P is ridden out). Negative when none fits.
Nanos lease_default_kill_after(Nanos ttl, Nanos attempt);

// Which of the lease's values the user gave (on the command line or in the
// environment), rather than left to their defaults.
struct LeaseGiven {
  bool connect_timeout = false;
  bool io_timeout = false;
  bool kill_after = false;
};

// Why a lease cannot fit the TTL: the renewal attempt alone is too long
// (ttl_short), or the --kill-after given is longer than `most`.
struct LeaseMisfit {
  enum class Kind { ttl_short, kill_after_long } kind;
  Nanos attempt; // one renewal attempt: renew_connect() + renew_io()
  Nanos most;    // the longest --kill-after that fits
};

// --on-lost term stops the command before its lease ends: two renewal
// attempts and --kill-after must fit in the TTL with the renewal period.
// Shortens the defaulted values of `r` to fit (each renewal timeout to at
// most lease_attempt_timeout_cap, then --kill-after to
// lease_default_kill_after, or the most that fits); a given value that
// cannot fit is the misfit returned. Without term, only a defaulted
// --kill-after is shortened (it times the one warning), and nothing misfits.
std::optional<LeaseMisfit> fit_lease(RedisLockSettings& r, const LeaseGiven& given);

struct LeaseTimes {
  Nanos ttl;
  Nanos attempt;    // one renewal attempt at most: connect + io timeout
  Nanos kill_after; // --kill-after, as fitted (lease_max_kill_after)
};

// The moments of one lease, from the send time of its last confirmation.
class Lease {
public:
  explicit Lease(LeaseTimes t) : t_(t) {}

  // A request sent at `sent_at` set or renewed the TTL.
  void confirmed(Nanos sent_at) { sent_at_ = sent_at; }
  Nanos sent_at() const { return sent_at_; }

  // The next regular renewal.
  Nanos renew_at() const { return sent_at_ + lease_renew_period(t_.ttl); }
  // Until then the lock is surely ours (V above).
  Nanos valid_until() const { return sent_at_ + t_.ttl - lease_drift(t_.ttl); }
  // J above: unconfirmed by then, the command gets SIGTERM (or a warning);
  // never before the first renewal could have answered.
  Nanos jeopardy_at() const;
  // Whether a retried renewal attempt may start at `now`: it would end
  // before J.
  bool may_attempt(Nanos now) const { return now + t_.attempt <= jeopardy_at(); }
  // When the last retry is due, however long the back-off's pause: a
  // quarter of an attempt before the last moment one may start, so that a
  // tick a little late still starts it.
  Nanos last_retry_at() const { return jeopardy_at() - t_.attempt - t_.attempt / 4; }
  // The server's TTL has surely run out: the lock is lost.
  Nanos server_expiry() const { return sent_at_ + t_.ttl; }
  // The SIGKILL after a SIGTERM sent at `term_sent_at`: a grace period of
  // --kill-after from the SIGTERM itself, however long the renewal that
  // found the loss took.
  Nanos kill_at(Nanos term_sent_at) const { return term_sent_at + t_.kill_after; }

  const LeaseTimes& times() const { return t_; }

private:
  LeaseTimes t_;
  Nanos sent_at_{0};
};

} // namespace bufferlock
