// Counting for cache --stats (SPEC §21): one call's counters, the file
// sink's records and their sums, the keys that saved most.
#include "cache/stats_count.hpp"

#include <set>

#include <gtest/gtest.h>

namespace bufferlock {
namespace {

TEST(StatsCount, EachEventCountsOnceAndMissesAreBuildsAndFailedBuilds) {
  CallCount c;
  c.event = CacheEvent::build;
  StatsCounters s = counters_of(c);
  EXPECT_EQ(s.builds, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits + s.waits + s.stale_serves + s.failed_builds, 0u);
  c.event = CacheEvent::failed_build;
  s = counters_of(c);
  EXPECT_EQ(s.failed_builds, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.builds, 0u);
  c.event = CacheEvent::wait;
  EXPECT_EQ(counters_of(c).waits, 1u);
  EXPECT_EQ(counters_of(c).misses, 0u);
  c.event = CacheEvent::stale;
  EXPECT_EQ(counters_of(c).stale_serves, 1u);
  EXPECT_TRUE(CallCount{}.empty());
}

TEST(StatsCount, RecordsRoundTripAndSum) {
  CallCount hit;
  hit.key = std::string("a key\nwith \0 bytes", 18);
  hit.event = CacheEvent::hit;
  hit.bytes_served = 4096;
  hit.saved_ns = 2'000'000'000;
  CallCount build;
  build.key = "b";
  build.event = CacheEvent::build;
  build.bytes_stored = 100;
  build.build_ns = 5;
  build.store_errors = 1;
  build.warm_start = true;
  const std::string hit_line = stats_record(hit);
  EXPECT_EQ(hit_line.find('\n'), hit_line.size() - 1); // one line, whatever the KEY
  EXPECT_EQ(stats_record(build), "1 misses=1 builds=1 warm_starts=1 store_errors=1 bytes_stored=100 build_ns=5 key=62\n");

  StatsSums sums;
  sum_records(hit_line + stats_record(build) + hit_line, sums);
  EXPECT_EQ(sums.total.hits, 2u);
  EXPECT_EQ(sums.total.misses, 1u);
  EXPECT_EQ(sums.total.bytes_served, 8192u);
  EXPECT_EQ(sums.total.saved_ns, 4'000'000'000u);
  EXPECT_EQ(sums.total.store_errors, 1u);
  EXPECT_EQ(sums.total.warm_starts, 1u);
  ASSERT_EQ(sums.keys.count(hit.key), 1u);
  EXPECT_EQ(sums.keys[hit.key].hits, 2u);
  EXPECT_EQ(sums.keys["b"].builds, 1u);
}

TEST(StatsCount, TornAndForeignLinesAreSkipped) {
  CallCount hit;
  hit.key = "k";
  hit.event = CacheEvent::hit;
  const std::string line = stats_record(hit);
  StatsSums sums;
  sum_records("garbage\n2 hits=9 key=6b\n1 hits=x key=6b\n1 hits=1 key=6\n1 hits=3\n" + line +
                  "1 hits=1 later_counter=7 key=6b\n" + line.substr(0, line.size() - 1),
              sums);
  EXPECT_EQ(sums.total.hits, 2u); // the sound line, and one with a counter of a later version
  EXPECT_EQ(sums.keys.size(), 1u);
}

TEST(StatsCount, TopKeysAreTheTenThatSavedMost) {
  std::map<std::string, StatsCounters> keys;
  for (int i = 0; i < 15; ++i) {
    std::string key = "k";
    key += std::to_string(i);
    keys[key].saved_ns = static_cast<std::uint64_t>(i % 5 == 0 ? 0 : 100 + i);
  }
  const auto top = top_keys(keys);
  ASSERT_EQ(top.size(), 10u);
  EXPECT_EQ(top[0].key, "k14");
  EXPECT_EQ(top[0].counters.saved_ns, 114u);
  for (std::size_t i = 1; i < top.size(); ++i)
    EXPECT_GE(top[i - 1].counters.saved_ns, top[i].counters.saved_ns);
  EXPECT_EQ(top.back().key, "k3"); // 12 saved something; the two that saved least are left out
  std::map<std::string, StatsCounters> tied{{"b", {}}, {"a", {}}};
  EXPECT_EQ(top_keys(tied)[0].key, "a"); // ties by KEY: a stable order
  EXPECT_EQ(top_keys(keys, 3).size(), 3u);
  EXPECT_TRUE(top_keys({}).empty());
}

TEST(StatsCount, CounterFieldsSetBack) {
  StatsCounters c;
  c.hits = 1;
  c.saved_ns = 2;
  StatsCounters back;
  for (const auto& [name, value] : counter_fields(c))
    EXPECT_TRUE(set_counter(back, name, value));
  EXPECT_EQ(back, c);
  EXPECT_FALSE(set_counter(back, "key", 1));
}

// The one table: every counter of StatsCounters is in it once, under a
// distinct name, and a record of all of them sums back to the same.
TEST(StatsCount, EveryCounterIsKeptUnderItsOwnName) {
  StatsCounters all;
  std::uint64_t n = 0;
  for (const StatsFigure& f : stats_figures)
    if (f.field) all.*f.field = ++n;
  EXPECT_EQ(n * sizeof(std::uint64_t), sizeof(StatsCounters));
  EXPECT_EQ(counter_fields(all).size(), n);
  StatsSums sums;
  sum_records(stats_record("k", all), sums);
  EXPECT_EQ(sums.total, all);
  std::set<std::string_view> names;
  for (const auto& [name, value] : counter_fields(all))
    EXPECT_TRUE(names.insert(name).second) << name;
}

} // namespace
} // namespace bufferlock
