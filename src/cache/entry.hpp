// The on-disk format of a cache entry (format version 1), all integers
// little-endian:
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
// A file whose size, magic, version, key or checksums do not match is not an
// entry: a torn, truncated, corrupt or foreign file is a miss.
#pragma once

#include "util/duration.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

inline constexpr std::string_view entry_magic = "BLCACHE\n";
inline constexpr std::uint32_t entry_format_version = 1;
inline constexpr std::size_t entry_fixed_header = 32;
inline constexpr std::size_t entry_trailer = 16;

struct EntryHeader {
  std::int64_t created_ns = 0;
  std::uint64_t payload_len = 0;
  std::string key;

  std::uint64_t header_size() const { return entry_fixed_header + key.size(); }
  std::uint64_t file_size() const { return header_size() + payload_len + entry_trailer; }
};

// The header bytes [0, 32+K).
std::string encode_header(const EntryHeader& h);

// The size of the header (32 + K) that starts `bytes`; nullopt while `bytes`
// is shorter than the fixed part.
std::optional<std::uint64_t> encoded_header_size(std::string_view bytes);

// Parses the header at the start of `bytes` (which must hold at least the
// fixed part and the key); nullopt, with `why`, when it is not one of ours.
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
