#include "cache/redis_scripts.hpp"
#include "lock/backoff.hpp"
#include "lock/redis_list.hpp"
#include "lock/redis_lock.hpp"
#include "redis/scripts.hpp"
#include "util/random.hpp"

#include <openssl/sha.h>

#include <gtest/gtest.h>

#include <set>

using namespace bufferlock;
using namespace std::chrono_literals;

namespace {
std::string sha1_hex(std::string_view text) {
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d);
  static const char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : d) {
    out += hex[c >> 4];
    out += hex[c & 0xf];
  }
  return out;
}
} // namespace

TEST(RedisScripts, PinnedDigestsMatchTheSources) {
  for (const RedisScript* s :
       {&acquire_script, &release_script, &renew_script, &acquire_slots_script, &release_slot_script,
        &renew_slot_script, &status_slots_script, &unlock_key_script, &holder_record_script, &wake_script,
        &cache_append_script, &cache_publish_script, &cache_use_script, &cache_object_use_script, &cache_gc_del_script,
        &cache_stats_count_script, &cache_stats_zero_script})
    EXPECT_EQ(s->sha1, sha1_hex(s->source)) << s->source;
}

TEST(RedisLockKey, LayoutOfSpec) {
  LockSettings s;
  EXPECT_EQ(redis_lock_key(s, "abc"), "buffer:lock:900150983cd24fb0d6963f7d28e17f72");
  s.hash_tag = true;
  EXPECT_EQ(redis_lock_key(s, "abc"), "{buffer:lock:}900150983cd24fb0d6963f7d28e17f72");
  s.key_prefix = "app:";
  EXPECT_EQ(redis_lock_key(s, ""), "{app:}d41d8cd98f00b204e9800998ecf8427e");
}

TEST(RedisList, KnowsLockAndSlotKeysFromTheOthers) {
  LockSettings s;
  const std::string d = "900150983cd24fb0d6963f7d28e17f72";
  auto n = parse_redis_lock_name(s, "buffer:lock:" + d);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->digest, d);
  EXPECT_EQ(n->slot, 0u);
  n = parse_redis_lock_name(s, "{buffer:lock:" + d + "}:slot:12");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->slot, 12u);
  for (const std::string& other :
       {"{buffer:lock:" + d + "}:fence", "{buffer:lock:" + d + "}:holder",
        "{buffer:lock:" + d + "}:slot:1:holder", "{buffer:lock:" + d + "}:slot:0", "buffer:lock:" + d + "x",
        "buffer:lock:" + d.substr(1), std::string("unrelated")})
    EXPECT_FALSE(parse_redis_lock_name(s, other)) << other;
  s.hash_tag = true;
  n = parse_redis_lock_name(s, "{buffer:lock:}" + d + ":slot:3");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->slot, 3u);
  EXPECT_FALSE(parse_redis_lock_name(s, "buffer:lock:" + d));
}

TEST(RedisTtl, RoundsToTheNearestMillisecond) {
  EXPECT_EQ(round_to_ms(60s), 60000);
  EXPECT_EQ(round_to_ms(1500us), 2);
  EXPECT_EQ(round_to_ms(1499us), 1);
  EXPECT_EQ(round_to_ms(500us), 1); // never 0: PX 0 is an error
}

TEST(Backoff, GrowsByRatioUpToTheCap) {
  Backoff b(1ms, 2.0, 10ms);
  EXPECT_EQ(b.next(), Nanos(1ms));
  EXPECT_EQ(b.next(), Nanos(2ms));
  EXPECT_EQ(b.next(), Nanos(4ms));
  EXPECT_EQ(b.next(), Nanos(8ms));
  EXPECT_EQ(b.next(), Nanos(10ms));
  EXPECT_EQ(b.next(), Nanos(10ms));
}

TEST(Backoff, StepAboveCapIsCapped) {
  Backoff b(2s, 1.0, 500ms);
  EXPECT_EQ(b.next(), Nanos(500ms));
}

TEST(Backoff, JitterStaysWithinHalfAndWhole) {
  EXPECT_EQ(jittered(100ms, 0), Nanos(50ms));
  EXPECT_LE(jittered(100ms, 0xffffffffu), Nanos(100ms));
  EXPECT_GE(jittered(100ms, 0xffffffffu), Nanos(99ms));
}

TEST(PollUntil, ErrorsAreRetriedAndTheLastOutcomeCounts) {
  int calls = 0;
  std::vector<Nanos> pauses;
  const Outcome o = poll_until(
      50ms, OnError::retry, Backoff(1ms, 2.0, 4ms),
      [&] { return ++calls % 2 ? Outcome::failed("down", Recovery::transient) : Outcome::busy(); },
      [&](Nanos d) {
        pauses.push_back(d);
        const timespec ts{0, static_cast<long>(d.count())};
        nanosleep(&ts, nullptr);
      });
  EXPECT_GT(calls, 3);
  EXPECT_EQ(o.status, calls % 2 ? AcquireStatus::error : AcquireStatus::busy);
  for (Nanos p : pauses)
    EXPECT_LE(p, Nanos(4ms));
}

TEST(PollUntil, NoWaitMeansOneTry) {
  int calls = 0;
  const Outcome o = poll_until(
      Nanos(0), OnError::retry, Backoff(1ms, 2.0, 4ms),
      [&] {
        ++calls;
        return Outcome::busy();
      },
      [](Nanos) {});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(o.status, AcquireStatus::busy);
}

TEST(PollUntil, StopsAtAcquired) {
  int calls = 0;
  const Outcome o = poll_until(
      1s, OnError::retry, Backoff(1ms, 2.0, 4ms),
      [&] { return ++calls == 3 ? Outcome::acquired() : Outcome::busy(); }, [](Nanos) {});
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(o.status, AcquireStatus::acquired);
}

TEST(Random, TokensAreFreshLowercaseHex) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string t = random_token();
    ASSERT_EQ(t.size(), 32u);
    EXPECT_EQ(t.find_first_not_of("0123456789abcdef"), std::string::npos);
    seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 100u);
}

namespace {
RedisSlotState slot_state(long long pttl, std::string token, pid_t pid = 0, std::uint64_t fence = 0) {
  RedisSlotState s;
  s.pttl = pttl;
  s.token = std::move(token);
  if (pid) s.holder.pids = {pid};
  s.holder.host = pid ? "h" : "";
  if (fence) s.holder.fence = fence;
  return s;
}
} // namespace

TEST(RedisQuorumState, HeldWhenAMajorityHoldIt) {
  // Three servers, two hold the key: held for as long as the shorter of the two.
  auto s = quorum_slot_state({slot_state(5000, "a"), slot_state(3000, "a"), slot_state(-2, "")}, 3, true);
  EXPECT_EQ(s.pttl, 3000);
  EXPECT_EQ(s.token, "a");
  // One of three: free.
  EXPECT_EQ(quorum_slot_state({slot_state(5000, "a"), slot_state(-2, ""), slot_state(-2, "")}, 3, true).pttl,
            -2);
  // A server that did not answer counts against: 2 answers of 5 are no majority.
  EXPECT_EQ(quorum_slot_state({slot_state(5000, "a"), slot_state(5000, "a")}, 5, true).pttl, -2);
}

TEST(RedisQuorumState, ListWantsOneTokenStatusAnyHolder) {
  const std::vector<RedisSlotState> split{slot_state(5000, "a"), slot_state(4000, "b"), slot_state(-2, "")};
  EXPECT_EQ(quorum_slot_state(split, 3, true).pttl, -2);    // list: no majority with one token
  EXPECT_EQ(quorum_slot_state(split, 3, false).pttl, 4000); // status: taken all the same
  const std::vector<RedisSlotState> two_of_three{slot_state(5000, "b"), slot_state(4000, "a"),
                                                 slot_state(3000, "b")};
  auto s = quorum_slot_state(two_of_three, 3, true);
  EXPECT_EQ(s.token, "b");
  EXPECT_EQ(s.pttl, 3000);
}

TEST(RedisQuorumState, HolderWhenAMajorityRecordedItWithoutFence) {
  auto s = quorum_slot_state(
      {slot_state(5000, "a", 12, 7), slot_state(5000, "a", 12, 9), slot_state(5000, "a")}, 3, true);
  ASSERT_EQ(s.holder.pids, std::vector<pid_t>{12});
  EXPECT_EQ(s.holder.host, "h");
  EXPECT_FALSE(s.holder.fence); // each server counts its own fences
  s = quorum_slot_state({slot_state(5000, "a", 12), slot_state(5000, "a", 13), slot_state(5000, "a")}, 3,
                        true);
  EXPECT_TRUE(s.holder.pids.empty());
  EXPECT_EQ(s.pttl, 5000);
}
