// The on-disk format of a cache entry, all integers little-endian. Format
// version 1 (an entry with neither stored stderr nor dependencies; what a
// plain build writes, so older binaries keep reading it):
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
// A file whose size, magic, version, key or checksums do not match is not an
// entry: a torn, truncated, corrupt or foreign file is a miss.
#pragma once

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
inline constexpr std::size_t entry_fixed_header = 32;
inline constexpr std::size_t entry_fixed_header_2 = 48;
inline constexpr std::size_t entry_dep_fixed = 40;
inline constexpr std::size_t entry_trailer = 16;

// What a dependency (--depends PATH) looked like when the build started.
struct DepStamp {
  std::string path;
  bool exists = false;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;

  bool operator==(const DepStamp&) const = default;
};

struct EntryHeader {
  std::int64_t created_ns = 0;
  std::uint64_t payload_len = 0; // stdout
  std::string key;
  std::uint64_t stderr_len = 0;
  std::vector<DepStamp> deps;
  std::uint32_t version = entry_format_version; // 2 with stderr or dependencies

  std::uint64_t header_size() const;
  std::uint64_t body_len() const { return payload_len + stderr_len; } // what the payload checksum covers
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
