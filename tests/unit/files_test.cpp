#include "util/files.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

using namespace bufferlock;

TEST(ReadableByOthers, NamesTheModeOnlyWhenGroupOrOthersMayRead) {
  std::string path = ::testing::TempDir() + "bufferlock-key-XXXXXX";
  const int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0);
  ::close(fd);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_FALSE(readable_by_others(path));
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  EXPECT_EQ(readable_by_others(path), 0640u);
  ASSERT_EQ(::chmod(path.c_str(), 0604), 0);
  EXPECT_EQ(readable_by_others(path), 0604u);
  ASSERT_EQ(::chmod(path.c_str(), 0620), 0); // written by the group, not read: not this check's business
  EXPECT_FALSE(readable_by_others(path));
  ::unlink(path.c_str());
  EXPECT_FALSE(readable_by_others(path)); // gone: opening it is what reports that
}
