#include "cache/compress.hpp"
#include "cache/depends.hpp"
#include "cache/entry.hpp"
#include "cache/sign.hpp"
#include "cache/file_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

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
  wrong_version[8] = 4;
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

TEST_F(CacheStoreTest, BuildsKeepStderrAndTheirBuildTime) {
  auto created = EntryWriter::create(*store_, "k2", 7, std::nullopt, BuildContents{KeepStderr::yes, {}});
  ASSERT_TRUE(std::holds_alternative<EntryWriter>(created));
  EntryWriter& w = std::get<EntryWriter>(created);
  ASSERT_TRUE(w.append("out1", 4));
  ASSERT_TRUE(w.append_stderr("err\0x", 5));
  ASSERT_TRUE(w.append("out2", 4));
  ASSERT_FALSE(w.publish());

  Lookup found = store_->lookup("k2");
  ASSERT_EQ(found.state, LookupState::found) << found.why;
  const EntryHeader& h = found.entry.header;
  // Version 3, for its build time section (cache --stats).
  EXPECT_EQ(h.version, 3u);
  EXPECT_TRUE(h.timed);
  EXPECT_GT(h.build_ns, 0u); // created at 7 ns since the epoch: now minus that
  EXPECT_EQ(h.payload_len, 8u);
  EXPECT_EQ(h.stderr_len, 5u);
  // stdout then stderr, after the header.
  EXPECT_EQ(found.entry.bytes.substr(h.header_size(), 13), std::string("out1out2err\0x", 13));
  EXPECT_EQ(store_->list().size(), 1u);
}

namespace {

// Writes a whole entry file for `h` with `body` (stdout then stderr) at `path`.
void write_entry_file(const std::string& path, const EntryHeader& h, const std::string& body) {
  const std::string head = encode_header(h);
  const std::string file = head + body + encode_trailer(checksum(body), checksum(head));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
  ::close(fd);
}

} // namespace

// An entry of an earlier binary that recorded dependency stamps: its inputs
// cannot be compared with a digest, so it is served to nobody (a miss, no
// warning); one without stamps is still served.
TEST_F(CacheStoreTest, Version2EntriesWithStampsAreMisses) {
  EntryHeader h;
  h.version = entry_format_version_2;
  h.created_ns = 5;
  h.payload_len = 3;
  h.key = "old";
  h.deps.push_back({"Cargo.lock", true, 7, 1, 2, 3});
  write_entry_file(store_->entry_path("old"), h, "out");
  EXPECT_EQ(store_->lookup("old").state, LookupState::missing);
  EXPECT_EQ(store_->lookup("old", Digest128{1, 2}).state, LookupState::missing);
  // Still an entry of KEY for --stale-if-error and --drop.
  EXPECT_EQ(store_->newest("old", {}).state, LookupState::found);
  h.deps.clear();
  write_entry_file(store_->entry_path("old"), h, "out");
  EXPECT_EQ(store_->lookup("old").state, LookupState::found);
  h.version = entry_format_version;
  write_entry_file(store_->entry_path("old"), h, "out");
  EXPECT_EQ(store_->lookup("old").state, LookupState::found);
}

// Pins format version 3 byte for byte: flags, inputs digest, sections.
TEST(CacheEntry, Version3HeaderEncodingIsPinned) {
  EntryHeader h;
  h.version = entry_format_version_3;
  h.created_ns = 0x0102030405060708;
  h.payload_len = 5;
  h.stderr_len = 3;
  h.key = "k";
  h.inputs = Digest128{0x1112131415161718, 0x2122232425262728};
  const std::string bytes = encode_header(h);
  const std::string want("BLCACHE\n"
                         "\x03\x00\x00\x00"                 // version
                         "\x01\x00\x00\x00"                 // key length
                         "\x08\x07\x06\x05\x04\x03\x02\x01" // created
                         "\x05\x00\x00\x00\x00\x00\x00\x00" // stdout length
                         "\x03\x00\x00\x00\x00\x00\x00\x00" // stderr length
                         "\x49\x00\x00\x00"                 // header length 73
                         "\x01\x00\x00\x00"                 // flags: inputs
                         "\x18\x17\x16\x15\x14\x13\x12\x11" // inputs, high half
                         "\x28\x27\x26\x25\x24\x23\x22\x21" // inputs, low half
                         "\x00\x00\x00\x00"                 // no sections
                         "\x00\x00\x00\x00"                 // reserved
                         "k",
                         73);
  EXPECT_EQ(bytes, want);
  EXPECT_EQ(h.header_size(), 73u);
  EXPECT_EQ(h.file_size(), 73u + 5 + 3 + 16);
  EXPECT_EQ(encoded_header_size(bytes), 73u);
  EXPECT_EQ(h.inputs->hex(), "11121314151617182122232425262728");
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->version, 3u);
  EXPECT_EQ(back->inputs, h.inputs);
  EXPECT_EQ(back->stderr_len, 3u);
  EXPECT_TRUE(back->has_inputs(h.inputs));
  EXPECT_FALSE(back->has_inputs(std::nullopt));
  EXPECT_EQ(entry_version_for(h.inputs, false), 3u);
  EXPECT_EQ(entry_version_for(std::nullopt, true), 2u);
  EXPECT_EQ(entry_version_for(std::nullopt, false), 1u);

  std::string flags = bytes;
  flags[44] = 3; // a flag this version does not know
  EXPECT_FALSE(decode_header(flags, why));
  EXPECT_NE(why.find("newer"), std::string::npos);
  std::string no_flag = bytes;
  no_flag[44] = 0; // a digest without its flag
  EXPECT_FALSE(decode_header(no_flag, why));
  EXPECT_FALSE(decode_header(bytes.substr(0, 72), why)); // key cut
}

// Later versions add sections: one of an unknown type is skipped, unless it
// says it must be understood.
TEST(CacheEntry, Version3SectionsAreSkippedUnlessRequired) {
  EntryHeader h;
  h.version = entry_format_version_3;
  h.key = "key";
  h.sections.push_back({7, "later"});
  const std::string bytes = encode_header(h);
  EXPECT_EQ(bytes.size(), 72u + 3 + 8 + 5);
  EXPECT_EQ(bytes.substr(75, 8), std::string("\x07\x00\x00\x00\x05\x00\x00\x00", 8));
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->sections, h.sections);
  EXPECT_FALSE(back->inputs);
  h.sections[0].type |= entry_section_required;
  EXPECT_FALSE(decode_header(encode_header(h), why));
  EXPECT_NE(why.find("newer"), std::string::npos);
  std::string bad_count = bytes;
  bad_count[64] = 2; // two sections announced, one there
  EXPECT_FALSE(decode_header(bad_count, why));
}

// The outputs section (--output): pinned, decoded into the header's fields,
// and counted in the body the payload checksum covers.
TEST(CacheEntry, OutputsSectionIsPinnedAndRoundTrips) {
  EntryHeader h;
  h.version = entry_version_for(std::nullopt, false, true);
  ASSERT_EQ(h.version, entry_format_version_3);
  h.key = "key";
  h.payload_len = 2;
  h.outputs = {"dist", "a/b"};
  h.outputs_len = 300;
  const std::string bytes = encode_header(h);
  ASSERT_EQ(bytes.size(), h.header_size());
  EXPECT_EQ(bytes.substr(75, 8), std::string("\x01\x00\x00\x80\x1b\x00\x00\x00", 8)); // type 1|required, 27
  EXPECT_EQ(bytes.substr(83, 12), std::string("\x2c\x01\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00", 12));
  EXPECT_EQ(bytes.substr(95), std::string("\x04\x00\x00\x00" "dist" "\x03\x00\x00\x00" "a/b", 15));
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->outputs, h.outputs);
  EXPECT_EQ(back->outputs_len, 300u);
  EXPECT_EQ(back->body_len(), 302u);
  EXPECT_EQ(back->outputs_offset(), bytes.size() + 2);
  EXPECT_TRUE(back->sections.empty());
  std::string cut = bytes;
  cut[95] = 9; // a path longer than the section
  EXPECT_FALSE(decode_header(cut, why));
}

// The build time section: pinned, not required, 0 when absent.
TEST(CacheEntry, BuildTimeSectionIsPinnedAndRoundTrips) {
  EntryHeader h;
  h.version = entry_format_version_3;
  h.key = "key";
  h.payload_len = 2;
  h.timed = true;
  h.build_ns = 0x0102030405060708;
  const std::string bytes = encode_header(h);
  ASSERT_EQ(bytes.size(), h.header_size());
  EXPECT_EQ(bytes.substr(64, 4), std::string("\x01\x00\x00\x00", 4)); // one section
  EXPECT_EQ(bytes.substr(75, 8), std::string("\x04\x00\x00\x00\x08\x00\x00\x00", 8)); // type 4, 8 bytes
  EXPECT_EQ(bytes.substr(83), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_TRUE(back->timed);
  EXPECT_EQ(back->build_ns, h.build_ns);
  EXPECT_TRUE(back->sections.empty());
  EXPECT_EQ(encode_header(*back), bytes);
  std::string wrong = bytes;
  wrong[79] = 4; // a build time of another length is malformed
  EXPECT_FALSE(decode_header(wrong, why));
  h.timed = false;
  back = decode_header(encode_header(h), why);
  ASSERT_TRUE(back) << why;
  EXPECT_FALSE(back->timed);
  EXPECT_EQ(back->build_ns, 0u);
}

TEST(CacheEntry, SignatureSectionIsPinnedAndRoundTrips) {
  EntryHeader h;
  h.version = entry_version_for(std::nullopt, false, false, true);
  ASSERT_EQ(h.version, entry_format_version_3);
  h.key = "key";
  h.payload_len = 2;
  h.signature = std::string(32, '\x5a');
  const std::string bytes = encode_header(h);
  ASSERT_EQ(bytes.size(), h.header_size());
  EXPECT_EQ(bytes.substr(64, 4), std::string("\x01\x00\x00\x00", 4)); // one section
  EXPECT_EQ(bytes.substr(75, 8), std::string("\x02\x00\x00\x00\x20\x00\x00\x00", 8)); // type 2, 32 bytes
  EXPECT_EQ(bytes.substr(83), h.signature);
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->signature, h.signature);
  EXPECT_TRUE(back->sections.empty());
  std::string shorter = bytes;
  shorter[79] = 31; // a tag of another length is no tag of ours
  EXPECT_FALSE(decode_header(shorter, why));
}

// RFC 4231, test case 2: the tag is HMAC-SHA256 keyed by the file's bytes.
TEST(CacheSign, HmacSha256OfTheKeyFilesBytes) {
  char dir[] = "/tmp/bl-sign-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/key";
  {
    std::ofstream out(path, std::ios::binary);
    out << "Jefe";
  }
  ::chmod(path.c_str(), 0600);
  auto signer = EntrySigner::from_file(path);
  ASSERT_TRUE(std::holds_alternative<EntrySigner>(signer)) << std::get<std::string>(signer);
  auto mac = std::get<EntrySigner>(signer).begin();
  const std::string msg = "what do ya want for nothing?";
  mac->update(msg.data(), 10);
  mac->update(msg.data() + 10, msg.size() - 10);
  std::string hex;
  for (const unsigned char c : mac->finish()) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", c);
    hex += b;
  }
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  ::chmod(path.c_str(), 0640);
  EXPECT_EQ(std::get<std::string>(EntrySigner::from_file(path)), "readable by group or others (chmod 600)");
  ::unlink(path.c_str());
  ::rmdir(dir);
}

TEST(CacheEntry, CompressionSectionIsPinnedAndRequiredOnlyWhenUsed) {
  EntryHeader h;
  h.version = entry_format_version_3;
  h.key = "key";
  h.payload_len = 40;
  h.compression = true;
  h.compressed = entry_compressed_stdout;
  h.raw_stdout_len = 5000;
  h.raw_stderr_len = 7;
  const std::string bytes = encode_header(h);
  ASSERT_EQ(bytes.size(), h.header_size());
  EXPECT_EQ(bytes.substr(75, 8), std::string("\x03\x00\x00\x80\x14\x00\x00\x00", 8)); // type 3|required, 20
  EXPECT_EQ(bytes.substr(83), std::string("\x01\x00\x00\x00" "\x88\x13\x00\x00\x00\x00\x00\x00"
                                          "\x07\x00\x00\x00\x00\x00\x00\x00", 20));
  std::string why;
  auto back = decode_header(bytes, why);
  ASSERT_TRUE(back) << why;
  EXPECT_TRUE(back->compression);
  EXPECT_EQ(back->compressed, entry_compressed_stdout);
  EXPECT_EQ(back->stdout_size(), 5000u);
  EXPECT_EQ(back->payload_len, 40u);
  // Nothing compressed: the section is skippable, so older readers serve it.
  h.compressed = 0;
  const std::string raw = encode_header(h);
  EXPECT_EQ(raw.substr(75, 4), std::string("\x03\x00\x00\x00", 4));
  ASSERT_TRUE(decode_header(raw, why)) << why;
  EXPECT_EQ(decode_header(raw, why)->stdout_size(), 40u);
  std::string lying = bytes;
  lying[78] = 0; // flags set in a section that does not say it is required
  EXPECT_FALSE(decode_header(lying, why));
  std::string unknown = bytes;
  unknown[83] = 4; // a flag this version does not know
  EXPECT_FALSE(decode_header(unknown, why));
  // An entry of before compression (no section) reads as raw.
  h.compression = false;
  auto old = decode_header(encode_header(h), why);
  ASSERT_TRUE(old) << why;
  EXPECT_FALSE(old->compression);
  EXPECT_EQ(old->stdout_size(), 40u);
}

namespace {

// `raw` through a BlockCompressor, in pieces of `piece` bytes: what it stored.
std::string compress_all(const std::string& raw, std::size_t piece, bool& framed) {
  std::string stored;
  BlockCompressor z([&](const char* d, std::size_t n) {
    stored.append(d, n);
    return true;
  });
  for (std::size_t at = 0; at < raw.size(); at += piece)
    EXPECT_TRUE(z.write(raw.data() + at, std::min(piece, raw.size() - at)));
  EXPECT_TRUE(z.finish());
  EXPECT_EQ(z.raw_len(), raw.size());
  framed = z.framed();
  return stored;
}

// `raw` through a FrameCompressor at level 3, in pieces of `piece` bytes.
std::string frame_all(const std::string& raw, std::size_t piece) {
  std::string stored;
  FrameCompressor z(
      [&](const char* d, std::size_t n) {
        stored.append(d, n);
        return true;
      },
      3);
  for (std::size_t at = 0; at < raw.size(); at += piece)
    EXPECT_TRUE(z.write(raw.data() + at, std::min(piece, raw.size() - at)));
  EXPECT_TRUE(z.finish());
  return stored;
}

std::string decode_all(const std::string& stored, std::uint64_t raw_len, bool& ok) {
  std::string out;
  ok = decode_blocks(
      [&](std::uint64_t at, char* buf, std::size_t n) {
        if (at + n > stored.size()) return false;
        stored.copy(buf, n, at);
        return true;
      },
      stored.size(), raw_len, [&](std::string_view b) {
        out += b;
        return true;
      });
  return out;
}

} // namespace

TEST(CacheCompress, CompressibleDataGoesInBlocksAndComesBackWhole) {
  std::string raw;
  for (int i = 0; raw.size() < 3 * compress_block + 12345; ++i)
    raw += "line " + std::to_string(i) + ": building target foo/bar.o\n";
  bool framed = false;
  const std::string stored = compress_all(raw, 65537, framed);
  EXPECT_TRUE(framed);
  EXPECT_LT(stored.size(), raw.size() / 4);
  bool ok = false;
  EXPECT_EQ(decode_all(stored, raw.size(), ok), raw);
  EXPECT_TRUE(ok);
  decode_all(stored, raw.size() + 1, ok); // another raw length: refused
  EXPECT_FALSE(ok);
  std::string bad = stored;
  bad[compress_block_header + 3] ^= 0x55;
  decode_all(bad, raw.size(), ok);
  EXPECT_FALSE(ok);
}

TEST(CacheCompress, IncompressibleDataIsStoredRaw) {
  std::string raw(2 * compress_block + 99, '\0');
  std::uint64_t x = 88172645463325252ULL;
  for (auto& c : raw) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  bool framed = true;
  EXPECT_EQ(compress_all(raw, 1000, framed), raw);
  EXPECT_FALSE(framed);
  EXPECT_EQ(compress_all("", 1, framed), "");
  EXPECT_FALSE(framed);
}

TEST(CacheCompress, FramesCompressibleStreamsAndPassesOthersThrough) {
  std::string text;
  for (int i = 0; text.size() < 2 * compress_block + 777; ++i)
    text += "member " + std::to_string(i) + " of the archive\n";
  for (const std::size_t piece : {std::size_t{1000}, 3 * compress_block}) {
    const std::string stored = frame_all(text, piece);
    ASSERT_GE(stored.size(), 4u);
    EXPECT_EQ(stored.compare(0, 4, "\x28\xb5\x2f\xfd"), 0); // one zstd frame
    EXPECT_LT(stored.size(), text.size() / 4);
    std::string back(text.size() + 1, '\0');
    const std::size_t n = ZSTD_decompress(back.data(), back.size(), stored.data(), stored.size());
    ASSERT_FALSE(ZSTD_isError(n));
    back.resize(n);
    EXPECT_EQ(back, text);
  }
  std::string noise(compress_block + 4321, '\0');
  std::uint64_t x = 88172645463325252ULL;
  for (auto& c : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  EXPECT_EQ(frame_all(noise, 4096), noise);      // decided at the first block
  EXPECT_EQ(frame_all(noise.substr(0, 999), 7), noise.substr(0, 999)); // at finish()
  EXPECT_EQ(frame_all("", 1), "");
}

TEST(CacheDepends, BadOutputPaths) {
  EXPECT_TRUE(bad_output_path(""));
  EXPECT_TRUE(bad_output_path("."));
  EXPECT_TRUE(bad_output_path("a/.."));
  EXPECT_TRUE(bad_output_path("/"));
  EXPECT_TRUE(bad_output_path("./"));
  EXPECT_FALSE(bad_output_path("dist/"));
  EXPECT_FALSE(bad_output_path("/abs/dist"));
}

TEST_F(CacheStoreTest, EntriesOfOneKeyLiveSideBySidePerInputs) {
  const Digest128 a{1, 1}, b{2, 2};
  const auto publish = [&](const Inputs& in, std::int64_t created, const char* out) {
    auto created_w = EntryWriter::create(*store_, "key", created, in);
    ASSERT_TRUE(std::holds_alternative<EntryWriter>(created_w));
    EntryWriter& w = std::get<EntryWriter>(created_w);
    ASSERT_TRUE(w.append(out, 1));
    ASSERT_FALSE(w.publish());
  };
  publish(a, 10, "a");
  publish(b, 30, "b");
  publish(std::nullopt, 20, "p");
  EXPECT_TRUE(store_->entry_path("key", a).ends_with("." + a.hex() + ".entry"));
  Lookup la = store_->lookup("key", a);
  ASSERT_EQ(la.state, LookupState::found);
  EXPECT_EQ(la.entry.header.version, 3u);
  EXPECT_EQ(la.entry.header.inputs, a);
  EXPECT_EQ(store_->lookup("key", b).entry.header.created_ns, 30);
  EXPECT_EQ(store_->lookup("key").entry.header.created_ns, 20);
  EXPECT_EQ(store_->lookup("key", Digest128{3, 3}).state, LookupState::missing);
  EXPECT_EQ(store_->lookup("other", a).state, LookupState::missing);
  // --stale-if-error: the newest of KEY, whatever its inputs.
  Lookup n = store_->newest("key", {});
  ASSERT_EQ(n.state, LookupState::found);
  EXPECT_EQ(n.entry.header.inputs, b);
  EXPECT_EQ(store_->list().size(), 3u);
  // --drop: every input state.
  EXPECT_FALSE(store_->drop("key"));
  EXPECT_EQ(store_->list().size(), 0u);
  EXPECT_EQ(store_->newest("key", {}).state, LookupState::missing);
}

TEST(CacheEntry, TheOutputListIsPartOfTheAddress) {
  const Digest128 in{1, 2};
  // Without outputs the address is the inputs: entries keep their names.
  EXPECT_EQ(entry_address(std::nullopt, {}), std::nullopt);
  EXPECT_EQ(entry_address(in, {}), in);
  const Inputs a = entry_address(std::nullopt, {"a"});
  ASSERT_TRUE(a);
  EXPECT_EQ(entry_address(std::nullopt, {"a"}), a); // the same on every machine
  EXPECT_NE(entry_address(std::nullopt, {"b"}), a);
  EXPECT_NE(entry_address(in, {"a"}), a);
  EXPECT_NE(entry_address(in, {"a"}), in);
  EXPECT_NE(entry_address(std::nullopt, {"a", "b"}), entry_address(std::nullopt, {"b", "a"}));
  EXPECT_NE(entry_address(std::nullopt, {"a", "b"}), entry_address(std::nullopt, {"a\n1:b"}));
  // Pinned: a change here renames every entry that has outputs.
  EXPECT_EQ(entry_address(std::nullopt, {"dist"})->hex(), "e95c2fb1ba70ada8c573a0855f93fa09");
}

TEST_F(CacheStoreTest, EntriesOfOneKeyLiveSideBySidePerOutputList) {
  const auto publish = [&](const std::vector<std::string>& outputs, std::int64_t created) {
    BuildContents what;
    what.outputs = outputs;
    auto created_w = EntryWriter::create(*store_, "key", created, std::nullopt, what);
    ASSERT_TRUE(std::holds_alternative<EntryWriter>(created_w));
    EntryWriter& w = std::get<EntryWriter>(created_w);
    ASSERT_TRUE(w.append("x", 1));
    ASSERT_FALSE(w.publish());
  };
  publish({"a"}, 10);
  publish({"b"}, 20);
  publish({}, 30);
  const Lookup la = store_->lookup("key", entry_address(std::nullopt, {"a"}));
  ASSERT_EQ(la.state, LookupState::found);
  EXPECT_EQ(la.entry.header.outputs, std::vector<std::string>{"a"});
  EXPECT_EQ(la.entry.header.inputs, std::nullopt); // the header keeps the inputs apart
  EXPECT_EQ(store_->lookup("key", entry_address(std::nullopt, {"b"})).entry.header.created_ns, 20);
  EXPECT_EQ(store_->lookup("key").entry.header.created_ns, 30);
  // --stale-if-error: the newest of KEY with the caller's outputs.
  EXPECT_EQ(store_->newest("key", {"a"}).entry.header.created_ns, 10);
  EXPECT_EQ(store_->newest("key", {}).entry.header.created_ns, 30);
  EXPECT_EQ(store_->newest("key", {"c"}).state, LookupState::missing);
  EXPECT_EQ(store_->list().size(), 3u);
  EXPECT_FALSE(store_->drop("key"));
  EXPECT_EQ(store_->list().size(), 0u);
}

std::vector<std::string> names_of(const std::vector<Removal>& removed) {
  std::vector<std::string> out;
  for (const auto& r : removed)
    out.push_back(r.name);
  return out;
}

TEST(CacheGc, ByUseRemovesTheLeastRecentlyUsedUntilUnder) {
  const std::vector<WeighedEntry> e{{"c", 100, 30}, {"a", 100, 10}, {"b", 100, 20}, {"d", 50, 40}};
  const auto size = [&](std::uint64_t max) { return names_of(by_use(e, GcPolicy{{}, max, 100})); };
  EXPECT_EQ(size(1000), std::vector<std::string>{});
  EXPECT_EQ(size(350), std::vector<std::string>{});
  EXPECT_EQ(size(349), std::vector<std::string>{"a"});
  EXPECT_EQ(size(150), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(size(0), (std::vector<std::string>{"a", "b", "c", "d"}));
  // --max-unused: unused for longer than it, whatever the size.
  EXPECT_EQ(names_of(by_use(e, GcPolicy{{}, {}, 100, Nanos(75)})), (std::vector<std::string>{"a", "b"}));
  // Both: the unused go first, then by last use until under the size.
  EXPECT_EQ(names_of(by_use(e, GcPolicy{{}, 100, 100, Nanos(85)})),
            (std::vector<std::string>{"a", "b", "c"}));
  const auto removed = by_use(e, GcPolicy{{}, 349, 100'000'000'010});
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].why, "least recently used (last used 100s ago), over --max-size 349 bytes");
}

TEST(CacheDepends, BadPaths) {
  EXPECT_TRUE(bad_depends_path(""));
  EXPECT_TRUE(bad_depends_path(std::string_view("a\0b", 3)));
  EXPECT_FALSE(bad_depends_path("a b"));
}
