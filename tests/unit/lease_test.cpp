// The holder's lease (lock/lease.hpp) and the renewal ticks that act on it
// (run/command.hpp): SPEC §7.
#include "lock/lease.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"

#include <gtest/gtest.h>

#include <time.h>

#include <vector>

using namespace bufferlock;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(Lease, DriftIsOnePercentPlusTwoMilliseconds) {
  EXPECT_EQ(lease_drift(seconds(10)), milliseconds(102));
  EXPECT_EQ(lease_drift(seconds(60)), milliseconds(602));
}

TEST(Lease, KillAfterThatFits) {
  // TTL - TTL/3 - drift - 2 attempts
  EXPECT_EQ(lease_max_kill_after(seconds(60), seconds(2)), seconds(60) - seconds(20) - milliseconds(602) - seconds(4));
  // --ttl 10 with the default timeouts leaves 2.565 s of the default 10
  EXPECT_EQ(lease_max_kill_after(seconds(10), seconds(2)).count(), 2'564'666'667);
  // too short for the timeouts: not even 0 fits
  EXPECT_LT(lease_max_kill_after(milliseconds(600), seconds(2)), Nanos(0));
  EXPECT_GE(lease_max_kill_after(seconds(3), milliseconds(400)), seconds(1));
}

TEST(Lease, DefaultsLeaveRoomForRetriesFromFifteenMilliseconds) {
  EXPECT_EQ(lease_attempt_timeout_cap(seconds(9)), milliseconds(250));
  // attempts of TTL/18: K = TTL - TTL/3 - drift - 2 x TTL/18 - (TTL/3 + TTL/18) = TTL/6 - drift
  for (const Nanos ttl : {Nanos(milliseconds(15)), Nanos(milliseconds(500)), Nanos(seconds(1)), Nanos(seconds(3)),
                          Nanos(seconds(6)), Nanos(seconds(20))}) {
    const Nanos attempt = 2 * lease_attempt_timeout_cap(ttl);
    const Nanos room = lease_default_kill_after(ttl, attempt);
    EXPECT_GE(room, Nanos(0)) << ttl.count();
    EXPECT_EQ(room, ttl - lease_renew_period(ttl) - lease_drift(ttl) - 2 * attempt - lease_renew_period(ttl) - attempt)
        << ttl.count();
    EXPECT_LE(room, ttl / 6 - lease_drift(ttl) + Nanos(10)) << ttl.count();
    EXPECT_GE(room, ttl / 6 - lease_drift(ttl) - Nanos(10)) << ttl.count();
  }
  // below that only the most that fits (no room for retries), down to about 4 ms
  EXPECT_LT(lease_default_kill_after(milliseconds(12), 2 * lease_attempt_timeout_cap(milliseconds(12))), Nanos(0));
  EXPECT_GE(lease_max_kill_after(milliseconds(5), 2 * lease_attempt_timeout_cap(milliseconds(5))), Nanos(0));
  EXPECT_LT(lease_max_kill_after(milliseconds(3), 2 * lease_attempt_timeout_cap(milliseconds(3))), Nanos(0));
}

TEST(FitLease, ShortensDefaultsAndReturnsWhatCannotFit) {
  RedisLockSettings r;
  r.ttl = seconds(9);
  r.on_lost = OnLost::term;
  EXPECT_FALSE(fit_lease(r, {}));
  EXPECT_EQ(r.renew_connect(), milliseconds(250)); // TTL/36
  EXPECT_EQ(r.renew_io(), milliseconds(250));
  EXPECT_EQ(r.connect_timeout, seconds(1)); // the first acquisition keeps its own
  EXPECT_EQ(r.kill_after, lease_default_kill_after(seconds(9), milliseconds(500)));

  RedisLockSettings given_kill = r;
  given_kill.kill_after = seconds(5);
  const auto long_kill = fit_lease(given_kill, {false, false, true});
  ASSERT_TRUE(long_kill);
  EXPECT_EQ(long_kill->kind, LeaseMisfit::Kind::kill_after_long);
  EXPECT_EQ(long_kill->most, lease_max_kill_after(seconds(9), milliseconds(500)));
  EXPECT_EQ(given_kill.kill_after, seconds(5)); // a given value is never changed

  RedisLockSettings slow;
  slow.ttl = seconds(2);
  slow.on_lost = OnLost::term;
  slow.io_timeout = seconds(1);
  const auto short_ttl = fit_lease(slow, {false, true, false});
  ASSERT_TRUE(short_ttl);
  EXPECT_EQ(short_ttl->kind, LeaseMisfit::Kind::ttl_short);
  EXPECT_EQ(short_ttl->attempt, Nanos(seconds(2)) / 36 + seconds(1));

  RedisLockSettings warn; // without term, nothing misfits
  warn.ttl = milliseconds(5);
  EXPECT_FALSE(fit_lease(warn, {true, true, true}));
}

TEST(Lease, TheLastRetryIsDueBeforeTheLastMomentOneMayStart) {
  Lease lease({seconds(1), milliseconds(80), milliseconds(70)});
  lease.confirmed(seconds(0));
  EXPECT_EQ(lease.last_retry_at(), lease.jeopardy_at() - milliseconds(100));
  EXPECT_TRUE(lease.may_attempt(lease.last_retry_at()));
  EXPECT_TRUE(lease.may_attempt(lease.last_retry_at() + milliseconds(20)));
}

TEST(Lease, TimelineEndsBeforeTheServers) {
  // The partition case: --ttl 3 --kill-after 1, attempts of 0.4 s, last
  // renewal sent at 1.0 s.
  Lease lease({seconds(3), milliseconds(400), seconds(1)});
  lease.confirmed(seconds(1));
  EXPECT_EQ(lease.renew_at(), seconds(2));
  EXPECT_EQ(lease.valid_until(), seconds(4) - milliseconds(32));
  EXPECT_EQ(lease.jeopardy_at(), seconds(4) - milliseconds(32) - seconds(1) - milliseconds(400));
  EXPECT_EQ(lease.server_expiry(), seconds(4));
  // SIGTERM at the jeopardy moment, SIGKILL K later: one attempt before
  // our validity ends, which ends before the server's TTL.
  const Nanos term = lease.jeopardy_at();
  EXPECT_EQ(lease.kill_at(term), lease.valid_until() - milliseconds(400));
  EXPECT_LT(lease.kill_at(term), lease.server_expiry());
  // the regular renewal has a whole attempt before the jeopardy moment
  EXPECT_TRUE(lease.may_attempt(lease.renew_at()));
  // ... and no attempt starts that could still run when it comes
  EXPECT_FALSE(lease.may_attempt(lease.jeopardy_at() - milliseconds(399)));
  EXPECT_TRUE(lease.may_attempt(lease.jeopardy_at() - milliseconds(400)));
}

TEST(Lease, GraceIsMeasuredFromTheSigterm) {
  // A renewal that took longer than --kill-after (5 s against 1 s) found the
  // loss: the SIGKILL is due one --kill-after after the SIGTERM it sent,
  // not after the tick that started the renewal.
  Lease lease({seconds(60), seconds(2), seconds(1)});
  lease.confirmed(seconds(0));
  const Nanos renewal_started = lease.renew_at();
  const Nanos term_sent = renewal_started + seconds(5);
  EXPECT_EQ(lease.kill_at(term_sent), term_sent + seconds(1));
  EXPECT_GT(lease.kill_at(term_sent), renewal_started + seconds(1));
}

TEST(Lease, ShortTtlWarnsNoEarlierThanTheFirstRenewalCouldAnswer) {
  // Without --on-lost term a TTL shorter than the timeouts is allowed: its
  // one warning waits for the first renewal's attempt.
  Lease lease({milliseconds(600), seconds(2), Nanos(0)});
  lease.confirmed(seconds(1));
  EXPECT_EQ(lease.jeopardy_at(), lease.renew_at() + seconds(2));
}

namespace {
void sleep_for(Nanos d) {
  const timespec ts = to_timespec(d);
  ::nanosleep(&ts, nullptr);
}
} // namespace

TEST(RunChild, NextTickIsWhenTheLastOneSaidNotWhenItStarted) {
  // The first tick plays a renewal that times out after 300 ms and then
  // sends SIGTERM, asking for the SIGKILL 200 ms after that (--kill-after
  // 0.2): the second tick must come 200 ms after the first one returned.
  // (Before, the next tick was counted from when the first had started,
  // and came at once.)
  std::vector<Nanos> returned, called;
  Ticker ticker{monotonic_now() + milliseconds(20), [&](pid_t) {
                  called.push_back(monotonic_now());
                  if (called.size() == 1) {
                    sleep_for(milliseconds(300));
                    returned.push_back(monotonic_now());
                    return returned.back() + milliseconds(200);
                  }
                  returned.push_back(monotonic_now());
                  return infinite_duration;
                }};
  EXPECT_EQ(run_child({"sleep", "1"}, &ticker), 0);
  ASSERT_EQ(called.size(), 2u);
  EXPECT_GE(called[1] - returned[0], milliseconds(200));
}
