#include "lock/proc_locks.hpp"

#include <sys/sysmacros.h>

#include <gtest/gtest.h>

using bufferlock::parse_flock_holders;

namespace {
const char* sample = "1: POSIX  ADVISORY  WRITE 700 fd:01:1234 0 EOF\n"
                     "2: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF\n"
                     "2: -> FLOCK  ADVISORY  WRITE 4343 fd:01:1234 0 EOF\n"
                     "3: FLOCK  ADVISORY  READ 51 00:1f:99 0 EOF\n"
                     "4: FLOCK  ADVISORY  READ 52 00:1f:99 0 EOF\n"
                     "5: FLOCK  ADVISORY  WRITE 53 00:1f:990 0 EOF\n";
}

TEST(ProcLocks, FindsTheHolderNotTheWaiterNorPosixLocks) {
  const auto pids = parse_flock_holders(sample, makedev(0xfd, 0x01), 1234);
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(pids[0], 4242);
}

TEST(ProcLocks, AllSharedHoldersAndExactInode) {
  const auto pids = parse_flock_holders(sample, makedev(0, 0x1f), 99);
  EXPECT_EQ(pids, (std::vector<pid_t>{51, 52}));
}

TEST(ProcLocks, NothingForOtherFilesOrGarbage) {
  EXPECT_TRUE(parse_flock_holders(sample, makedev(0, 0x1f), 9).empty());
  EXPECT_TRUE(parse_flock_holders("garbage\n\n1: FLOCK\n", makedev(0, 0), 0).empty());
}

TEST(ProcLocks, EachHolderOnce) {
  // The same line twice (read across a change of /proc/locks) is one holder.
  const char* twice = "2: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF\n"
                      "2: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF\n"
                      "3: FLOCK  ADVISORY  READ 51 fd:01:1234 0 EOF\n";
  EXPECT_EQ(parse_flock_holders(twice, makedev(0xfd, 0x01), 1234), (std::vector<pid_t>{4242, 51}));
}
