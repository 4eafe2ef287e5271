#include "cache/open_store.hpp"
#include "cache/settings.hpp"
#include "lock/settings.hpp"
#include "http/url.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace bufferlock;

namespace {

using Env = std::map<std::string, std::string>;

// An environment of `vars` alone, as getenv answers.
std::function<const char*(const char*)> lookup_in(const Env& vars) {
  return [&vars](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

const Env no_env;

// The store open_store makes of `cache` (nothing is connected yet).
std::unique_ptr<EntryStore> opened(const CacheSettings& cache, const RedisLockSettings& redis = {},
                                   const Env& env = no_env) {
  auto made = open_store(cache, redis, "/nonexistent/cache", lookup_in(env));
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
  const auto made = open_store(c, RedisLockSettings{}, "/nonexistent/cache", lookup_in(no_env));
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

// An S3 store reads its AWS settings through the lookup it is given.
TEST(OpenStore, AnS3StoreTakesItsSettingsFromTheGivenEnvironment) {
  CacheSettings c;
  c.store = CacheStoreKind::s3;
  c.store_s3 = "s3://bucket/team";
  const Env env{{"AWS_ACCESS_KEY_ID", "AKID"},
                {"AWS_SECRET_ACCESS_KEY", "not-to-be-printed"},
                {"AWS_ENDPOINT_URL", "http://127.0.0.1:9"}};
  const auto s3 = opened(c, {}, env);
  EXPECT_EQ(s3->name(), "s3");
  EXPECT_EQ(s3->location(), "s3://bucket/team/");
  EXPECT_TRUE(s3->compresses(false));
  EXPECT_NE(s3->where("k", std::nullopt).find("team/"), std::string::npos);
}

// No credentials in the environment given (and no HOME to find the shared
// file): the usage error names where they were looked for.
TEST(OpenStore, AnS3StoreWithoutCredentialsIsAUsageError) {
  CacheSettings c;
  c.store = CacheStoreKind::s3;
  c.store_s3 = "s3://bucket/team";
  const auto made = open_store(c, RedisLockSettings{}, "/nonexistent/cache", lookup_in(no_env));
  ASSERT_TRUE(std::holds_alternative<std::string>(made));
  const std::string& why = std::get<std::string>(made);
  EXPECT_NE(why.find("s3://bucket/team"), std::string::npos);
  EXPECT_NE(why.find("AWS_ACCESS_KEY_ID"), std::string::npos);
  EXPECT_NE(why.find("AWS_SHARED_CREDENTIALS_FILE"), std::string::npos);

  // A key without its secret: named, and the key's value is not printed.
  const Env half{{"AWS_ACCESS_KEY_ID", "AKID-half"}};
  const auto refused = open_store(c, RedisLockSettings{}, "/nonexistent/cache", lookup_in(half));
  ASSERT_TRUE(std::holds_alternative<std::string>(refused));
  EXPECT_NE(std::get<std::string>(refused).find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  EXPECT_EQ(std::get<std::string>(refused).find("AKID-half"), std::string::npos);
}
