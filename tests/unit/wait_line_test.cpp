#include "lock/wait_display.hpp"
#include "util/progress_line.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;
using std::chrono::seconds;

TEST(WaitLine, ShortDurations) {
  EXPECT_EQ(short_duration(Nanos(0)), "0s");
  EXPECT_EQ(short_duration(Nanos(-5)), "0s");
  EXPECT_EQ(short_duration(std::chrono::milliseconds(41'900)), "41s");
  EXPECT_EQ(short_duration(seconds(192)), "3m12s");
  EXPECT_EQ(short_duration(seconds(600)), "10m");
  EXPECT_EQ(short_duration(seconds(3605)), "1h");
  EXPECT_EQ(short_duration(seconds(3900)), "1h05m");
  EXPECT_EQ(short_duration(seconds(2 * 86400 + 3 * 3600)), "2d03h");
  EXPECT_EQ(short_duration(seconds(86400)), "1d");
}

TEST(WaitLine, FullLineWhenItFits) {
  EXPECT_EQ(
      fit_progress_line(
          {"bufferlock: waiting for", "deploy-prod", "held by pid 4242 on ci-7 for 3m12s", "41s / 10m"}, 200),
      "bufferlock: waiting for 'deploy-prod' (held by pid 4242 on ci-7 for 3m12s) 41s / 10m");
  EXPECT_EQ(fit_progress_line({"bufferlock: waiting for", "k", "", "3s"}, 80),
            "bufferlock: waiting for 'k' 3s");
}

TEST(WaitLine, NeverAsWideAsTheTerminal) {
  const ProgressLine l{"bufferlock: waiting for", "deploy-prod", "held by pid 4242 on ci-7 for 3m12s",
                       "41s / 10m"};
  for (std::size_t w = 1; w < 120; ++w) {
    const std::string s = fit_progress_line(l, w);
    EXPECT_LT(text_columns(s), std::max<std::size_t>(w, 1)) << w << ": " << s;
  }
}

TEST(WaitLine, DetailGivesWayFirstThenTheKey) {
  const ProgressLine l{"bufferlock: waiting for", "deploy-prod", "held by pid 4242 on ci-7 for 3m12s",
                       "41s / 10m"};
  // detail cut, time kept
  EXPECT_EQ(fit_progress_line(l, 70),
            "bufferlock: waiting for 'deploy-prod' (held by pid 4242...) 41s / 10m");
  // detail dropped
  EXPECT_EQ(fit_progress_line(l, 55), "bufferlock: waiting for 'deploy-prod' 41s / 10m");
  // a long key is cut, the time still shown
  const std::string key(300, 'k');
  const std::string s = fit_progress_line({"bufferlock: waiting for", key, "held by pid 1", "41s / 10m"}, 80);
  EXPECT_EQ(text_columns(s), 79u);
  EXPECT_TRUE(s.ends_with("kkk...' 41s / 10m")) << s;
}

TEST(WaitLine, CutsOnCodePoints) {
  EXPECT_EQ(cut_to_columns("ééééé", 5), "ééééé");
  EXPECT_EQ(cut_to_columns("éééééé", 5), "éé...");
  EXPECT_EQ(text_columns("déploiement"), 11u);
  EXPECT_EQ(cut_to_columns("abcdef", 2), "..");
}

std::string fake_command(pid_t pid) { return pid == 4242 ? "deploy.sh" : ""; }

TEST(WaitLine, HolderInWords) {
  EXPECT_EQ(describe_holder("held by pid 4242 since=192.500 fence=7", fake_command),
            "held by pid 4242 (deploy.sh) for 3m12s, fence 7");
  EXPECT_EQ(describe_holder("held by pid 12", fake_command), "held by pid 12");
  // Redis: a remote pid gets no local command name
  // Redis: the holder record replaces "another token" and the ttl.
  EXPECT_EQ(describe_holder("held by another token, ttl=29.500 pid=4242 host=ci-7 since=41.000 fence=3",
                            fake_command),
            "held by pid 4242 on ci-7 for 41s, fence 3");
  EXPECT_EQ(describe_holder("held by another token, ttl=29.500", fake_command),
            "held by another token, ttl 29s");
  EXPECT_EQ(describe_holder("all 3 slots held by pids 1, 2, 3", fake_command),
            "all 3 slots held by pids 1, 2, 3");
  EXPECT_EQ(describe_holder("", fake_command), "");
}
