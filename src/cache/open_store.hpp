// The one factory of stores: the store a command line names, picked from a
// table keyed by scheme ("file" without --store, "redis", "http", "https",
// "s3"), and wrapped in the rule that a store that failed a read is down for
// the rest of the run. The table also says how --store spells each store
// and what it takes (cli asks it). A new store is one file and one line of
// that table.
#pragma once

#include "cache/store.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace bufferlock {

struct CacheSettings;
struct RedisLockSettings;

// What a store that --store spells takes, for cli's checks: asked of the
// table, so that cli knows no store by its name.
struct StoreTraits {
  bool in_redis = false; // entries on the -r server (one server, for --list and --gc too)
  bool objects = false;  // an object store: --store-timeout, --tls-ca, its last uses in the -r Redis
  bool token = false;    // --store-token-file
  // When it talks TLS that --tls-ca verifies: never, when its URL is
  // https://, or always may (an S3 endpoint from the environment).
  enum class Tls : unsigned char { never, by_url, may } tls = Tls::never;
};

// The store `text` spells ("file", "redis", or a URL by its scheme);
// nullptr when it spells none.
const StoreTraits* store_spelled(std::string_view text);

// Puts the store `text` spells into `c` (store_spelled(text) is not null).
// When its URL cannot be used: why, and the URL as a message may show it.
struct StoreSpellingError {
  std::string shown;
  std::string why;
};
std::optional<StoreSpellingError> spell_store(CacheSettings& c, std::string_view text);

// The traits of the store `c` names.
const StoreTraits& store_traits(const CacheSettings& c);

// Whether the store of `c` talks TLS that --tls-ca verifies (https, and S3,
// whose endpoint may be https).
bool store_talks_tls(const CacheSettings& c);

// The store of `cache`; `cache_dir` is the cache directory (the file
// store's entries); `getenv` looks up the environment (null when unset),
// which only an S3 store reads (its AWS settings), injected so that tests
// need no real one. An error (a usage error's text: a --store-token-file
// that cannot be read, no AWS credentials) when it cannot be made.
std::variant<std::unique_ptr<EntryStore>, std::string>
open_store(const CacheSettings& cache, const RedisLockSettings& redis, const std::string& cache_dir,
           const std::function<const char*(const char*)>& getenv);

// Makes the cache directory (its locks, its stat cache, the file store's
// entries): with its parents, the last component 0700; an error too when it
// is there but cannot be written.
std::optional<SysError> prepare_cache_dir(const std::string& dir);

} // namespace bufferlock
