// The Lua scripts of the Redis cache store (--store redis, SPEC §15), with
// their SHA-1 digests pinned like the lock's (a unit test checks them).
#pragma once

#include "redis/scripts.hpp"

namespace bufferlock {

// Appends a chunk to a build's temporary key and resets its time to live.
// KEYS = {temporary key}; ARGV = {bytes, ttl ms, the length the builder has
// sent so far}. The new length, or -1 when the key does not hold what the
// builder sent (it expired during a long silence): APPEND would otherwise
// start a key without a time to live holding only a tail.
inline constexpr RedisScript cache_append_script{
    "local n = redis.call('STRLEN', KEYS[1]) if n ~= tonumber(ARGV[3]) then return -1 end local"
    " m = redis.call('APPEND', KEYS[1], ARGV[1]) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return"
    " m",
    "19a1214b820c14086db7d178bf11236eff188e5b", 1};

// Completes a temporary key and renames it into place, in one step: readers
// get the previous entry or the whole new one. KEYS = {temporary key, entry
// key}; ARGV = {the last bytes, the final header, the trailer, the length sent
// before, expiry ms or 0 (none)}. 1 when published, 0 when the temporary key
// is not the builder's any more.
inline constexpr RedisScript cache_publish_script{
    "if redis.call('STRLEN', KEYS[1]) ~= tonumber(ARGV[4]) then return 0 end redis.call('APPEND"
    "', KEYS[1], ARGV[1]) redis.call('SETRANGE', KEYS[1], 0, ARGV[2]) redis.call('APPEND', KEYS"
    "[1], ARGV[3]) redis.call('RENAME', KEYS[1], KEYS[2]) if ARGV[5] == '0' then redis.call('PE"
    "RSIST', KEYS[2]) else redis.call('PEXPIRE', KEYS[2], ARGV[5]) end return 1",
    "f15c0e5fcf6c73b722adb4fd3556faf457e2124d", 2};

} // namespace bufferlock
