// What the cache did (SPEC §21): the counters every cache call adds to, in
// the store it used, and what `cache --stats` prints of them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// The one outcome a cache call counts (each call counts once).
enum class CacheEvent {
  hit,          // served a sound entry it found
  stale,        // served an expired entry (--stale, --stale-if-error)
  wait,         // served the entry another caller built while it waited
  build,        // its miss: it built, and the entry was stored (or not: store_errors)
  failed_build, // its build exited non-zero
};

// The counters, in all or for one KEY. Seconds are kept in nanoseconds.
struct StatsCounters {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0; // builds + failed builds: the calls that found nothing to serve
  std::uint64_t builds = 0;
  std::uint64_t failed_builds = 0;
  std::uint64_t waits = 0;
  std::uint64_t stale_serves = 0;
  std::uint64_t warm_starts = 0;
  std::uint64_t store_errors = 0; // reads and writes of the store that failed
  std::uint64_t bytes_served = 0;
  std::uint64_t bytes_stored = 0; // stored sizes, as --list shows them
  std::uint64_t build_ns = 0;     // time the builds took
  std::uint64_t saved_ns = 0;     // build time of every entry served without building

  bool operator==(const StatsCounters&) const = default;
};

// One KEY's share, for the keys that saved most.
struct KeyStats {
  std::string key;
  StatsCounters counters;
};

// What --stats prints: the store's name ("file", "redis", "http", "s3"), its
// place (directory or server, password hidden), the totals, and the keys
// that saved most (at most 10, most seconds saved first).
struct StatsReport {
  std::string store;
  std::string location;
  StatsCounters total;
  std::vector<KeyStats> top;
};

enum class StatsFormat { text, json, markdown, prometheus };

// The report in `format`, ending with a newline.
std::string format_stats(const StatsReport& r, StatsFormat format);

} // namespace bufferlock
