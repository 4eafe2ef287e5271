#include "util/size.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(Size, BytesAndSuffixes) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("1K"), 1024u);
  EXPECT_EQ(parse_size("64M"), 64u * 1024 * 1024);
  EXPECT_EQ(parse_size("2G"), 2ull * 1024 * 1024 * 1024);
}

TEST(Size, RejectsEverythingElse) {
  for (const char* bad : {"", "12X", "M", "-1", "1.5M", " 1", "1 ", "1k", "1MB", "0x10",
                          "18446744073709551616", "17179869184G"})
    EXPECT_FALSE(parse_size(bad)) << bad;
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);
}
