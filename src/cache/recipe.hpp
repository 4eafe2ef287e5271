// `bufferlock cache`: check, lock, check again, build, store, release
// (SPEC §8) — and --drop, --gc.
#pragma once

#include "cli.hpp"

namespace bufferlock {

// Runs the cache subcommand; returns the exit status.
int cache_main(const Options& o);

// The cache directory when none is given: $XDG_CACHE_HOME/bufferlock, else
// ~/.cache/bufferlock ($HOME, else the password database).
std::string default_cache_dir();

} // namespace bufferlock
