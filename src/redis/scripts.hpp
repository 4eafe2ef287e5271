// The Lua scripts of the Redis layout (SPEC §7). Every script takes the same
// shape: KEYS = {lock key[, wake key]}, ARGV = {token, milliseconds}, so one
// helper runs them all. A script names only the keys it touches: on a
// cluster slot being migrated, a command naming two keys of which one is
// missing gets TRYAGAIN where one naming the lock key alone is redirected. The SHA-1 digests are pinned here
// (EVALSHA needs them, and computing them would pull OpenSSL into start-up); a unit test checks them.
#pragma once

#include <string_view>

namespace bufferlock {

struct RedisScript {
  std::string_view source;
  std::string_view sha1;
  int keys; // 1: the lock key; 2: and the wake key
};

// SET lock token NX PX ms: status OK when taken, nil when held. A key that
// already holds our token is ours too: an attempt that timed out can still
// have run on the server once it answered again, and the retry (with the same
// token) must not then wait for our own lock to expire.
inline constexpr RedisScript acquire_script{
    "local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[1], "
    "'PX', ARGV[2]) end return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
    "513f545b99b4965142b2c95d1c7e81972dcdc30f", 1};

// Compare-and-delete: deletes the lock only if it still holds our token, and
// then wakes one waiter through a short-lived list (the wake key, expiring
// after ARGV[2] ms). 1 when deleted, 0 when not ours (expired or taken over).
inline constexpr RedisScript release_script{
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) redis.call('DEL', KEYS[2]) "
    "redis.call('RPUSH', KEYS[2], '1') redis.call('PEXPIRE', KEYS[2], ARGV[2]) return 1 end return 0",
    "a0f1b65b7a9a0ca97ba0babef262e74aa80ed530", 2};

// Compare-and-PEXPIRE: 1 when the lock is still ours and renewed, else 0.
inline constexpr RedisScript renew_script{"if redis.call('GET', KEYS[1]) == ARGV[1] then return "
                                          "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
                                          "e50f848e374a94192aa6f2e444e7eb8acc16501d", 1};

} // namespace bufferlock
