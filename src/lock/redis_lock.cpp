#include "lock/redis_lock.hpp"

#include "lock/backoff.hpp"
#include "messages.hpp"
#include "redis/cluster.hpp"
#include "redis/scripts.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/md5.hpp"
#include "util/random.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace bufferlock {

namespace {

// How long a release's wake-up stays for a waiter that is between its try and
// its BLPOP; after that, waiters fall back to polling anyway.
constexpr std::string_view wake_ttl_ms = "2000";

} // namespace

std::string redis_lock_key(const RedisSettings& settings, std::string_view key) {
  if (settings.hash_tag) return "{" + settings.key_prefix + "}" + md5_hex(key);
  return settings.key_prefix + md5_hex(key);
}

long long round_to_ms(Nanos d) { return std::max<long long>(1, (d.count() + 500'000) / 1'000'000); }

RedisLock::RedisLock(const RedisSettings& settings, std::string_view key)
    : settings_(settings), display_key_(display_key(key)), key_(redis_lock_key(settings, key)),
      // In the lock key's slot, so that the release script runs on a cluster.
      wake_key_(companion_key(key_, ":wake")), ttl_ms_(std::to_string(round_to_ms(settings.ttl))),
      client_(settings.url, settings.password, {settings.connect_timeout, settings.io_timeout}) {
  if (settings.quorum.size() > 1)
    quorum_.emplace(settings.quorum, RedisTimeouts{settings.connect_timeout, settings.io_timeout});
}

std::string RedisLock::server() const { return quorum_ ? quorum_->server() : settings_.url.display(); }

Outcome RedisLock::try_once(const std::function<void(const RedisError&)>& on_error) {
  const Nanos started = monotonic_now();
  auto failed = [&](const RedisError& e) {
    on_error(e);
    return Outcome::failed(message(Msg::redis_lock_failed, {{"server", server()}, {"error", e.text}}),
                           e.recovery);
  };
  if (quorum_) {
    auto taken = quorum_->acquire(key_, wake_key_, token_, ttl_ms_, settings_.ttl);
    if (auto* e = std::get_if<RedisError>(&taken)) return failed(*e);
    if (!std::get<bool>(taken)) return Outcome::busy();
    confirmed_at_ = started;
    return Outcome::acquired();
  }
  auto reply = client_.script(acquire_script, key_, wake_key_, token_, ttl_ms_);
  if (auto* e = std::get_if<RedisError>(&reply)) return failed(*e);
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type == REDIS_REPLY_STATUS && std::string_view(r->str, r->len) == "OK") {
    confirmed_at_ = started; // the TTL started no earlier than this
    return Outcome::acquired();
  }
  if (r->type == REDIS_REPLY_NIL) return Outcome::busy();
  return failed(redis_error(RedisError::Kind::protocol, "unexpected reply to the acquire script"));
}

void RedisLock::pause(Nanos d) {
  // A release pushes to the wake list: BLPOP returns as soon as it does,
  // instead of when the back-off's pause is over.
  if (quorum_) {
    if (quorum_->wait_wake(wake_key_, d, settings_.io_timeout)) return;
  } else if (wake_by_list_ && client_.connected()) {
    const std::string timeout = format_seconds(std::max(d, Nanos(1'000'000)));
    auto reply = client_.command(wake_key_, {"BLPOP", wake_key_, timeout}, d + settings_.io_timeout);
    if (auto* e = std::get_if<RedisError>(&reply)) {
      // A server before 6.0 takes whole seconds only: poll from now on.
      if (e->kind == RedisError::Kind::server && !e->transient()) wake_by_list_ = false;
    } else {
      return;
    }
  }
  const timespec ts = to_timespec(d);
  ::nanosleep(&ts, nullptr);
}

Outcome RedisLock::acquire(Nanos wait, OnError on_error) {
  if (token_.empty()) token_ = random_token();
  if (token_.empty())
    return Outcome::failed(message(Msg::redis_token_failed, {{"error", errno_text(errno)}}),
                           Recovery::permanent);
  // A finite wait ends with the error if Redis stays away; an infinite one
  // would be silent for as long as it does: say once why we are still waiting.
  const bool say_retrying = wait == infinite_duration && on_error == OnError::retry;
  const auto on_attempt_error = [this, say_retrying](const RedisError& e) {
    if (!say_retrying || !e.transient() || wait_error_reported_) return;
    wait_error_reported_ = true;
    diag::warn(message(Msg::redis_wait_retrying, {{"server", server()}, {"error", e.text}}));
  };
  return poll_until(
      wait, on_error, Backoff(settings_.step, settings_.ratio, settings_.max_step),
      [&] { return try_once(on_attempt_error); }, [this](Nanos d) { pause(d); });
}

RedisResult<bool> RedisLock::compare_script(const RedisScript& script, std::string_view ms) {
  if (quorum_) return quorum_->compare(script, key_, wake_key_, token_, ms);
  auto once = [&]() -> RedisResult<bool> {
    auto reply = client_.script(script, key_, wake_key_, token_, ms);
    if (auto* e = std::get_if<RedisError>(&reply)) return *e;
    const redisReply* r = std::get<RedisReply>(reply).get();
    return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  };
  const bool reused = client_.connected();
  auto result = once();
  // A kept connection may have been closed since its last use (a restart,
  // the server's idle timeout): that says nothing about the server now.
  if (const auto* e = std::get_if<RedisError>(&result); e && reused && e->kind == RedisError::Kind::dropped)
    result = once();
  return result;
}

RedisResult<bool> RedisLock::retry_within(Nanos wait, RedisResult<bool> (RedisLock::*op)()) {
  RedisResult<bool> last = false;
  const bool say_retrying = wait == infinite_duration;
  poll_until(
      wait, OnError::retry, Backoff(settings_.step, settings_.ratio, settings_.max_step),
      [&] {
        last = (this->*op)();
        const auto* e = std::get_if<RedisError>(&last);
        if (!e) return Outcome::acquired(); // done, whatever the answer
        if (say_retrying && e->transient() && !wait_error_reported_) {
          wait_error_reported_ = true;
          diag::warn(message(Msg::redis_wait_retrying, {{"server", server()}, {"error", e->text}}));
        }
        return Outcome::failed({}, e->recovery);
      },
      [](Nanos d) {
        const timespec ts = to_timespec(d);
        ::nanosleep(&ts, nullptr);
      });
  return last;
}

RedisResult<bool> RedisLock::release_token() { return compare_script(release_script, wake_ttl_ms); }

RedisResult<bool> RedisLock::extend_token() { return compare_script(renew_script, ttl_ms_); }

void RedisLock::release() {
  if (lost_) return; // not ours any more: nothing to delete
  auto released = release_token();
  if (auto* e = std::get_if<RedisError>(&released)) {
    diag::warn(message(Msg::redis_unlock_failed, {{"server", server()}, {"error", e->text}}));
  } else if (!std::get<bool>(released)) {
    // The command ran (part of) its critical section without the lock: that
    // must not pass unnoticed (SPEC §7).
    diag::warn(message(Msg::redis_released_not_ours, {{"key", display_key_}, {"server", server()}}));
  } else {
    diag::debug_lazy([&] { return message(Msg::lock_released, {{"key", display_key_}}); });
  }
}

LockStatus RedisLock::status() {
  auto failed = [&](const RedisError& e) {
    return LockStatus{
        LockState::error, {}, message(Msg::redis_status_failed, {{"server", server()}, {"error", e.text}})};
  };
  long long ttl = -2;
  if (quorum_) {
    auto t = quorum_->pttl(key_);
    if (auto* e = std::get_if<RedisError>(&t)) return failed(*e);
    ttl = std::get<long long>(t);
  } else {
    auto reply = client_.command(key_, {"PTTL", key_});
    if (auto* e = std::get_if<RedisError>(&reply)) return failed(*e);
    const redisReply* r = std::get<RedisReply>(reply).get();
    if (r->type != REDIS_REPLY_INTEGER)
      return failed(redis_error(RedisError::Kind::protocol, "unexpected reply to PTTL"));
    ttl = r->integer;
  }
  if (ttl == -2) return {LockState::free, {}, {}};
  if (ttl == -1) return {LockState::held, " ttl=none", {}};
  if (ttl < 0) return failed(redis_error(RedisError::Kind::protocol, "unexpected reply to PTTL"));
  // From the milliseconds as they are: in nanoseconds a TTL Redis accepts (up to
  // ~292 million years) would overflow.
  return {LockState::held, fmt::format(" ttl={}.{:03}", ttl / 1000, ttl % 1000), {}};
}

std::string RedisLock::holder() {
  const LockStatus s = status();
  if (s.state != LockState::held) return {};
  // The same fields as `status` prints (SPEC §9).
  return "held by another token," + s.fields;
}

std::string RedisLock::where() const { return key_ + " on " + server(); }

void RedisLock::export_env() const {
  ::setenv("BUFFERLOCK_BACKEND", "redis", 1);
  ::setenv("BUFFERLOCK_TOKEN", token_.c_str(), 1);
  ::setenv("BUFFERLOCK_REDIS_KEY", key_.c_str(), 1);
}

Nanos RedisLock::renew_interval() const { return std::max(settings_.ttl / 3, Nanos(1'000'000)); }

std::optional<Ticker> RedisLock::keepalive() {
  return Ticker{renew_interval(), [this](pid_t child) { return renew(child); }};
}

Nanos RedisLock::renew(pid_t child) {
  if (lost_) {
    // The only thing left to do: SIGKILL a command that ignored SIGTERM.
    if (kill_pending_) {
      diag::warn(message(Msg::redis_lock_lost_kill));
      ::kill(child, SIGKILL);
      kill_pending_ = false;
    }
    return infinite_duration;
  }
  const Nanos started = monotonic_now();
  auto renewed = extend_token();
  if (auto* e = std::get_if<RedisError>(&renewed)) return renew_failed(child, *e);
  if (!std::get<bool>(renewed)) return lost(child);
  confirmed_at_ = started;
  renew_retry_.reset();
  renew_error_reported_ = false;
  return renew_interval();
}

Nanos RedisLock::renew_failed(pid_t child, const RedisError& e) {
  // The lock may outlive an outage while its TTL runs: keep trying until
  // then, with the waiting back-off rather than a TTL/3 later, so that a lock
  // lost to a restart is found lost as soon as Redis answers again.
  const Nanos now = monotonic_now();
  const Nanos expires = confirmed_at_ + settings_.ttl;
  if (now >= expires) return lost(child);
  if (!renew_error_reported_)
    diag::warn(message(Msg::redis_renew_retrying, {{"server", server()}, {"error", e.text}}));
  renew_error_reported_ = true;
  if (!renew_retry_) renew_retry_.emplace(settings_.step, settings_.ratio, settings_.max_step);
  return std::max(Nanos(1'000'000), std::min(jittered(renew_retry_->next(), random_u32()), expires - now));
}

Nanos RedisLock::lost(pid_t child) {
  lost_ = true;
  if (settings_.on_lost == OnLost::warn) {
    diag::warn(message(Msg::redis_lock_lost, {{"key", display_key_}, {"server", server()}}));
    return infinite_duration;
  }
  diag::warn(message(Msg::redis_lock_lost_term, {{"key", display_key_}, {"server", server()}}));
  ::kill(child, SIGTERM);
  kill_pending_ = true;
  return settings_.kill_after;
}

} // namespace bufferlock
