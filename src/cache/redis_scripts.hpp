// The Lua scripts of the Redis cache store (--store redis, SPEC §15), with
// their SHA-1 digests pinned like the lock's (a unit test checks them).
#pragma once

#include "redis/scripts.hpp"

namespace bufferlock {

// An entry is a hash (see redis_store.hpp): field "h" the header, fields
// "0", "1", ... the body in parts, field "t" the trailer. Parts are separate
// values, so a large entry is never one string that grows by reallocation
// (APPEND to a 100 MiB string copies it whenever the allocator cannot grow it
// in place: hundreds of milliseconds of a blocked server).

// Stores a build's next part in its temporary hash and resets its time to
// live. KEYS = {temporary key}; ARGV = {bytes, ttl ms, the number of parts
// the builder has sent so far}. The new number of parts, or -1 when the key
// does not hold what the builder sent (it expired during a long silence).
inline constexpr RedisScript cache_append_script{
    "local n = redis.call('HLEN', KEYS[1]) if n ~= tonumber(ARGV[3]) then return -1 end redis.ca"
    "ll('HSET', KEYS[1], ARGV[3], ARGV[1]) redis.call('PEXPIRE', KEYS[1], ARGV[2]) return n + 1",
    "b4c035143c7490c2aebe0c40c2937a950bc715c6", 1};

// Completes a temporary hash and renames it into place, in one step: readers
// get the previous entry or the whole new one. KEYS = {temporary key, entry
// key}; ARGV = {the last part (may be empty), the header, the trailer, the
// number of parts sent before, expiry ms or 0 (none)}. 1 when published, 0
// when the temporary key is not the builder's any more.
inline constexpr RedisScript cache_publish_script{
    "if redis.call('HLEN', KEYS[1]) ~= tonumber(ARGV[4]) then return 0 end if #ARGV[1] > 0 then"
    " redis.call('HSET', KEYS[1], ARGV[4], ARGV[1]) end redis.call('HSET', KEYS[1], 'h', ARGV[2"
    "]) redis.call('HSET', KEYS[1], 't', ARGV[3]) redis.call('RENAME', KEYS[1], KEYS[2]) if ARG"
    "V[5] == '0' then redis.call('PERSIST', KEYS[2]) else redis.call('PEXPIRE', KEYS[2], ARGV[5"
    "]) end return 1",
    "774f74710653870b3d7e36e19a62c8d0994f9216", 2};

// A hit's use of an entry (SPEC §22): its hash's field "u", the time in ms,
// set only while the entry is there (never a hash of "u" alone, which would
// have no time to live); its time to live is kept. KEYS = {entry key};
// ARGV = {now ms}. 1 when recorded.
inline constexpr RedisScript cache_use_script{
    "if redis.call('HEXISTS', KEYS[1], 'h') == 1 then redis.call('HSET', KEYS[1], 'u', ARGV[1]) return 1"
    " end return 0",
    "f8e3eab62488f0fe59ebd1be945aabcf00f9360d", 1};

// --gc's removal of an entry it weighed: only while its header and last
// use are those it read (an entry rebuilt or hit meanwhile stays).
// KEYS = {entry key}; ARGV = {header, last use as read or ""}. 1 when removed.
inline constexpr RedisScript cache_gc_del_script{
    "local v = redis.call('HMGET', KEYS[1], 'h', 'u') if v[1] == ARGV[1] and (v[2] or '') == ARGV[2] "
    "then return redis.call('DEL', KEYS[1]) end return 0",
    "4730a69534f7af7929f252deabe289770b13d276", 1};

// A use of an object of an http (or S3) store in the -r Redis: field NAME
// of the store's hash of uses, the time in ms, written at most once per
// RESOLUTION ms; the hash lives TTL ms after its last write. KEYS = {hash};
// ARGV = {name, now ms, resolution ms, ttl ms}. 1 when recorded.
inline constexpr RedisScript cache_object_use_script{
    "local u = tonumber(redis.call('HGET', KEYS[1], ARGV[1])) if u and tonumber(ARGV[2]) - u < tonum"
    "ber(ARGV[3]) then return 0 end redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) redis.call('PEXPIR"
    "E', KEYS[1], ARGV[4]) return 1",
    "7ada4806ee991fb2bd5aca7da4831a0c14af818a", 1};

// cache --stats (SPEC §21): one call's counts added to the totals and to its
// KEY's hash, the KEY's seconds saved to the sorted set, and the time to
// live of all three renewed. KEYS = {totals, sorted set, KEY's hash}; ARGV =
// {ttl ms, KEY, ms saved, then counter name and increment pairs}.
inline constexpr RedisScript cache_stats_count_script{
    "for i = 4, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) redis.call('HINC"
    "RBY', KEYS[3], ARGV[i], ARGV[i + 1]) end redis.call('HSET', KEYS[3], 'key', ARGV[2]) redis.c"
    "all('ZINCRBY', KEYS[2], ARGV[3], KEYS[3]) for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARG"
    "V[1]) end return 1",
    "3acf42835728339f02c57d840e03b155f3073a22", 3};

// --stats --zero: the totals, the sorted set and every KEY's hash it names
// removed (all in the totals' hash slot). KEYS = {totals, sorted set}.
inline constexpr RedisScript cache_stats_zero_script{
    "local m = redis.call('ZRANGE', KEYS[2], 0, -1) for _, k in ipairs(m) do redis.call('DEL', k)"
    " end redis.call('DEL', KEYS[1], KEYS[2]) return #m",
    "243eecd98b11d06212cfac3cb61b3e77afcbc852", 2};

} // namespace bufferlock
