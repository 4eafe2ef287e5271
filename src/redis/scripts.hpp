// The Lua scripts of the Redis layout (SPEC §7, §14). The quorum's take the
// shape KEYS = {lock key[, wake key]}, ARGV = {token, milliseconds}; the
// single server's (slots, fences, holder records) take their keys as lists,
// all in the lock key's hash slot. A script names only the keys it touches: on a
// cluster slot being migrated, a command naming two keys of which one is
// missing gets TRYAGAIN where one naming the lock key alone is redirected. The SHA-1 digests are pinned here
// (EVALSHA needs them, and computing them would pull OpenSSL into start-up); a unit test checks them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

struct RedisScript {
  std::string_view source;
  std::string_view sha1;
  int keys; // 1: the lock key; 2: and the wake key; more, or -1 (any number): as the script says
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

// Takes the first free of N slot keys (--slots; N = 1 for a plain lock) and
// records the holder, in one round trip (SPEC §14). KEYS = {fence counter,
// slot 0 key, its holder record, slot 1 key, its record, ...}; ARGV = {token,
// ms, "PID\nHOST\nSINCE\nKEY"} (SINCE: CLOCK_REALTIME ns; one argument, so
// that a plain lock's EVALSHA stays within the 10 arguments a server that
// wants a password reads before AUTH, and its NOAUTH still reaches us). A slot key keeps the
// SET-NX-PX layout (a free key is SET PX after GET found it empty, within
// the script, so atomically). A slot that already holds our token is ours
// (a retried attempt), with its recorded fence. Replies {slot, fence}, or
// nil when every slot is held.
//
// The fence is max(counter + 1, the server's clock in ms) and the counter
// expires a day (or the lock's TTL when longer) after the last
// acquisition, so that a key per input state (--depends) does not stay for
// ever. Why fences still only grow: a fence runs ahead of the clock only
// by acquisitions coming faster than one a millisecond, by at most one per
// acquisition; so when the counter has expired (no acquisition for a day)
// the clock is past every fence it gave, unless more than a day's worth of
// milliseconds (86.4 million) of acquisitions came in excess of the clock,
// or the server's clock went back by about a day. TIME before a write needs
// the script's effects replicated: the default from Redis 5 on, asked for
// (redis.replicate_commands) on 3.2 to 4; a server older than that cannot,
// and keeps the counter without a TTL, as before. The clock and the counter
// come before the slot is written: a script that an ACL refuses one of
// them (the server does not undo a script's writes) leaves no lock behind.
inline constexpr RedisScript acquire_slots_script{
    "local clock = redis.replicate_commands and redis.replicate_commands() local free for i = 2, #KEYS, "
    "2 do local v = redis.call('GET', KEYS[i]) if v == ARGV[1] then "
    "redis.call('PEXPIRE', KEYS[i], ARGV[2]) local f = redis.call('HGET', KEYS[i+1], 'fence') if f "
    "then redis.call('PEXPIRE', KEYS[i+1], ARGV[2]) return {i/2-1, tonumber(f)} end free = i break "
    "end if not v and not free then free = i end end if not free then return false end "
    "local t = clock and redis.call('TIME') local f = redis.call('INCR', KEYS[1]) if t then "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) if f < now then f = now "
    "redis.call('SET', KEYS[1], f) end redis.call('PEXPIRE', KEYS[1], math.max(86400000, "
    "tonumber(ARGV[2]))) end redis.call('SET', KEYS[free], ARGV[1], 'PX', ARGV[2]) "
    "local pid, host, since, key = string.match(ARGV[3], '^(%d*)\\n([^\\n]*)\\n(%d*)\\n(.*)$') "
    "redis.call('DEL', KEYS[free+1]) redis.call('HMSET', KEYS[free+1], 'token', ARGV[1], 'pid', pid "
    "or '', 'host', host or '', 'since', since or '', 'fence', f, 'key', key or '') "
    "redis.call('PEXPIRE', KEYS[free+1], ARGV[2]) return {free/2-1, f}",
    "ece505d55617d6581ce170037aaad55e515bff58", -1};

// Compare-and-delete of a slot key and its holder record, then wakes one
// waiter (as release_script). KEYS = {slot key, wake key, holder record}.
inline constexpr RedisScript release_slot_script{
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1], KEYS[3]) "
    "redis.call('DEL', KEYS[2]) redis.call('RPUSH', KEYS[2], '1') redis.call('PEXPIRE', KEYS[2], "
    "ARGV[2]) return 1 end return 0",
    "ba980c0c80d4b2313f0262bf452a062a90208969", 3};

// Compare-and-PEXPIRE of a slot key and its holder record. KEYS = {slot
// key, holder record}.
inline constexpr RedisScript renew_slot_script{
    "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('PEXPIRE', KEYS[2], ARGV[2]) return "
    "redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0",
    "5fc2a5bb525e36548375fb514e01b5433cbf5f79", 2};

// For `status` and `list`: per slot, its PTTL, the holder record's pid,
// host, since, fence and key ("" each when unknown), and the slot key's value
// (the holder's token; "" when free or not a string: a quorum compares them).
// A record whose token is not the key's value (a foreign SET, a record
// outliving its lock) is not shown. KEYS = {slot key, holder record, ...}. Read-only.
inline constexpr RedisScript status_slots_script{
    "local out = {} for i = 1, #KEYS, 2 do local t = redis.call('PTTL', KEYS[i]) out[#out+1] = t "
    "local v = redis.pcall('GET', KEYS[i]) if type(v) ~= 'string' then v = '' end local r = {} if t "
    "~= -2 then r = redis.call('HMGET', KEYS[i+1], 'token', 'pid', 'host', 'since', 'fence', 'key') "
    "if r[1] ~= v then r = {} end end for j = 2, 6 do out[#out+1] = r[j] or '' end out[#out+1] = v "
    "end return out",
    "19ff3205706f9a81b1cdf4cbd05a5e0c2dffc4da", -1};

// The single-key steps of a release, a renewal and a status read, for a
// cluster slot in mid-migration: there a script naming several keys of which
// some have moved gets TRYAGAIN for as long as the migration lasts, while a
// command naming one key is always served (after ASK).

// Compare-and-delete of one key (a slot key alone): 1 when deleted, else 0.
inline constexpr RedisScript unlock_key_script{
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
    "6fbe84d1140fd2047394924af9d845b83c070bec", 1};

// A holder record's compare-and-delete (ARGV[2] "0") or compare-and-PEXPIRE,
// by the token it records. KEYS = {holder record}; ARGV = {token, ms}.
inline constexpr RedisScript holder_record_script{
    "if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end if ARGV[2] == '0' then return "
    "redis.call('DEL', KEYS[1]) end return redis.call('PEXPIRE', KEYS[1], ARGV[2])",
    "7382d4d5b8154e7e56a6f06c7e365e274acb35e4", 1};

// The wake-up of release_script alone. KEYS = {wake key}; ARGV = {ms}.
inline constexpr RedisScript wake_script{
    "redis.call('DEL', KEYS[1]) redis.call('RPUSH', KEYS[1], '1') return redis.call('PEXPIRE', KEYS[1], "
    "ARGV[1])",
    "9fdb0dd9089a727dfeb2825af24bd83fae4795cf", 1};

// The EVALSHA words of a script call whose EVAL words are `eval`: the same
// but the first two.
inline std::vector<std::string_view> evalsha_words(std::vector<std::string_view> eval,
                                                   const RedisScript& script) {
  eval[0] = "EVALSHA";
  eval[1] = script.sha1;
  return eval;
}

// The EVAL words of a lock script: its source, its key count, the lock key
// (and the wake key when it takes two), the token and the milliseconds
// (evalsha_words gives their EVALSHA form).
inline std::vector<std::string_view> eval_args(const RedisScript& script, std::string_view lock_key,
                                               std::string_view wake_key, std::string_view token,
                                               std::string_view ms) {
  std::vector<std::string_view> args{"EVAL", script.source, script.keys == 2 ? "2" : "1", lock_key};
  if (script.keys == 2) args.push_back(wake_key);
  args.push_back(token);
  args.push_back(ms);
  return args;
}

// The EVAL words of any script: its source, `nkeys` (the count of `keys`, as
// text, kept alive by the caller), the KEYS and the ARGV. For EVALSHA, as above.
inline std::vector<std::string_view> eval_words(const RedisScript& script, std::string_view nkeys,
                                                const std::vector<std::string>& keys,
                                                const std::vector<std::string_view>& argv) {
  std::vector<std::string_view> args{"EVAL", script.source, nkeys};
  args.insert(args.end(), keys.begin(), keys.end());
  args.insert(args.end(), argv.begin(), argv.end());
  return args;
}

} // namespace bufferlock
