#include "cache/inputs.hpp"
#include "cache/stat_cache.hpp"
#include "util/clock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

using namespace bufferlock;

// Reference values of XXH3-128 (seed 0): inputs digests depend on them.
TEST(Checksum128, IsXxh3_128) {
  EXPECT_EQ(checksum128("").hex(), "99aa06d3014798d86001c324468d497f");
  Checksum128 h;
  h.update("a");
  h.update("bc");
  EXPECT_EQ(h.digest(), checksum128("abc"));
  EXPECT_NE(checksum128("abc"), checksum128("abd"));
}

namespace {

class InputsTest : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bufferlock-inputs-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::mkdir((dir_ + "/cache").c_str(), 0700);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  void sh(const std::string& script) { ASSERT_EQ(std::system(("cd " + dir_ + " && " + script).c_str()), 0); }

  // The digest of `rel` (below dir_) with `rules`, and what `walk` does.
  Digest128 digest(const std::vector<std::string>& rel, const InputsRules& rules = {},
                   InputsWalk* walk = nullptr) {
    std::vector<std::string> paths;
    for (const auto& p : rel)
      paths.push_back(dir_ + "/" + p);
    StatCache stats(dir_ + "/cache");
    auto d = inputs_digest(paths, stats, rules, walk);
    EXPECT_TRUE(std::holds_alternative<Digest128>(d));
    if (!std::holds_alternative<Digest128>(d)) return {};
    stats.save();
    return std::get<Digest128>(d);
  }

  std::string dir_;
};

} // namespace

TEST_F(InputsTest, AFileCountsByItsBytesNotItsNameOrTimes) {
  sh("printf 'same' >a && printf 'same' >b && printf 'other' >c");
  const Digest128 a = digest({"a"});
  EXPECT_EQ(digest({"b"}), a);
  EXPECT_NE(digest({"c"}), a);
  sh("touch -d 2001-01-01 a && chmod +x a");
  EXPECT_EQ(digest({"a"}), a); // a top-level file is its bytes alone
  // Missing is not empty, and the order counts.
  sh(": >empty");
  EXPECT_NE(digest({"missing"}), digest({"empty"}));
  EXPECT_NE(digest({"a", "c"}), digest({"c", "a"}));
  EXPECT_NE(digest({"a"}), digest({"a", "missing"}));
}

TEST_F(InputsTest, ADirectoryCountsByNamesTypesModesContentsAndLinks) {
  sh("mkdir -p t/sub && printf x >t/f && printf y >t/sub/g && ln -s f t/l && cp -a t u && touch -d "
     "2001-01-01 u/f");
  const Digest128 t = digest({"t"});
  EXPECT_EQ(digest({"u"}), t); // a copy, other times and inodes
  sh("mv u/f u/f2");
  EXPECT_NE(digest({"u"}), t);
  sh("mv u/f2 u/f && chmod +x u/f");
  EXPECT_NE(digest({"u"}), t);
  sh("chmod -x u/f && ln -sfn sub u/l");
  EXPECT_NE(digest({"u"}), t);
  sh("ln -sfn f u/l && printf z >u/sub/g");
  EXPECT_NE(digest({"u"}), t);
  sh("printf y >u/sub/g");
  EXPECT_EQ(digest({"u"}), t);
  sh("mkdir u/empty");
  EXPECT_NE(digest({"u"}), t);
  // A directory is not a file with the same bytes.
  EXPECT_NE(digest({"t/sub"}), digest({"t/sub/g"}));
}

TEST_F(InputsTest, AnUnreadableInputIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads everything";
  sh("printf x >secret && chmod 000 secret");
  StatCache stats(dir_ + "/cache");
  auto d = inputs_digest({dir_ + "/secret"}, stats);
  ASSERT_TRUE(std::holds_alternative<SysError>(d));
  EXPECT_EQ(std::get<SysError>(d).path, dir_ + "/secret");
}

namespace {

std::int64_t later() { return wall_clock_ns() + racy_window.count() + 1'000'000'000; }

struct stat stat_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return st;
}

} // namespace

// The stat cache is trusted when every field matches and the file is older
// than the racy window was at recording; it then spares the read.
TEST_F(InputsTest, TheStatCacheIsTrustedOnlyWhereAFileCouldNotChangeUnseen) {
  sh("printf 'content' >f && touch -d '2001-01-01' f");
  const std::string f = dir_ + "/f";
  const struct stat st = stat_of(f);
  const Digest128 planted{0x1234, 0x5678};
  {
    StatCache stats(dir_ + "/cache");
    // As if recorded once the file's ctime (just now) was older than the window.
    stats.remember(st, later(), planted);
    ASSERT_TRUE(stats.dirty());
    ASSERT_TRUE(stats.save());
  }
  StatCache stats(dir_ + "/cache");
  ASSERT_EQ(stats.find(st), planted); // what the record says, not the file
  // Another ctime (chmod) is another file state: not found.
  sh("chmod +x f");
  EXPECT_FALSE(stats.find(stat_of(f)));

  // A file changed just now: its record would be racy, so none is kept.
  sh("printf 'fresh' >g");
  StatCache racy(dir_ + "/cache");
  racy.remember(stat_of(dir_ + "/g"), wall_clock_ns(), planted);
  EXPECT_FALSE(racy.dirty());
  StatRecord r = stat_record(stat_of(dir_ + "/g"));
  r.recorded_ns = std::max(r.mtime_ns, r.ctime_ns) + racy_window.count();
  EXPECT_FALSE(record_trusted(r));
  r.recorded_ns += 1;
  EXPECT_TRUE(record_trusted(r));
}

TEST(StatCacheFile, BadContentIsIgnoredNeverTrusted) {
  StatRecord a;
  a.dev = 1;
  a.ino = 2;
  a.recorded_ns = INT64_MAX / 2;
  a.digest = {3, 4};
  StatRecord b = a;
  b.ino = 3;
  const std::string bytes = encode_stat_cache({a, b});
  ASSERT_EQ(bytes.size(), stat_cache_header + 2 * stat_record_size);
  EXPECT_EQ(bytes.substr(0, 8), "BLSTATS\n");
  EXPECT_EQ(decode_stat_cache(bytes), (std::vector<StatRecord>{a, b}));
  // One flipped digest byte: that record goes, the other stays.
  std::string flipped = bytes;
  flipped[stat_cache_header + 50] ^= 1;
  EXPECT_EQ(decode_stat_cache(flipped), std::vector<StatRecord>{b});
  // Wrong magic, version, count or length: nothing.
  for (std::size_t at : {0, 8, 12}) {
    std::string bad = bytes;
    bad[at] ^= 1;
    EXPECT_TRUE(decode_stat_cache(bad).empty()) << at;
  }
  EXPECT_TRUE(decode_stat_cache(bytes.substr(0, bytes.size() - 1)).empty());
  EXPECT_TRUE(decode_stat_cache("garbage").empty());
  // Out of order: nothing.
  EXPECT_TRUE(decode_stat_cache(encode_stat_cache({b, a})).empty());
}

TEST_F(InputsTest, AStatCacheFileOthersCouldWriteIsIgnored) {
  sh("printf 'content' >f && touch -d '2001-01-01' f");
  const struct stat st = stat_of(dir_ + "/f");
  {
    StatCache stats(dir_ + "/cache");
    stats.remember(st, later(), Digest128{9, 9});
    ASSERT_TRUE(stats.save());
    ASSERT_EQ(::chmod(stats.path().c_str(), 0666), 0);
  }
  StatCache stats(dir_ + "/cache");
  EXPECT_FALSE(stats.find(st));
}

// A file truncated while it is hashed through its mapping must not kill us
// (SIGBUS on the lost pages): the hash falls back to reading, or fails.
TEST_F(InputsTest, AFileTruncatedWhileHashedIsNoCrash) {
  const std::string f = dir_ + "/shrinking";
  const std::string block(1 << 20, 'x');
  for (int round = 0; round < 5; ++round) {
    {
      std::ofstream out(f, std::ios::binary | std::ios::trunc);
      for (int i = 0; i < 64; ++i)
        out << block;
    }
    std::thread cut([&] {
      ::usleep(static_cast<useconds_t>(200 * round));
      ::truncate(f.c_str(), 0);
    });
    StatCache stats(dir_ + "/cache");
    auto d = inputs_digest({f}, stats);
    cut.join();
    EXPECT_TRUE(std::holds_alternative<Digest128>(d) || std::holds_alternative<SysError>(d));
    EXPECT_FALSE(stats.dirty()); // changed under the read (or racy): no record
  }
}

// Pinned: a tree without .git, excludes or outputs inside keeps the digest
// entries were stored under before any of them existed.
TEST_F(InputsTest, ATreeWithoutGitKeepsItsDigest) {
  sh("mkdir -p t/s && printf a >t/a && printf b >t/s/b && chmod +x t/a && ln -s a t/l");
  EXPECT_EQ(digest({"t"}).hex(), "7ce6ce8addeede246e4824303e5ee63a");
  EXPECT_EQ(digest({"t"}, InputsRules{{}, {"elsewhere/out"}}).hex(), "7ce6ce8addeede246e4824303e5ee63a");
}

TEST_F(InputsTest, GitAtAnyDepthIsLeftOut) {
  sh("mkdir -p t/s && printf a >t/a && printf b >t/s/b");
  const Digest128 plain = digest({"t"});
  sh("mkdir -p t/.git/objects && printf x >t/.git/HEAD && printf 'gitdir: /x\n' >t/s/.git");
  EXPECT_EQ(digest({"t"}), plain);
  sh("printf y >t/.git/HEAD && rm t/s/.git && mkdir t/s/.git");
  EXPECT_EQ(digest({"t"}), plain);
  sh("printf g >t/.gitignore");
  EXPECT_NE(digest({"t"}), plain);
}

TEST_F(InputsTest, ExcludesLeaveOutAndArePartOfTheDigest) {
  sh("mkdir -p t/s t/build && printf a >t/a.c && printf o >t/s/a.o && printf b >t/build/x");
  const Digest128 none = digest({"t"});
  const InputsRules rules{{"*.o", "build/"}, {}};
  const Digest128 with = digest({"t"}, rules);
  EXPECT_NE(with, none);
  sh("printf changed >t/s/a.o && printf more >t/build/y && rm t/build/x");
  EXPECT_EQ(digest({"t"}, rules), with);
  // A set: order and repeats do not count.
  EXPECT_EQ(digest({"t"}, InputsRules{{"build/", "*.o", "*.o"}, {}}), with);
  sh("printf changed >t/a.c");
  EXPECT_NE(digest({"t"}, rules), with);
}

TEST_F(InputsTest, OutputsInsideADirectoryAreLeftOut) {
  sh("mkdir -p t && printf a >t/a.c");
  const InputsRules rules{{}, {dir_ + "/t/build", dir_ + "/elsewhere"}};
  const Digest128 before = digest({"t"}, rules);
  EXPECT_EQ(before, digest({"t"}));
  sh("mkdir -p t/build && printf o >t/build/o");
  EXPECT_EQ(digest({"t"}, rules), before);
  EXPECT_NE(digest({"t"}), before);
}

TEST_F(InputsTest, AWalkNamesTheFirstEntryThatChanged) {
  sh("mkdir -p t/s t/u && printf a >t/a && printf b >t/s/b && printf c >t/u/c");
  InputsTrail trail;
  InputsWalk first;
  first.record = &trail;
  const Digest128 before = digest({"t"}, {}, &first);
  ASSERT_TRUE(trail.complete());
  const auto first_new = [&] {
    InputsWalk again;
    again.since = &trail;
    digest({"t"}, {}, &again);
    return again.first_new;
  };
  EXPECT_EQ(first_new(), "");
  sh("printf B >t/s/b && printf C >t/u/c");
  EXPECT_EQ(first_new(), dir_ + "/t/s/b"); // names in byte order, an entry before its directory
  sh("printf b >t/s/b && printf c >t/u/c && printf n >t/u/new");
  EXPECT_EQ(first_new(), dir_ + "/t/u/new");
  sh("rm t/u/new t/u/c");
  EXPECT_EQ(first_new(), dir_ + "/t/u"); // removed: its directory
  sh("printf c >t/u/c");
  EXPECT_EQ(digest({"t"}, {}), before);
}
