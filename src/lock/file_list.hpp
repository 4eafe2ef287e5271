// `bufferlock list` for the file backend (SPEC §14): every lock file in DIR
// that is held now, found through /proc/locks, so listing never takes,
// blocks on or disturbs a lock.
#pragma once

#include "lock/status_format.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// Whether `name` is a lock file's name: 32 lowercase hex digits, an
// optional ".SLOT", then ".lock". Pure.
bool is_lock_file_name(std::string_view name);

// Every held lock file of `dir`, by digest then slot, with what its holder
// recorded. A missing DIR lists nothing. On error, the message (no prefix)
// in `error`.
std::vector<ListedLock> list_file_locks(const std::string& dir, std::optional<std::string>& error);

} // namespace bufferlock
