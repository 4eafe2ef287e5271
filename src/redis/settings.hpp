// How to reach Redis: the server (or the N of a quorum), its password,
// timeouts, TLS files and the waiting back-off. What a lock or a store does
// with the connection lives in its own layer (lock/settings.hpp, cache/).
#pragma once

#include "redis/tls.hpp"
#include "redis/url.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

struct RedisSettings {
  RedisUrl url;
  std::optional<std::string> password; // from the URL, BUFFERLOCK_REDIS_PASSWORD or REDISCLI_AUTH
  Nanos connect_timeout = std::chrono::seconds(1);
  Nanos io_timeout = std::chrono::seconds(1);
  Nanos step = std::chrono::milliseconds(1);
  double ratio = 2.0;
  Nanos max_step = std::chrono::milliseconds(500);
  // The waiting back-off, which also paces TRYAGAIN retries (SPEC §13).
  Backoff backoff() const { return {step, ratio, max_step}; }
  // How long an infinite wait retries a server that has not answered once
  // in this run (a typo in a port): then the wait ends with the error (SPEC §7).
  Nanos outage_allowance = std::chrono::seconds(30);
  TlsFiles tls; // rediss:// only
  // --redis given N > 1 times: N independent masters, each URL with its
  // password (SPEC §13); `url` is the first of them.
  std::vector<RedisUrl> quorum;

  bool operator==(const RedisSettings&) const = default;
};

// A rediss:// URL anywhere, so also in a quorum whose first server is plain.
inline bool uses_tls(const RedisSettings& r) {
  if (r.url.tls) return true;
  for (const RedisUrl& u : r.quorum)
    if (u.tls) return true;
  return false;
}

} // namespace bufferlock
