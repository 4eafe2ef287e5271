#include "cache/exclude.hpp"

#include <gtest/gtest.h>

using namespace bufferlock;

namespace {

Excludes of(std::initializer_list<std::string_view> patterns) {
  Excludes e;
  for (auto p : patterns) {
    EXPECT_FALSE(bad_exclude_pattern(p)) << p;
    e.add_pattern(p);
  }
  return e;
}

constexpr bool file = false;
constexpr bool dir = true;

} // namespace

TEST(Exclude, ANameWithoutSlashMatchesAtAnyDepth) {
  const auto e = of({"*.o"});
  EXPECT_TRUE(e.excludes("a.o", file));
  EXPECT_TRUE(e.excludes("src/deep/a.o", file));
  EXPECT_TRUE(e.excludes(".hidden.o", file)); // a leading dot is not special
  EXPECT_TRUE(e.excludes("x.o", dir));        // without a trailing slash: any type
  EXPECT_FALSE(e.excludes("a.c", file));
  EXPECT_FALSE(e.excludes("a.o.c", file));
  EXPECT_FALSE(e.excludes("a.o/b.c", file)); // the name is the last component only
}

TEST(Exclude, ATrailingSlashMatchesDirectoriesOnly) {
  const auto e = of({"build/"});
  EXPECT_TRUE(e.excludes("build", dir));
  EXPECT_TRUE(e.excludes("sub/build", dir));
  EXPECT_FALSE(e.excludes("build", file));
  EXPECT_FALSE(e.excludes("builder", dir));
}

TEST(Exclude, ASlashAnchorsToTheRoot) {
  const auto top = of({"/top-only"});
  EXPECT_TRUE(top.excludes("top-only", file));
  EXPECT_FALSE(top.excludes("sub/top-only", file));
  const auto c = of({"a/*.c"});
  EXPECT_TRUE(c.excludes("a/x.c", file));
  EXPECT_FALSE(c.excludes("b/a/x.c", file));
  EXPECT_FALSE(c.excludes("a/sub/x.c", file)); // '*' does not cross a slash (FNM_PATHNAME)
  const auto both = of({"/gen/"});
  EXPECT_TRUE(both.excludes("gen", dir));
  EXPECT_FALSE(both.excludes("gen", file));
  EXPECT_FALSE(both.excludes("x/gen", dir));
}

TEST(Exclude, DoubleStarMatchesAnyNumberOfComponents) {
  const auto lead = of({"**/node_modules"});
  EXPECT_TRUE(lead.excludes("node_modules", dir));
  EXPECT_TRUE(lead.excludes("a/b/node_modules", dir));
  EXPECT_FALSE(lead.excludes("a/node_modules2", dir));
  const auto mid = of({"a/**/b"});
  EXPECT_TRUE(mid.excludes("a/b", file));
  EXPECT_TRUE(mid.excludes("a/x/b", file));
  EXPECT_TRUE(mid.excludes("a/x/y/b", file));
  EXPECT_FALSE(mid.excludes("x/a/b", file));
  EXPECT_FALSE(mid.excludes("a/x/b/c", file));
  const auto tail = of({"logs/**"});
  EXPECT_TRUE(tail.excludes("logs/a", file));
  EXPECT_TRUE(tail.excludes("logs/a/b", file));
  EXPECT_FALSE(tail.excludes("logs", dir)); // what is inside, not the directory
  const auto many = of({"**/**/**/x"});
  EXPECT_TRUE(many.excludes("x", file));
  EXPECT_TRUE(many.excludes("a/b/c/d/x", file));
}

TEST(Exclude, GlobsOfAComponentAreFnmatchs) {
  const auto e = of({"file?.[ch]", "[!a]*.tmp", "\\*literal"});
  EXPECT_TRUE(e.excludes("file1.c", file));
  EXPECT_TRUE(e.excludes("d/fileX.h", file));
  EXPECT_FALSE(e.excludes("file12.c", file));
  EXPECT_TRUE(e.excludes("b.tmp", file));
  EXPECT_FALSE(e.excludes("a.tmp", file));
  EXPECT_TRUE(e.excludes("*literal", file));
  EXPECT_FALSE(e.excludes("xliteral", file));
}

TEST(Exclude, NothingExcludesNothing) {
  const Excludes e;
  EXPECT_TRUE(e.empty());
  EXPECT_FALSE(e.excludes("a", file));
}

TEST(Exclude, APathIsExactlyThatEntry) {
  Excludes e;
  e.add_path("build/out*");
  EXPECT_TRUE(e.excludes("build/out*", file));
  EXPECT_TRUE(e.excludes("build/out*", dir));
  EXPECT_FALSE(e.excludes("build/output", file)); // no glob
  EXPECT_FALSE(e.excludes("x/build/out*", file));
  EXPECT_FALSE(e.excludes("build", dir));
}

TEST(Exclude, BadPatterns) {
  EXPECT_TRUE(bad_exclude_pattern(""));
  EXPECT_TRUE(bad_exclude_pattern(std::string_view("a\0b", 3)));
  EXPECT_TRUE(bad_exclude_pattern("!keep"));
  EXPECT_TRUE(bad_exclude_pattern("/"));
  EXPECT_TRUE(bad_exclude_pattern("//"));
  EXPECT_TRUE(bad_exclude_pattern("./build"));
  EXPECT_TRUE(bad_exclude_pattern("a/../b"));
  EXPECT_TRUE(bad_exclude_pattern("trailing\\"));
  EXPECT_FALSE(bad_exclude_pattern("\\!bang"));
  EXPECT_FALSE(bad_exclude_pattern("a//b"));
  EXPECT_FALSE(bad_exclude_pattern(".git"));
}

TEST(Exclude, PathInsideNormalisesByWords) {
  EXPECT_EQ(path_inside(".", "build", "/w/p"), "build");
  EXPECT_EQ(path_inside("./", "./build/", "/w/p"), "build");
  EXPECT_EQ(path_inside("/w/p", "build/x", "/w/p"), "build/x");
  EXPECT_EQ(path_inside("src", "/w/p/src/gen.h", "/w/p"), "gen.h");
  EXPECT_EQ(path_inside("..", "out", "/w/p"), "p/out");
  EXPECT_EQ(path_inside("a/../b", "b//c/./d", "/w"), "c/d");
  EXPECT_EQ(path_inside("/", "/x", "/w"), "x");
  EXPECT_FALSE(path_inside(".", ".", "/w/p"));        // the root itself is not inside
  EXPECT_FALSE(path_inside("src", "srcx/a", "/w/p")); // a prefix of a name is not a directory
  EXPECT_FALSE(path_inside("src", "../p2/src/a", "/w/p"));
  EXPECT_FALSE(path_inside("src/a", "src", "/w/p"));
}
