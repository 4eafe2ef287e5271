// What `status` and `list` print (SPEC §9, §14): each found state rendered
// twice, as the text line people read and as the JSON document of --json
// (man page, JSON OUTPUT). The backends return data; only this renders it.
#pragma once

#include "lock/lock.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// " slots=2/3 ttl=3.000 pid=12 host=h since=1.250 fence=7": what is known, in
// that order; `now_ns` (CLOCK_REALTIME) gives since=.
std::string status_fields(const StatusInfo& info, std::int64_t now_ns);

// `status --json`: one object, newline-terminated.
std::string status_json(std::string_view key, LockState state, const LockPlace& place, const StatusInfo& info,
                        std::int64_t now_ns);

// One lock that `list` found held.
struct ListedLock {
  LockPlace place;
  std::string digest; // the MD5 of KEY, in the file or key name
  unsigned slot = 0;  // > 0: a slot file or key of --slots
  StatusInfo info;    // info.holder.key: KEY, when the holder recorded it
};

// `list`: one line per lock (KEY or "md5:DIGEST", " slot=I", status_fields).
std::string list_text(const std::vector<ListedLock>& locks, std::int64_t now_ns);

// `list --json`: {"locks": [...]}, newline-terminated.
std::string list_json(const std::vector<ListedLock>& locks, std::int64_t now_ns);

} // namespace bufferlock
