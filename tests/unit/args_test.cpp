#include "util/args.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>

using namespace bufferlock;

namespace {

// An argument area laid out as execve(2) leaves it: the words one after the
// other, each ending in NUL.
struct ArgArea {
  std::string bytes;
  std::array<char*, 4> argv{};
  explicit ArgArea(std::initializer_list<std::string_view> words) {
    for (auto w : words)
      bytes.append(w).push_back('\0');
    std::size_t at = 0, i = 0;
    for (auto w : words) {
      argv.at(i++) = bytes.data() + at;
      at += w.size() + 1;
    }
  }
};

} // namespace

TEST(RewriteArg, LaterWordsMoveDownAndTheFreedBytesBecomeNul) {
  ArgArea a{"bufferlock", "--redis=redis://:s3cr3t@h", "k", "cmd"};
  const std::size_t size = a.bytes.size();
  rewrite_arg(4, a.argv.data(), 1, 17, 6, "***");
  EXPECT_EQ(a.bytes.size(), size);
  EXPECT_EQ(a.bytes, std::string("bufferlock\0--redis=redis://:***@h\0k\0cmd\0\0\0\0", size));
  EXPECT_STREQ(a.argv[1], "--redis=redis://:***@h");
  EXPECT_STREQ(a.argv[2], "k");
  EXPECT_STREQ(a.argv[3], "cmd");
}

TEST(RewriteArg, WordsElsewhereInMemoryStayPut) {
  ArgArea a{"bufferlock", "redis://:s3cr3t@h", "k", "cmd"};
  std::string other = "elsewhere";
  a.argv[2] = other.data(); // not right after argv[1]
  rewrite_arg(4, a.argv.data(), 1, 9, 6, "***");
  EXPECT_STREQ(a.argv[1], "redis://:***@h");
  EXPECT_STREQ(a.argv[2], "elsewhere");
  EXPECT_EQ(a.argv[3], a.bytes.data() + 31); // untouched: not contiguous with argv[1]
  EXPECT_STREQ(a.argv[3], "cmd");
}

TEST(RewriteArg, AReplacementNeverOutgrowsWhatItReplaces) {
  ArgArea a{"bufferlock", "redis://:pw@h", "k", "cmd"};
  rewrite_arg(4, a.argv.data(), 1, 9, 2, "***");
  EXPECT_STREQ(a.argv[1], "redis://:**@h");
  EXPECT_STREQ(a.argv[2], "k");
}
