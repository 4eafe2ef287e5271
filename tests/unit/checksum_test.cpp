#include "util/checksum.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace bufferlock;

// Reference values from xxhsum -H3: the entry format depends on them.
TEST(Checksum, IsXxh3KnownVectors) {
  EXPECT_EQ(checksum(""), 0x2d06800538d394c2ULL);
  EXPECT_EQ(checksum("abc"), 0x78af5f94892f3950ULL);
  EXPECT_EQ(checksum(std::string(100, '\0')), 0x801fedc74ccd608cULL);
  EXPECT_EQ(checksum("Nobody inspects the spammish repetition"), 0x6cb00603b5cc47e9ULL);
  EXPECT_EQ(checksum(std::string(1000, 'x')), 0xc0a4877b962cba82ULL);
}

TEST(Checksum, StreamingEqualsOneShotForEverySplit) {
  std::string data;
  for (int i = 0; i < 600; ++i)
    data += static_cast<char>(i * 7 + 3);
  const auto whole = checksum(data);
  for (std::size_t cut = 0; cut <= data.size(); cut += 7) {
    Checksum h;
    h.update(data.substr(0, cut));
    h.update(data.substr(cut));
    ASSERT_EQ(h.digest(), whole) << cut;
  }
  Checksum bytewise;
  for (char c : data)
    bytewise.update(&c, 1);
  EXPECT_EQ(bytewise.digest(), whole);
}
