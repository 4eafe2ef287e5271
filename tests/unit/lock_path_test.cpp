#include "lock/file_lock.hpp"

#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(LockPath, Md5OfTheKeyBytes) {
  EXPECT_EQ(lock_file_path("/d", ""), "/d/d41d8cd98f00b204e9800998ecf8427e.lock");
  EXPECT_EQ(lock_file_path("/d/", "abc"), "/d/900150983cd24fb0d6963f7d28e17f72.lock");
  EXPECT_EQ(lock_file_path("rel", "abc"), "rel/900150983cd24fb0d6963f7d28e17f72.lock");
}

TEST(LockPath, DefaultDirectory) {
  const std::string uid = std::to_string(geteuid());
  char made[] = "/tmp/bufferlock-unit-XXXXXX";
  ASSERT_NE(mkdtemp(made), nullptr);
  const std::string run_lock = made;
  EXPECT_EQ(default_lock_dir(run_lock), run_lock + "/bufferlock-" + uid);
  EXPECT_EQ(default_lock_dir(run_lock + "/missing"), "/tmp/bufferlock-" + uid);
  EXPECT_EQ(default_lock_dir(""), "/tmp/bufferlock-" + uid);
  rmdir(made);
}

TEST(LockPath, DescribesHolders) {
  EXPECT_EQ(describe_holders({}), "");
  EXPECT_EQ(describe_holders({12}), "pid 12");
  EXPECT_EQ(describe_holders({12, 34}), "pids 12, 34");
}
