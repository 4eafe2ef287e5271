// The stat cache (--depends): what a regular file held when it was last read,
// keyed by what stat(2) says of it, so that a hit does not read unchanged
// inputs again (ccache's and git's idea). One file per user in the cache
// directory, all integers little-endian:
//
//   offset  size  field
//   0       8     magic "BLSTATS\n"
//   8       4     format version (1)
//   12      4     record count R
//   16      72*R  records, sorted by (dev, ino), each:
//                   8 st_dev, 8 st_ino, 8 size, 8 mtime (ns), 8 ctime (ns),
//                   8 when it was recorded (ns, CLOCK_REALTIME, taken before
//                   the file was read), 16 XXH3-128 of the content (high,
//                   low), 8 XXH3-64 of the record's first 64 bytes
//
// A file that is not ours (another owner, writable by others, not a regular
// file, a symbolic link) or not of this shape is ignored; a record whose
// checksum does not match is ignored. Ignoring costs a re-read, never a
// wrong digest. The file is replaced whole by rename(2).
#pragma once

#include "util/checksum.hpp"
#include "util/duration.hpp"

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

struct StatRecord {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::int64_t recorded_ns = 0;
  Digest128 digest;

  bool operator==(const StatRecord&) const = default;
};

// A record for `st` (its digest and recorded_ns left to the caller).
StatRecord stat_record(const struct stat& st);

// Racily clean: a file changed within the file system's time granularity
// after it was recorded can keep every stat field the record has, so a
// record is trusted only when the file's mtime and ctime were older than
// that when the record was made.
inline constexpr Nanos racy_window{2'000'000'000}; // FAT's 2 s mtime, with room for coarse clocks
bool record_trusted(const StatRecord& r);

inline constexpr std::string_view stat_cache_magic = "BLSTATS\n";
inline constexpr std::uint32_t stat_cache_version = 1;
inline constexpr std::size_t stat_cache_header = 16;
inline constexpr std::size_t stat_record_size = 72;
// At most this many records are kept (the most recently recorded): the file
// is read on every --depends hit.
inline constexpr std::size_t stat_cache_max_records = 32768;

// The records of a stat cache file's bytes; those that cannot be trusted are
// left out, and a file not of the shape above gives none.
std::vector<StatRecord> decode_stat_cache(std::string_view bytes);
std::string encode_stat_cache(const std::vector<StatRecord>& sorted);

class StatCache {
public:
  // DIR/stat-cache.UID; nothing is read until the first find().
  explicit StatCache(std::string dir);

  // The digest recorded for a file that stat(2) shows as `st`, when the
  // record matches every field and is trusted.
  std::optional<Digest128> find(const struct stat& st);
  // Records the digest of a file read whole (`st`: its stat before and after
  // the read, which were equal; `began_ns`: the clock before the read).
  void remember(const struct stat& st, std::int64_t began_ns, const Digest128& digest);

  // Whether remember() added anything since the file was read.
  bool dirty() const { return !added_.empty(); }
  // Writes the merged records atomically (a temporary file renamed into
  // place) into the existing directory. Failure is harmless: false.
  bool save();

  const std::string& path() const { return path_; }

private:
  void load();

  std::string dir_;
  std::string path_;
  bool loaded_ = false;
  std::string raw_; // the file's bytes, when well formed; records sorted by (dev, ino)
  std::vector<StatRecord> added_;
};

} // namespace bufferlock
