// One connection to a Redis server: hiredis' protocol code (requests built by
// redisFormatCommandArgv, replies parsed by its redisReader) over our own
// stream (redis/stream.hpp), so that plain and TLS connections share every
// line above the socket. AUTH and SELECT on connect; every command bounded by
// the I/O timeout.
#pragma once

#include "redis/error.hpp"
#include "redis/stream.hpp"
#include "redis/url.hpp"
#include "util/duration.hpp"

#include <hiredis/hiredis.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

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
  // Connects (and for rediss:// shakes hands: tls_prepare() first), then
  // authenticates (when a password is given) and selects the database, in
  // one round trip.
  static RedisResult<RedisConnection> open(const RedisUrl& url, const std::optional<std::string>& password,
                                           RedisTimeouts timeouts);

  // Sends one command and reads its reply. An error reply comes back as a
  // RedisError of kind server. After a connection error the connection is
  // broken for good (the stream's state is unknown): check broken() and open anew.
  RedisResult<RedisReply> command(std::initializer_list<std::string_view> args);

  // The I/O timeout of the following commands (BLPOP needs a longer one).
  void set_io_timeout(Nanos timeout) { io_timeout_ = timeout; }

  bool broken() const { return broken_; }

  // Sends `commands` in one write, then reads one reply for each.
  std::vector<RedisResult<RedisReply>> pipeline(const std::vector<std::vector<std::string_view>>& commands);

  // For a fan-out over several connections (redis/quorum.*): sends one
  // command without reading; then, each time poll(2) finds fd() readable,
  // take_reply() reads what is there: the reply, or nullopt while it is incomplete.
  std::optional<RedisError> send(const std::vector<std::string_view>& args);
  std::optional<RedisResult<RedisReply>> take_reply();
  int fd() const { return stream_.fd(); }

  // Sends one command whose reply is never wanted: the next pipeline()
  // reads it first and throws it away. Nothing waits for it.
  void send_unread(const std::vector<std::string_view>& args);

private:
  struct ReaderDeleter {
    void operator()(redisReader* r) const { redisReaderFree(r); }
  };
  RedisConnection(RedisStream stream, Nanos io_timeout);
  RedisResult<RedisReply> read_reply(Nanos deadline);
  RedisError fail(RedisError e);

  RedisStream stream_;
  std::unique_ptr<redisReader, ReaderDeleter> reader_;
  Nanos io_timeout_;
  bool broken_ = false;
  std::size_t unread_ = 0; // replies of send_unread still to be skipped
};

} // namespace bufferlock
