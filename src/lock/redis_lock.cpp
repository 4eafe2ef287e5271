#include "lock/redis_lock.hpp"

#include "lock/backoff.hpp"
#include "lock/file_lock.hpp"
#include "lock/status_format.hpp"
#include "messages.hpp"
#include "redis/cluster.hpp"
#include "redis/scripts.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/host.hpp"
#include "util/md5.hpp"
#include "util/random.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace bufferlock {

namespace {

// How long a release's wake-up stays for a waiter that is between its try and
// its BLPOP; after that, waiters fall back to polling anyway.
constexpr std::string_view wake_ttl_ms = "2000";

std::string reply_text(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) return std::string(r->str, r->len);
  if (r->type == REDIS_REPLY_INTEGER) return std::to_string(r->integer);
  return {};
}

template <class T> std::optional<T> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return static_cast<T>(v);
}

} // namespace

std::string redis_holder_key(std::string_view slot_key) { return companion_key(slot_key, ":holder"); }

namespace {

// The status script's KEYS for `slot_keys`: each and its holder record.
std::vector<std::string> status_keys(const std::vector<std::string>& slot_keys) {
  std::vector<std::string> keys;
  keys.reserve(2 * slot_keys.size());
  for (const auto& k : slot_keys) {
    keys.push_back(k);
    keys.push_back(redis_holder_key(k));
  }
  return keys;
}

// A holder record's pid, host, since, fence and key, as the status script
// and HMGET give them (`f`: those five replies).
void fill_holder(HolderInfo& h, redisReply* const* f) {
  if (auto pid = parse_number<pid_t>(reply_text(f[0]))) h.pids.push_back(*pid);
  h.host = reply_text(f[1]);
  h.since_ns = parse_number<std::int64_t>(reply_text(f[2]));
  h.fence = parse_number<std::uint64_t>(reply_text(f[3]));
  if (f[4]->type == REDIS_REPLY_STRING && f[4]->len > 0) h.key = reply_text(f[4]);
}

// The status script's reply for `count` slot keys.
RedisResult<std::vector<RedisSlotState>> parse_slot_states(const RedisResult<RedisReply>& reply,
                                                           std::size_t count) {
  if (const auto* e = std::get_if<RedisError>(&reply)) return *e;
  constexpr std::size_t fields = 7;
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements != fields * count)
    return redis_error(RedisError::Kind::protocol, "unexpected reply to the status script");
  std::vector<RedisSlotState> out(count);
  for (std::size_t i = 0; i < out.size(); ++i) {
    redisReply* const* f = r->element + fields * i;
    if (f[0]->type != REDIS_REPLY_INTEGER)
      return redis_error(RedisError::Kind::protocol, "unexpected reply to the status script");
    out[i].pttl = f[0]->integer;
    fill_holder(out[i].holder, f + 1);
    out[i].token = reply_text(f[6]);
  }
  return out;
}

// TRYAGAIN: a multi-key command met a cluster slot in mid-migration.
bool in_migration(const RedisError& e) { return e.kind == RedisError::Kind::server && is_tryagain(e.text); }

// One slot's state as the status script gives it, read one key a command:
// for a cluster slot in mid-migration (scripts.hpp).
RedisResult<RedisSlotState> slot_state_by_key(RedisClient& client, const std::string& slot_key) {
  const auto unexpected = [] { return redis_error(RedisError::Kind::protocol, "unexpected reply to PTTL"); };
  RedisSlotState out;
  auto pttl = client.command(slot_key, {"PTTL", slot_key});
  if (auto* e = std::get_if<RedisError>(&pttl)) return *e;
  if (std::get<RedisReply>(pttl)->type != REDIS_REPLY_INTEGER) return unexpected();
  out.pttl = std::get<RedisReply>(pttl)->integer;
  if (out.pttl == -2) return out;
  auto value = client.command(slot_key, {"GET", slot_key});
  if (auto* e = std::get_if<RedisError>(&value)) {
    if (!e->text.starts_with("WRONGTYPE")) return *e; // not a string: no token, as the script says
  } else if (std::get<RedisReply>(value)->type == REDIS_REPLY_STRING) {
    out.token = reply_text(std::get<RedisReply>(value).get());
  }
  const std::string record = redis_holder_key(slot_key);
  auto fields = client.command(record, {"HMGET", record, "token", "pid", "host", "since", "fence", "key"});
  if (auto* e = std::get_if<RedisError>(&fields)) return *e;
  const redisReply* r = std::get<RedisReply>(fields).get();
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 6 && r->element[0]->type == REDIS_REPLY_STRING &&
      reply_text(r->element[0]) == out.token)
    fill_holder(out.holder, r->element + 1);
  return out;
}

bool same_holder(const HolderInfo& a, const HolderInfo& b) {
  return a.pids == b.pids && a.host == b.host && a.since_ns == b.since_ns && a.key == b.key;
}

} // namespace

RedisResult<std::vector<RedisSlotState>> redis_slot_states(RedisClient& client,
                                                           const std::vector<std::string>& slot_keys) {
  auto states =
      parse_slot_states(client.eval(status_slots_script, status_keys(slot_keys), {}, false), slot_keys.size());
  const auto* e = std::get_if<RedisError>(&states);
  if (!e || !in_migration(*e)) return states;
  std::vector<RedisSlotState> out;
  for (const auto& k : slot_keys) {
    auto state = slot_state_by_key(client, k);
    if (auto* err = std::get_if<RedisError>(&state)) return *err;
    out.push_back(std::move(std::get<RedisSlotState>(state)));
  }
  return out;
}

RedisSlotState quorum_slot_state(const std::vector<RedisSlotState>& answers, std::size_t n, bool same_token) {
  const std::size_t need = quorum_majority(n);
  std::vector<const RedisSlotState*> holding; // the answers of the servers that hold the key
  for (const auto& a : answers)
    if (a.pttl != -2) holding.push_back(&a);
  // The first of `holding` that `need` of them are `same` as, if any.
  auto majority_of = [&](auto same) -> const RedisSlotState* {
    for (const auto* a : holding)
      if (static_cast<std::size_t>(std::count_if(holding.begin(), holding.end(),
                                                 [&](const auto* b) { return same(*a, *b); })) >= need)
        return a;
    return nullptr;
  };
  RedisSlotState out;
  if (same_token) {
    const auto* a =
        majority_of([](const auto& x, const auto& y) { return !x.token.empty() && x.token == y.token; });
    if (!a) return out;
    out.token = a->token;
    holding.erase(
        std::remove_if(holding.begin(), holding.end(), [&](const auto* b) { return b->token != out.token; }),
        holding.end());
  }
  if (holding.size() < need) return out;
  std::vector<long long> pttls;
  pttls.reserve(holding.size());
  for (const auto* a : holding)
    pttls.push_back(a->pttl);
  out.pttl = quorum_pttl(pttls, n);
  if (const auto* a =
          majority_of([](const auto& x, const auto& y) { return same_holder(x.holder, y.holder); })) {
    out.holder = a->holder;
    out.holder.fence.reset();
  }
  return out;
}

RedisResult<std::vector<RedisSlotState>>
quorum_slot_states(QuorumClient& quorum, const std::vector<std::string>& slot_keys, bool same_token) {
  auto replies = quorum.eval_all(status_slots_script, status_keys(slot_keys), {});
  if (auto* e = std::get_if<RedisError>(&replies)) return *e;
  std::vector<std::vector<RedisSlotState>> per_slot(slot_keys.size());
  for (const auto& reply : std::get<std::vector<RedisResult<RedisReply>>>(replies)) {
    auto states = parse_slot_states(reply, slot_keys.size());
    if (std::holds_alternative<RedisError>(states)) continue; // a server that failed knows nothing
    auto& got = std::get<std::vector<RedisSlotState>>(states);
    for (std::size_t k = 0; k < got.size(); ++k)
      per_slot[k].push_back(std::move(got[k]));
  }
  std::vector<RedisSlotState> out;
  out.reserve(per_slot.size());
  for (const auto& answers : per_slot)
    out.push_back(quorum_slot_state(answers, quorum.size(), same_token));
  return out;
}

StatusInfo redis_status_info(const RedisSlotState& s) {
  StatusInfo info;
  if (s.pttl == -1)
    info.no_ttl = true;
  else
    info.ttl_ms = s.pttl;
  info.holder = s.holder;
  return info;
}

std::string redis_lock_key(const LockSettings& settings, std::string_view key) {
  if (settings.hash_tag) return "{" + settings.key_prefix + "}" + md5_hex(key);
  return settings.key_prefix + md5_hex(key);
}

long long round_to_ms(Nanos d) { return std::max<long long>(1, (d.count() + 500'000) / 1'000'000); }

RedisLock::RedisLock(const RedisLockSettings& settings, std::string_view key, unsigned slots)
    : settings_(settings), display_key_(display_key(key)), key_text_(key),
      key_(redis_lock_key(settings, key)), slots_(std::max(1u, slots)),
      // In the lock key's slot, so that the release script runs on a cluster.
      wake_key_(companion_key(key_, ":wake")), ttl_ms_(std::to_string(round_to_ms(settings.ttl))),
      client_(settings.url, settings.password, {settings.connect_timeout, settings.io_timeout},
              settings.backoff()),
      lease_({settings.ttl, settings.renew_connect() + settings.renew_io(), settings.kill_after}) {
  if (settings.quorum.size() > 1)
    quorum_.emplace(settings.quorum, RedisTimeouts{settings.connect_timeout, settings.io_timeout});
  // Every key of the lock in its hash slot, so that one script takes a slot,
  // counts the fence and writes the record, on a cluster too (SPEC §13).
  acquire_keys_.push_back(companion_key(key_, ":fence"));
  for (unsigned i = 0; i < slots_; ++i) {
    slot_keys_.push_back(i == 0 ? key_ : companion_key(key_, ":slot:" + std::to_string(i)));
    holder_keys_.push_back(redis_holder_key(slot_keys_.back()));
    acquire_keys_.push_back(slot_keys_.back());
    acquire_keys_.push_back(holder_keys_.back());
  }
}

std::string RedisLock::server() const { return quorum_ ? quorum_->server() : settings_.url.display(); }

Outcome RedisLock::try_once(const std::function<void(const RedisError&)>& on_error) {
  const Nanos started = monotonic_now();
  auto failed = [&](const RedisError& e) {
    on_error(e);
    return Outcome::failed(message(Msg::redis_lock_failed, {{"server", server()}, {"error", e.text}}),
                           e.recovery);
  };
  if (wake_refused_) return failed(*wake_refused_);
  const std::string record = std::to_string(::getpid()) + '\n' + host_name() + '\n' +
                             std::to_string(wall_clock_ns()) + '\n' + key_text_;
  if (quorum_) {
    auto taken = quorum_->acquire_slot(acquire_keys_, wake_key_, token_, ttl_ms_, record, settings_.ttl);
    if (auto* e = std::get_if<RedisError>(&taken)) return failed(*e);
    const auto& slot = std::get<std::optional<unsigned>>(taken);
    if (!slot) return Outcome::busy();
    held(started);
    slot_ = *slot; // no fence: each server counts its own (SPEC §14)
    return Outcome::acquired();
  }
  auto reply = client_.eval(acquire_slots_script, acquire_keys_, {token_, ttl_ms_, record});
  if (auto* e = std::get_if<RedisError>(&reply)) return failed(*e);
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER &&
      r->element[1]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0 &&
      r->element[0]->integer < static_cast<long long>(slots_)) {
    held(started);
    slot_ = static_cast<unsigned>(r->element[0]->integer);
    fence_ = static_cast<std::uint64_t>(r->element[1]->integer);
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
      // Refused by the server's ACL: the next try ends the wait with that,
      // rather than a wait that polls on with a hand-off that never comes.
      if (is_acl_refusal(*e)) {
        wake_refused_ = *e;
        return;
      }
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
  const Nanos started = monotonic_now();
  // A finite wait ends with the error if Redis stays away; an infinite one
  // would be silent for as long as it does: say once why we are still waiting.
  const bool say_retrying = wait == infinite_duration && on_error == OnError::retry;
  std::optional<RedisError> last;
  const auto on_attempt_error = [&](const RedisError& e) {
    last = e;
    if (say_retrying) say_still_trying(e);
  };
  return poll_until(
      wait, on_error, settings_.backoff(),
      [&] {
        Outcome outcome = try_once(on_attempt_error);
        if (outcome.status != AcquireStatus::error || !last) return outcome;
        if (auto e = unanswered_for_too_long(*last, wait, started)) {
          outcome = Outcome::failed(
              message(Msg::redis_lock_failed, {{"server", server()}, {"error", e->text}}), e->recovery);
          outcome.unreached = true;
        }
        return outcome;
      },
      [this](Nanos d) { pause(d); });
}

bool RedisLock::answered() const { return quorum_ ? quorum_->answered() : client_.answered(); }

void RedisLock::say_still_trying(const RedisError& e) {
  if (!e.transient() || wait_error_reported_) return;
  wait_error_reported_ = true;
  const Nanos allowance = settings_.outage_allowance;
  if (answered() || allowance == infinite_duration)
    diag::warn(message(Msg::redis_wait_retrying, {{"server", server()}, {"error", e.text}}));
  else
    diag::warn(message(Msg::redis_wait_retrying_unanswered,
                       {{"server", server()}, {"error", e.text}, {"seconds", format_seconds(allowance)}}));
}

std::optional<RedisError> RedisLock::unanswered_for_too_long(const RedisError& e, Nanos wait,
                                                             Nanos started) const {
  // Riding out an outage needs a server that answered (SPEC §7): one that
  // never did may be a typo in a port, and an infinite wait on it would
  // hang a cron job or a CI step for ever. A finite wait is its own bound.
  const Nanos allowance = settings_.outage_allowance;
  if (wait != infinite_duration || !e.transient() || answered() || allowance == infinite_duration ||
      monotonic_now() - started < allowance)
    return std::nullopt;
  return RedisError{
      e.kind, message(Msg::redis_never_answered, {{"error", e.text}, {"seconds", format_seconds(allowance)}}),
      Recovery::permanent};
}

void RedisLock::held(Nanos sent_at) {
  lease_.confirmed(sent_at); // the TTL started no earlier than this
  // Renewals and the release fit in the lease (SPEC §7): with --on-lost
  // term their timeouts may be shorter than the acquisition's.
  const RedisTimeouts renewal{settings_.renew_connect(), settings_.renew_io()};
  client_.set_timeouts(renewal);
  if (quorum_) quorum_->set_timeouts(renewal);
}

namespace {

// A compare-with-token script's answer: true when it acted.
RedisResult<bool> acted(const RedisResult<RedisReply>& reply) {
  if (const auto* e = std::get_if<RedisError>(&reply)) return *e;
  const redisReply* r = std::get<RedisReply>(reply).get();
  return r->type == REDIS_REPLY_INTEGER && r->integer == 1;
}

} // namespace

RedisResult<bool> RedisLock::compare_script(bool release, std::string_view ms) {
  const RedisScript& script = release ? release_slot_script : renew_slot_script;
  const std::vector<std::string> keys =
      release ? std::vector<std::string>{slot_keys_[slot_], wake_key_, holder_keys_[slot_]}
              : std::vector<std::string>{slot_keys_[slot_], holder_keys_[slot_]};
  if (quorum_) return quorum_->compare(script, keys, token_, ms);
  auto once = [&]() -> RedisResult<bool> {
    auto result = acted(client_.eval(script, keys, {token_, ms}, false));
    if (const auto* e = std::get_if<RedisError>(&result); e && in_migration(*e))
      return compare_by_key(release, ms);
    return result;
  };
  const bool reused = client_.connected();
  auto result = once();
  // A kept connection may have been closed since its last use (a restart,
  // the server's idle timeout): that says nothing about the server now.
  if (const auto* e = std::get_if<RedisError>(&result); e && reused && e->kind == RedisError::Kind::dropped)
    result = once();
  return result;
}

RedisResult<bool> RedisLock::compare_by_key(bool release, std::string_view ms) {
  const std::string& key = slot_keys_[slot_];
  auto result = release ? acted(client_.eval(unlock_key_script, {key}, {token_}))
                        : acted(client_.eval(renew_script, {key}, {token_, ms}));
  if (const auto* done = std::get_if<bool>(&result); !done || !*done) return result;
  // The lock key decided. What follows only tidies: a waiter that misses the
  // wake-up polls, a record left behind expires and, its token no longer the
  // key's, is shown by nothing; so their errors are not the operation's.
  if (release) (void)client_.eval(wake_script, {wake_key_}, {ms});
  (void)client_.eval(holder_record_script, {holder_keys_[slot_]}, {token_, release ? "0" : ms});
  return result;
}

RedisResult<bool> RedisLock::retry_within(Nanos wait, RedisResult<bool> (RedisLock::*op)()) {
  RedisResult<bool> last = false;
  const bool say_retrying = wait == infinite_duration;
  const Nanos started = monotonic_now();
  poll_until(
      wait, OnError::retry, settings_.backoff(),
      [&] {
        last = (this->*op)();
        const auto* e = std::get_if<RedisError>(&last);
        if (!e) return Outcome::acquired(); // done, whatever the answer
        if (say_retrying) say_still_trying(*e);
        if (auto ended = unanswered_for_too_long(*e, wait, started)) last = *ended;
        return Outcome::failed({}, std::get<RedisError>(last).recovery);
      },
      [](Nanos d) {
        const timespec ts = to_timespec(d);
        ::nanosleep(&ts, nullptr);
      });
  return last;
}

RedisResult<bool> RedisLock::release_token() { return compare_script(true, wake_ttl_ms); }

RedisResult<bool> RedisLock::extend_token() { return compare_script(false, ttl_ms_); }

void RedisLock::release() {
  if (lost_) return; // not ours any more: nothing to delete
  // A slot in mid-migration is no error: compare_script then goes key by key.
  auto released = compare_script(true, wake_ttl_ms);
  if (auto* e = std::get_if<RedisError>(&released)) {
    diag::warn(message(Msg::redis_unlock_failed, {{"server", server()}, {"error", e->text}}));
  } else if (!std::get<bool>(released)) {
    // Stopped at its lease's jeopardy, the command ended before the server
    // could give the lock away: it was said then, and nothing ran unguarded.
    if (unconfirmed_) return;
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
  // Over a quorum a slot is taken when a majority hold it, by whichever token.
  auto states =
      quorum_ ? quorum_slot_states(*quorum_, slot_keys_, false) : redis_slot_states(client_, slot_keys_);
  if (auto* e = std::get_if<RedisError>(&states)) return failed(*e);
  const auto& slots = std::get<std::vector<RedisSlotState>>(states);
  unsigned taken = 0;
  std::vector<pid_t> pids;
  for (const auto& st : slots) {
    if (st.pttl < -2) return failed(redis_error(RedisError::Kind::protocol, "unexpected reply to PTTL"));
    if (st.pttl == -2) continue;
    ++taken;
    pids.insert(pids.end(), st.holder.pids.begin(), st.holder.pids.end());
  }
  const bool held = taken == slots_;
  const LockState state = held ? LockState::held : LockState::free;
  if (slots_ == 1) {
    StatusInfo info = held ? redis_status_info(slots[0]) : StatusInfo{};
    info.holder.key.reset(); // KEY is the one asked about
    return {state, std::move(info), {}};
  }
  // As the file backend: how many are taken, and by whom once all are.
  StatusInfo info;
  info.slots_taken = taken;
  info.slots_total = slots_;
  if (held) info.holder.pids = std::move(pids);
  return {state, std::move(info), {}};
}

std::string RedisLock::holder() {
  const LockStatus s = status();
  if (s.state != LockState::held) return {};
  // The same fields as `status` prints (SPEC §9).
  return "held by another token," + status_fields(s.info, wall_clock_ns());
}

std::string RedisLock::where() const { return key_ + " on " + server(); }

void RedisLock::export_env() const {
  ::setenv("BUFFERLOCK_BACKEND", "redis", 1);
  ::setenv("BUFFERLOCK_TOKEN", token_.c_str(), 1);
  ::setenv("BUFFERLOCK_REDIS_KEY", slot_keys_[slot_].c_str(), 1);
  if (fence_) ::setenv("BUFFERLOCK_FENCE", std::to_string(*fence_).c_str(), 1);
}

std::optional<Ticker> RedisLock::keepalive() {
  return Ticker{lease_.renew_at(), [this](pid_t child) { return renew(child); }};
}

Nanos RedisLock::renew(pid_t child) {
  if (kill_at_) return kill_when_due(child);
  if (lost_ || unconfirmed_) return infinite_duration;
  const Nanos now = monotonic_now();
  const bool term = settings_.on_lost == OnLost::term;
  if (now >= lease_.jeopardy_at()) {
    if (term) return stop_unconfirmed(child);
    if (!jeopardy_warned_)
      diag::warn(message(Msg::redis_lease_unconfirmed, {{"key", display_key_}, {"server", server()}}));
    jeopardy_warned_ = true;
  } else if (term && renew_retry_ && !lease_.may_attempt(now)) {
    // A retry now could still be running at the jeopardy moment and delay
    // the SIGTERM: none is started. (The regular renewal always goes: the
    // fitted --kill-after leaves it a whole attempt, and a tick a little
    // late must not cost a healthy lock its command.)
    return lease_.jeopardy_at();
  }
  auto renewed = extend_token();
  if (auto* e = std::get_if<RedisError>(&renewed)) return renew_failed(child, *e);
  if (!std::get<bool>(renewed)) return lost(child);
  lease_.confirmed(now); // sent no earlier than this
  renew_retry_.reset();
  renew_error_reported_ = false;
  jeopardy_warned_ = false;
  return lease_.renew_at();
}

Nanos RedisLock::renew_failed(pid_t child, const RedisError& e) {
  // The lock may outlive an outage while its TTL runs: keep trying until
  // the jeopardy moment (--on-lost term) or the server's expiry, with the
  // waiting back-off rather than a TTL/3 later, so that a lock lost to a
  // restart is found lost as soon as Redis answers again.
  const Nanos now = monotonic_now();
  if (now >= lease_.server_expiry()) return lost(child);
  // A slot in mid-migration that outlasted the attempt is not an outage:
  // retried in silence (the lease still acts if it is never confirmed).
  if (!renew_error_reported_ && !is_tryagain(e.text)) {
    diag::warn(message(Msg::redis_renew_retrying, {{"server", server()}, {"error", e.text}}));
    renew_error_reported_ = true;
  }
  if (!renew_retry_) renew_retry_.emplace(settings_.backoff());
  const Nanos next = now + std::max(Nanos(1'000'000), jittered(renew_retry_->next(), random_u32()));
  // Due at the jeopardy moment (its SIGTERM or warning) and at the expiry;
  // and, however long the pause, once more at the last moment a retry may
  // start before the jeopardy (a short TTL's lease has no time to lose).
  const Nanos jeopardy = lease_.jeopardy_at();
  const Nanos limit = now < jeopardy && (settings_.on_lost == OnLost::term || !jeopardy_warned_)
                          ? (now < lease_.last_retry_at() ? lease_.last_retry_at() : jeopardy)
                          : lease_.server_expiry();
  return std::min(next, limit);
}

Nanos RedisLock::lost(pid_t child) {
  lost_ = true;
  if (settings_.on_lost == OnLost::warn) {
    diag::warn(message(Msg::redis_lock_lost, {{"key", display_key_}, {"server", server()}}));
    return infinite_duration;
  }
  diag::warn(message(Msg::redis_lock_lost_term, {{"key", display_key_}, {"server", server()}}));
  ::kill(child, SIGTERM);
  kill_at_ = lease_.kill_at(monotonic_now());
  return *kill_at_;
}

Nanos RedisLock::stop_unconfirmed(pid_t child) {
  unconfirmed_ = true;
  diag::warn(message(Msg::redis_lease_unconfirmed_term, {{"key", display_key_}, {"server", server()}}));
  ::kill(child, SIGTERM);
  kill_at_ = lease_.kill_at(monotonic_now());
  return *kill_at_;
}

Nanos RedisLock::kill_when_due(pid_t child) {
  if (monotonic_now() < *kill_at_) return *kill_at_;
  diag::warn(message(Msg::redis_lock_lost_kill));
  ::kill(child, SIGKILL);
  kill_at_.reset();
  return infinite_duration;
}

} // namespace bufferlock
