// The entry file (cache/entry.hpp's bytes in one local file): verified in
// one pass (size, header, key, checksums, signature), then served, the
// stdout and stderr it stores zero-copy or decompressed block by block.
// Every store hands its hits over as such a file.
#pragma once

#include "cache/entry.hpp"
#include "cache/sign.hpp"
#include "util/fd.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace bufferlock {

class StagedOutputs;

// One pread covers most entries whole.
inline constexpr std::size_t entry_small_read = 65536;

// An entry file, open and verified.
struct CachedEntry {
  UniqueFd fd;
  EntryHeader header;
  std::string bytes; // the whole file, when verifying it took one read; else empty
  // Its --output PATHs extracted while it was read (lookup_to_restore),
  // ready to be put in place; null: restored from the entry file.
  std::shared_ptr<StagedOutputs> staged = nullptr;
  // Its last use as its store recorded it (SPEC §22), where the store tells
  // it on a lookup (Redis: the hash's "u"); nullopt: never hit, or not told.
  std::optional<std::int64_t> last_used_ns = std::nullopt;
};

// Reads the start of an entry file of `size` bytes into `head`: one read of
// up to entry_small_read bytes (for most entries, the whole file), and a
// second one when the header is longer than that (a long key or many
// dependencies). False when it cannot be read.
bool read_entry_head(int fd, std::uint64_t size, std::string& head);

// Verifies an open entry file: size, header, key (when `key` is given), and
// both checksums. nullopt, with `why`, when it is not a sound entry.
// With `whole_file`, a file small enough to be read at once is left there.
// With `signer`, its tag is checked too, in the same pass over the body.
std::optional<EntryHeader> verify_entry(int fd, const std::string* key, std::string& why,
                                        std::string* whole_file = nullptr,
                                        const EntrySigner* signer = nullptr);

// Writes the stored stdout of an entry to `out_fd`, zero-copy (sendfile)
// where the kernel can, decompressed block by block when it is compressed.
// False when `out_fd` stopped taking data (a closed pipe) or a block is bad.
bool serve_entry(const CachedEntry& e, int out_fd);

// The same for the stored stderr (--keep-stderr); nothing when there is none.
bool serve_entry_stderr(const CachedEntry& e, int err_fd);

} // namespace bufferlock
