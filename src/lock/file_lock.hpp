// The file backend: flock(2) on DIR/<md5 of KEY>.lock (SPEC §6).
#pragma once

#include "lock/holder_record.hpp"
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

// The default lock directory: RUN_LOCK/bufferlock-UID where RUN_LOCK is a
// directory the user may create in, else /tmp/bufferlock-UID; no
// environment variable moves it.
std::string default_lock_dir(const std::string& run_lock = "/run/lock");

// DIR/<md5hex(key)>.lock
std::string lock_file_path(const std::string& dir, std::string_view key);

// The lock file of slot `slot` of KEY: slot 0 is the plain lock file, so a
// --slots caller and a plain caller exclude each other; slot I > 0 is the
// sibling DIR/<md5hex(key)>.I.lock.
std::string slot_file_path(const std::string& dir, std::string_view key, unsigned slot);

class FileLock final : public Lock {
public:
  // `slots` > 1 (exclusive only): a counting semaphore of that many lock files.
  FileLock(std::string dir, DirKind kind, std::string_view key, LockMode mode, unsigned slots = 1);

  // Opens the lock file, creating the directory and file when needed, and
  // locks it: at once, or waiting up to `wait` blocked in the kernel (so the
  // lock is ours as soon as it is released), or for ever with infinite_duration.
  // With slots, the first free slot; a waiter sleeps in poll(2) on inotify
  // close events of the slot files (ARCHITECTURE.md, "Slots").
  // An exclusive holder writes its record (pid, since, fence, KEY) into the
  // lock file with one pwrite, after one pread of the previous fence.
  Outcome acquire(Nanos wait, OnError on_error) override;

  // Closing is what frees a flock lock.
  void release() override;

  // Whether the lock could be taken now (with slots: how many are taken);
  // creates nothing.
  LockStatus status() override;

  // The holders' PIDs from /proc/locks and the record of an exclusive one
  // ("held by pid=12 since=1.500 fence=3"), or "".
  std::string holder() override;

  std::string where() const override { return path_; }
  LockPlace place() const override { return {false, dir_, slot_path(0)}; }
  void export_env() const override;

  // The descriptor that holds the lock (close-on-exec); -1 before acquire.
  int inheritable_fd() const override { return fd_.get(); }

  unsigned slot() const override { return slot_; }
  std::optional<std::uint64_t> fence() const override { return fence_; }

  const std::string& path() const { return path_; }

private:
  // Opens `path` (read-write when allowed, else read-only: `writable` says).
  std::optional<std::string> open_lock_file(const std::string& path, UniqueFd& out, bool& writable);
  void record_holder();
  Outcome acquire_slot(Nanos wait);
  std::string slot_path(unsigned slot) const;

  std::string dir_;
  DirKind kind_;
  std::string key_;
  std::string display_key_;
  std::string path_; // slot 0's; after acquire, the one held
  LockMode mode_;
  unsigned slots_;
  unsigned slot_ = 0;
  bool writable_ = false;
  std::optional<std::uint64_t> fence_;
  UniqueFd fd_;
};

// What the system and the lock file's record say of the holders of the file
// open at `fd` (dev, ino from fstat). The record counts only when its pid
// holds the lock now, so a stale record under a flock(1) holder shows nothing.
HolderInfo file_holder_info(int fd, dev_t dev, ino_t ino, std::string_view proc_locks_text);

// "pid 12" / "pids 12, 34" for messages; empty when none are known.
std::string describe_holders(const std::vector<pid_t>& pids);

} // namespace bufferlock
