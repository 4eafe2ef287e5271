#include "cache/inputs.hpp"
#include "cache/manifest.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>

using namespace bufferlock;

namespace {

ManifestPath dir(std::string path, std::vector<ManifestFile> files, std::uint64_t d = 1) {
  return {std::move(path), 'D', Digest128{d, d}, false, std::move(files), {}};
}

ManifestPath file(std::string path, std::uint64_t d) { return {std::move(path), 'F', Digest128{d, 0}, false, {}, {}}; }

Manifest with(std::vector<ManifestPath> paths) {
  Manifest m;
  m.paths = std::move(paths);
  return m;
}

// A directory of `count` files named as the walk reads them, in `m`'s last PATH.
void walk_files(Manifest& m, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i)
    names.push_back("name-" + std::to_string(i));
  const std::size_t d = m.begin_dir(names);
  for (int i = 0; i < count; ++i)
    m.file(d, static_cast<std::size_t>(i), static_cast<std::uint64_t>(i));
  m.end_dir(d, names);
}

} // namespace

TEST(Manifest, EncodesAndDecodesWhole) {
  Manifest m;
  m.host = "builder-1";
  m.paths = {dir("src", {{"a.c", 1}, {"sub/b.c", 2}}), file("config.h", 7), {"gone", 'M', {}, false, {}, {}}};
  const auto back = decode_manifest(encode_manifest(m));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->host, "builder-1");
  EXPECT_EQ(back->paths, m.paths);
}

TEST(Manifest, MalformedBytesAreNoManifest) {
  Manifest m;
  m.paths = {dir("src", {{"a.c", 1}})};
  const std::string bytes = encode_manifest(m);
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(decode_manifest(bytes.substr(0, n))) << n;
  EXPECT_FALSE(decode_manifest(bytes + "x"));
  std::string flagged = bytes;
  flagged[0] = 1; // flags of a later version
  EXPECT_FALSE(decode_manifest(flagged));
}

TEST(Manifest, IsReadFromItsSectionAndAbsentFromOlderEntries) {
  EntryHeader h;
  EXPECT_FALSE(manifest_of(h));
  Manifest m;
  m.host = "h";
  h.sections.push_back({entry_section_manifest, encode_manifest(m)});
  ASSERT_TRUE(manifest_of(h));
  EXPECT_EQ(manifest_of(h)->host, "h");
}

TEST(Manifest, FileListsAreBounded) {
  Manifest m;
  m.paths.push_back({"big", 'D', Digest128{1, 2}, false, {}, {}});
  walk_files(m, 10000);
  EXPECT_TRUE(m.paths.back().truncated);
  EXPECT_TRUE(m.paths.back().walked.empty()); // nothing kept past the bound
  // A later directory still fits: the truncated one takes no room.
  m.paths.push_back({"small", 'D', Digest128{3, 4}, false, {}, {}});
  walk_files(m, 2);
  const std::string bytes = encode_manifest(m);
  EXPECT_LE(bytes.size(), manifest_bound);
  const auto back = decode_manifest(bytes);
  ASSERT_TRUE(back);
  EXPECT_TRUE(back->paths[0].truncated);
  EXPECT_EQ(back->paths[0].digest, (Digest128{1, 2}));
  EXPECT_EQ(back->paths[1].files, (std::vector<ManifestFile>{{"name-0", 0}, {"name-1", 1}}));
  // The encoder keeps the bound too, whatever it is given.
  Manifest wide;
  std::vector<ManifestFile> many;
  for (int i = 0; i < 10000; ++i)
    many.push_back({"name-" + std::to_string(i), 0});
  wide.paths = {dir("a", many), dir("b", {{"x", 1}})};
  const auto kept = decode_manifest(encode_manifest(wide));
  ASSERT_TRUE(kept);
  EXPECT_TRUE(kept->paths[0].truncated);
  EXPECT_FALSE(kept->paths[1].truncated);
}

TEST(Manifest, DiffNamesPathsAndFiles) {
  Manifest was, now;
  was.paths = {dir("src", {{"a.c", 1}, {"b.c", 2}, {"d.c", 4}}, 1), file("config.h", 5), file("old", 6)};
  now.paths = {dir("src", {{"a.c", 9}, {"c.c", 3}, {"d.c", 4}, {"e.c", 5}}, 2), file("config.h", 5),
               file("new", 8)};
  EXPECT_EQ(manifest_diff(was, now),
            "src: changed a.c, removed b.c, added c.c, +1 more; new: not a dependency then; old: no longer a "
            "dependency");
  EXPECT_EQ(manifest_diff(was, now, 10), "src: changed a.c, removed b.c, added c.c, added e.c; new: not a "
                                          "dependency then; old: no longer a dependency");
  EXPECT_EQ(manifest_diff(was, was), "");
  Manifest missing;
  missing.paths = {{"src", 'M', {}, false, {}, {}}};
  EXPECT_EQ(manifest_diff(missing, with({dir("src", {})})), "src: was missing");
  EXPECT_EQ(manifest_diff(with({dir("src", {})}), missing), "src: missing now");
  // Same files, another digest (an empty directory added): changed.
  EXPECT_EQ(manifest_diff(with({dir("src", {}, 1)}), with({dir("src", {}, 2)})), "src: changed");
  Manifest cut = now;
  cut.paths[0].truncated = true;
  cut.paths[0].files = {};
  EXPECT_EQ(manifest_diff(was, cut, 3).substr(0, 44), "src: changed (too many files to name them); ");
}

TEST(Manifest, TheInputsWalkCollectsItWithoutChangingTheDigest) {
  char tmpl[] = "/tmp/bufferlock-manifest-XXXXXX";
  const std::string d = ::mkdtemp(tmpl);
  ASSERT_EQ(std::system(("cd " + d + " && mkdir -p t/a cache && printf x >t/a.c && printf y >t/a/x && "
                         "ln -s a.c t/l && printf z >f")
                            .c_str()),
            0);
  StatCache stats(d + "/cache");
  const std::vector<std::string> paths{d + "/t", d + "/f", d + "/none"};
  const auto plain = inputs_digest(paths, stats);
  Manifest m;
  InputsWalk walk;
  walk.manifest = &m;
  const auto with = inputs_digest(paths, stats, {}, &walk);
  ASSERT_TRUE(std::holds_alternative<Digest128>(plain));
  EXPECT_EQ(std::get<Digest128>(with), std::get<Digest128>(plain));
  ASSERT_EQ(m.paths.size(), 3u);
  EXPECT_EQ(m.paths[0].kind, 'D');
  EXPECT_TRUE(m.paths[0].files.empty()); // named only when needed
  m.settle();
  std::vector<std::string> names;
  for (const auto& f : m.paths[0].files)
    names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a/x", "a.c", "l"})); // the walk's order, directories left out
  EXPECT_TRUE(manifest_before("a/x", "a.c"));
  EXPECT_FALSE(manifest_before("a.c", "a/x"));
  EXPECT_EQ(m.paths[1].kind, 'F');
  EXPECT_NE(m.paths[1].digest, Digest128{});
  EXPECT_EQ(m.paths[2].kind, 'M');
  // A changed file shows in its record.
  ASSERT_EQ(std::system(("printf X >" + d + "/t/a/x").c_str()), 0);
  Manifest again;
  walk.manifest = &again;
  inputs_digest(paths, stats, {}, &walk);
  again.settle();
  EXPECT_EQ(manifest_diff(m, again), d + "/t: changed a/x");
  std::system(("rm -rf " + d).c_str());
}
