#include "util/xxhash64.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace bufferlock;

// Reference values from xxhsum -H64.
TEST(Xxh64, KnownVectors) {
  EXPECT_EQ(xxh64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(xxh64("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(xxh64(std::string(100, '\0')), 0x17bb1103c92c502fULL);
  EXPECT_EQ(xxh64("Nobody inspects the spammish repetition"), 0xfbcea83c8a378bf1ULL);
}

TEST(Xxh64, StreamingEqualsOneShotForEverySplit) {
  std::string data;
  for (int i = 0; i < 200; ++i) data += static_cast<char>(i * 7 + 3);
  const auto whole = xxh64(data);
  for (std::size_t cut = 0; cut <= data.size(); ++cut) {
    Xxh64 h;
    h.update(data.substr(0, cut));
    h.update(data.substr(cut));
    ASSERT_EQ(h.digest(), whole) << cut;
  }
  Xxh64 bytewise;
  for (char c : data) bytewise.update(&c, 1);
  EXPECT_EQ(bytewise.digest(), whole);
}
