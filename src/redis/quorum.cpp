#include "redis/quorum.hpp"

#include "redis/scan.hpp"
#include "util/clock.hpp"

#include <poll.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <set>
#include <thread>
#include <tuple>

namespace bufferlock {

namespace {

bool reply_is(const RedisResult<RedisReply>& r, int type, long long integer = 0) {
  const auto* reply = std::get_if<RedisReply>(&r);
  if (!reply) return false;
  const redisReply* x = reply->get();
  return x->type == type && (type != REDIS_REPLY_INTEGER || x->integer == integer);
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

void QuorumClient::set_timeouts(RedisTimeouts timeouts) {
  timeouts_ = timeouts;
  for (auto& m : members_)
    if (m.conn) m.conn->set_io_timeout(timeouts.io);
}

std::string QuorumClient::server() const {
  std::string s = std::to_string(members_.size()) + " servers:";
  for (const auto& m : members_)
    s.append(" ").append(m.url.display());
  return s;
}

void QuorumClient::connect_all(std::vector<std::optional<RedisResult<RedisReply>>>& out,
                               const std::vector<bool>& wanted) {
  std::vector<std::size_t> need;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (!wanted[i]) continue;
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
  auto each = fan_out_each(std::vector<std::vector<std::string_view>>(members_.size(), args));
  std::vector<RedisResult<RedisReply>> replies;
  replies.reserve(each.size());
  for (auto& r : each)
    replies.push_back(std::move(*r));
  return replies;
}

std::vector<std::optional<RedisResult<RedisReply>>>
QuorumClient::fan_out_each(const std::vector<std::vector<std::string_view>>& args) {
  const std::size_t n = members_.size();
  std::vector<std::optional<RedisResult<RedisReply>>> out(n);
  std::vector<bool> wanted(n);
  for (std::size_t i = 0; i < n; ++i)
    wanted[i] = !args[i].empty();
  connect_all(out, wanted);
  for (std::size_t i = 0; i < n; ++i)
    if (wanted[i] && !out[i])
      if (auto e = members_[i].conn->send(args[i])) out[i] = *e;
  // One poll over all sockets until every reply is in or the time is up.
  const Nanos deadline = deadline_after(timeouts_.io);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> who;
    for (std::size_t i = 0; i < n; ++i) {
      if (!wanted[i] || out[i]) continue;
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
  for (std::size_t i = 0; i < n; ++i) {
    if (!out[i]) continue;
    const auto* failed = std::get_if<RedisError>(&*out[i]);
    if (!failed || failed->kind == RedisError::Kind::server) members_[i].answered = true;
    if (auto* e = std::get_if<RedisError>(&*out[i])) {
      e->text = members_[i].url.display() + ": " + e->text;
      if (e->kind != RedisError::Kind::server) members_[i].conn.reset();
    }
  }
  return out;
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

namespace {

// The slot that a reply of acquire_slots_script names, if it is one of `slots`.
std::optional<unsigned> granted_slot(const RedisResult<RedisReply>& r, std::size_t slots) {
  const auto* reply = std::get_if<RedisReply>(&r);
  if (!reply) return std::nullopt;
  const redisReply* x = reply->get();
  if (x->type != REDIS_REPLY_ARRAY || x->elements != 2 || x->element[0]->type != REDIS_REPLY_INTEGER ||
      x->element[0]->integer < 0 || x->element[0]->integer >= static_cast<long long>(slots))
    return std::nullopt;
  return static_cast<unsigned>(x->element[0]->integer);
}

bool any_words(const std::vector<std::vector<std::string_view>>& words) {
  return std::any_of(words.begin(), words.end(), [](const auto& w) { return !w.empty(); });
}

} // namespace

RedisResult<std::optional<unsigned>> QuorumClient::acquire_slot(const std::vector<std::string>& keys,
                                                                std::string_view wake_key,
                                                                std::string_view token, std::string_view ms,
                                                                std::string_view record, Nanos ttl) {
  const std::size_t n = members_.size();
  const std::size_t need = quorum_majority(n);
  const auto slots = static_cast<unsigned>((keys.size() - 1) / 2);
  const std::vector<std::string_view> argv{token, ms, record};
  std::vector<std::optional<unsigned>> held(n); // where each server may hold our token
  // Deletes our token from the slot each server holds it at, but `keep`.
  // (Its wake list lasts 1 ms: nobody is to be woken for a slot never held.)
  auto let_go = [&](std::optional<unsigned> keep) {
    std::vector<std::vector<std::string>> release_keys(n);
    std::vector<std::vector<std::string_view>> words(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!held[i] || held[i] == keep) continue;
      release_keys[i] = {keys[1 + 2 * *held[i]], std::string(wake_key), keys[2 + 2 * *held[i]]};
      words[i] = eval_words(release_slot_script, "3", release_keys[i], {token, "1"});
      held[i].reset();
    }
    if (any_words(words)) fan_out_each(words);
  };
  // One attempt: the script on all with `attempt_keys` (slot `first` and up),
  // counting the votes per slot. The decision, the slot most voted for, the replies.
  std::vector<std::size_t> votes(slots);
  Nanos validity{0};
  auto attempt = [&](const std::vector<std::string>& attempt_keys, unsigned first) {
    const Nanos started = monotonic_now();
    const std::string nkeys = std::to_string(attempt_keys.size());
    auto replies = fan_out(eval_words(acquire_slots_script, nkeys, attempt_keys, argv));
    validity = quorum_validity(ttl, monotonic_now() - started);
    std::fill(votes.begin(), votes.end(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto got = granted_slot(replies[i], (attempt_keys.size() - 1) / 2);
      if (got) {
        held[i] = first + *got;
        ++votes[first + *got];
      } else if (attempt_keys.size() == 3 && std::holds_alternative<RedisError>(replies[i])) {
        // A server that did not answer may still have taken the one slot
        // tried: the clean-up goes to it too (as Redlock's does).
        held[i] = first;
      } else {
        held[i].reset();
      }
    }
    const auto best = static_cast<unsigned>(std::max_element(votes.begin(), votes.end()) - votes.begin());
    const QuorumDecision d = quorum_decide(n, votes[best], errors_in(replies), validity);
    return std::tuple(d, best, std::move(replies));
  };

  auto [d, best, replies] = attempt(keys, 0);
  // Each server took its lowest free slot: the slots below it are busy there,
  // so slot s can be free on a majority only when a majority took s or lower.
  const std::vector<std::optional<unsigned>> lowest = held;
  const std::vector<std::size_t> first_votes = votes;
  std::vector<unsigned> order;
  // A round slower than the TTL allows says the servers are: no more rounds.
  if (d == QuorumDecision::busy && validity.count() > 0) {
    for (unsigned s = 0; s < slots; ++s)
      if (static_cast<std::size_t>(std::count_if(lowest.begin(), lowest.end(),
                                                 [s](const auto& l) { return l && *l <= s; })) >= need)
        order.push_back(s);
    // The most granted first (more of it is ours already), then the rest in order.
    std::stable_sort(order.begin(), order.end(),
                     [&](unsigned a, unsigned b) { return first_votes[a] > first_votes[b]; });
  }
  for (const unsigned s : order) {
    if (d != QuorumDecision::busy) break;
    let_go(s);
    std::tie(d, best, replies) = attempt({keys[0], keys[1 + 2 * s], keys[2 + 2 * s]}, s);
  }
  if (d == QuorumDecision::held) {
    let_go(best);
    return std::optional<unsigned>(best);
  }
  let_go(std::nullopt);
  if (d == QuorumDecision::error) return no_majority(replies);
  return std::optional<unsigned>();
}

RedisResult<bool> QuorumClient::compare(const RedisScript& script, const std::vector<std::string>& keys,
                                        std::string_view token, std::string_view ms) {
  const std::string nkeys = std::to_string(keys.size());
  auto replies = fan_out(eval_words(script, nkeys, keys, {token, ms}));
  const std::size_t acted =
      count_if_reply(replies, [](const auto& r) { return reply_is(r, REDIS_REPLY_INTEGER, 1); });
  const QuorumDecision d = quorum_decide(replies.size(), acted, errors_in(replies));
  // Too few answered to tell: an error, which a renewal retries.
  if (d == QuorumDecision::error) return no_majority(replies);
  return d == QuorumDecision::held;
}

RedisResult<std::vector<RedisResult<RedisReply>>>
QuorumClient::eval_all(const RedisScript& script, const std::vector<std::string>& keys,
                       const std::vector<std::string_view>& argv) {
  const std::string nkeys = std::to_string(keys.size());
  auto replies = fan_out(eval_words(script, nkeys, keys, argv));
  if (quorum_decide(replies.size(), 0, errors_in(replies)) == QuorumDecision::error)
    return no_majority(replies);
  return replies;
}

RedisResult<std::vector<std::string>> QuorumClient::scan(const std::vector<std::string>& patterns) {
  const std::size_t n = members_.size();
  std::set<std::string> names;
  std::vector<RedisResult<RedisReply>> outcome(n); // each server's first error, if any
  for (const auto& pattern : patterns) {
    // Every server's cursor, "" once it is done (or failed).
    std::vector<std::string> cursors(n, "0");
    for (std::size_t i = 0; i < n; ++i)
      if (std::holds_alternative<RedisError>(outcome[i])) cursors[i].clear();
    for (;;) {
      std::vector<std::vector<std::string_view>> words(n);
      for (std::size_t i = 0; i < n; ++i)
        if (!cursors[i].empty()) words[i] = {"SCAN", cursors[i], "MATCH", pattern, "COUNT", "1000"};
      if (!any_words(words)) break;
      auto replies = fan_out_each(words);
      for (std::size_t i = 0; i < n; ++i) {
        if (!replies[i]) continue;
        const auto* reply = std::get_if<RedisReply>(&*replies[i]);
        auto page = reply ? scan_page(reply->get()) : std::nullopt;
        cursors[i].clear();
        if (!page) {
          outcome[i] = reply ? redis_error(RedisError::Kind::protocol,
                                           members_[i].url.display() + ": unexpected reply to SCAN")
                             : std::move(*replies[i]);
          continue;
        }
        if (page->cursor != "0") cursors[i] = std::move(page->cursor);
        names.insert(page->names.begin(), page->names.end());
      }
    }
  }
  if (quorum_decide(n, 0, errors_in(outcome)) == QuorumDecision::error) return no_majority(outcome);
  return std::vector<std::string>(names.begin(), names.end());
}

bool QuorumClient::answered() const {
  const auto answered =
      std::count_if(members_.begin(), members_.end(), [](const Member& m) { return m.answered; });
  return static_cast<std::size_t>(answered) >= quorum_majority(members_.size());
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
