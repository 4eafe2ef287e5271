// A KEY on a line of output (util/text.hpp): --list, list and --stats.
#include "util/text.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(EscapeKey, WhatWouldBreakTheLineOrTheUtf8) {
  EXPECT_EQ(escape_key("deploy prod"), "deploy prod");
  EXPECT_EQ(escape_key(std::string("a\nb\\\x7f", 5)), "a\\x0ab\\x5c\\x7f");
  EXPECT_EQ(escape_key("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac"); // valid UTF-8 as it is
  EXPECT_EQ(escape_key(std::string("\xff") + "a\xc3"), "\\xffa\\xc3");           // stray and truncated
  EXPECT_EQ(escape_key("\xc0\xaf"), "\\xc0\\xaf");                               // overlong '/'
  // Never alike: the escape of one key is not another key shown as it is.
  EXPECT_NE(escape_key("\n"), escape_key("\\x0a"));
}

TEST(Utf8Length, ValidSequencesOnly) {
  EXPECT_EQ(utf8_length(""), 0u);
  EXPECT_EQ(utf8_length("a"), 1u);
  EXPECT_EQ(utf8_length("\xc3\xa9x"), 2u);
  EXPECT_EQ(utf8_length("\xe2\x82\xac"), 3u);
  EXPECT_EQ(utf8_length("\xf0\x9f\x94\x92"), 4u);
  EXPECT_EQ(utf8_length("\xed\xa0\x80"), 0u); // a surrogate
  EXPECT_EQ(utf8_length("\xe2\x82"), 0u);     // truncated
  EXPECT_EQ(utf8_length("\x80"), 0u);         // a continuation byte
}
