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

enum class StatsUnit { count, bytes, nanos, rate };

// The counters, one row each, the one list that the storage (the records of
// a stats file, the fields of a Redis hash: `name`) and the report's formats
// (the text and markdown `label`, the JSON field, the Prometheus family, a
// counter, and its help) all read, in the report's order. The hit rate is
// derived from the others: it is not kept, and Prometheus leaves it to a query.
struct StatsFigure {
  std::uint64_t StatsCounters::*field; // null for the rate
  StatsUnit unit;
  std::size_t indent; // 2 for a part of the figure above (builds of misses)
  std::string_view name;
  std::string_view label;
  std::string_view json;
  std::string_view metric;
  std::string_view help;
};

inline constexpr StatsFigure stats_figures[] = {
    {&StatsCounters::hits, StatsUnit::count, 0, "hits", "Hits", "hits", "hits_total",
     "Cache calls served from a sound entry they found."},
    {&StatsCounters::stale_serves, StatsUnit::count, 0, "stale_serves", "Stale serves", "stale_serves",
     "stale_serves_total", "Cache calls served from an expired entry (--stale, --stale-if-error)."},
    {&StatsCounters::waits, StatsUnit::count, 0, "waits", "Waits", "waits", "waits_total",
     "Cache calls served the entry another caller built while they waited."},
    {&StatsCounters::misses, StatsUnit::count, 0, "misses", "Misses", "misses", "misses_total",
     "Cache calls that found nothing to serve (builds and failed builds)."},
    {&StatsCounters::builds, StatsUnit::count, 2, "builds", "Builds", "builds", "builds_total",
     "Cache calls that built the entry."},
    {&StatsCounters::failed_builds, StatsUnit::count, 2, "failed_builds", "Failed builds", "failed_builds",
     "failed_builds_total", "Cache calls whose build exited non-zero."},
    {&StatsCounters::warm_starts, StatsUnit::count, 0, "warm_starts", "Warm starts", "warm_starts",
     "warm_starts_total", "Builds that started from a restored earlier entry (--warm)."},
    {&StatsCounters::store_errors, StatsUnit::count, 0, "store_errors", "Store errors", "store_errors",
     "store_errors_total", "Reads and writes of the store that failed."},
    {nullptr, StatsUnit::rate, 0, "", "Hit rate", "hit_rate_percent", "", ""},
    {&StatsCounters::bytes_served, StatsUnit::bytes, 0, "bytes_served", "Bytes served", "bytes_served",
     "served_bytes_total", "Bytes of entries served without building."},
    {&StatsCounters::bytes_stored, StatsUnit::bytes, 0, "bytes_stored", "Bytes stored", "bytes_stored",
     "stored_bytes_total", "Stored size of the entries the builds stored."},
    {&StatsCounters::build_ns, StatsUnit::nanos, 0, "build_ns", "Build time", "build_seconds",
     "build_seconds_total", "Time the builds took."},
    {&StatsCounters::saved_ns, StatsUnit::nanos, 0, "saved_ns", "Time saved", "saved_seconds",
     "saved_seconds_total", "Build time of every entry served without building."},
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
