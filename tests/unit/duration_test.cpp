#include "util/duration.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;
using namespace std::chrono_literals;

namespace {
std::optional<Nanos> parse(const char* s, AllowInfinite inf = AllowInfinite::no) {
  return parse_duration(s, inf);
}
} // namespace

TEST(Duration, PlainSecondsAndFractions) {
  EXPECT_EQ(parse("5"), Nanos(5s));
  EXPECT_EQ(parse("0"), Nanos(0));
  EXPECT_EQ(parse("0.25"), Nanos(250ms));
  EXPECT_EQ(parse(".5"), Nanos(500ms));
  EXPECT_EQ(parse("007"), Nanos(7s));
}

TEST(Duration, Units) {
  EXPECT_EQ(parse("250ms"), Nanos(250ms));
  EXPECT_EQ(parse("0.5s"), Nanos(500ms));
  EXPECT_EQ(parse("2m"), Nanos(120s));
  EXPECT_EQ(parse("1.5h"), Nanos(5400s));
  EXPECT_EQ(parse("0.0015ms"), Nanos(1500));
}

TEST(Duration, RoundsBelowANanosecond) {
  EXPECT_EQ(parse("0.0000000004"), Nanos(0));
  EXPECT_EQ(parse("0.0000000005"), Nanos(1));
  EXPECT_EQ(parse("1.9999999999"), Nanos(2s));
}

TEST(Duration, InfOnlyWhereAllowed) {
  EXPECT_EQ(parse("inf", AllowInfinite::yes), infinite_duration);
  EXPECT_EQ(parse("inf"), std::nullopt);
  EXPECT_EQ(parse("INF", AllowInfinite::yes), std::nullopt);
  EXPECT_EQ(parse("infinity", AllowInfinite::yes), std::nullopt);
}

TEST(Duration, RejectsWhatTheGrammarDoesNotHave) {
  for (const char* bad : {"",   "-1", "+1",   "abc", "nan",  "1e3",  "1e999", "0x10", " 1", "1 ",
                          "1.", ".",  "1..2", "5S",  "5sec", "5 ms", "1us",   "1d",   "ms", "1,5"}) {
    EXPECT_EQ(parse(bad, AllowInfinite::yes), std::nullopt) << bad;
  }
}

TEST(Duration, RejectsOverflow) {
  EXPECT_EQ(parse("9223372036"), Nanos(9223372036s));
  EXPECT_EQ(parse("9223372037"), std::nullopt);
  EXPECT_EQ(parse("99999999999999999999999999"), std::nullopt);
  EXPECT_EQ(parse("3000000h"), std::nullopt);
}

TEST(Duration, FormatsThreeDecimals) {
  EXPECT_EQ(format_seconds(Nanos(0)), "0.000");
  EXPECT_EQ(format_seconds(Nanos(1234567890)), "1.235");
  EXPECT_EQ(format_seconds(Nanos(60s)), "60.000");
  // Found by the duration fuzz target: rounding overflowed (UB) for the longest durations.
  EXPECT_EQ(format_seconds(Nanos::max()), "9223372036.855");
  EXPECT_EQ(format_seconds(Nanos(1'499'999)), "0.001");
  EXPECT_EQ(format_seconds(Nanos(1'500'000)), "0.002");
}
