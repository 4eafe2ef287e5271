// The inputs of an entry (--depends PATH, SPEC §15), by content: one
// XXH3-128 digest of every PATH in the order given, whatever their names,
// inodes or times. A PATH counts as:
//   a regular file (symbolic links to it followed): its bytes;
//   a directory: recursively, each entry's name, and for a regular file its
//     executable bit (owner's) and bytes, for a symbolic link its target
//     (links inside are not followed), for a directory its own digest, for
//     anything else (FIFO, socket, device) only that it is there; except
//     `.git` at any depth (what a checkout adds, different in every clone),
//     what --exclude leaves out, and the --output PATHs inside it (what the
//     build makes);
//   missing: missing;
//   anything else (a FIFO, a device): only that it is there (never opened).
// Regular files are read through the stat cache, which spares reading a file
// whose stat fields are the ones recorded with its digest.
#pragma once

#include "cache/manifest.hpp"
#include "cache/stat_cache.hpp"
#include "util/checksum.hpp"
#include "util/files.hpp"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace bufferlock {

// What the directories among the inputs leave out besides `.git`.
struct InputsRules {
  // --exclude PATTERNs (cache/exclude.hpp; valid ones). When there are any,
  // they are part of the digest: an entry made without them is another one.
  std::vector<std::string> excludes;
  // --output PATHs: one inside a directory among the inputs is left out of it.
  std::vector<std::string> outputs;
};

// What one walk of the inputs saw: a 64-bit hash of each entry's place and
// record, so that a later walk can tell the first entry that is new to it.
// Bounded: past max_entries it keeps nothing and is no longer complete.
class InputsTrail {
public:
  static constexpr std::size_t max_entries = std::size_t{1} << 21; // 16 MiB

  void add(std::uint64_t entry);
  bool has(std::uint64_t entry) const;
  bool complete() const { return complete_; }

private:
  // Sorted by the first has(): a hit, which never asks, pays no sort.
  mutable std::vector<std::uint64_t> seen_;
  mutable bool sorted_ = true;
  bool complete_ = true;
};

// The bookkeeping a walk may do besides the digest.
struct InputsWalk {
  InputsTrail* record = nullptr;      // filled: what this walk saw
  const InputsTrail* since = nullptr; // complete: compared with what this walk sees
  // With `since`: the first path this walk saw that `since` did not (an
  // entry before the directory holding it: a changed or added entry, or the
  // directory an entry was removed from); empty when there is none.
  std::string first_new;
  // Filled: each PATH's digest, and a directory's files (bounded), for
  // --explain (cache/manifest.hpp); from the records hashed anyway.
  Manifest* manifest = nullptr;
};

// The digest of `paths`; a SysError naming the path that could not be read
// (permissions, I/O error, a directory nested too deep).
std::variant<Digest128, SysError> inputs_digest(const std::vector<std::string>& paths, StatCache& stats,
                                                const InputsRules& rules = {}, InputsWalk* walk = nullptr);

// How many hex digits of the digest `cache --list` shows.
inline constexpr std::size_t short_inputs_digits = 12;

} // namespace bufferlock
