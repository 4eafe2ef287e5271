#include "util/hex.hpp"

#include <gtest/gtest.h>

#include <string>

using bufferlock::from_hex;
using bufferlock::to_hex;

TEST(Hex, LowercaseDigitsOfEachByte) {
  EXPECT_EQ(to_hex(""), "");
  EXPECT_EQ(to_hex(std::string("\x00\x0f\xa0\xff", 4)), "000fa0ff");
}

TEST(Hex, BackToTheBytes) {
  std::string all;
  for (int b = 0; b < 256; ++b)
    all += static_cast<char>(b);
  EXPECT_EQ(from_hex(to_hex(all)), all);
  EXPECT_EQ(from_hex(""), std::string());
}

TEST(Hex, RefusesWhatItDoesNotWrite) {
  EXPECT_FALSE(from_hex("abc"));  // odd length
  EXPECT_FALSE(from_hex("AB"));   // uppercase
  EXPECT_FALSE(from_hex("0g"));   // not a digit
  EXPECT_FALSE(from_hex("-1"));
}
