// `bufferlock list` for the Redis backend (SPEC §14): SCAN over the
// namespace (MATCH, COUNT; never KEYS, which would block the server), then
// the status script for each lock found. On a cluster, SCAN on every master
// (CLUSTER SLOTS names them).
#pragma once

#include "lock/settings.hpp"
#include "lock/status_format.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// Where a Redis key name sits in the lock layout of `settings`: the MD5 of
// its KEY and its slot (0: the lock key itself), or nullopt for any other
// key (wake lists, fence counters, holder records, other programs'). Pure.
struct RedisLockName {
  std::string digest;
  unsigned slot = 0;
};
std::optional<RedisLockName> parse_redis_lock_name(const LockSettings& settings, std::string_view name);

// Every lock held now, by digest then slot, with its TTL and what its holder
// recorded. On error, the message (no prefix) in `error`.
std::vector<ListedLock> list_redis_locks(const RedisLockSettings& settings,
                                         std::optional<std::string>& error);

} // namespace bufferlock
