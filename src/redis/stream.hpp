// The byte stream under a Redis connection: a TCP socket (IPv4 or IPv6) or
// a unix socket, and TLS on top of either when asked for. Non-blocking and
// CLOEXEC from the start; every call is bounded by a deadline on the
// monotonic clock, the TLS handshake included.
#pragma once

#include "redis/error.hpp"
#include "redis/tls.hpp"
#include "redis/url.hpp"
#include "util/duration.hpp"
#include "util/fd.hpp"

#include <cstddef>
#include <optional>
#include <string_view>
#include <variant>

namespace bufferlock {

// Whether the TCP socket `fd` is connected to itself: a connect to a
// loopback port nobody listens on, whose ephemeral source port the kernel
// happened to pick equal to it (TCP simultaneous open). What it "reads" is
// what it wrote, so to a client it is a server that is not there.
bool connected_to_itself(int fd);

class RedisStream {
public:
  // Connects to `url` before `connect_deadline`; for a rediss:// URL then
  // shakes hands before `handshake_deadline` (tls_prepare() first).
  static std::variant<RedisStream, RedisError> open(const RedisUrl& url, Nanos connect_deadline,
                                                    Nanos handshake_deadline);

  // Writes all of `data`; nullopt when done.
  std::optional<RedisError> write_all(std::string_view data, Nanos deadline);
  // Reads at least one byte into `buf` (at most `n`); the count, or the error.
  std::variant<std::size_t, RedisError> read_some(char* buf, std::size_t n, Nanos deadline);

  // The socket, for a poll(2) over several streams.
  int fd() const { return fd_.get(); }

private:
  RedisStream() = default;
  // Waits until the socket is ready for `events` (POLLIN/POLLOUT).
  std::optional<RedisError> wait_for(short events, Nanos deadline, bool connecting);
  // The server closed the connection (with a hint for TLS).
  RedisError closed_error() const;

  UniqueFd fd_;
  std::optional<TlsSession> tls_;
  bool tls_answered_ = false; // a first reply came over TLS
};

} // namespace bufferlock
