// `bufferlock list` for the Redis backend (SPEC §14): SCAN over the
// namespace (MATCH, COUNT; never KEYS, which would block the server), then
// the status script for each lock found. On a cluster, SCAN on every master
// (CLUSTER SLOTS names them).
#pragma once

#include "cli.hpp"

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
std::optional<RedisLockName> parse_redis_lock_name(const RedisSettings& settings, std::string_view name);

// One line per lock held now, by digest then slot: the KEY its holder
// recorded (list_key_text) or "md5:DIGEST", " slot=I" for a slot key, then
// the fields of `status` (ttl= and the holder's). On error, the message (no
// prefix) in `error`.
std::string list_redis_locks(const RedisSettings& settings, std::optional<std::string>& error);

} // namespace bufferlock
