// What an entry's inputs were, path by path (entry section 5,
// cache/entry.hpp), so that a later miss can say which --depends PATH
// differs and, in a directory, which files were added, removed or changed
// (--explain, SPEC §21). Collected by the one walk that computes the inputs
// digest (cache/inputs.hpp): no file is read for it.
#pragma once

#include "cache/entry.hpp"
#include "util/checksum.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

inline constexpr std::uint32_t entry_section_manifest = 5;

// The bound of a section: its file lists together take at most this many
// bytes. A directory whose list would pass it keeps only its digest and is
// marked truncated (the host and the per-path records are always kept).
inline constexpr std::size_t manifest_bound = 64 * 1024;

// A file, link or other non-directory entry inside a directory PATH: its
// name relative to PATH ("sub/a.c") and an XXH3-64 of its record as the
// directory digest folds it in (name, kind, mode bit, content digest),
// seeded with its place below PATH.
struct ManifestFile {
  std::string name;
  std::uint64_t digest = 0;

  bool operator==(const ManifestFile&) const = default;
};

// One --depends PATH as given.
struct ManifestPath {
  std::string path;
  char kind = 'M';                 // 'F' file, 'D' directory, 'M' missing, 'O' other
  Digest128 digest{};              // F and D: the content digest the inputs fold in
  bool truncated = false;          // D: its files were past the bound, not listed
  std::vector<ManifestFile> files; // D: in the walk's order (manifest_before)

  bool operator==(const ManifestPath&) const = default;
};

struct Manifest {
  std::string host; // the builder's hostname
  std::vector<ManifestPath> paths;
  std::size_t listed = 0; // while collected: the bytes of file lists kept so far

  // While collected: the file `name` of the directory being walked.
  void add_file(std::string name, std::uint64_t digest);
  // Whether that directory still lists its files (none past the bound).
  bool listing() const { return !paths.empty() && !paths.back().truncated; }
};

// The walk's order of names below a PATH: each directory's entries by the
// bytes of their names, a subdirectory's files where its name falls ("a/x"
// before "a.c"): '/' before every other byte.
bool manifest_before(std::string_view a, std::string_view b);

// Section 5's bytes: 4 flags (0), 2 host length, the host, 4 path count,
// then each path: 4 length and the PATH, 1 kind, 1 flags (bit 0:
// truncated), 16 digest (high, low), 4 file count, then each file: 2 name
// length, the name, 8 digest. File lists past manifest_bound are dropped.
std::string encode_manifest(Manifest m);
// nullopt when the bytes are no manifest of this version.
std::optional<Manifest> decode_manifest(std::string_view bytes);
// The manifest an entry records (nullopt: none, or unreadable).
std::optional<Manifest> manifest_of(const EntryHeader& h);

// The paths of `now` that differ from `was`, for a miss line: "src
// (changed a.c, added b.c, +4 more), config.h (was missing)", at most
// `shown` files named per directory. Empty when no path can be named.
std::string manifest_diff(const Manifest& was, const Manifest& now, std::size_t shown = 3);

} // namespace bufferlock
