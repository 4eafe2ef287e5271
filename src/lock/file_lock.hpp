// The file backend: flock(2) on DIR/<md5 of KEY>.lock (SPEC §6).
#pragma once

#include "lock/outcome.hpp"
#include "util/duration.hpp"
#include "util/fd.hpp"

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

enum class LockMode { exclusive, shared };

// Whose directory it is: the default one must be private (0700, ours, not a
// link); one the user named may be shared and reached through a link.
enum class DirKind { private_default, user_given };

// The default lock directory: $XDG_RUNTIME_DIR/bufferlock, else /tmp/bufferlock-UID.
std::string default_lock_dir(const char* xdg_runtime_dir);

// DIR/<md5hex(key)>.lock
std::string lock_file_path(const std::string& dir, std::string_view key);

enum class Probe { free, held, error };

struct ProbeResult {
  Probe state;
  std::vector<pid_t> holders; // with held: what /proc/locks tells, maybe nothing
  std::string error;          // with error: the message
};

class FileLock {
public:
  FileLock(std::string dir, DirKind kind, std::string_view key);

  // Opens the lock file, creating the directory and file when needed, and
  // locks it: at once, or waiting up to `wait` (blocked in the kernel, so the
  // lock is ours as soon as it is released), or for ever with infinite_duration.
  Outcome acquire(LockMode mode, Nanos wait);

  // The holders of the lock file, for messages after a busy outcome.
  std::vector<pid_t> holders() const;

  // The descriptor that holds the lock, close-on-exec; -1 before acquire.
  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

  // Frees the lock (closing is what frees a flock lock).
  void release() { fd_.reset(); }

  // Whether the lock could be taken now, without creating anything.
  ProbeResult probe(LockMode mode) const;

private:
  std::optional<std::string> open_lock_file();

  std::string dir_;
  DirKind kind_;
  std::string path_;
  UniqueFd fd_;
};

// "pid 12" / "pids 12, 34" for messages; empty when none are known.
std::string describe_holders(const std::vector<pid_t>& pids);

} // namespace bufferlock
