// The on-disk format of a cache entry, all integers little-endian. Format
// version 1 (an entry with neither stored stderr nor dependencies; what a
// plain build of earlier versions wrote, still read):
//
//   offset  size  field
//   0       8     magic "BLCACHE\n"
//   8       4     format version (1)
//   12      4     key length K
//   16      8     creation time: ns since the epoch when the build started
//   24      8     payload length N
//   32      K     the full KEY (compared on lookup: an MD5 collision is a miss)
//   32+K    N     the payload: the command's stdout, byte for byte
//   32+K+N  8     XXH3-64 of the payload
//   40+K+N  8     XXH3-64 of bytes [0, 32+K) (the header)
//
// Format version 2 (--keep-stderr or --depends), header of H bytes:
//
//   0       8     magic "BLCACHE\n"
//   8       4     format version (2)
//   12      4     key length K
//   16      8     creation time (ns)
//   24      8     stdout length N
//   32      8     stderr length E
//   40      4     header length H
//   44      4     dependency count D
//   48      K     the full KEY
//   48+K          D dependency records, each 40+L bytes:
//                   4 path length L, 4 flags (bit 0: the path existed),
//                   8 size, 8 mtime (ns since the epoch), 8 st_dev, 8 st_ino,
//                   L bytes of path
//   H       N     stdout
//   H+N     E     stderr
//   H+N+E   8     XXH3-64 of bytes [H, H+N+E) (stdout then stderr)
//   H+N+E+8 8     XXH3-64 of bytes [0, H)
//
// Format version 3 (--depends: an entry of one input state), header of H bytes:
//
//   0       8     magic "BLCACHE\n"
//   8       4     format version (3)
//   12      4     key length K
//   16      8     creation time (ns)
//   24      8     stdout length N
//   32      8     stderr length E
//   40      4     header length H
//   44      4     flags: bit 0, the inputs digest is set; other bits unknown
//                 to this version make the entry unreadable to it
//   48      16    XXH3-128 of the inputs (cache/inputs.hpp), high then low
//                 half; zero without bit 0
//   64      4     section count S
//   68      4     reserved (0)
//   72      K     the full KEY
//   72+K          S sections, each 8+L bytes: 4 type, 4 length L, L bytes.
//                 A reader skips a section whose type it does not know,
//                 unless bit 31 of the type says it must understand it
//                 (then the entry is unreadable to it). Later versions add
//                 sections rather than versions.
//   H ...         stdout, stderr and the trailer, as in version 2; with an
//                 outputs section, the outputs archive follows stderr
//                 (and the payload checksum covers it too)
//
// Section types:
//   1|bit 31      outputs (--output): 8 archive length A, 4 count P, then P
//                 paths, each 4 length L and L bytes (the PATHs as given).
//                 The archive is a pax tar, zstd-compressed, whose members
//                 are named "I" and "I/..." for the I-th PATH (from 0).
//   2             signature (--sign-key): 32 bytes, the HMAC-SHA256 of the
//                 entry (cache/sign.hpp). Not required: a reader without a
//                 key serves the entry as if unsigned; one with a key serves
//                 only entries whose tag it computes.
//   3 (|bit 31)   compression (--compress; the Redis store always): 4 flags
//                 (bit 0: stdout, bit 1: stderr are stored in zstd blocks,
//                 cache/compress.hpp), 8 raw stdout length, 8 raw stderr
//                 length. The stored lengths N and E are those of the blocks.
//                 Written by every compressing build; required (bit 31) only
//                 when a flag is set, so an entry whose data stayed raw is
//                 read by versions that know no compression.
//   4             build time: 8 bytes, how long the build took (ns, from its
//                 start to its publication). Written by every build (so a
//                 build's entry is version 3), not required: an entry
//                 without it (older versions) counts a build time of 0 in
//                 `cache --stats`.
//   5             manifest (cache/manifest.hpp): the builder's hostname and,
//                 for each --depends PATH as given, its kind and content
//                 digest, and for a directory the relative names and
//                 XXH3-64s of its files, so that --explain can name what
//                 differs. Bounded: the file lists take at most 64 KiB
//                 together; a directory past that keeps only its digest
//                 (flagged truncated). Written on every version 3 entry
//                 (with no PATHs without --depends); not required.
//
// An entry is addressed by KEY and its inputs, with its --output list folded
// in (entry_address; the stores name entries by that address): a version 1
// or 2 entry has no inputs digest, and a version 2 entry that lists
// dependencies (stamps of size, mtime, device and inode, which a content
// digest cannot be compared with) is served to nobody.
//
// A file whose size, magic, version, key or checksums do not match is not an
// entry: a torn, truncated, corrupt or foreign file is a miss.
#pragma once

#include "util/checksum.hpp"
#include "util/duration.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

inline constexpr std::string_view entry_magic = "BLCACHE\n";
inline constexpr std::uint32_t entry_format_version = 1;
inline constexpr std::uint32_t entry_format_version_2 = 2;
inline constexpr std::uint32_t entry_format_version_3 = 3;
inline constexpr std::size_t entry_fixed_header = 32;
inline constexpr std::size_t entry_fixed_header_2 = 48;
inline constexpr std::size_t entry_fixed_header_3 = 72;
inline constexpr std::uint32_t entry_flag_inputs = 1;
inline constexpr std::uint32_t entry_section_required = 0x80000000U;
inline constexpr std::uint32_t entry_section_outputs = 1 | entry_section_required;
inline constexpr std::uint32_t entry_section_signature = 2;
inline constexpr std::uint32_t entry_section_compression = 3;
inline constexpr std::uint32_t entry_section_build_time = 4;
inline constexpr std::uint32_t entry_compressed_stdout = 1;
inline constexpr std::uint32_t entry_compressed_stderr = 2;
inline constexpr std::size_t entry_dep_fixed = 40;
inline constexpr std::size_t entry_trailer = 16;

// A version 2 dependency record: what a --depends PATH looked like (read,
// never written: such an entry cannot be compared with inputs by content).
struct DepStamp {
  std::string path;
  bool exists = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;

  bool operator==(const DepStamp&) const = default;
};

// The inputs of an entry: the digest of its --depends, nullopt without.
using Inputs = std::optional<Digest128>;

// Where an entry is filed besides its KEY (the stores' names for it): the
// inputs, with the --output PATHs (as given, in order) folded in when there
// are any, so that callers of one KEY with other --output lists keep
// entries of their own. Without outputs it is `inputs` itself: the address
// entries had before outputs were part of it. The header keeps the inputs
// and the outputs apart, so the address is computed, never stored.
Inputs entry_address(const Inputs& inputs, const std::vector<std::string>& outputs);

// The least version that holds an entry with `inputs` and, or not, stderr
// and outputs; a signed or compressed entry needs version 3 too. (A build
// writes version 3 always: its build time is a section.)
std::uint32_t entry_version_for(const Inputs& inputs, bool keep_stderr, bool outputs = false,
                                bool sign_or_compress = false);

// A version 3 section of a type this version does not know (the outputs
// section is decoded into EntryHeader's fields).
struct EntrySection {
  std::uint32_t type = 0;
  std::string bytes;

  bool operator==(const EntrySection&) const = default;
};

struct EntryHeader {
  std::int64_t created_ns = 0;
  std::uint64_t payload_len = 0; // stdout
  std::string key;
  std::uint64_t stderr_len = 0;
  std::vector<DepStamp> deps;          // version 2 only
  Inputs inputs;                       // version 3 only
  std::vector<EntrySection> sections;  // version 3 only: unknown sections, kept
  std::vector<std::string> outputs;    // version 3 only: the --output PATHs
  std::uint64_t outputs_len = 0;       // the archive's length (with outputs)
  std::string signature;               // version 3 only: the tag (32 bytes), empty when unsigned
  bool compression = false;            // version 3 only: with a compression section
  std::uint32_t compressed = 0;        // entry_compressed_*: parts stored in zstd blocks
  std::uint64_t raw_stdout_len = 0;    // with compression: stdout as served
  std::uint64_t raw_stderr_len = 0;
  bool timed = false;                  // version 3 only: with a build time section
  std::uint64_t build_ns = 0;          // with it: how long the build took
  std::uint32_t version = entry_format_version; // 2 with stderr, 3 with inputs

  // Whether this entry is the one of `inputs` (nullopt: no --depends).
  bool has_inputs(const Inputs& wanted) const {
    return inputs == wanted && deps.empty();
  }
  // Where it is filed (entry_address of its inputs and outputs).
  Inputs address() const { return entry_address(inputs, outputs); }
  // Whether it is the entry filed at `wanted` (an address).
  bool filed_at(const Inputs& wanted) const { return address() == wanted && deps.empty(); }

  std::uint64_t header_size() const;
  // The size of stdout as served (payload_len is the stored size).
  std::uint64_t stdout_size() const {
    return (compressed & entry_compressed_stdout) != 0 ? raw_stdout_len : payload_len;
  }
  // What the payload checksum covers: stdout, stderr, the outputs archive.
  std::uint64_t body_len() const { return payload_len + stderr_len + outputs_len; }
  std::uint64_t outputs_offset() const { return header_size() + payload_len + stderr_len; }
  std::uint64_t file_size() const { return header_size() + body_len() + entry_trailer; }
};

// The header bytes [0, header_size()).
std::string encode_header(const EntryHeader& h);

// The size of the header that starts `bytes`; nullopt while `bytes` is
// shorter than the fixed part of its version.
std::optional<std::uint64_t> encoded_header_size(std::string_view bytes);

// Parses the header at the start of `bytes` (which must hold at least the
// whole header); nullopt, with `why`, when it is not one of ours.
std::optional<EntryHeader> decode_header(std::string_view bytes, std::string& why);

// The trailer: payload checksum, then header checksum.
std::string encode_trailer(std::uint64_t payload_hash, std::uint64_t header_hash);
void decode_trailer(std::string_view bytes, std::uint64_t& payload_hash, std::uint64_t& header_hash);

enum class Freshness { fresh, stale, expired };

// How an entry created at `created_ns` counts at `now_ns`: fresh while its age
// is at most max_age (always, without max_age), stale for `stale` more, then
// expired. An entry from the future (clock set back) is fresh.
Freshness freshness(std::int64_t created_ns, std::int64_t now_ns, std::optional<Nanos> max_age,
                    std::optional<Nanos> stale);

} // namespace bufferlock
