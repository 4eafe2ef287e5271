// Counting what the cache did (SPEC §21): one call's count, the counters it
// adds to, and the sinks that keep them: a file of records in a cache
// directory (stats_file.hpp) or hashes in a Redis (stats_redis.hpp).
#pragma once

#include "cache/stats.hpp"
#include "util/files.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

// What one cache call did: its one outcome (none when it ended otherwise:
// an interrupted run, a lock it could not take), and what came with it.
struct CallCount {
  std::string key;
  std::optional<CacheEvent> event;
  std::uint64_t bytes_served = 0; // the stored size of the entry served
  std::uint64_t bytes_stored = 0; // the stored size of the entry built
  std::uint64_t build_ns = 0;     // a build's duration
  std::uint64_t saved_ns = 0;     // the build time of the entry served
  std::uint64_t store_errors = 0; // reads and writes of the store that failed
  bool warm_start = false;

  // Whether there is anything to count.
  bool empty() const { return !event && store_errors == 0 && !warm_start; }
};

// The counters one call adds.
StatsCounters counters_of(const CallCount& c);

// Adds `c` to `to`, field by field.
void add_counters(StatsCounters& to, const StatsCounters& c);

// The counters by field name (the names of the Redis hashes and of the
// records), in one fixed order; and one set back from such pairs (unknown
// names ignored).
std::vector<std::pair<std::string_view, std::uint64_t>> counter_fields(const StatsCounters& c);
bool set_counter(StatsCounters& c, std::string_view name, std::uint64_t value);

// The keys that saved most: at most `n`, most seconds saved first (then by
// key, so that the order is stable).
std::vector<KeyStats> top_keys(const std::map<std::string, StatsCounters>& per_key, std::size_t n = 10);

// The counts that a sink sums: totals, and per KEY.
struct StatsSums {
  StatsCounters total;
  std::map<std::string, StatsCounters> keys;

  void add(const std::string& key, const StatsCounters& c);
};

// One call as a line of the file sink: "1 FIELD=N ... key=HEX\n", only the
// counters that are not 0 (small: one write(2) of O_APPEND).
std::string stats_record(const CallCount& c);
// The same line for counters summed (a compacted file: one line a KEY).
std::string stats_record(std::string_view key, const StatsCounters& s);

// Adds the sound records of `text` (lines of stats_record) to `sums`; a
// torn or foreign line is skipped.
void sum_records(std::string_view text, StatsSums& sums);

// Where a store's counters are kept. Counting never fails a call: a count
// that cannot be written is dropped silently.
class StatsSink {
public:
  virtual ~StatsSink() = default;
  virtual void count(const CallCount& c) const = 0;
  // Everything counted so far.
  virtual std::variant<StatsSums, SysError> read() const = 0;
  // Forgets everything counted (--stats --zero).
  virtual std::optional<SysError> zero() const = 0;
  // --gc: keeps the same sums in less room, where the sink grows with each
  // call; best effort, silent (as counting is).
  virtual void compact() const {}
  // In a forked child: its own connection.
  virtual void after_fork() const {}
};

} // namespace bufferlock
