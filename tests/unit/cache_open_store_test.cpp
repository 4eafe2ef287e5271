#include "cache/open_store.hpp"
#include "cache/settings.hpp"
#include "lock/settings.hpp"
#include "http/url.hpp"

#include <gtest/gtest.h>


using namespace bufferlock;

namespace {

// The store open_store makes of `cache` (nothing is connected yet).
std::unique_ptr<EntryStore> opened(const CacheSettings& cache, const RedisLockSettings& redis = {}) {
  auto made = open_store(cache, redis, "/nonexistent/cache");
  EXPECT_TRUE(std::holds_alternative<std::unique_ptr<EntryStore>>(made));
  return std::move(std::get<std::unique_ptr<EntryStore>>(made));
}

} // namespace

// Each --store by its scheme, answering for itself what the recipe used to
// decide by the store's kind.
TEST(OpenStore, PicksTheStoreByScheme) {
  CacheSettings c;
  const auto file = opened(c);
  EXPECT_EQ(file->name(), "file");
  EXPECT_EQ(file->location(), "/nonexistent/cache");
  EXPECT_FALSE(file->compresses(false));
  EXPECT_TRUE(file->compresses(true));
  EXPECT_FALSE(file->limits_entries());

  c.store = CacheStoreKind::redis;
  const auto redis = opened(c);
  EXPECT_EQ(redis->name(), "redis");
  EXPECT_TRUE(redis->compresses(false));
  EXPECT_TRUE(redis->limits_entries());
  // Entries expire by their time to live: --gc has nothing to do there.
  EXPECT_TRUE(std::holds_alternative<GcCounts>(redis->gc(GcPolicy{})));

  for (const char* url : {"http://127.0.0.1:9/cache/", "https://127.0.0.1:9/cache/"}) {
    c.store = CacheStoreKind::http;
    c.store_url = std::get<StoreUrl>(parse_store_url(url));
    const auto http = opened(c);
    EXPECT_EQ(http->name(), "http");
    EXPECT_EQ(http->location(), url);
    EXPECT_TRUE(http->compresses(false));
    EXPECT_FALSE(http->limits_entries());
  }
}

// A --store-token-file that cannot be read: the usage error's text.
TEST(OpenStore, AnUnreadableTokenFileIsAnError) {
  CacheSettings c;
  c.store = CacheStoreKind::http;
  c.store_url = std::get<StoreUrl>(parse_store_url("http://127.0.0.1:9/cache/"));
  c.store_token_file = "/nonexistent/token";
  const auto made = open_store(c, RedisLockSettings{}, "/nonexistent/cache");
  ASSERT_TRUE(std::holds_alternative<std::string>(made));
  EXPECT_NE(std::get<std::string>(made).find("/nonexistent/token"), std::string::npos);
}

// The table spells every store (cli asks it, and knows none by name).
TEST(OpenStore, SpellsEachStoreInItsTable) {
  ASSERT_NE(store_spelled("file"), nullptr);
  EXPECT_FALSE(store_spelled("file")->objects);
  ASSERT_NE(store_spelled("redis"), nullptr);
  EXPECT_TRUE(store_spelled("redis")->in_redis);
  ASSERT_NE(store_spelled("https://h/x"), nullptr);
  EXPECT_TRUE(store_spelled("https://h/x")->objects);
  EXPECT_TRUE(store_spelled("http://h/x")->token);
  ASSERT_NE(store_spelled("s3://bucket/p"), nullptr);
  EXPECT_TRUE(store_spelled("s3://bucket/p")->objects);
  EXPECT_FALSE(store_spelled("s3://bucket/p")->token);
  for (const char* none : {"files", "Redis", "ftp://h/x", "http:/h", "s3:/b", ""})
    EXPECT_EQ(store_spelled(none), nullptr) << none;

  CacheSettings c;
  EXPECT_FALSE(store_talks_tls(c));
  EXPECT_FALSE(spell_store(c, "http://h/x"));
  EXPECT_EQ(c.store, CacheStoreKind::http);
  EXPECT_FALSE(store_talks_tls(c));
  EXPECT_FALSE(spell_store(c, "https://h/x"));
  EXPECT_TRUE(store_talks_tls(c));
  EXPECT_FALSE(spell_store(c, "s3://bucket/p"));
  EXPECT_EQ(c.store, CacheStoreKind::s3);
  EXPECT_EQ(c.store_s3, "s3://bucket/p");
  EXPECT_TRUE(store_traits(c).objects);
  const auto bad = spell_store(c, "http://u:hunter2@h:99999/x");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->why, "bad port");
  EXPECT_EQ(bad->shown.find("hunter2"), std::string::npos);
  EXPECT_EQ(c.store, CacheStoreKind::s3); // a bad URL leaves the settings as they were
}
