// The Redis backend (SPEC §7): SET NX PX through a script, a random token,
// compare-and-delete release, renewal while the command runs, and waiters
// woken through a short-lived list instead of polling blindly.
#pragma once

#include "cli.hpp"
#include "lock/lock.hpp"
#include "redis/connection.hpp"
#include "redis/scripts.hpp"

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

  Outcome acquire(Nanos wait) override;
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
  // no longer held it (expired, or another holder's).
  RedisResult<bool> release_token();
  // Compare-and-PEXPIRE with our token and the TTL: false when not ours.
  RedisResult<bool> extend_token();

  // The server as messages name it (no password).
  std::string server() const { return settings_.url.display(); }

private:
  RedisResult<RedisConnection*> connection();
  // Runs a compare-with-our-token script (release, renew): true when it
  // found our token and acted, false when the key held another or none.
  RedisResult<bool> compare_script(const RedisScript& script, std::string_view ms);
  void drop_connection_after(const RedisError& e);
  Outcome try_once();
  void pause(Nanos d);
  Nanos renew(pid_t child);
  // About TTL/3 (at least 1 ms): renewals keep a lock whose TTL would run out.
  Nanos renew_interval() const;

  RedisSettings settings_;
  std::string display_key_;
  std::string key_;
  std::string wake_key_;
  std::string token_;
  std::string ttl_ms_;
  std::optional<RedisConnection> conn_;
  bool wake_by_list_ = true; // false after a server refused a fractional BLPOP timeout
  bool lost_ = false;
  bool renew_error_reported_ = false;
  bool kill_pending_ = false;
};

} // namespace bufferlock
