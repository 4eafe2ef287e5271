#include "redis/client.hpp"

#include "redis/cluster.hpp"
#include "redis/sentinel.hpp"
#include "util/clock.hpp"
#include "util/random.hpp"

#include <time.h>

#include <algorithm>

namespace bufferlock {

namespace {

// Redirections followed for one command: a slot moves at most once or twice
// during a resharding; more is a loop between nodes that disagree.
constexpr int max_redirects = 5;

bool is_server_error(const RedisResult<RedisReply>& r, std::string_view code) {
  const auto* e = std::get_if<RedisError>(&r);
  return e && e->kind == RedisError::Kind::server && e->text.starts_with(code);
}

std::string node_name(const std::string& host, int port) { return host + ":" + std::to_string(port); }

// Whether a server replied: with a reply or an error reply (LOADING and
// WRONGPASS are answers too), not a connection that failed or timed out.
bool is_answer(const RedisResult<RedisReply>& r) {
  const auto* e = std::get_if<RedisError>(&r);
  return !e || e->kind == RedisError::Kind::server;
}

} // namespace

RedisClient::RedisClient(RedisUrl url, std::optional<std::string> password, RedisTimeouts timeouts,
                         Backoff tryagain)
    : url_(std::move(url)), password_(std::move(password)), timeouts_(timeouts), tryagain_(tryagain) {}

void RedisClient::set_timeouts(RedisTimeouts timeouts) {
  timeouts_ = timeouts;
  if (first_) first_->set_io_timeout(timeouts.io);
  for (auto& [name, conn] : nodes_)
    conn.set_io_timeout(timeouts.io);
}

RedisResult<RedisConnection*> RedisClient::first() {
  if (first_ && !first_->broken()) return &*first_;
  first_.reset();
  auto opened = url_.transport == RedisUrl::Transport::sentinel
                    ? open_sentinel_master(url_, password_, timeouts_)
                    : RedisConnection::open(url_, password_, timeouts_);
  if (auto* e = std::get_if<RedisError>(&opened)) {
    answered_ = answered_ || e->kind == RedisError::Kind::server; // AUTH or SELECT refused, LOADING
    return *e;
  }
  first_.emplace(std::move(std::get<RedisConnection>(opened)));
  return &*first_;
}

RedisResult<RedisConnection*> RedisClient::node(const std::string& host, int port) {
  const std::string name = node_name(host, port);
  if (url_.transport == RedisUrl::Transport::tcp && host == url_.host && port == url_.port) return first();
  auto it = nodes_.find(name);
  if (it != nodes_.end() && !it->second.broken()) return &it->second;
  if (it != nodes_.end()) nodes_.erase(it);
  auto opened = RedisConnection::open(url_.at(host, port), password_, timeouts_);
  if (auto* e = std::get_if<RedisError>(&opened)) {
    RedisError err = *e;
    err.text = "cluster node " + name + ": " + err.text;
    return err;
  }
  return &nodes_.emplace(name, std::move(std::get<RedisConnection>(opened))).first->second;
}

RedisResult<RedisConnection*> RedisClient::connection_for(std::string_view key) {
  // Only a cluster that redirected us has a slot map: a single server never
  // pays for the hash.
  if (!slot_node_.empty()) {
    auto it = slot_node_.find(key_hash_slot(key));
    if (it != slot_node_.end()) {
      const std::size_t colon = it->second.rfind(':');
      return node(it->second.substr(0, colon), std::stoi(it->second.substr(colon + 1)));
    }
  }
  return first();
}

RedisResult<RedisReply> RedisClient::send(RedisConnection& conn, bool asking,
                                          const std::vector<std::string_view>& args,
                                          const std::vector<std::string_view>* fallback, Nanos io_timeout) {
  if (io_timeout.count() > 0) conn.set_io_timeout(io_timeout);
  auto once = [&](const std::vector<std::string_view>& a) -> RedisResult<RedisReply> {
    if (probe_ && !asking && first_ && &conn == &*first_) {
      // The first exchange: probe_slot_of's HGET in the same write.
      const std::string probe = std::move(*probe_);
      probe_.reset();
      auto replies = conn.pipeline({a, {"HGET", probe, "hits"}});
      if (const auto* e = std::get_if<RedisError>(&replies.back()); e && e->kind == RedisError::Kind::server)
        if (const auto moved = parse_redirect(e->text); moved && moved->kind == Redirect::Kind::moved)
          slot_node_[moved->slot] = node_name(moved->host, moved->port);
      return std::move(replies.front());
    }
    if (!asking) return std::move(conn.pipeline({a}).front());
    // ASKING holds for the one command after it: both in one write.
    auto replies = conn.pipeline({{"ASKING"}, a});
    return std::move(replies.back());
  };
  auto result = once(args);
  if (fallback && is_server_error(result, "NOSCRIPT")) result = once(*fallback);
  answered_ = answered_ || is_answer(result);
  if (io_timeout.count() > 0) conn.set_io_timeout(timeouts_.io);
  return result;
}

RedisResult<RedisReply> RedisClient::keyed(std::string_view key, const std::vector<std::string_view>& args,
                                           const std::vector<std::string_view>* fallback, Nanos io_timeout,
                                           bool retry_tryagain) {
  // TRYAGAIN (a multi-key script on a slot in mid-migration, often after an
  // ASK) is retried from the start of the routing, with the waiting
  // back-off: once the slot has moved, the old node answers MOVED and the
  // new one runs the script (SPEC §13: release included). By default for
  // the io timeout counted from the start of the command, so that a
  // renewal attempt stays within the connect + io timeout that its lease
  // allows for it (lock/lease.hpp).
  const Nanos until =
      retry_tryagain ? monotonic_now() + (io_timeout.count() > 0 ? io_timeout : timeouts_.io) : Nanos(0);
  Backoff backoff = tryagain_;
  auto conn = connection_for(key);
  bool asking = false;
  for (int hop = 0;; ++hop) {
    if (auto* e = std::get_if<RedisError>(&conn)) return *e;
    auto result = send(*std::get<RedisConnection*>(conn), asking, args, fallback, io_timeout);
    const auto* e = std::get_if<RedisError>(&result);
    if (!e || e->kind != RedisError::Kind::server) return result;
    if (is_tryagain(e->text)) {
      if (!retry_tryagain) return result;
      const Nanos left = until - monotonic_now();
      if (left.count() <= 0) return result;
      const timespec ts = to_timespec(std::min(left, jittered(backoff.next(), random_u32())));
      ::nanosleep(&ts, nullptr);
      hop = -1;
      asking = false;
      conn = connection_for(key);
      continue;
    }
    // A demoted master (a sentinel failover): the next connection asks the
    // sentinels again.
    if (url_.transport == RedisUrl::Transport::sentinel && e->text.starts_with("READONLY")) first_.reset();
    const auto redirect = parse_redirect(e->text);
    if (!redirect) return result;
    if (hop == max_redirects)
      return redis_error(RedisError::Kind::redirect,
                         "cluster nodes redirect slot " + std::to_string(redirect->slot) + " in a loop (" +
                             std::to_string(max_redirects) + " redirections, last " + e->text + ")");
    asking = redirect->kind == Redirect::Kind::ask;
    if (!asking) slot_node_[redirect->slot] = node_name(redirect->host, redirect->port);
    conn = node(redirect->host, redirect->port);
  }
}

RedisResult<std::vector<RedisUrl::Address>> RedisClient::masters() {
  std::vector<RedisUrl::Address> out;
  if (url_.transport == RedisUrl::Transport::unix_socket) return out;
  auto reply = command({}, {"CLUSTER", "SLOTS"});
  if (auto* e = std::get_if<RedisError>(&reply)) {
    // "ERR This instance has cluster support disabled": a single server. An
    // ACL refusal says nothing about that: an error, never a partial list.
    if (e->kind == RedisError::Kind::server && !is_acl_refusal(*e)) return out;
    return *e;
  }
  const redisReply* r = std::get<RedisReply>(reply).get();
  if (r->type != REDIS_REPLY_ARRAY)
    return redis_error(RedisError::Kind::protocol, "unexpected reply to CLUSTER SLOTS");
  for (std::size_t i = 0; i < r->elements; ++i) {
    // [first slot, last slot, [host, port, id, ...], replicas...]
    const redisReply* range = r->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
        range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2 ||
        range->element[2]->element[0]->type != REDIS_REPLY_STRING ||
        range->element[2]->element[1]->type != REDIS_REPLY_INTEGER)
      return redis_error(RedisError::Kind::protocol, "unexpected reply to CLUSTER SLOTS");
    const redisReply* master = range->element[2];
    RedisUrl::Address a{std::string(master->element[0]->str, master->element[0]->len),
                        static_cast<int>(master->element[1]->integer)};
    if (a.host.empty()) a.host = url_.host; // "" is the node that answered
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
  }
  return out;
}

RedisResult<RedisReply> RedisClient::command_on(const RedisUrl::Address& address,
                                                const std::vector<std::string_view>& args) {
  auto conn = node(address.host, address.port);
  if (auto* e = std::get_if<RedisError>(&conn)) return *e;
  return send(*std::get<RedisConnection*>(conn), false, args, nullptr, Nanos(0));
}

RedisResult<RedisReply> RedisClient::command(std::string_view key, const std::vector<std::string_view>& args,
                                             Nanos io_timeout) {
  return keyed(key, args, nullptr, io_timeout, true);
}

RedisResult<RedisReply> RedisClient::script(const RedisScript& script, std::string_view lock_key,
                                            std::string_view wake_key, std::string_view token,
                                            std::string_view ms) {
  const std::vector<std::string_view> eval = eval_args(script, lock_key, wake_key, token, ms);
  return keyed(lock_key, evalsha_words(eval, script), &eval, Nanos(0), true);
}

RedisResult<RedisReply> RedisClient::eval(const RedisScript& script, const std::vector<std::string>& keys,
                                          const std::vector<std::string_view>& argv, bool retry_tryagain) {
  const std::string nkeys = std::to_string(keys.size());
  const std::vector<std::string_view> eval = eval_words(script, nkeys, keys, argv);
  return keyed(keys.front(), evalsha_words(eval, script), &eval, Nanos(0), retry_tryagain);
}

void RedisClient::eval_unread(const RedisScript& script, const std::vector<std::string>& keys,
                              const std::vector<std::string_view>& argv) {
  const std::string nkeys = std::to_string(keys.size());
  if (probe_ && *probe_ == keys.front()) {
    // Nothing was asked yet: where its slot lives is not known (probe_slot_of).
    (void)eval(script, keys, argv);
    return;
  }
  auto conn = connection_for(keys.front());
  if (auto* c = std::get_if<RedisConnection*>(&conn))
    (*c)->send_unread(eval_words(script, nkeys, keys, argv));
}

} // namespace bufferlock
