#include "util/env_index.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <string_view>

using namespace bufferlock;

TEST(EnvIndex, FindsTheVariablesOfItsPrefixAsGetenvDoes) {
  const char* env[] = {"HOME=/h", "BUFFERLOCK_WAIT=5", "BUFFERLOCK_WAITX=6", "BUFFERLOCK_DIR=", nullptr};
  const EnvIndex index("BUFFERLOCK_", env);
  EXPECT_STREQ(index.get("BUFFERLOCK_WAIT"), "5");
  EXPECT_STREQ(index.get("BUFFERLOCK_WAITX"), "6");
  EXPECT_STREQ(index.get("BUFFERLOCK_DIR"), "");
  EXPECT_EQ(index.get("BUFFERLOCK_WAI"), nullptr);
  EXPECT_EQ(index.get("BUFFERLOCK_TTL"), nullptr);
  // Other names are getenv(3)'s, read when asked.
  ::setenv("ENV_INDEX_TEST_OTHER", "x", 1);
  EXPECT_STREQ(index.get("ENV_INDEX_TEST_OTHER"), "x");
  ::unsetenv("ENV_INDEX_TEST_OTHER");
  EXPECT_EQ(index.get("ENV_INDEX_TEST_OTHER"), nullptr);
}

TEST(EnvIndex, AnEmptyEnvironmentHasNothing) {
  const EnvIndex index("BUFFERLOCK_", nullptr);
  EXPECT_EQ(index.get("BUFFERLOCK_WAIT"), nullptr);
}
