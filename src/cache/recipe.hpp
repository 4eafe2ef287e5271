// `bufferlock cache`: check, lock, check again, build, store, release
// (SPEC §8) — and --drop, --gc.
#pragma once

#include "cache/settings.hpp"
#include "lock/acquire.hpp"

#include <string>
#include <vector>

namespace bufferlock {

// What `bufferlock cache` is asked: the build lock's request (its key is
// KEY), the cache's settings, and the command that builds the entry.
struct CacheRequest : LockRequest {
  CacheSettings cache;
  std::vector<std::string> argv; // the command; for -c, {"/bin/sh", "-c", STRING}
  bool json = false;             // --list as one JSON document
};

// Runs the cache subcommand; returns the exit status.
int cache_main(const CacheRequest& o);

// The cache directory when none is given: $XDG_CACHE_HOME/bufferlock, else
// ~/.cache/bufferlock ($HOME, else the password database).
std::string default_cache_dir();

} // namespace bufferlock
