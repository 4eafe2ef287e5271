#include "cache/stats.hpp"

#include "util/duration.hpp"
#include "util/json.hpp"
#include "util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace bufferlock {

namespace {

constexpr std::string_view metric_prefix = "bufferlock_cache_";

std::uint64_t served(const StatsCounters& c) { return c.hits + c.stale_serves + c.waits; }

// Hit rate in tenths of a percent, rounded half up: nothing when nothing was called.
std::optional<std::uint64_t> rate_tenths(const StatsCounters& c) {
  const std::uint64_t calls = served(c) + c.misses;
  if (calls == 0) return std::nullopt;
  return static_cast<std::uint64_t>(
      std::llround(1000.0L * static_cast<long double>(served(c)) / static_cast<long double>(calls)));
}

std::string tenths_text(std::uint64_t tenths) { return fmt::format("{}.{}", tenths / 10, tenths % 10); }

// "12.3 s": rounded to a tenth.
std::string seconds_tenths(std::uint64_t ns) {
  return tenths_text(ns / 100'000'000 + (ns % 100'000'000 >= 50'000'000)) + " s";
}

// "12.345": decimal seconds for JSON and Prometheus (format_seconds' precision).
std::string decimal_seconds(std::uint64_t ns) {
  return format_seconds(Nanos(static_cast<std::int64_t>(
      std::min<std::uint64_t>(ns, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))));
}

// "1.2 MiB (1258291 bytes)", or "512 bytes" under a KiB.
std::string human_bytes(std::uint64_t n) {
  static constexpr std::string_view units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return fmt::format("{} bytes", n);
  long double v = static_cast<long double>(n) / 1024;
  std::size_t u = 0;
  // 1023.95 and above would print as 1024.0 of the smaller unit.
  while (v >= 1023.95L && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {} ({} bytes)", static_cast<double>(v), units[u], n);
}

// A figure as text and markdown show it.
std::string shown(const StatsFigure& f, const StatsCounters& c) {
  switch (f.unit) {
  case StatsUnit::count: return std::to_string(c.*f.field);
  case StatsUnit::bytes: return human_bytes(c.*f.field);
  case StatsUnit::nanos: return seconds_tenths(c.*f.field);
  case StatsUnit::rate: {
    const auto tenths = rate_tenths(c);
    return tenths ? tenths_text(*tenths) + "%" : "-";
  }
  }
  return {};
}

// ---- text: a summary in the manner of ccache -s

std::string text(const StatsReport& r) {
  std::size_t width = std::string_view("Store:").size();
  for (const StatsFigure& f : stats_figures)
    width = std::max(width, f.indent + f.label.size() + 1);
  std::string out = fmt::format("{:<{}} {} {}\n", "Store:", width, r.store, escape_key(r.location));
  for (const StatsFigure& f : stats_figures) {
    const std::string label = std::string(f.indent, ' ') + std::string(f.label) + ":";
    out += fmt::format("{:<{}} {}\n", label, width, shown(f, r.total));
  }
  if (r.top.empty()) return out + "\nKeys that saved most: none\n";
  std::vector<std::string> saved;
  std::size_t saved_width = std::string_view("saved").size();
  std::size_t served_width = std::string_view("served").size();
  for (const KeyStats& k : r.top) {
    saved.push_back(seconds_tenths(k.counters.saved_ns));
    saved_width = std::max(saved_width, saved.back().size());
    served_width = std::max(served_width, std::to_string(served(k.counters)).size());
  }
  out += fmt::format("\nKeys that saved most:\n  {:>{}}  {:>{}}  key\n", "saved", saved_width, "served",
                     served_width);
  for (std::size_t i = 0; i < r.top.size(); ++i)
    out += fmt::format("  {:>{}}  {:>{}}  {}\n", saved[i], saved_width, served(r.top[i].counters),
                       served_width, escape_key(r.top[i].key));
  return out;
}

// ---- json: one document, numbers as numbers

JsonObject& add_counters(JsonObject& o, const StatsCounters& c) {
  o.number("calls", served(c) + c.misses).number("served", served(c));
  for (const StatsFigure& f : stats_figures) {
    switch (f.unit) {
    case StatsUnit::count:
    case StatsUnit::bytes: o.number(f.json, c.*f.field); break;
    case StatsUnit::nanos: o.raw(f.json, decimal_seconds(c.*f.field)); break;
    case StatsUnit::rate: {
      const auto tenths = rate_tenths(c);
      o.raw(f.json, tenths ? tenths_text(*tenths) : "null");
      break;
    }
    }
  }
  return o;
}

std::string json(const StatsReport& r) {
  std::vector<std::string> top;
  top.reserve(r.top.size());
  for (const KeyStats& k : r.top) {
    JsonObject o;
    top.push_back(add_counters(o.string("key", k.key), k.counters).str());
  }
  JsonObject totals;
  return JsonObject()
             .string("store", r.store)
             .string("location", r.location)
             .raw("totals", add_counters(totals, r.total).str())
             .raw("top", json_array(top))
             .str() +
         "\n";
}

// ---- markdown: GitHub-flavoured tables for a CI job summary

enum class InTable { no, yes };

// A code span that shows escape_key(s) as it is: a fence longer than any run
// of backticks inside; in a table '|' escaped, which GFM requires even there
// (outside a table the backslash would show).
std::string markdown_code(std::string_view s, InTable in_table) {
  const std::string text = escape_key(s);
  std::size_t run = 0, longest = 0;
  std::string body;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|' && in_table == InTable::yes) body += '\\';
    body += c;
  }
  if (body.empty()) return {};
  const bool pad =
      body.front() == '`' || body.back() == '`' ||
      (body.front() == ' ' && body.back() == ' ' && body.find_first_not_of(' ') != std::string::npos);
  const std::string fence(longest + 1, '`');
  return pad ? fence + " " + body + " " + fence : fence + body + fence;
}

std::string markdown(const StatsReport& r) {
  std::string out = fmt::format("### bufferlock cache: {} store {}\n\n| counter | value |\n|---|---:|\n",
                                r.store, markdown_code(r.location, InTable::no));
  for (const StatsFigure& f : stats_figures)
    out += fmt::format("| {} | {} |\n", f.label, shown(f, r.total));
  if (r.top.empty()) return out + "\nNo key has been served from the cache yet.\n";
  out += "\n| key | time saved | served |\n|---|---:|---:|\n";
  for (const KeyStats& k : r.top)
    out += fmt::format("| {} | {} | {} |\n", markdown_code(k.key, InTable::yes),
                       seconds_tenths(k.counters.saved_ns), served(k.counters));
  return out;
}

// ---- prometheus: the text exposition format (version 0.0.4)

// A label value: '\', '"' and newline escaped, as the format asks; escape_key
// first, so the value is valid UTF-8 (or the scrape fails) and two keys never
// make the same series.
std::string label_value(std::string_view s) {
  std::string out;
  for (const char c : escape_key(s)) {
    if (c == '\\' || c == '"') out += '\\';
    out += c; // escape_key leaves no newline
  }
  return out;
}

std::string family(std::string_view metric, std::string_view help) {
  return fmt::format("# HELP {0}{1} {2}\n# TYPE {0}{1} counter\n", metric_prefix, metric, help);
}

std::string prometheus(const StatsReport& r) {
  const std::string labels =
      fmt::format("store=\"{}\",location=\"{}\"", label_value(r.store), label_value(r.location));
  std::string out;
  for (const StatsFigure& f : stats_figures) {
    if (f.unit == StatsUnit::rate) continue;
    const std::uint64_t v = r.total.*f.field;
    out += family(f.metric, f.help);
    out += fmt::format("{}{}{{{}}} {}\n", metric_prefix, f.metric, labels,
                       f.unit == StatsUnit::nanos ? decimal_seconds(v) : std::to_string(v));
  }
  if (r.top.empty()) return out;
  out += family("key_saved_seconds_total", "Time saved by one of the keys that saved most.");
  for (const KeyStats& k : r.top)
    out += fmt::format("{}key_saved_seconds_total{{{},key=\"{}\"}} {}\n", metric_prefix, labels,
                       label_value(k.key), decimal_seconds(k.counters.saved_ns));
  out +=
      family("key_served_total", "Cache calls served without building, of one of the keys that saved most.");
  for (const KeyStats& k : r.top)
    out += fmt::format("{}key_served_total{{{},key=\"{}\"}} {}\n", metric_prefix, labels, label_value(k.key),
                       served(k.counters));
  return out;
}

} // namespace

std::string format_stats(const StatsReport& r, StatsFormat format) {
  switch (format) {
  case StatsFormat::text: return text(r);
  case StatsFormat::json: return json(r);
  case StatsFormat::markdown: return markdown(r);
  case StatsFormat::prometheus: return prometheus(r);
  }
  return text(r);
}

} // namespace bufferlock
