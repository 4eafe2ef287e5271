#include "cache/stats_count.hpp"

#include "util/hex.hpp"

#include <algorithm>
#include <charconv>

namespace bufferlock {

namespace {

std::optional<std::uint64_t> number(std::string_view s) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// One line of stats_record into `key` and `c`; false when it is not one.
bool parse_record(std::string_view line, std::string& key, StatsCounters& c) {
  if (!line.starts_with("1 ")) return false;
  line.remove_prefix(2);
  bool keyed = false;
  while (!line.empty()) {
    const std::size_t sp = line.find(' ');
    const std::string_view word = line.substr(0, sp);
    line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    const std::size_t eq = word.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view name = word.substr(0, eq);
    const std::string_view value = word.substr(eq + 1);
    if (name == "key") {
      auto k = from_hex(value);
      if (!k) return false;
      key = std::move(*k);
      keyed = true;
      continue;
    }
    const auto v = number(value);
    if (!v) return false;
    set_counter(c, name, *v); // a counter of a later version: ignored
  }
  return keyed;
}

} // namespace

StatsCounters counters_of(const CallCount& c) {
  StatsCounters s;
  if (c.event) {
    switch (*c.event) {
    case CacheEvent::hit: s.hits = 1; break;
    case CacheEvent::stale: s.stale_serves = 1; break;
    case CacheEvent::wait: s.waits = 1; break;
    case CacheEvent::build: s.builds = s.misses = 1; break;
    case CacheEvent::failed_build: s.failed_builds = s.misses = 1; break;
    }
  }
  s.warm_starts = c.warm_start ? 1 : 0;
  s.store_errors = c.store_errors;
  s.bytes_served = c.bytes_served;
  s.bytes_stored = c.bytes_stored;
  s.build_ns = c.build_ns;
  s.saved_ns = c.saved_ns;
  return s;
}

void add_counters(StatsCounters& to, const StatsCounters& c) {
  for (const StatsFigure& f : stats_figures)
    if (f.field) to.*f.field += c.*f.field;
}

std::vector<std::pair<std::string_view, std::uint64_t>> counter_fields(const StatsCounters& c) {
  std::vector<std::pair<std::string_view, std::uint64_t>> out;
  for (const StatsFigure& f : stats_figures)
    if (f.field) out.emplace_back(f.name, c.*f.field);
  return out;
}

bool set_counter(StatsCounters& c, std::string_view name, std::uint64_t value) {
  for (const StatsFigure& f : stats_figures) {
    if (!f.field || f.name != name) continue;
    c.*f.field = value;
    return true;
  }
  return false;
}

std::vector<KeyStats> top_keys(const std::map<std::string, StatsCounters>& per_key, std::size_t n) {
  std::vector<KeyStats> all;
  all.reserve(per_key.size());
  for (const auto& [key, c] : per_key)
    all.push_back({key, c});
  const auto more_saved = [](const KeyStats& a, const KeyStats& b) {
    if (a.counters.saved_ns != b.counters.saved_ns) return a.counters.saved_ns > b.counters.saved_ns;
    return a.key < b.key;
  };
  const std::size_t keep = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep), all.end(), more_saved);
  all.resize(keep);
  return all;
}

void StatsSums::add(const std::string& key, const StatsCounters& c) {
  add_counters(total, c);
  add_counters(keys[key], c);
}

std::string stats_record(const CallCount& c) { return stats_record(c.key, counters_of(c)); }

// Made in one allocation: every hit of the file store writes one.
std::string stats_record(std::string_view key, const StatsCounters& s) {
  std::string out;
  out.reserve(8 + std::size(stats_figures) * 40 + 2 * key.size());
  out += '1';
  char digits[24];
  for (const StatsFigure& f : stats_figures) {
    if (!f.field) continue;
    const std::uint64_t value = s.*f.field;
    if (value == 0) continue;
    out += ' ';
    out += f.name;
    out += '=';
    out.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
  }
  out += " key=";
  append_hex(out, key);
  out += '\n';
  return out;
}

void sum_records(std::string_view text, StatsSums& sums) {
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return; // a record being written, or torn
    std::string key;
    StatsCounters c;
    if (parse_record(text.substr(0, nl), key, c)) sums.add(key, c);
    text.remove_prefix(nl + 1);
  }
}

} // namespace bufferlock
