// The inputs of an entry (--depends PATH, SPEC §15), by content: one
// XXH3-128 digest of every PATH in the order given, whatever their names,
// inodes or times. A PATH counts as:
//   a regular file (symbolic links to it followed): its bytes;
//   a directory: recursively, each entry's name, and for a regular file its
//     executable bit (owner's) and bytes, for a symbolic link its target
//     (links inside are not followed), for a directory its own digest, for
//     anything else (FIFO, socket, device) only that it is there;
//   missing: missing;
//   anything else (a FIFO, a device): only that it is there (never opened).
// Regular files are read through the stat cache, which spares reading a file
// whose stat fields are the ones recorded with its digest.
#pragma once

#include "cache/stat_cache.hpp"
#include "util/checksum.hpp"
#include "util/files.hpp"

#include <string>
#include <variant>
#include <vector>

namespace bufferlock {

// The digest of `paths`; a SysError naming the path that could not be read
// (permissions, I/O error, a directory nested too deep).
std::variant<Digest128, SysError> inputs_digest(const std::vector<std::string>& paths, StatCache& stats);

// How many hex digits of the digest `cache --list` shows.
inline constexpr std::size_t short_inputs_digits = 12;

} // namespace bufferlock
