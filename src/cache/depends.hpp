// Dependencies of an entry (--depends PATH, SPEC §15): what a path looks
// like now, and whether an entry's recorded paths still look so.
#pragma once

#include "cache/entry.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// Why `path` cannot name a dependency (empty, or holding a NUL); nullopt
// when it can.
std::optional<std::string> bad_depends_path(std::string_view path);

// PATH as stat(2) sees it now (symbolic links followed, like make); a path
// that does not exist (or cannot be examined) is recorded as absent.
DepStamp stamp_path(const std::string& path);

// The stamps of `paths`, in order.
std::vector<DepStamp> stamp_paths(const std::vector<std::string>& paths);

// Whether an entry recorded with `recorded` is out of date for a caller that
// names `wanted` (empty: the recorded paths are the ones to check): the lists
// of paths differ, or one of them differs from its record now. One stat(2)
// per recorded path, and none when the lists differ.
bool deps_out_of_date(const std::vector<DepStamp>& recorded, const std::vector<std::string>& wanted);

// The comparison itself, for the unit tests: `now` differs from `then` in
// existence, size, mtime, device or inode.
bool stamp_changed(const DepStamp& then, const DepStamp& now);

} // namespace bufferlock
