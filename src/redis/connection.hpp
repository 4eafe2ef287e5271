// One connection to a Redis server over hiredis 0.14: RAII for the context and
// replies, timeouts on connect and on every read/write, AUTH and SELECT.
#pragma once

#include "redis/error.hpp"
#include "redis/url.hpp"
#include "util/duration.hpp"

#include <hiredis/hiredis.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace bufferlock {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReply = std::unique_ptr<redisReply, ReplyDeleter>;

template <class T> using RedisResult = std::variant<T, RedisError>;

struct RedisTimeouts {
  Nanos connect;
  Nanos io;
};

class RedisConnection {
public:
  // Connects, then authenticates (when a password is given) and selects the
  // database, in one round trip.
  static RedisResult<RedisConnection> open(const RedisUrl& url, const std::optional<std::string>& password,
                                           RedisTimeouts timeouts);

  // Sends one command and reads its reply. An error reply comes back as a
  // RedisError of kind server. After a connection error the connection is broken
  // for good (hiredis errors are sticky): check broken() and open anew.
  RedisResult<RedisReply> command(std::initializer_list<std::string_view> args);

  // The read timeout of the following commands (BLPOP needs a longer one).
  void set_io_timeout(Nanos timeout);

  bool broken() const { return broken_; }

private:
  struct ContextDeleter {
    void operator()(redisContext* c) const { redisFree(c); }
  };
  explicit RedisConnection(redisContext* c) : ctx_(c) {}
  RedisError context_error(int saved_errno);

  std::unique_ptr<redisContext, ContextDeleter> ctx_;
  bool broken_ = false;
};

} // namespace bufferlock
