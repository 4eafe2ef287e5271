// Durations as the command line spells them (SPEC §2): "5", "0.25", ".5",
// "250ms", "2m", "1h", and "inf" where allowed. No sign, exponent, nan, hex or spaces.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

using Nanos = std::chrono::nanoseconds;

// The value used for "inf": longer than any wait anybody means.
inline constexpr Nanos infinite_duration = Nanos::max();

enum class AllowInfinite { no, yes };

// Parses `text`; nullopt when it is not a duration of the grammar above or
// does not fit in 64-bit nanoseconds. Sub-nanosecond digits are rounded.
std::optional<Nanos> parse_duration(std::string_view text, AllowInfinite allow_inf);

// Seconds with three decimals ("1.250"), for messages and `status`.
std::string format_seconds(Nanos d);

} // namespace bufferlock
