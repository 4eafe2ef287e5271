// The counters of a store kept in a Redis (SPEC §21): the Redis store's in
// its own server, an http or S3 store's in the -r Redis; fleet-wide. Keys,
// in one hash slot (a script updates them together, in a cluster too):
//   {PREFIXstats}                 the totals: a hash of counter -> value
//   {PREFIXstats}:saved           a sorted set: per-KEY hash -> ms saved
//   {PREFIXstats}:key:<md5 of KEY>  one KEY's counters, and field "key"
// where a remote store's base is {PREFIXstats:<md5 of its location>}. Each
// write renews their time to live (stats_ttl_ms), as every key bufferlock
// writes has one.
#pragma once

#include "cache/stats_count.hpp"
#include "lock/settings.hpp"

#include <memory>

namespace bufferlock {

class RedisStore;

inline constexpr std::int64_t stats_ttl_ms = 30LL * 24 * 3600 * 1000;

class StatsRedis final : public StatsSink {
public:
  // The counters of the Redis store `store`, on its connection.
  explicit StatsRedis(const RedisStore& store, const std::string& prefix);
  // The counters of the remote store at `location` (password hidden), in
  // the -r Redis `redis` (key prefix `prefix`), on the connection that the
  // store's record of uses shares: a hit's count follows its use there.
  // Nothing is connected before the first use.
  StatsRedis(std::shared_ptr<const RedisStore> redis, const std::string& prefix, const std::string& location);
  ~StatsRedis() override;

  void count(const CallCount& c) const override;
  std::variant<StatsSums, SysError> read() const override;
  std::optional<SysError> zero() const override;
  void after_fork() const override;

private:
  std::shared_ptr<const RedisStore> own_; // with -r
  const RedisStore* redis_;
  std::string base_; // {PREFIXstats...}
};

} // namespace bufferlock
