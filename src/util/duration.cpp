#include "util/duration.hpp"

#include <cstdint>
#include <fmt/format.h>

namespace bufferlock {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Multiplier of one unit in nanoseconds, or 0 for an unknown unit.
std::int64_t unit_ns(std::string_view unit) {
  if (unit.empty() || unit == "s") return 1'000'000'000;
  if (unit == "ms") return 1'000'000;
  if (unit == "m") return 60'000'000'000;
  if (unit == "h") return 3'600'000'000'000;
  return 0;
}

} // namespace

std::optional<Nanos> parse_duration(std::string_view text, AllowInfinite allow_inf) {
  if (allow_inf == AllowInfinite::yes && text == "inf") return infinite_duration;

  std::size_t i = 0;
  std::string_view whole, frac;
  const std::size_t whole_start = i;
  while (i < text.size() && is_digit(text[i]))
    ++i;
  whole = text.substr(whole_start, i - whole_start);
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t frac_start = i;
    while (i < text.size() && is_digit(text[i]))
      ++i;
    frac = text.substr(frac_start, i - frac_start);
    if (frac.empty()) return std::nullopt; // "5." is not a number we accept
  }
  if (whole.empty() && frac.empty()) return std::nullopt;

  const std::int64_t unit = unit_ns(text.substr(i));
  if (unit == 0) return std::nullopt;

  // Exact integer arithmetic: whole * unit + frac * unit / 10^len(frac).
  // __int128 keeps every intermediate exact; the range check is at the end.
  __extension__ typedef __int128 Wide;
  const Wide limit = INT64_MAX;
  Wide w = 0;
  for (char c : whole) {
    w = w * 10 + (c - '0');
    if (w > limit) return std::nullopt;
  }
  Wide total = w * unit;
  if (total > limit) return std::nullopt;

  // Only the first 18 fractional digits can matter at nanosecond precision
  // for any unit up to an hour (3.6e12 ns); the rest only decide rounding.
  Wide num = 0, den = 1;
  std::size_t used = 0;
  for (char c : frac) {
    if (used == 18) break;
    num = num * 10 + (c - '0');
    den *= 10;
    ++used;
  }
  Wide frac_ns = (num * unit * 2 + den) / (den * 2); // round half up
  total += frac_ns;
  if (total > limit) return std::nullopt;
  return Nanos(static_cast<std::int64_t>(total));
}

std::string format_seconds(Nanos d) {
  // Rounded to the nearest ms without adding to the count: d may be as long as Nanos::max().
  const auto ms = d.count() / 1'000'000 + (d.count() % 1'000'000 >= 500'000 ? 1 : 0);
  return fmt::format("{}.{:03}", ms / 1000, ms % 1000);
}

} // namespace bufferlock
