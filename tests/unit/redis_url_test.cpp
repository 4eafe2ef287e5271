#include "redis/url.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

namespace {
RedisUrl good(const char* text) {
  auto r = parse_redis_url(text);
  EXPECT_TRUE(std::holds_alternative<RedisUrl>(r)) << text << ": " << std::get<UrlError>(r).reason;
  return std::holds_alternative<RedisUrl>(r) ? std::get<RedisUrl>(r) : RedisUrl{};
}
std::string bad(const char* text) {
  auto r = parse_redis_url(text);
  EXPECT_TRUE(std::holds_alternative<UrlError>(r)) << text;
  return std::holds_alternative<UrlError>(r) ? std::get<UrlError>(r).reason : "";
}
} // namespace

TEST(RedisUrl, Defaults) {
  const RedisUrl u = good("redis://localhost");
  EXPECT_EQ(u.transport, RedisUrl::Transport::tcp);
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 6379);
  EXPECT_EQ(u.db, 0);
  EXPECT_EQ(u.user, "");
  EXPECT_FALSE(u.password);
  EXPECT_EQ(good("redis://h/").db, 0);
}

TEST(RedisUrl, PortDbUserPassword) {
  const RedisUrl u = good("redis://alice:s3cr%40t@10.0.0.1:6380/3");
  EXPECT_EQ(u.host, "10.0.0.1");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 3);
  EXPECT_EQ(u.user, "alice");
  EXPECT_EQ(u.password, "s3cr@t");
  const RedisUrl p = good("redis://:only-pass@h");
  EXPECT_EQ(p.user, "");
  EXPECT_EQ(p.password, "only-pass");
  EXPECT_EQ(good("REDIS://h:1").port, 1);
}

TEST(RedisUrl, Ipv6) {
  const RedisUrl u = good("redis://[::1]:7000/2");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 7000);
  EXPECT_EQ(u.display(), "redis://[::1]:7000/2");
}

TEST(RedisUrl, UnixSocket) {
  const RedisUrl u = good("unix:///run/redis/redis.sock?db=4");
  EXPECT_EQ(u.transport, RedisUrl::Transport::unix_socket);
  EXPECT_EQ(u.socket_path, "/run/redis/redis.sock");
  EXPECT_EQ(u.db, 4);
  EXPECT_EQ(u.display(), "unix:///run/redis/redis.sock?db=4");
  EXPECT_EQ(good("unix:///tmp/r.sock").db, 0);
}

TEST(RedisUrl, TlsIsTheSameUrlOverTls) {
  const RedisUrl u = good("rediss://user:pw@cache.example:6380/3");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "cache.example");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 3);
  EXPECT_EQ(u.display(), "rediss://user@cache.example:6380/3");
  EXPECT_FALSE(good("redis://h").tls);
  EXPECT_EQ(good("REDISS://[::1]").display(), "rediss://[::1]:6379/0");
  EXPECT_NE(bad("rediss://h:0").find("port"), std::string::npos);
}

TEST(RedisUrl, BadUrls) {
  for (const char* text : {"redis://",
                           "rediss://",
                           "rediss://h/x",
                           "redis://h:",
                           "redis://h:0",
                           "redis://h:65536",
                           "redis://h:x",
                           "redis://h/x",
                           "redis://h/-1",
                           "redis://h:6379/0?x=1",
                           "http://h",
                           "h:6379",
                           "",
                           "redis://[::1",
                           "redis://[::1]x",
                           "redis://a b",
                           "unix://relative",
                           "unix://",
                           "unix:///s?db=x",
                           "unix:///s?foo=1",
                           "redis://u:%zz@h",
                           "redis://h/99999999999"}) {
    bad(text);
  }
}

TEST(RedisUrl, RedactionHidesPasswordsOnly) {
  EXPECT_EQ(redact_url("redis://alice:s3cret@h:1/0"), "redis://alice:***@h:1/0");
  EXPECT_EQ(redact_url("redis://:p@ss@h"), "redis://:***@h");
  EXPECT_EQ(redact_url("redis://alice@h"), "redis://alice@h");
  EXPECT_EQ(redact_url("redis://h:6379"), "redis://h:6379");
  EXPECT_EQ(redact_url("garbage:pw@host"), "garbage:***@host");
  EXPECT_EQ(good("redis://alice:pw@h").display(), "redis://alice@h:6379/0");
}

TEST(RedisUrl, PasswordSpanSkipsWhatPrecedesTheScheme) {
  // As bufferlock's own argv holds them: the option's name may come first.
  const std::string word = "--redis=rediss://alice:s3cret@h:1/0";
  const auto span = url_password_span(word);
  ASSERT_TRUE(span);
  EXPECT_EQ(word.substr(span->pos, span->len), "s3cret");
  const std::string at_sign = "-rredis://:p@ss@[::1]:6379";
  const auto last_at = url_password_span(at_sign);
  ASSERT_TRUE(last_at);
  EXPECT_EQ(at_sign.substr(last_at->pos, last_at->len), "p@ss");
  EXPECT_FALSE(url_password_span("redis://alice@h"));
  EXPECT_FALSE(url_password_span("redis://h:6379/0"));
  EXPECT_FALSE(url_password_span("unix:///run/redis.sock?db=1"));
}

TEST(RedisUrl, Sentinel) {
  const RedisUrl u = good("redis-sentinel://app:s3cret@10.0.0.1,10.0.0.2:26380,[::1]/2#mymaster");
  EXPECT_EQ(u.transport, RedisUrl::Transport::sentinel);
  ASSERT_EQ(u.sentinels.size(), 3u);
  EXPECT_EQ(u.sentinels[0], (RedisUrl::Address{"10.0.0.1", 26379}));
  EXPECT_EQ(u.sentinels[1], (RedisUrl::Address{"10.0.0.2", 26380}));
  EXPECT_EQ(u.sentinels[2], (RedisUrl::Address{"::1", 26379}));
  EXPECT_EQ(u.master_name, "mymaster");
  EXPECT_EQ(u.user, "app");
  EXPECT_EQ(u.password, "s3cret");
  EXPECT_EQ(u.db, 2);
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.display(), "redis-sentinel://app@10.0.0.1:26379,10.0.0.2:26380,[::1]:26379/2#mymaster");
  EXPECT_EQ(redact_url("redis-sentinel://app:s3cret@h1,h2#m"), "redis-sentinel://app:***@h1,h2#m");

  const RedisUrl one = good("rediss-sentinel://127.0.0.1:5000#m%2Dx");
  EXPECT_TRUE(one.tls);
  EXPECT_EQ(one.db, 0);
  EXPECT_EQ(one.master_name, "m-x");
  EXPECT_EQ(one.sentinels.size(), 1u);
}

TEST(RedisUrl, SentinelErrors) {
  EXPECT_NE(bad("redis-sentinel://127.0.0.1:26379").find("#MASTER"), std::string::npos);
  EXPECT_NE(bad("redis-sentinel://127.0.0.1:26379#").find("#MASTER"), std::string::npos);
  bad("redis-sentinel://h1,,h2#m");
  bad("redis-sentinel://h1:0#m");
  bad("redis-sentinel://h1,h2:x#m");
  bad("redis-sentinel://h1/x#m");
  bad("redis-sentinel://#m");
}
