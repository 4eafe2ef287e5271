// What `bufferlock cache` is asked to do with its entries: where they live,
// how long they are fresh, what an entry holds (SPEC §8, §15, §18).
#pragma once

#include "cache/stats.hpp"
#include "http/url.hpp"
#include "util/duration.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

enum class CacheStoreKind { file, redis, http, s3 };

struct CacheSettings {
  std::string dir;                             // empty: BUFFERLOCK_CACHE_DIR, XDG_CACHE_HOME, ~/.cache
  std::optional<Nanos> max_age;                // entries older than this are misses
  std::optional<Nanos> stale;                  // ... but served while someone rebuilds, this much longer
  bool background = false;                     // the caller that rebuilds serves stale and rebuilds detached
  bool stale_if_error = false;                 // a failed rebuild serves the old entry
  bool drop = false;                           // --drop KEY
  bool gc = false;                             // --gc
  bool list = false;                           // --list
  bool stats = false;                          // --stats: print the counters (SPEC §21)
  bool stats_zero = false;                     // --stats --zero: reset them
  StatsFormat stats_format = StatsFormat::text; // --format (--json: json)
  bool force = false;                          // rebuild even when fresh
  bool read_only = false;                      // --read-only: serve, never write the store
  bool keep_stderr = false;                    // store stderr too, replay it on hits
  bool explain = false;                        // --explain: say why a miss missed, and what a hit served
  std::vector<std::string> depends;            // --depends PATH...
  std::vector<std::string> excludes;           // --exclude PATTERN...: left out of --depends directories
  std::vector<std::string> outputs;            // --output PATH...: files the build makes
  bool warm = false;                           // --warm: a miss builds over the nearest entry's outputs
  std::vector<std::string> warm_from;          // --warm-from KEY...: the nearest when KEY has none
  std::string sign_key;                        // --sign-key FILE (BUFFERLOCK_SIGN_KEY); empty: unsigned
  bool compress = false;                       // --compress: zstd in the file store (Redis: always)
  CacheStoreKind store = CacheStoreKind::file; // --store (BUFFERLOCK_CACHE_STORE)
  StoreUrl store_url;                          // --store http(s)://...
  std::string store_s3; // --store s3://BUCKET/PREFIX, as given
  std::string store_token_file;                // --store-token-file (BUFFERLOCK_STORE_TOKEN_FILE)
  std::string store_ca;                        // an https store's CA file (--tls-ca, which Redis reads too)
  Nanos store_timeout = std::chrono::seconds(10); // --store-timeout: connect, and any stall
  std::uint64_t max_entry = 64ull * 1024 * 1024;  // larger outputs are not stored (the default: Redis only)
  bool max_entry_given = false;                   // the file and http stores have a limit only when given
  std::optional<std::uint64_t> max_size;          // --gc: trim the store to this many bytes
  std::optional<Nanos> max_unused;                // --gc: remove entries unused this long

  bool operator==(const CacheSettings&) const = default;
};

} // namespace bufferlock
