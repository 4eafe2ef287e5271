#include "cache/depends.hpp"
#include "cache/entry.hpp"
#include "cache/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>

using namespace bufferlock;
using namespace std::chrono_literals;

// Pins format version 1 byte for byte: a change here breaks every cache.
TEST(CacheEntry, HeaderEncodingIsPinned) {
  EntryHeader h;
  h.created_ns = 0x0102030405060708;
  h.payload_len = 5;
  h.key = "k";
  const std::string bytes = encode_header(h);
  const std::string want("BLCACHE\n"
                         "\x01\x00\x00\x00"                 // version
                         "\x01\x00\x00\x00"                 // key length
                         "\x08\x07\x06\x05\x04\x03\x02\x01" // created
                         "\x05\x00\x00\x00\x00\x00\x00\x00" // payload length
                         "k",
                         33);
  EXPECT_EQ(bytes, want);
  EXPECT_EQ(h.header_size(), 33u);
  EXPECT_EQ(h.file_size(), 33u + 5 + 16);
}

TEST(CacheEntry, TrailerEncodingIsPinned) {
  const std::string t = encode_trailer(0x1122334455667788, 0x99aabbccddeeff00);
  EXPECT_EQ(t, std::string("\x88\x77\x66\x55\x44\x33\x22\x11\x00\xff\xee\xdd\xcc\xbb\xaa\x99", 16));
  std::uint64_t a = 0, b = 0;
  decode_trailer(t, a, b);
  EXPECT_EQ(a, 0x1122334455667788u);
  EXPECT_EQ(b, 0x99aabbccddeeff00u);
}

TEST(CacheEntry, HeaderRoundTripAndRejects) {
  EntryHeader h;
  h.created_ns = 123456789;
  h.payload_len = 42;
  h.key = std::string("key\0with\xffnul", 12);
  std::string why;
  auto back = decode_header(encode_header(h), why);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->created_ns, h.created_ns);
  EXPECT_EQ(back->payload_len, 42u);
  EXPECT_EQ(back->key, h.key);

  EXPECT_FALSE(decode_header("#!/bin/sh\necho foreign file here", why));
  std::string wrong_version = encode_header(h);
  wrong_version[8] = 3;
  EXPECT_FALSE(decode_header(wrong_version, why));
  EXPECT_NE(why.find("version"), std::string::npos);
  EXPECT_FALSE(decode_header(encode_header(h).substr(0, 35), why)); // key cut
}

// Pins format version 2 byte for byte: stderr length, header length, and
// one dependency record.
TEST(CacheEntry, Version2HeaderEncodingIsPinned) {
  EntryHeader h;
  h.version = entry_format_version_2;
  h.created_ns = 0x0102030405060708;
  h.payload_len = 5;
  h.stderr_len = 3;
  h.key = "k";
  h.deps.push_back({"ab", true, 7, 0x1112131415161718, 0x21, 0x31});
  const std::string bytes = encode_header(h);
  const std::string want("BLCACHE\n"
                         "\x02\x00\x00\x00"                 // version
                         "\x01\x00\x00\x00"                 // key length
                         "\x08\x07\x06\x05\x04\x03\x02\x01" // created
                         "\x05\x00\x00\x00\x00\x00\x00\x00" // stdout length
                         "\x03\x00\x00\x00\x00\x00\x00\x00" // stderr length
                         "\x5b\x00\x00\x00"                 // header length 91
                         "\x01\x00\x00\x00"                 // one dependency
                         "k"
                         "\x02\x00\x00\x00"                 // path length
                         "\x01\x00\x00\x00"                 // flags: it existed
                         "\x07\x00\x00\x00\x00\x00\x00\x00" // size
                         "\x18\x17\x16\x15\x14\x13\x12\x11" // mtime
                         "\x21\x00\x00\x00\x00\x00\x00\x00" // device
                         "\x31\x00\x00\x00\x00\x00\x00\x00" // inode
                         "ab",
                         91);
  EXPECT_EQ(bytes, want);
  EXPECT_EQ(h.header_size(), 91u);
  EXPECT_EQ(h.file_size(), 91u + 5 + 3 + 16);
  EXPECT_EQ(encoded_header_size(bytes), 91u);
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->version, 2u);
  EXPECT_EQ(back->stderr_len, 3u);
  EXPECT_EQ(back->deps, h.deps);
  EXPECT_FALSE(decode_header(bytes.substr(0, 90), why)); // a record cut
  std::string bad_count = bytes;
  bad_count[44] = 2; // two records announced, one there
  EXPECT_FALSE(decode_header(bad_count, why));
}

TEST(CacheEntry, Version1StaysTheFormatOfAPlainEntry) {
  EntryHeader h;
  h.key = "k";
  EXPECT_EQ(encode_header(h)[8], 1);
  EXPECT_EQ(h.header_size(), 33u);
}

TEST(CacheEntry, ExpiryIsMeasuredFromTheBuildStart) {
  const std::int64_t s = 1'000'000'000;
  EXPECT_EQ(freshness(0, 100 * s, std::nullopt, std::nullopt), Freshness::fresh); // never expires
  EXPECT_EQ(freshness(100 * s, 110 * s, Nanos(10s), std::nullopt), Freshness::fresh);
  EXPECT_EQ(freshness(100 * s, 110 * s + 1, Nanos(10s), std::nullopt), Freshness::expired);
  EXPECT_EQ(freshness(100 * s, 115 * s, Nanos(10s), Nanos(5s)), Freshness::stale);
  EXPECT_EQ(freshness(100 * s, 115 * s + 1, Nanos(10s), Nanos(5s)), Freshness::expired);
  EXPECT_EQ(freshness(200 * s, 100 * s, Nanos(10s), std::nullopt), Freshness::fresh); // clock set back
  EXPECT_EQ(freshness(INT64_MIN, INT64_MAX, Nanos(10s), Nanos(5s)), Freshness::expired);
}

namespace {

// A cache store in a fresh temporary directory, removed afterwards.
class CacheStoreTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bufferlock-unit-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    store_.emplace(dir_);
    ASSERT_FALSE(store_->prepare());
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  // A writer for `key`, created at `created_ns`.
  EntryWriter writer(const char* key, std::int64_t created_ns) {
    auto created = EntryWriter::create(*store_, key, created_ns);
    EXPECT_TRUE(std::holds_alternative<EntryWriter>(created));
    return std::move(std::get<EntryWriter>(created));
  }

  std::string dir_;
  std::optional<CacheStore> store_;
};

} // namespace

TEST_F(CacheStoreTest, PublishedEntriesVerifyAndCorruptionIsDetected) {
  CacheStore& store = *store_;
  EntryWriter w = writer("key", 42);
  std::string payload;
  for (int i = 0; i < 200000; ++i)
    payload += static_cast<char>(i % 251);
  ASSERT_TRUE(w.append(payload.data(), 100000));
  ASSERT_TRUE(w.append(payload.data() + 100000, payload.size() - 100000));
  ASSERT_FALSE(w.publish());

  Lookup found = store.lookup("key");
  ASSERT_EQ(found.state, LookupState::found);
  EXPECT_EQ(found.entry.header.created_ns, 42);
  EXPECT_EQ(found.entry.header.payload_len, payload.size());
  EXPECT_EQ(store.lookup("other").state, LookupState::missing);

  // Flip one payload byte: a miss with a reason, never served.
  const std::string path = store.entry_path("key");
  const int fd = ::open(path.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, "X", 1, 1000), 1);
  Lookup corrupt = store.lookup("key");
  EXPECT_EQ(corrupt.state, LookupState::corrupt);
  EXPECT_NE(corrupt.why.find("checksum"), std::string::npos);
  // Cut it: truncated.
  ASSERT_EQ(::ftruncate(fd, 500), 0);
  ::close(fd);
  EXPECT_EQ(store.lookup("key").why, "truncated");
  // --gc removes the corrupt entry.
  EXPECT_EQ(store.gc(std::nullopt, 0).entries_removed, 1);
  EXPECT_EQ(store.lookup("key").state, LookupState::missing);
}

TEST_F(CacheStoreTest, AnAbandonedWriterLeavesNothing) {
  {
    EntryWriter w = writer("key", 1);
    w.append("partial", 7);
  }
  EXPECT_EQ(store_->lookup("key").state, LookupState::missing);
  EXPECT_EQ(store_->gc(std::nullopt, 0).temps_removed, 0); // the writer removed its own file
}

TEST_F(CacheStoreTest, Version2EntriesKeepStderrAndDependencies) {
  const std::string dep = dir_ + "/input";
  ASSERT_EQ(std::system(("printf abc >" + dep).c_str()), 0);
  auto created = EntryWriter::create(*store_, "k2", 7, stamp_paths({dep}), KeepStderr::yes);
  ASSERT_TRUE(std::holds_alternative<EntryWriter>(created));
  EntryWriter& w = std::get<EntryWriter>(created);
  ASSERT_TRUE(w.append("out1", 4));
  ASSERT_TRUE(w.append_stderr("err\0x", 5));
  ASSERT_TRUE(w.append("out2", 4));
  ASSERT_FALSE(w.publish());

  Lookup found = store_->lookup("k2");
  ASSERT_EQ(found.state, LookupState::found) << found.why;
  const EntryHeader& h = found.entry.header;
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.payload_len, 8u);
  EXPECT_EQ(h.stderr_len, 5u);
  ASSERT_EQ(h.deps.size(), 1u);
  EXPECT_TRUE(h.deps[0].exists);
  EXPECT_EQ(h.deps[0].size, 3u);
  // stdout then stderr, after the header.
  EXPECT_EQ(found.entry.bytes.substr(h.header_size(), 13), std::string("out1out2err\0x", 13));
  EXPECT_FALSE(deps_out_of_date(h.deps, {}));
  EXPECT_FALSE(deps_out_of_date(h.deps, {dep}));
  EXPECT_TRUE(deps_out_of_date(h.deps, {dep, dep})); // another list of paths
  ASSERT_EQ(std::system(("printf abcd >" + dep).c_str()), 0);
  EXPECT_TRUE(deps_out_of_date(h.deps, {}));
  EXPECT_EQ(store_->list().size(), 1u);
}

TEST(CacheDepends, EveryFieldCountsAndAppearingOrVanishingToo) {
  const DepStamp base{"p", true, 10, 1000, 1, 2};
  EXPECT_FALSE(stamp_changed(base, base));
  for (auto change : {+[](DepStamp& d) { d.size = 11; }, +[](DepStamp& d) { d.mtime_ns = 1001; },
                      +[](DepStamp& d) { d.dev = 9; }, +[](DepStamp& d) { d.ino = 9; },
                      +[](DepStamp& d) { d.exists = false; }}) {
    DepStamp now = base;
    change(now);
    EXPECT_TRUE(stamp_changed(base, now));
  }
  const DepStamp absent{"p", false, 0, 0, 0, 0};
  EXPECT_FALSE(stamp_changed(absent, absent));
  EXPECT_TRUE(stamp_changed(absent, base)); // appeared
  EXPECT_FALSE(stamp_path("/nonexistent/bufferlock/dep").exists);
  EXPECT_TRUE(bad_depends_path(""));
  EXPECT_TRUE(bad_depends_path(std::string_view("a\0b", 3)));
  EXPECT_FALSE(bad_depends_path("a b"));
}
