#include "lock/file_lock.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(LockPath, Md5OfTheKeyBytes) {
  EXPECT_EQ(lock_file_path("/d", ""), "/d/d41d8cd98f00b204e9800998ecf8427e.lock");
  EXPECT_EQ(lock_file_path("/d/", "abc"), "/d/900150983cd24fb0d6963f7d28e17f72.lock");
  EXPECT_EQ(lock_file_path("rel", "abc"), "rel/900150983cd24fb0d6963f7d28e17f72.lock");
}

TEST(LockPath, DefaultDirectory) {
  EXPECT_EQ(default_lock_dir("/run/user/1000"), "/run/user/1000/bufferlock");
  EXPECT_EQ(default_lock_dir(""), "/tmp/bufferlock-" + std::to_string(geteuid()));
  EXPECT_EQ(default_lock_dir(nullptr), "/tmp/bufferlock-" + std::to_string(geteuid()));
}

TEST(LockPath, DescribesHolders) {
  EXPECT_EQ(describe_holders({}), "");
  EXPECT_EQ(describe_holders({12}), "pid 12");
  EXPECT_EQ(describe_holders({12, 34}), "pids 12, 34");
}
