// The one factory of stores: the store a command line names, picked from a
// table keyed by scheme ("file" without --store, "redis", "http", "https"),
// and wrapped in the rule that a store that failed a read is down for the
// rest of the run. A new store is one file and one line of that table.
#pragma once

#include "cache/store.hpp"

#include <functional>
#include <memory>
#include <string>
#include <variant>

namespace bufferlock {

struct CacheSettings;
struct RedisLockSettings;

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
