// Finding the master that sentinels name (SPEC §13): the sentinels are asked
// in order for MASTER's address; the server there is used only when ROLE
// says it is a master (a failover in progress is waited out by asking again,
// within the timeouts).
#pragma once

#include "redis/connection.hpp"
#include "redis/url.hpp"

#include <optional>
#include <string>

namespace bufferlock {

// A connection to the master of the redis-sentinel:// `url`, authenticated
// with `password` and on the URL's database.
RedisResult<RedisConnection>
open_sentinel_master(const RedisUrl& url, const std::optional<std::string>& password, RedisTimeouts timeouts);

} // namespace bufferlock
