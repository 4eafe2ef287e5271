// One Redis deployment as the lock sees it: a standalone server, a Redis
// Cluster reached through any of its nodes (MOVED and ASK followed, the
// connections to other nodes kept for the run), or the master that
// sentinels name (SPEC §13). Commands are sent for a key, so the node that
// serves its slot answers. Nothing is connected before the first command.
#pragma once

#include "redis/connection.hpp"
#include "redis/scripts.hpp"
#include "redis/url.hpp"
#include "util/backoff.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bufferlock {

class RedisClient {
public:
  // A command that meets TRYAGAIN (a slot in mid-migration) is sent again
  // after the pauses of `tryagain` (the waiting back-off: --step, --ratio,
  // --max-step), for the io timeout from the start of the command (SPEC §13).
  RedisClient(RedisUrl url, std::optional<std::string> password, RedisTimeouts timeouts,
              Backoff tryagain = Backoff(std::chrono::milliseconds(1), 2.0, std::chrono::milliseconds(500)));

  // The timeouts from now on, also of the connections already open (a held
  // lock's renewals may have shorter ones than its acquisition).
  void set_timeouts(RedisTimeouts timeouts);

  // Sends `args` to the node that serves `key`; `io_timeout` (when not 0)
  // bounds this command instead of the usual one (BLPOP waits longer).
  RedisResult<RedisReply> command(std::string_view key, const std::vector<std::string_view>& args,
                                  Nanos io_timeout = Nanos(0));

  // EVALSHA `script` (EVAL when the node does not know it) on the node of `lock_key`.
  RedisResult<RedisReply> script(const RedisScript& script, std::string_view lock_key,
                                 std::string_view wake_key, std::string_view token, std::string_view ms);

  // EVALSHA `script` (EVAL when the node does not know it) with these KEYS
  // and ARGV, on the node of keys.front() (all of them share its slot).
  // TRYAGAIN is retried as above, or returned at once without `retry_tryagain`
  // (a caller with single-key steps to fall back on).
  RedisResult<RedisReply> eval(const RedisScript& script, const std::vector<std::string>& keys,
                               const std::vector<std::string_view>& argv, bool retry_tryagain = true);

  // EVAL `script` on the node of keys.front() (the one a MOVED named for
  // its slot, else the first) without waiting for its reply: the script's
  // text, so that a server that does not know it yet still runs it. Nothing
  // is followed (a MOVED, a TRYAGAIN, an error): for writes whose loss is
  // acceptable and which should cost no round trip.
  void eval_unread(const RedisScript& script, const std::vector<std::string>& keys,
                   const std::vector<std::string_view>& argv);
  // The node of `key`'s slot is learnt by the first exchange with the server:
  // an HGET of it rides in the same write, and a MOVED answer names the node,
  // at no round trip of its own. Until then (no exchange yet) eval_unread of
  // it waits for its reply, following redirections: on a cluster an unread
  // command sent to a node that does not hold its slot would be lost.
  void probe_slot_of(std::string key) { probe_ = std::move(key); }

  // The masters of a Redis Cluster (CLUSTER SLOTS), or none when the server
  // is not a cluster: commands without a key (SCAN) must ask each of them.
  RedisResult<std::vector<RedisUrl::Address>> masters();
  // Sends `args` to the node at `address` (one that masters() named).
  RedisResult<RedisReply> command_on(const RedisUrl::Address& address,
                                     const std::vector<std::string_view>& args);

  // A connection to the server (or the first node) is open and not broken.
  bool connected() const { return first_ && !first_->broken(); }

  // The server (a node of it) has answered at least once in this run: an
  // outage is then ridden out, while a server that never answered may be a
  // typo in a port (SPEC §7).
  bool answered() const { return answered_; }

  // The server as messages name it (no password).
  std::string server() const { return url_.display(); }
  const RedisUrl& url() const { return url_; }

private:
  // The connection to the node of `key`: the one a MOVED named for its slot, else the first.
  RedisResult<RedisConnection*> connection_for(std::string_view key);
  RedisResult<RedisConnection*> first();
  RedisResult<RedisConnection*> node(const std::string& host, int port);
  // `args` (and `fallback` after NOSCRIPT), after ASKING when `asking`.
  RedisResult<RedisReply> send(RedisConnection& conn, bool asking, const std::vector<std::string_view>& args,
                               const std::vector<std::string_view>* fallback, Nanos io_timeout);
  RedisResult<RedisReply> keyed(std::string_view key, const std::vector<std::string_view>& args,
                                const std::vector<std::string_view>* fallback, Nanos io_timeout,
                                bool retry_tryagain);

  RedisUrl url_;
  std::optional<std::string> password_;
  RedisTimeouts timeouts_;
  Backoff tryagain_; // the first pause and its growth: each command starts from it
  std::optional<RedisConnection> first_;
  std::map<std::string, RedisConnection> nodes_;   // other cluster nodes, by HOST:PORT
  std::unordered_map<int, std::string> slot_node_; // learnt from MOVED
  std::optional<std::string> probe_;                // probe_slot_of, until the first exchange
  bool answered_ = false;                          // a reply (an error reply too) was read
};

} // namespace bufferlock
