// The file backend: flock(2) on DIR/<md5 of KEY>.lock (SPEC §6).
#pragma once

#include "lock/lock.hpp"
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

class FileLock final : public Lock {
public:
  FileLock(std::string dir, DirKind kind, std::string_view key, LockMode mode);

  // Opens the lock file, creating the directory and file when needed, and
  // locks it: at once, or waiting up to `wait` blocked in the kernel (so the
  // lock is ours as soon as it is released), or for ever with infinite_duration.
  Outcome acquire(Nanos wait, OnError on_error) override;

  // Closing is what frees a flock lock.
  void release() override;

  // Whether the lock could be taken now; creates nothing.
  LockStatus status() override;

  // The holders' PIDs from /proc/locks ("pid 12", "pids 12, 34"), or "".
  std::string holder() override;

  std::string where() const override { return path_; }
  void export_env() const override;

  // The descriptor that holds the lock (close-on-exec); -1 before acquire.
  int inheritable_fd() const override { return fd_.get(); }

  const std::string& path() const { return path_; }

private:
  std::optional<std::string> open_lock_file();
  std::vector<pid_t> holder_pids() const;

  std::string dir_;
  DirKind kind_;
  std::string display_key_;
  std::string path_;
  LockMode mode_;
  UniqueFd fd_;
};

// "pid 12" / "pids 12, 34" for messages; empty when none are known.
std::string describe_holders(const std::vector<pid_t>& pids);

} // namespace bufferlock
