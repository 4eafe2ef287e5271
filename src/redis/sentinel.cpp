#include "redis/sentinel.hpp"

#include "util/clock.hpp"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <string_view>
#include <system_error>

namespace bufferlock {

namespace {

using K = RedisError::Kind;

// What one sentinel says of the master: its address, that it knows no such
// master (nullopt), or why it could not be asked.
RedisResult<std::optional<RedisUrl::Address>> ask_sentinel(const RedisUrl& url, const RedisUrl::Address& at,
                                                           RedisTimeouts timeouts) {
  // The user and password of the URL are the master's; sentinels are asked
  // without them, on their database 0.
  RedisUrl sentinel = url.at(at.host, at.port);
  sentinel.user.clear();
  sentinel.password.reset();
  sentinel.db = 0;
  auto conn = RedisConnection::open(sentinel, std::nullopt, timeouts);
  if (auto* e = std::get_if<RedisError>(&conn)) return *e;
  auto reply =
      std::get<RedisConnection>(conn).command({"SENTINEL", "get-master-addr-by-name", url.master_name});
  if (auto* e = std::get_if<RedisError>(&reply)) return *e;
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type == REDIS_REPLY_NIL) return std::optional<RedisUrl::Address>();
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING)
    return redis_error(K::protocol, "unexpected reply to SENTINEL get-master-addr-by-name");
  int port = 0;
  const std::string_view port_text(r->element[1]->str, r->element[1]->len);
  const auto parsed = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (parsed.ec != std::errc() || parsed.ptr != port_text.data() + port_text.size() || port <= 0 ||
      port > 65535)
    return redis_error(K::protocol, "the sentinel gave a bad master port");
  return std::optional<RedisUrl::Address>(RedisUrl::Address{r->element[0]->str, port});
}

// Whether the server behind `conn` is a master now.
RedisResult<bool> is_master(RedisConnection& conn) {
  auto reply = conn.command({"ROLE"});
  if (auto* e = std::get_if<RedisError>(&reply)) return *e;
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type != REDIS_REPLY_ARRAY || r->elements == 0 || r->element[0]->type != REDIS_REPLY_STRING)
    return redis_error(K::protocol, "unexpected reply to ROLE");
  return std::string_view(r->element[0]->str, r->element[0]->len) == "master";
}

std::string address_text(const RedisUrl::Address& a) { return a.host + ":" + std::to_string(a.port); }

} // namespace

RedisResult<RedisConnection> open_sentinel_master(const RedisUrl& url,
                                                  const std::optional<std::string>& password,
                                                  RedisTimeouts timeouts) {
  // Every round asks the sentinels from the first; a round that finds no
  // master (a failover under way) is followed by another until the timeouts
  // are spent.
  const Nanos deadline = deadline_after(timeouts.connect + timeouts.io);
  std::optional<RedisError> last;
  for (;;) {
    bool unknown = false, named = false;
    for (const auto& s : url.sentinels) {
      const Nanos left = deadline - monotonic_now();
      if (left.count() <= 0) break;
      auto answer = ask_sentinel(url, s, {std::min(timeouts.connect, left), std::min(timeouts.io, left)});
      if (auto* e = std::get_if<RedisError>(&answer)) {
        last = *e;
        last->text = "sentinel " + address_text(s) + ": " + e->text;
        continue;
      }
      const auto& addr = std::get<std::optional<RedisUrl::Address>>(answer);
      if (!addr) {
        unknown = true;
        continue;
      }
      named = true;
      // A master that refuses us for good (a password, our user's rights)
      // refuses the next round too: that is the answer, at once.
      auto conn = RedisConnection::open(url.at(addr->host, addr->port), password, timeouts);
      if (auto* e = std::get_if<RedisError>(&conn)) {
        last = *e;
        last->text = "master " + address_text(*addr) + ": " + e->text;
        if (!last->transient()) return *last;
        break; // ask again: the sentinels may be about to name another
      }
      auto master = is_master(std::get<RedisConnection>(conn));
      if (auto* e = std::get_if<RedisError>(&master)) {
        last = *e;
        last->text = "master " + address_text(*addr) + ": " + e->text;
        if (!last->transient()) return *last;
        break;
      }
      if (std::get<bool>(master)) return std::move(std::get<RedisConnection>(conn));
      last = redis_error(K::server,
                         "MASTERDOWN " + address_text(*addr) + " is not a master (failover under way)");
      break;
    }
    // Sentinels that answered but know no such master (and none that knew
    // it): a wrong name, not an outage.
    if (unknown && !named)
      return redis_error(K::unknown_master, "the sentinels know no master named '" + url.master_name + "'");
    if (monotonic_now() >= deadline) break;
    const timespec pause{0, 20'000'000};
    ::nanosleep(&pause, nullptr);
  }
  return last.value_or(redis_error(K::timeout, "no sentinel answered within the timeouts"));
}

} // namespace bufferlock
