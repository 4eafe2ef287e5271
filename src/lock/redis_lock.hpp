// The Redis backend (SPEC §7): SET NX PX through a script, a random token,
// compare-and-delete release, renewal while the command runs, and waiters
// woken through a short-lived list instead of polling blindly.
#pragma once

#include "cli.hpp"
#include "lock/backoff.hpp"
#include "lock/lock.hpp"
#include "redis/client.hpp"
#include "redis/quorum.hpp"
#include "redis/scripts.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// PREFIX + md5hex(key), or {PREFIX}md5hex(key) with the hash tag.
std::string redis_lock_key(const RedisSettings& settings, std::string_view key);

// Whole milliseconds of `d`, rounded to the nearest, at least 1.
long long round_to_ms(Nanos d);

class RedisLock final : public Lock {
public:
  // Nothing is connected before it is needed (SPEC §7).
  RedisLock(const RedisSettings& settings, std::string_view key);

  Outcome acquire(Nanos wait, OnError on_error) override;
  void release() override;
  LockStatus status() override;
  std::string holder() override;
  std::string where() const override;
  void export_env() const override;
  std::optional<Ticker> keepalive() override;

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
  RedisResult<bool> compare_script(const RedisScript& script, std::string_view ms);
  // One SET NX attempt; `on_error` sees the error of a failed one.
  Outcome try_once(const std::function<void(const RedisError&)>& on_error);
  void pause(Nanos d);
  Nanos renew(pid_t child);
  // A renewal that failed on an error: when to try again, or that the lock
  // is lost because its TTL ran out since the last successful renewal.
  Nanos renew_failed(pid_t child, const RedisError& e);
  Nanos lost(pid_t child);
  // About TTL/3 (at least 1 ms): renewals keep a lock whose TTL would run out.
  Nanos renew_interval() const;

  RedisSettings settings_;
  std::string display_key_;
  std::string key_;
  std::string wake_key_;
  std::string token_;
  std::string ttl_ms_;
  RedisClient client_;
  std::optional<QuorumClient> quorum_; // with several --redis
  bool wake_by_list_ = true;           // false after a server refused a fractional BLPOP timeout
  bool lost_ = false;
  bool kill_pending_ = false;
  bool wait_error_reported_ = false;
  // When the last successful SET or PEXPIRE was sent: the lock is surely
  // gone one TTL later. Renewal errors are retried until then.
  Nanos confirmed_at_{0};
  std::optional<Backoff> renew_retry_; // set while renewals fail
  bool renew_error_reported_ = false;
};

} // namespace bufferlock
