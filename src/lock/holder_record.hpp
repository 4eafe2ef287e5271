// What a holder writes about itself, and the fence counter (SPEC §14). Both
// backends report holders as HolderInfo; the file backend keeps a record of
// it in the lock file itself (holder_record.cpp), the Redis backend in its
// own keys. Pure encoding and formatting, for the unit tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// What is known of one holder; every field may be unknown (flock(1) records
// nothing, a shared holder no fence, only Redis knows a host).
struct HolderInfo {
  std::vector<pid_t> pids;              // from the system (/proc/locks) or the record
  std::string host;                     // redis
  std::optional<std::int64_t> since_ns; // CLOCK_REALTIME when it was taken
  std::optional<std::uint64_t> fence;
  std::optional<std::string> key; // as the holder gave it, when recorded
};

// The record an exclusive file-lock holder writes at offset 0 of its lock
// file, in one pwrite:
//   "bufferlock-holder 1 fence=F pid=P since=SEC.NSEC keylen=L\n" KEY "\n"
// Readers take the header and exactly L key bytes, so whatever a longer
// earlier record left behind is ignored. flock(1) never reads lock files.
struct HolderRecord {
  std::uint64_t fence = 0;
  pid_t pid = 0;
  std::int64_t since_ns = 0;
  std::string key;
};

// Enough bytes to hold any header line: what acquire reads for the fence.
inline constexpr std::size_t record_header_max = 128;

std::string encode_record(const HolderRecord& r);

// The record at the start of `text`; nullopt for an empty file, flock(1)'s
// untouched file, another program's content or a torn record. With
// `header_only`, the key is not required (text holds only the first bytes).
std::optional<HolderRecord> decode_record(std::string_view text, bool header_only = false);

// The length of the key that a header announces (to read the rest), or 0.
std::size_t record_total_size(std::string_view header);

// The fence that follows the one recorded in `header` (1 when none is).
std::uint64_t next_fence(std::string_view header);

// " pid=12 since=3.250 fence=7" (host=, pids joined by commas): the fields
// that `status`, `list` and a busy -v show; `now_ns` is CLOCK_REALTIME.
std::string holder_fields(const HolderInfo& h, std::int64_t now_ns);

} // namespace bufferlock
