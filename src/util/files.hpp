// Directories and system errors, with failures returned as values.
#pragma once

#include "util/fd.hpp"

#include <sys/types.h>

#include <cstdint>

#include <optional>
#include <string>
#include <variant>

namespace bufferlock {

// A failed system call: which path, and why (errno text or our own words).
struct SysError {
  std::string path;
  std::string reason;
  bool refused = false; // not a failure of the OS: we refused what we found
};

// strerror(3) as a std::string (thread-safe variant).
std::string errno_text(int err);

// mkdir -p: creates `path` and missing parents with `mode` (minus the umask).
// An existing directory (or a symbolic link to one) is success.
std::optional<SysError> make_dirs(const std::string& path, mode_t mode);

// A directory only this user may use: created 0700 when missing; refused when
// it is a symbolic link, not a directory, or owned by another user, because
// anyone who can plant it could then see or steal our locks.
std::optional<SysError> ensure_private_dir(const std::string& path);

// The permission bits of `path` (its target, when a symbolic link) when its
// group or others may read it: what a private key file must not allow.
// nullopt when only its owner may, or when it cannot be examined.
std::optional<mode_t> readable_by_others(const std::string& path);

// An unnamed file for scratch data: in memory (memfd) when `size` is small,
// else in $TMPDIR (O_TMPFILE; a named file unlinked at once where the file
// system cannot), so that a large one takes no memory. Invalid on failure.
UniqueFd anonymous_file(std::uint64_t size);

// The bytes of a secret's file (--sign-key, --store-token-file): a regular
// file, readable by its owner alone, neither empty nor over 64 KiB; else
// why not (for a one-line usage error): index 0 the bytes, 1 the reason.
std::variant<std::string, std::string> read_secret_file(const std::string& path);

// Whether `name` in `dirfd` (AT_FDCWD: a path) still names the file open as
// `fd`, not following a symbolic link: a file removed or replaced since it
// was opened does not.
bool names_open_file(int dirfd, const std::string& name, int fd);

// The directory part of `path` ("." when there is none).
std::string parent_dir(const std::string& path);

} // namespace bufferlock
