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

// A directory as the walk read it, kept as it was read (its names moved
// in, not copied: a hit, which never needs the list, pays next to nothing
// for it); made into ManifestPath::files only when needed (settle).
struct WalkedDir {
  static constexpr std::int32_t unlisted = -2; // left out, or gone meanwhile
  static constexpr std::int32_t file = -1;     // listed, with its digest
  std::vector<std::string> names;              // its entries, in the walk's order
  std::vector<std::int32_t> kinds;             // each: unlisted, file, or the WalkedDir of a subdirectory
  std::vector<std::uint64_t> digests;          // a file's

  bool operator==(const WalkedDir&) const = default;
};

// One --depends PATH as given.
struct ManifestPath {
  std::string path;
  char kind = 'M';                 // 'F' file, 'D' directory, 'M' missing, 'O' other
  Digest128 digest{};              // F and D: the content digest the inputs fold in
  bool truncated = false;          // D: its files were past the bound, not listed
  std::vector<ManifestFile> files; // D: in the walk's order (manifest_before), once settled
  std::vector<WalkedDir> walked;   // D, while collected: the first is the PATH's own

  bool operator==(const ManifestPath&) const = default;
};

struct Manifest {
  std::string host; // the builder's hostname
  std::vector<ManifestPath> paths;

  // While collected, for the last PATH: a directory of `names` (sorted)
  // begins; its index for the calls below, or npos when its PATH lists no
  // files (past the bound).
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t begin_dir(const std::vector<std::string>& names);
  // Its entry `slot` is a file with `digest`, or a directory: the next to
  // begin. (Inline: called for every file of every walk.)
  void file(std::size_t dir, std::size_t slot, std::uint64_t digest) {
    if (dir == npos || paths.back().truncated) return;
    WalkedDir& d = paths.back().walked[dir];
    d.kinds[slot] = WalkedDir::file;
    d.digests[slot] = digest;
  }
  void subdir(std::size_t dir, std::size_t slot);
  // It ends: its names are kept (moved from `names`).
  void end_dir(std::size_t dir, std::vector<std::string>& names);
  // Makes each PATH's walked directories its list of files, within the bound.
  void settle();

private:
  std::size_t walked_bytes_ = 0; // of the last PATH's names so far
};

// The walk's order of names below a PATH: each directory's entries by the
// bytes of their names, a subdirectory's files where its name falls ("a/x"
// before "a.c"): '/' before every other byte.
bool manifest_before(std::string_view a, std::string_view b);

// Section 5's bytes: 4 flags (0), 2 host length, the host, 4 path count,
// then each path: 4 length and the PATH, 1 kind, 1 flags (bit 0:
// truncated), 16 digest (high, low), 4 file count, then each file: 2 name
// length, the name, 8 digest. File lists past manifest_bound are dropped.
std::string encode_manifest(Manifest m); // settled first
// nullopt when the bytes are no manifest of this version.
std::optional<Manifest> decode_manifest(std::string_view bytes);
// The manifest an entry records (nullopt: none, or unreadable).
std::optional<Manifest> manifest_of(const EntryHeader& h);

// The paths of `now` (settled) that differ from `was`, for a miss line: "src
// (changed a.c, added b.c, +4 more), config.h (was missing)", at most
// `shown` files named per directory. Empty when no path can be named.
std::string manifest_diff(const Manifest& was, const Manifest& now, std::size_t shown = 3);

} // namespace bufferlock
