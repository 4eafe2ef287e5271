// cache --stats: each format of one fixed report (cache/stats.hpp).
#include "cache/stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

using namespace bufferlock;
using nlohmann::json;

namespace {

// A KEY with what breaks a line, a table cell, a code span, a label value
// and UTF-8: pipe, newline, backtick, quote, backslash, a stray byte.
const std::string hostile("a|b\nc`d\"e\\\xff", 11);

StatsCounters counters(std::uint64_t hits, std::uint64_t waits, std::uint64_t saved_ns) {
  StatsCounters c;
  c.hits = hits;
  c.waits = waits;
  c.saved_ns = saved_ns;
  return c;
}

StatsReport fixed_report() {
  StatsReport r{"file", "/var/cache/bl", {}, {}};
  r.total.hits = 12;
  r.total.stale_serves = 1;
  r.total.waits = 3;
  r.total.misses = 5;
  r.total.builds = 4;
  r.total.failed_builds = 1;
  r.total.warm_starts = 2;
  r.total.bytes_served = 1258291;
  r.total.bytes_stored = 655360;
  r.total.build_ns = 12'345'000'000;
  r.total.saved_ns = 45'678'000'000;
  r.top.push_back({"build-linux", counters(10, 2, 40'100'000'000)});
  r.top.push_back({hostile, counters(1, 0, 5'550'000'000)});
  return r;
}

StatsReport empty_report() { return {"redis", "redis://:***@cache.example:6379/0", {}, {}}; }

// The line of `text` that starts with `prefix`, or "".
std::string line_of(const std::string& text, std::string_view prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return {};
}

std::string text_line(const StatsCounters& total, std::string_view label) {
  return line_of(format_stats({"file", "/d", total, {}}, StatsFormat::text), label);
}

} // namespace

TEST(StatsText, FixedReport) {
  EXPECT_EQ(format_stats(fixed_report(), StatsFormat::text),
            "Store:           file /var/cache/bl\n"
            "Hits:            12\n"
            "Stale serves:    1\n"
            "Waits:           3\n"
            "Misses:          5\n"
            "  Builds:        4\n"
            "  Failed builds: 1\n"
            "Warm starts:     2\n"
            "Store errors:    0\n"
            "Hit rate:        76.2%\n"
            "Bytes served:    1.2 MiB (1258291 bytes)\n"
            "Bytes stored:    640.0 KiB (655360 bytes)\n"
            "Build time:      12.3 s\n"
            "Time saved:      45.7 s\n"
            "\n"
            "Keys that saved most:\n"
            "   saved  served  key\n"
            "  40.1 s      12  build-linux\n"
            "   5.6 s       1  a|b\\x0ac`d\"e\\x5c\\xff\n");
}

TEST(StatsText, ZeroCallsAndNoKeys) {
  EXPECT_EQ(format_stats(empty_report(), StatsFormat::text),
            "Store:           redis redis://:***@cache.example:6379/0\n"
            "Hits:            0\n"
            "Stale serves:    0\n"
            "Waits:           0\n"
            "Misses:          0\n"
            "  Builds:        0\n"
            "  Failed builds: 0\n"
            "Warm starts:     0\n"
            "Store errors:    0\n"
            "Hit rate:        -\n"
            "Bytes served:    0 bytes\n"
            "Bytes stored:    0 bytes\n"
            "Build time:      0.0 s\n"
            "Time saved:      0.0 s\n"
            "\n"
            "Keys that saved most: none\n");
}

TEST(StatsText, HitRateServedOfAllCallsRoundedHalfUp) {
  StatsCounters c;
  c.hits = 1;
  c.misses = 15;
  EXPECT_EQ(text_line(c, "Hit rate:"), "Hit rate:        6.3%"); // 6.25
  c = {};
  c.waits = 1;
  c.stale_serves = 1;
  c.misses = 1;
  EXPECT_EQ(text_line(c, "Hit rate:"), "Hit rate:        66.7%");
  c = {};
  c.misses = 3;
  EXPECT_EQ(text_line(c, "Hit rate:"), "Hit rate:        0.0%");
}

TEST(StatsText, HumanSizesAndExactBytes) {
  const auto served = [](std::uint64_t n) {
    StatsCounters c;
    c.bytes_served = n;
    return text_line(c, "Bytes served:").substr(17);
  };
  EXPECT_EQ(served(1023), "1023 bytes");
  EXPECT_EQ(served(1024), "1.0 KiB (1024 bytes)");
  EXPECT_EQ(served(1048575), "1.0 MiB (1048575 bytes)"); // not "1024.0 KiB"
  EXPECT_EQ(served(5ull << 30), "5.0 GiB (5368709120 bytes)");
  EXPECT_EQ(served(UINT64_MAX), "16.0 EiB (18446744073709551615 bytes)");
}

TEST(StatsJson, FixedReportNumbersAsNumbers) {
  const json doc = json::parse(format_stats(fixed_report(), StatsFormat::json));
  EXPECT_EQ(doc["store"], "file");
  EXPECT_EQ(doc["location"], "/var/cache/bl");
  const json& t = doc["totals"];
  for (const char* name : {"calls", "served", "hits", "stale_serves", "waits", "misses", "builds", "failed_builds",
                           "warm_starts", "store_errors", "bytes_served", "bytes_stored"})
    EXPECT_TRUE(t.at(name).is_number_unsigned()) << name;
  EXPECT_EQ(t["calls"], 21);
  EXPECT_EQ(t["served"], 16);
  EXPECT_EQ(t["hits"], 12);
  EXPECT_EQ(t["misses"], 5);
  EXPECT_EQ(t["bytes_served"], 1258291);
  EXPECT_TRUE(t["saved_seconds"].is_number_float());
  EXPECT_DOUBLE_EQ(t["saved_seconds"].get<double>(), 45.678);
  EXPECT_DOUBLE_EQ(t["build_seconds"].get<double>(), 12.345);
  EXPECT_DOUBLE_EQ(t["hit_rate_percent"].get<double>(), 76.2);
  ASSERT_EQ(doc["top"].size(), 2u);
  EXPECT_EQ(doc["top"][0]["key"], "build-linux");
  EXPECT_EQ(doc["top"][0]["served"], 12);
  EXPECT_DOUBLE_EQ(doc["top"][0]["saved_seconds"].get<double>(), 40.1);
  // JSON carries the KEY itself; only the stray byte becomes U+FFFD.
  EXPECT_EQ(doc["top"][1]["key"], "a|b\nc`d\"e\\\xef\xbf\xbd");
}

TEST(StatsJson, ZeroCallsAndNoKeys) {
  const std::string out = format_stats(empty_report(), StatsFormat::json);
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1); // one document, one line
  const json doc = json::parse(out);
  EXPECT_TRUE(doc["totals"]["hit_rate_percent"].is_null());
  EXPECT_EQ(doc["totals"]["calls"], 0);
  EXPECT_TRUE(doc["top"].is_array());
  EXPECT_TRUE(doc["top"].empty());
}

TEST(StatsMarkdown, FixedReport) {
  EXPECT_EQ(format_stats(fixed_report(), StatsFormat::markdown),
            "### bufferlock cache: file store `/var/cache/bl`\n"
            "\n"
            "| counter | value |\n"
            "|---|---:|\n"
            "| Hits | 12 |\n"
            "| Stale serves | 1 |\n"
            "| Waits | 3 |\n"
            "| Misses | 5 |\n"
            "| Builds | 4 |\n"
            "| Failed builds | 1 |\n"
            "| Warm starts | 2 |\n"
            "| Store errors | 0 |\n"
            "| Hit rate | 76.2% |\n"
            "| Bytes served | 1.2 MiB (1258291 bytes) |\n"
            "| Bytes stored | 640.0 KiB (655360 bytes) |\n"
            "| Build time | 12.3 s |\n"
            "| Time saved | 45.7 s |\n"
            "\n"
            "| key | time saved | served |\n"
            "|---|---:|---:|\n"
            "| `build-linux` | 40.1 s | 12 |\n"
            // a fence longer than the key's backticks; '|' escaped; the newline as \x0a
            "| ``a\\|b\\x0ac`d\"e\\x5c\\xff`` | 5.6 s | 1 |\n");
}

TEST(StatsMarkdown, CodeSpansOfAwkwardKeys) {
  StatsReport r = empty_report();
  r.top = {{"`x`", {}}, {"a``b", {}}, {" a ", {}}, {"||", {}}};
  const std::string out = format_stats(r, StatsFormat::markdown);
  EXPECT_NE(out.find("\n| `` `x` `` | 0.0 s | 0 |\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n| ```a``b``` | 0.0 s | 0 |\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n| `  a  ` | 0.0 s | 0 |\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\n| `\\|\\|` | 0.0 s | 0 |\n"), std::string::npos) << out;
}

TEST(StatsMarkdown, LocationInTheHeadingUnescapedPipe) {
  // Outside a table a backslash before '|' would show; a newline would end the heading.
  const StatsReport r{"http", "http://h:8080/a|b\n", {}, {}};
  EXPECT_EQ(line_of(format_stats(r, StatsFormat::markdown), "###"),
            "### bufferlock cache: http store `http://h:8080/a|b\\x0a`");
}

TEST(StatsMarkdown, ZeroCallsAndNoKeys) {
  const std::string out = format_stats(empty_report(), StatsFormat::markdown);
  EXPECT_EQ(line_of(out, "| Hit rate"), "| Hit rate | - |");
  EXPECT_EQ(out.find("| key |"), std::string::npos);
  EXPECT_EQ(line_of(out, "No key"), "No key has been served from the cache yet.");
}

TEST(StatsPrometheus, FamiliesSamplesAndLabels) {
  const std::string out = format_stats(fixed_report(), StatsFormat::prometheus);
  const std::string labels = R"({store="file",location="/var/cache/bl"})";
  EXPECT_EQ(out.rfind("# HELP bufferlock_cache_hits_total ", 0), 0u);
  EXPECT_EQ(line_of(out, "# TYPE bufferlock_cache_hits_total"), "# TYPE bufferlock_cache_hits_total counter");
  EXPECT_EQ(line_of(out, "bufferlock_cache_hits_total{"), "bufferlock_cache_hits_total" + labels + " 12");
  EXPECT_EQ(line_of(out, "bufferlock_cache_failed_builds_total{"),
            "bufferlock_cache_failed_builds_total" + labels + " 1");
  EXPECT_EQ(line_of(out, "bufferlock_cache_served_bytes_total{"),
            "bufferlock_cache_served_bytes_total" + labels + " 1258291");
  EXPECT_EQ(line_of(out, "bufferlock_cache_saved_seconds_total{"),
            "bufferlock_cache_saved_seconds_total" + labels + " 45.678");
  EXPECT_EQ(line_of(out, "bufferlock_cache_build_seconds_total{"),
            "bufferlock_cache_build_seconds_total" + labels + " 12.345");
  EXPECT_EQ(line_of(out, R"(bufferlock_cache_key_saved_seconds_total{store="file",location="/var/cache/bl",key="a|)"),
            R"(bufferlock_cache_key_saved_seconds_total{store="file",location="/var/cache/bl",)"
            R"(key="a|b\\x0ac`d\"e\\x5c\\xff"} 5.550)");
  EXPECT_EQ(line_of(out, R"(bufferlock_cache_key_served_total{store="file",location="/var/cache/bl",key="b)"),
            R"(bufferlock_cache_key_served_total{store="file",location="/var/cache/bl",key="build-linux"} 12)");
  // Every sample follows the HELP and TYPE of its family; every family is a counter.
  std::istringstream in(out);
  std::string family;
  int families = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      ++families;
      EXPECT_TRUE(family.size() > 6 && family.compare(family.size() - 6, 6, "_total") == 0) << family;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_EQ(line, "# TYPE " + family + " counter");
    } else {
      EXPECT_EQ(line.substr(0, family.size() + 1), family + "{") << line;
    }
  }
  EXPECT_EQ(families, 14);
}

TEST(StatsPrometheus, NoKeysNoKeyFamilies) {
  const std::string out = format_stats(empty_report(), StatsFormat::prometheus);
  EXPECT_EQ(out.find("_key_"), std::string::npos);
  EXPECT_EQ(line_of(out, "bufferlock_cache_misses_total{"),
            R"(bufferlock_cache_misses_total{store="redis",location="redis://:***@cache.example:6379/0"} 0)");
  EXPECT_EQ(out.find("hit_rate"), std::string::npos); // a query's job: no counter
}
