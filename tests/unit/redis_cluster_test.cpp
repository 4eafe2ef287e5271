#include "redis/cluster.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

// The expected slots are what `CLUSTER KEYSLOT` of redis-server 7.0.15 answered.
TEST(ClusterSlot, MatchesClusterKeyslot) {
  EXPECT_EQ(key_hash_slot("foo"), 12182);
  EXPECT_EQ(key_hash_slot("bar"), 5061);
  EXPECT_EQ(key_hash_slot("hello"), 866);
  EXPECT_EQ(key_hash_slot("123456789"), 12739);
  EXPECT_EQ(key_hash_slot("{user1000}.following"), 3443);
  EXPECT_EQ(key_hash_slot("{}foo"), 9500);   // an empty tag: the whole key
  EXPECT_EQ(key_hash_slot("a{}b{c}"), 7353); // only the first '{' counts
  EXPECT_EQ(key_hash_slot("{{x}}"), 11068);  // the tag is "{x"
  EXPECT_EQ(key_hash_slot("buffer:lock:900150983cd24fb0d6963f7d28e17f72"), 7483);
  EXPECT_EQ(key_hash_slot("{buffer:lock:900150983cd24fb0d6963f7d28e17f72}:wake"), 7483);
}

TEST(ClusterSlot, CompanionKeysShareTheSlot) {
  const std::string plain = "buffer:lock:900150983cd24fb0d6963f7d28e17f72";
  EXPECT_EQ(companion_key(plain, ":wake"), "{" + plain + "}:wake");
  const std::string tagged = "{buffer:lock:}900150983cd24fb0d6963f7d28e17f72";
  EXPECT_EQ(companion_key(tagged, ":wake"), tagged + ":wake");
  for (const std::string& k : {plain, tagged, std::string("x"), std::string("p{a}q")})
    EXPECT_EQ(key_hash_slot(companion_key(k, ":wake")), key_hash_slot(k)) << k;
}

TEST(ClusterRedirect, Parses) {
  auto m = parse_redirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->kind, Redirect::Kind::moved);
  EXPECT_EQ(m->slot, 3999);
  EXPECT_EQ(m->host, "127.0.0.1");
  EXPECT_EQ(m->port, 6381);
  auto a = parse_redirect("ASK 0 [::1]:7000");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kind, Redirect::Kind::ask);
  EXPECT_EQ(a->slot, 0);
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(a->port, 7000);
  auto h = parse_redirect("MOVED 16383 redis-2.example:6379");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->host, "redis-2.example");
}

TEST(ClusterRedirect, RefusesOtherErrors) {
  for (const char* t :
       {"ERR unknown command", "MOVED", "MOVED 3999", "MOVED x 1.2.3.4:5", "MOVED 16384 h:1", "ASK 1 h:0",
        "ASK 1 h:99999", "ASK 1 :6379", "MOVEDX 1 h:1", "READONLY You can't write"})
    EXPECT_FALSE(parse_redirect(t)) << t;
}

// Its retries are paced by the waiting back-off (util/backoff.hpp).
TEST(ClusterTryagain, Recognised) {
  EXPECT_TRUE(is_tryagain("TRYAGAIN Multiple keys request during rehashing of slot"));
  EXPECT_TRUE(is_tryagain("TRYAGAIN"));
  EXPECT_FALSE(is_tryagain("TRYAGAINX"));
  EXPECT_FALSE(is_tryagain("ASK 3999 127.0.0.1:6381"));
}
