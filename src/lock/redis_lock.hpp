// The Redis backend (SPEC §7): SET NX PX through a script, a random token,
// compare-and-delete release, renewal while the command runs, and waiters
// woken through a short-lived list instead of polling blindly.
#pragma once

#include "lock/backoff.hpp"
#include "lock/holder_record.hpp"
#include "lock/lease.hpp"
#include "lock/lock.hpp"
#include "lock/settings.hpp"
#include "redis/client.hpp"
#include "redis/quorum.hpp"
#include "redis/scripts.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// PREFIX + md5hex(key), or {PREFIX}md5hex(key) with the hash tag.
std::string redis_lock_key(const LockSettings& settings, std::string_view key);

// Whole milliseconds of `d`, rounded to the nearest, at least 1.
long long round_to_ms(Nanos d);

// The holder record of a slot key, in the slot key's hash slot (SPEC §13).
std::string redis_holder_key(std::string_view slot_key);

// What `status` and `list` know of one slot key: its PTTL (-2: free, -1: no
// expiry) and its holder's record (empty when none matches the key's token).
struct RedisSlotState {
  long long pttl = -2;
  HolderInfo holder;
  std::string token; // the key's value ("" when free)
};

// The state of each of `slot_keys`, in one script and one round trip.
RedisResult<std::vector<RedisSlotState>> redis_slot_states(RedisClient& client,
                                                           const std::vector<std::string>& slot_keys);

// What a quorum of `n` servers says of one slot key, from the states of
// those that answered: held when a majority hold it (with one token, when
// `same_token`), for as long as that majority does (quorum_pttl); the
// holder's record when a majority of them recorded the same one, without
// its fence (each server counts its own; a quorum lock has none). Pure.
RedisSlotState quorum_slot_state(const std::vector<RedisSlotState>& answers, std::size_t n, bool same_token);

// redis_slot_states over a quorum (SPEC §13), one round trip to all.
RedisResult<std::vector<RedisSlotState>>
quorum_slot_states(QuorumClient& quorum, const std::vector<std::string>& slot_keys, bool same_token);

// What status and list show of a held slot: its TTL and holder.
StatusInfo redis_status_info(const RedisSlotState& s);

class RedisLock final : public Lock {
public:
  // Nothing is connected before it is needed (SPEC §7).
  // `slots` > 1: a counting semaphore of that many keys (SPEC §14), slot 0
  // being the plain lock key.
  RedisLock(const RedisLockSettings& settings, std::string_view key, unsigned slots = 1);

  Outcome acquire(Nanos wait, OnError on_error) override;
  void release() override;
  LockStatus status() override;
  std::string holder() override;
  std::string where() const override;
  LockPlace place() const override { return {true, server(), slot_keys_.front()}; }
  void export_env() const override;
  std::optional<Ticker> keepalive() override;
  unsigned slot() const override { return slot_; }
  std::optional<std::uint64_t> fence() const override { return fence_; }

  // For `acquire`, `release` and `extend`: the token of this holder.
  const std::string& token() const { return token_; }
  void use_token(std::string token) { token_ = std::move(token); }

  // Compare-and-delete with our token: true when deleted, false when the key
  // no longer held it (expired, or another holder's). The caller reports a
  // lock found lost (release() does, with a warning).
  RedisResult<bool> release_token();
  // Compare-and-PEXPIRE with our token and the TTL: false when not ours.
  RedisResult<bool> extend_token();

  // For the `release` and `extend` subcommands: `op` (release_token or
  // extend_token), retrying transient errors as a wait for the lock does.
  RedisResult<bool> retry_within(Nanos wait, RedisResult<bool> (RedisLock::*op)());

  // The server as messages name it (no password); all N of a quorum.
  std::string server() const;

private:
  // Runs a compare-with-our-token script (release, renew): true when it
  // found our token and acted, false when the key held another or none. A
  // kept connection that the server dropped meanwhile (a restart, its idle
  // timeout) is replaced and the script sent again at once.
  // `release`: compare-and-delete, else compare-and-PEXPIRE (of the slot
  // taken and its holder record; of the key alone on a quorum).
  // A cluster slot in mid-migration (TRYAGAIN, which lasts as long as the
  // migration) is not waited out: compare_by_key does the same one key a
  // command.
  RedisResult<bool> compare_script(bool release, std::string_view ms);
  // The lock key alone compared (and deleted or expired), then, when it was
  // ours, the wake-up (release) and the holder record, one command each:
  // commands of one key are served through a migration.
  RedisResult<bool> compare_by_key(bool release, std::string_view ms);
  // The lock was taken by a request sent at `sent_at`: the lease starts,
  // and the connections take the timeouts of renewals.
  void held(Nanos sent_at);
  // One SET NX attempt; `on_error` sees the error of a failed one.
  Outcome try_once(const std::function<void(const RedisError&)>& on_error);
  void pause(Nanos d);
  // The server (a majority of a quorum) answered at least once in this run.
  bool answered() const;
  // The one warning of an infinite wait that Redis cannot be reached.
  void say_still_trying(const RedisError& e);
  // The error that ends an infinite wait begun at `started` (monotonic)
  // because the server has not answered once within the outage allowance
  // (SPEC §7); nullopt while the wait goes on.
  std::optional<RedisError> unanswered_for_too_long(const RedisError& e, Nanos wait, Nanos started) const;
  // The renewal ticker (lock/lease.hpp has the timeline): returns the
  // monotonic time of its next call.
  Nanos renew(pid_t child);
  // A renewal that failed on an error: when to try again (within the
  // lease), or that the lock is lost because the server's TTL ran out.
  Nanos renew_failed(pid_t child, const RedisError& e);
  // Renewal found another token or none.
  Nanos lost(pid_t child);
  // Renewal has not confirmed the lease by its jeopardy moment: with
  // --on-lost term, SIGTERM now and SIGKILL --kill-after later.
  Nanos stop_unconfirmed(pid_t child);
  // After a SIGTERM: the SIGKILL when it is due.
  Nanos kill_when_due(pid_t child);

  RedisLockSettings settings_;
  std::string display_key_;
  std::string key_text_; // KEY as given, for the holder record
  std::string key_;
  unsigned slots_ = 1;
  std::vector<std::string> slot_keys_;    // slot 0 is key_
  std::vector<std::string> holder_keys_;  // one per slot
  std::vector<std::string> acquire_keys_; // the fence counter, then each slot key and its record
  unsigned slot_ = 0;
  std::optional<std::uint64_t> fence_;
  std::string wake_key_;
  std::string token_;
  std::string ttl_ms_;
  RedisClient client_;
  std::optional<QuorumClient> quorum_;     // with several --redis
  bool wake_by_list_ = true;               // false after a server refused a fractional BLPOP timeout
  std::optional<RedisError> wake_refused_; // the ACL refused our BLPOP: the wait ends with it
  bool lost_ = false;                      // renewal found it gone: nothing to release
  bool unconfirmed_ = false;               // stopped at the lease's jeopardy: it may still be ours
  std::optional<Nanos> kill_at_;           // after a SIGTERM: when SIGKILL is due
  bool wait_error_reported_ = false;
  // From the send time of the last successful SET or PEXPIRE (SPEC §7).
  Lease lease_;
  std::optional<Backoff> renew_retry_; // set while renewals fail
  bool renew_error_reported_ = false;
  bool jeopardy_warned_ = false; // without --on-lost term: the one warning
};

} // namespace bufferlock
