#include "redis/quorum.hpp"

#include "util/clock.hpp"

#include <poll.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <thread>

namespace bufferlock {

namespace {

bool reply_is(const RedisResult<RedisReply>& r, int type, long long integer = 0) {
  const auto* reply = std::get_if<RedisReply>(&r);
  if (!reply) return false;
  const redisReply* x = reply->get();
  return x->type == type && (type != REDIS_REPLY_INTEGER || x->integer == integer);
}

bool is_ok(const RedisResult<RedisReply>& r) {
  const auto* reply = std::get_if<RedisReply>(&r);
  return reply && (*reply)->type == REDIS_REPLY_STATUS &&
         std::string_view((*reply)->str, (*reply)->len) == "OK";
}

std::size_t count_if_reply(const std::vector<RedisResult<RedisReply>>& replies,
                           const std::function<bool(const RedisResult<RedisReply>&)>& pred) {
  return static_cast<std::size_t>(std::count_if(replies.begin(), replies.end(), pred));
}

std::size_t errors_in(const std::vector<RedisResult<RedisReply>>& replies) {
  return count_if_reply(replies, [](const auto& r) { return std::holds_alternative<RedisError>(r); });
}

} // namespace

Nanos quorum_validity(Nanos ttl, Nanos elapsed) { return ttl - elapsed - (ttl / 100 + Nanos(2'000'000)); }

QuorumDecision quorum_decide(std::size_t n, std::size_t acted, std::size_t failed, Nanos validity) {
  const std::size_t need = quorum_majority(n);
  if (acted >= need && validity.count() > 0) return QuorumDecision::held;
  if (n - std::min(failed, n) < need) return QuorumDecision::error;
  return QuorumDecision::busy;
}

long long quorum_pttl(const std::vector<long long>& answers, std::size_t n) {
  constexpr long long forever = std::numeric_limits<long long>::max();
  std::vector<long long> held; // -1 (no expiry) counts as the longest
  for (long long t : answers)
    if (t != -2 && t >= -1) held.push_back(t == -1 ? forever : t);
  const std::size_t need = quorum_majority(n);
  if (held.size() < need) return -2;
  // The majority holds it as long as its need-th longest TTL.
  std::sort(held.rbegin(), held.rend());
  const long long t = held[need - 1];
  return t == forever ? -1 : t;
}

QuorumClient::QuorumClient(std::vector<RedisUrl> urls, RedisTimeouts timeouts) : timeouts_(timeouts) {
  for (auto& u : urls)
    members_.push_back({std::move(u), std::nullopt});
}

std::string QuorumClient::server() const {
  std::string s = std::to_string(members_.size()) + " servers:";
  for (const auto& m : members_)
    s.append(" ").append(m.url.display());
  return s;
}

void QuorumClient::connect_all(std::vector<std::optional<RedisResult<RedisReply>>>& out) {
  std::vector<std::size_t> need;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].conn && members_[i].conn->broken()) members_[i].conn.reset();
    if (!members_[i].conn) need.push_back(i);
  }
  // Every connection (connect, TLS handshake, AUTH, SELECT) at the same time,
  // one thread each: a silent host costs one connect timeout for the lot,
  // not one per server, and N handshakes cost about one.
  std::vector<std::optional<RedisResult<RedisConnection>>> opened(members_.size());
  auto open = [&](std::size_t i) {
    opened[i].emplace(RedisConnection::open(members_[i].url, members_[i].url.password, timeouts_));
  };
  if (need.size() == 1) {
    open(need.front());
  } else {
    std::vector<std::thread> threads;
    threads.reserve(need.size());
    for (std::size_t i : need)
      threads.emplace_back(open, i);
    for (auto& t : threads)
      t.join();
  }
  for (std::size_t i : need) {
    if (auto* e = std::get_if<RedisError>(&*opened[i]))
      out[i] = *e;
    else
      members_[i].conn.emplace(std::move(std::get<RedisConnection>(*opened[i])));
  }
}

std::vector<RedisResult<RedisReply>> QuorumClient::fan_out(const std::vector<std::string_view>& args) {
  const std::size_t n = members_.size();
  std::vector<std::optional<RedisResult<RedisReply>>> out(n);
  connect_all(out);
  for (std::size_t i = 0; i < n; ++i)
    if (!out[i])
      if (auto e = members_[i].conn->send(args)) out[i] = *e;
  // One poll over all sockets until every reply is in or the time is up.
  const Nanos deadline = deadline_after(timeouts_.io);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < n; ++i) {
      if (out[i]) continue;
      if (auto r = members_[i].conn->take_reply()) { // a reply may already be buffered
        out[i] = std::move(*r);
        continue;
      }
      fds.push_back({members_[i].conn->fd(), POLLIN, 0});
      who.push_back(i);
    }
    if (fds.empty()) break;
    const Nanos left = deadline - monotonic_now();
    if (left.count() <= 0) {
      for (std::size_t i : who) {
        out[i] = redis_error(RedisError::Kind::timeout, "no answer within the timeout");
        members_[i].conn.reset(); // its reply may still come: never read it as another's
      }
      break;
    }
    const timespec ts = to_timespec(left);
    ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  }
  std::vector<RedisResult<RedisReply>> replies;
  replies.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (auto* e = std::get_if<RedisError>(&*out[i])) {
      e->text = members_[i].url.display() + ": " + e->text;
      if (e->kind != RedisError::Kind::server) members_[i].conn.reset();
    }
    replies.push_back(std::move(*out[i]));
  }
  return replies;
}

RedisError QuorumClient::no_majority(const std::vector<RedisResult<RedisReply>>& replies) const {
  std::size_t permanent = 0;
  std::string text = "no majority of the " + std::to_string(replies.size()) + " servers answered";
  const char* sep = " (";
  for (const auto& r : replies) {
    if (const auto* e = std::get_if<RedisError>(&r)) {
      if (!e->transient()) ++permanent;
      text.append(sep).append(e->text);
      sep = "; ";
    }
  }
  text.append(")");
  return quorum_error(replies.size(), permanent, std::move(text));
}

RedisResult<bool> QuorumClient::acquire(std::string_view key, std::string_view wake_key,
                                        std::string_view token, std::string_view ms, Nanos ttl) {
  const Nanos started = monotonic_now();
  // EVAL, not EVALSHA: a NOSCRIPT would cost every server a second round trip.
  auto replies = fan_out({"EVAL", acquire_script.source, "1", key, token, ms});
  const std::size_t taken = count_if_reply(replies, is_ok);
  const QuorumDecision d = quorum_decide(replies.size(), taken, errors_in(replies),
                                         quorum_validity(ttl, monotonic_now() - started));
  if (d == QuorumDecision::held) return true;
  // Not held: what was taken goes at once rather than at its TTL.
  // (Its wake list lasts 1 ms: nobody is to be woken for a lock never held.)
  if (taken > 0) fan_out({"EVAL", release_script.source, "2", key, wake_key, token, "1"});
  if (d == QuorumDecision::error) return no_majority(replies);
  return false;
}

RedisResult<bool> QuorumClient::compare(const RedisScript& script, std::string_view key,
                                        std::string_view wake_key, std::string_view token,
                                        std::string_view ms) {
  auto replies = fan_out(eval_args(script, key, wake_key, token, ms));
  const std::size_t acted =
      count_if_reply(replies, [](const auto& r) { return reply_is(r, REDIS_REPLY_INTEGER, 1); });
  const QuorumDecision d = quorum_decide(replies.size(), acted, errors_in(replies));
  // Too few answered to tell: an error, which a renewal retries.
  if (d == QuorumDecision::error) return no_majority(replies);
  return d == QuorumDecision::held;
}

RedisResult<long long> QuorumClient::pttl(std::string_view key) {
  auto replies = fan_out({"PTTL", key});
  if (quorum_decide(replies.size(), 0, errors_in(replies)) == QuorumDecision::error)
    return no_majority(replies);
  std::vector<long long> answers;
  for (const auto& r : replies)
    if (const auto* reply = std::get_if<RedisReply>(&r); reply && (*reply)->type == REDIS_REPLY_INTEGER)
      answers.push_back((*reply)->integer);
  return quorum_pttl(answers, replies.size());
}

bool QuorumClient::wait_wake(std::string_view wake_key, Nanos d, Nanos io_timeout) {
  for (auto& m : members_) {
    if (!m.conn || m.conn->broken()) continue;
    m.conn->set_io_timeout(d + io_timeout);
    const std::string timeout = format_seconds(std::max(d, Nanos(1'000'000)));
    auto reply = m.conn->command({"BLPOP", wake_key, timeout});
    m.conn->set_io_timeout(io_timeout);
    return !std::holds_alternative<RedisError>(reply);
  }
  return false;
}

} // namespace bufferlock
