#include "exit_codes.hpp"
#include "run/command.hpp"

#include <csignal>

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(ExitStatus, TableMatchesTheSpec) {
  EXPECT_EQ(exit_code::usage, 64);
  EXPECT_EQ(exit_code::error, 69);
  EXPECT_EQ(exit_code::busy, 75);
  EXPECT_EQ(exit_code::cannot_execute, 126);
  EXPECT_EQ(exit_code::not_found, 127);
}

TEST(ExitStatus, ExitCodesPassThrough) {
  EXPECT_EQ(exit_status_from_wait(0), 0);
  EXPECT_EQ(exit_status_from_wait(3 << 8), 3);
  EXPECT_EQ(exit_status_from_wait(255 << 8), 255);
}

TEST(ExitStatus, SignalDeathIs128PlusN) {
  EXPECT_EQ(exit_status_from_wait(SIGTERM), 128 + SIGTERM);
  EXPECT_EQ(exit_status_from_wait(SIGKILL), 137);
  EXPECT_EQ(exit_status_from_wait(SIGSEGV | 0x80), 128 + SIGSEGV); // with core dump bit
}

TEST(ExitStatus, RunChildReportsNotFoundAndNotExecutable) {
  EXPECT_EQ(run_child({"/nonexistent/bufferlock-test-command"}), exit_code::not_found);
  EXPECT_EQ(run_child({"/dev/null"}), exit_code::cannot_execute);
  EXPECT_EQ(run_child({"/bin/sh", "-c", "exit 7"}), 7);
  EXPECT_EQ(run_child({"/bin/sh", "-c", "kill -TERM $$"}), 128 + SIGTERM);
}
