#include "lock/file_list.hpp"
#include "lock/holder_record.hpp"
#include "lock/multi_lock.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

TEST(HolderRecord, RoundTripsAnyKeyBytes) {
  const std::string key("deploy\n\0prod \\ x", 16);
  const HolderRecord r{18446744073709551614ULL, 4242, 1'700'000'000'123'456'789LL, key};
  const std::string text = encode_record(r);
  const auto back = decode_record(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->fence, r.fence);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->since_ns, r.since_ns);
  EXPECT_EQ(back->key, key);
  EXPECT_EQ(record_total_size(text.substr(0, record_header_max)), text.size());
}

TEST(HolderRecord, PinnedLayout) {
  EXPECT_EQ(encode_record({7, 12, 3'000'000'005LL, "k"}),
            "bufferlock-holder 1 fence=7 pid=12 since=3.000000005 keylen=1\nk\n");
}

TEST(HolderRecord, LeftoversOfALongerEarlierRecordAreIgnored) {
  std::string text = encode_record({9, 1, 0, "a-very-long-key-indeed"});
  const std::string shorter = encode_record({10, 2, 0, "k"});
  text.replace(0, shorter.size(), shorter);
  const auto r = decode_record(text);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->fence, 10u);
  EXPECT_EQ(r->key, "k");
}

TEST(HolderRecord, ForeignOrTornContentIsNoRecord) {
  EXPECT_FALSE(decode_record(""));
  EXPECT_FALSE(decode_record("12345\n")); // a flock(1) user's pid file
  const std::string text = encode_record({3, 5, 0, "key"});
  EXPECT_FALSE(decode_record(text.substr(0, text.size() - 2))); // key cut short
  EXPECT_FALSE(decode_record("bufferlock-holder 1 fence=x pid=1 since=0.000000000 keylen=0\n\n"));
  EXPECT_FALSE(decode_record("bufferlock-holder 1 fence=1 pid=0 since=0.000000000 keylen=0\n\n"));
  EXPECT_TRUE(decode_record(text.substr(0, text.find('\n') + 1), true)); // header only
}

TEST(HolderRecord, NextFenceFollowsTheRecordOrStartsAtOne) {
  EXPECT_EQ(next_fence(""), 1u);
  EXPECT_EQ(next_fence("garbage"), 1u);
  EXPECT_EQ(next_fence(encode_record({41, 7, 0, "k"})), 42u);
  // Only the header is read at acquire: the key may be cut off.
  EXPECT_EQ(next_fence(encode_record({41, 7, 0, std::string(500, 'k')}).substr(0, record_header_max)), 42u);
}

TEST(HolderRecord, Fields) {
  HolderInfo h;
  EXPECT_EQ(holder_fields(h, 0), "");
  h.pids = {12, 34};
  EXPECT_EQ(holder_fields(h, 0), " pid=12,34");
  h.pids = {12};
  h.since_ns = 1'000'000'000;
  h.fence = 7;
  EXPECT_EQ(holder_fields(h, 4'250'900'000), " pid=12 since=3.250 fence=7");
  h.host = "ci-1";
  EXPECT_EQ(holder_fields(h, 500), " pid=12 host=ci-1 since=0.000 fence=7");
}

TEST(CanonicalOrder, ByDigestWhateverTheNamingOrder) {
  // md5("a") = 0cc1..., md5("b") = 92eb..., md5("c") = 4a8a...
  EXPECT_EQ(canonical_order({"a", "b", "c"}), (std::vector<std::size_t>{0, 2, 1}));
  EXPECT_EQ(canonical_order({"b", "c", "a"}), (std::vector<std::size_t>{2, 1, 0}));
}

TEST(CanonicalOrder, AKeyNamedTwiceIsTakenOnceUnderItsFirstNaming) {
  EXPECT_EQ(canonical_order({"b", "a", "b"}), (std::vector<std::size_t>{1, 0}));
  EXPECT_EQ(canonical_order({"k", "k"}), (std::vector<std::size_t>{0}));
}

TEST(FileList, LockFileNames) {
  const std::string md5 = "0cc175b9c0f1b6a831c399e269772661";
  EXPECT_TRUE(is_lock_file_name(md5 + ".lock"));
  EXPECT_TRUE(is_lock_file_name(md5 + ".7.lock"));
  EXPECT_FALSE(is_lock_file_name(md5 + ".0.lock"));
  EXPECT_FALSE(is_lock_file_name(md5 + "..lock"));
  EXPECT_FALSE(is_lock_file_name(md5 + ".x.lock"));
  EXPECT_FALSE(is_lock_file_name("0CC175B9C0F1B6A831C399E269772661.lock"));
  EXPECT_FALSE(is_lock_file_name(md5 + ".lock.tmp"));
  EXPECT_FALSE(is_lock_file_name("f.lock"));
}
