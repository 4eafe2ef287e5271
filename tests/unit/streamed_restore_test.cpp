#include "cache/outputs.hpp"
#include "cache/streamed_restore.hpp"
#include "util/checksum.hpp"

#include <gtest/gtest.h>

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace bufferlock;

namespace {

// Hands out `object` in runs of `run` bytes.
BodyRuns runs_of(const std::string& object, std::size_t run, std::size_t* calls = nullptr) {
  return [=, at = std::size_t(0)](std::string& out) mutable {
    if (calls) ++*calls;
    if (at >= object.size()) return false;
    out = object.substr(at, run);
    at += out.size();
    return true;
  };
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = ::testing::TempDir() + "streamed-XXXXXX";
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path))
      out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// An entry of stdout "out\n" and `dir`/out/f's archive: its header and
// body, and the object's bytes from the body on (with some of the tail).
struct Object {
  EntryHeader h;
  std::string head, body;
};

Object object_of(const std::string& dir) {
  std::filesystem::create_directories(dir + "/out");
  std::ofstream(dir + "/out/f", std::ios::binary) << std::string(300000, 'x') << "end";
  Object o;
  o.body = "out\n";
  const std::size_t streams = o.body.size();
  const auto why = pack_outputs({dir + "/out"}, [&](const char* d, std::size_t n) {
    o.body.append(d, n);
    return true;
  });
  EXPECT_FALSE(why) << *why;
  std::filesystem::remove_all(dir + "/out");
  o.h.version = entry_version_for(std::nullopt, false, true);
  o.h.key = "k";
  o.h.payload_len = streams;
  o.h.outputs = {dir + "/out"};
  o.h.outputs_len = o.body.size() - streams;
  o.head = encode_header(o.h);
  return o;
}

} // namespace

TEST(BodyReader, SplitsAtTheAskedOffsetsAndNeverPastTheBody) {
  std::string object;
  for (int i = 0; i < 5000; ++i)
    object += static_cast<char>(i * 7);
  const std::string body = object.substr(0, 4321); // the rest: the object's tail
  for (const std::size_t run : {1u, 7u, 1000u, 4321u, 9999u}) {
    const BodyRuns runs = runs_of(object, run);
    BodyReader r(runs, body.size(), nullptr);
    std::string got;
    const char* data = nullptr;
    std::size_t len = 0;
    for (const std::uint64_t until : {0u, 10u, 11u, 2000u, 4321u, 9000u}) {
      while (r.at() < std::min<std::uint64_t>(until, body.size())) {
        ASSERT_TRUE(r.take(until, data, len));
        ASSERT_GT(len, 0u);
        got.append(data, len);
        ASSERT_LE(r.at(), until);
      }
      EXPECT_EQ(got, body.substr(0, got.size())) << run;
    }
    ASSERT_TRUE(r.take(body.size(), data, len));
    EXPECT_EQ(len, 0u); // at the end: nothing more, not an error
    EXPECT_TRUE(r.whole());
    EXPECT_EQ(r.digest(), checksum(body)) << run;
  }
}

TEST(BodyReader, ShortRunsEndIt) {
  const BodyRuns runs = runs_of(std::string(100, 'a'), 30);
  BodyReader r(runs, 200, nullptr);
  const char* data = nullptr;
  std::size_t len = 0;
  while (r.take(200, data, len))
    ASSERT_GT(len, 0u);
  EXPECT_EQ(r.at(), 100u);
  EXPECT_FALSE(r.whole());
}

TEST(ReadStreamed, ASoundEntryStagesItsOutputsAndServesStdout) {
  TempDir d;
  const Object o = object_of(d.path);
  const std::string trailer = encode_trailer(checksum(o.body), checksum(o.head));
  const BodyRuns runs = runs_of(o.body + o.head + trailer, 65536);
  StreamedRead got = read_streamed(runs, o.h, o.head, trailer, nullptr);
  ASSERT_EQ(got.lookup.state, LookupState::found) << got.lookup.why;
  ASSERT_TRUE(got.lookup.entry.staged);
  EXPECT_EQ(d.names().size(), 1u); // the staged tree, nothing at PATH yet
  EXPECT_FALSE(std::filesystem::exists(d.path + "/out"));
  EXPECT_FALSE(got.lookup.entry.staged->commit());
  EXPECT_EQ(read_file(d.path + "/out/f"), std::string(300000, 'x') + "end");
  got.lookup.entry.staged.reset();
  EXPECT_EQ(d.names(), std::vector<std::string>{"out"});
  // The entry file: header, stdout, a hole for the archive, trailer.
  const CachedEntry& e = got.lookup.entry;
  char out[4] = {};
  ASSERT_EQ(::pread(e.fd.get(), out, 4, static_cast<off_t>(o.head.size())), 4);
  EXPECT_EQ(std::string(out, 4), "out\n");
  EXPECT_EQ(::lseek(e.fd.get(), 0, SEEK_END), static_cast<off_t>(e.header.file_size()));
}

TEST(ReadStreamed, AFlippedByteOrAShortBodyLeavesNothing) {
  TempDir d;
  Object o = object_of(d.path);
  const std::string trailer = encode_trailer(checksum(o.body), checksum(o.head));
  for (const std::size_t at : {std::size_t(10), o.body.size() / 2, o.body.size() - 1}) {
    std::string bad = o.body;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    const BodyRuns runs = runs_of(bad, 40000);
    const StreamedRead got = read_streamed(runs, o.h, o.head, trailer, nullptr);
    EXPECT_EQ(got.lookup.state, LookupState::corrupt) << at;
    EXPECT_EQ(got.lookup.why, "payload checksum mismatch") << at;
    EXPECT_TRUE(d.names().empty()) << at;
  }
  const BodyRuns cut = runs_of(o.body.substr(0, o.body.size() - 100), 40000);
  const StreamedRead got = read_streamed(cut, o.h, o.head, trailer, nullptr);
  EXPECT_TRUE(got.short_body);
  EXPECT_EQ(got.lookup.state, LookupState::corrupt);
  EXPECT_TRUE(d.names().empty());
}
