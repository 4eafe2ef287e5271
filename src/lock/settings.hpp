// What a lock is asked to be, apart from the connection: the backend, and
// for Redis the key layout and the holder's lease (SPEC §7, §13).
#pragma once

#include "redis/settings.hpp"
#include "util/duration.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace bufferlock {

enum class Backend { file, redis };
enum class OnLost { warn, term };

struct LockSettings {
  Nanos ttl = std::chrono::seconds(60);
  std::string key_prefix = "buffer:lock:";
  bool hash_tag = false;
  OnLost on_lost = OnLost::warn;
  Nanos kill_after = std::chrono::seconds(10);
  // The timeouts of a renewal attempt and of the release, once the lock is
  // held: the connection's unless --on-lost term shortened the defaulted
  // ones to fit the lease into the TTL (SPEC §7, fit_lease).
  std::optional<Nanos> renew_connect_timeout, renew_io_timeout;

  bool operator==(const LockSettings&) const = default;
};

// A Redis lock: its connection and the lock's own settings.
struct RedisLockSettings : RedisSettings, LockSettings {
  Nanos renew_connect() const { return renew_connect_timeout.value_or(connect_timeout); }
  Nanos renew_io() const { return renew_io_timeout.value_or(io_timeout); }

  bool operator==(const RedisLockSettings&) const = default;
};

} // namespace bufferlock
