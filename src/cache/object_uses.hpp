// The last uses of a remote store's objects (an http or S3 store, SPEC §22),
// kept where such a store cannot keep them cheaply itself: in the -r Redis,
// one hash per store location,
//   PREFIX uses:<md5 of the store's location>   field: object name, value: ms since the epoch
// with a time to live (uses_ttl) renewed by each write, as every key
// bufferlock writes has one. A store without -r has none: its --gc weighs
// entries by their build.
#pragma once

#include "lock/settings.hpp"
#include "util/files.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace bufferlock {

class RedisStore;

// How long a store's record of uses outlives its last write: a store
// unused this long is weighed by its entries' builds again.
inline constexpr std::int64_t uses_ttl_ms = 30LL * 24 * 3600 * 1000;

class ObjectUses {
public:
  // The uses of the store at `location` (its URL, password hidden), in the
  // Redis `redis` (-r, made with the key prefix `prefix`), whose connection
  // the store's counters share (stats_redis.hpp). Nothing is connected
  // before the first use.
  ObjectUses(std::shared_ptr<const RedisStore> redis, const std::string& prefix, const std::string& location);
  ~ObjectUses();

  // The hash's name.
  const std::string& key() const { return key_; }
  // A hit's use of object `name` at `now_ns`: one command, which writes only
  // when the last use recorded is a minute old or more. Failures are not said.
  void record(const std::string& name, std::int64_t now_ns) const;
  // Every use recorded: object name -> ns since the epoch.
  std::variant<std::map<std::string, std::int64_t>, SysError> read() const;
  // Forgets the uses of `names` (objects that went).
  void forget(const std::vector<std::string>& names) const;
  // In a forked child: its own connection.
  void after_fork() const;

private:
  std::shared_ptr<const RedisStore> redis_; // its connection and commands, shared with the Redis store
  std::string key_;
};

} // namespace bufferlock
