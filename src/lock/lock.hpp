// The one lock interface both backends implement (STYLE point 3).
#pragma once

#include "lock/holder_record.hpp"
#include "lock/outcome.hpp"
#include "run/command.hpp"
#include "util/duration.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

enum class LockState { free, held, error };

// What is known of a lock besides its state, each field only when known:
// `status` and `list` print it as text or JSON (lock/status_format.hpp).
struct StatusInfo {
  std::optional<std::int64_t> ttl_ms;               // redis: the time left
  bool no_ttl = false;                              // redis: a key without expiry (ttl=none)
  std::optional<unsigned> slots_taken, slots_total; // with --slots N > 1
  HolderInfo holder;                                // with --slots N > 1: only the pids, once all are taken
};

// What `bufferlock status` finds.
struct LockStatus {
  LockState state;
  StatusInfo info;
  std::string error; // with error: the message
};

// Where a lock lives, for --json: the file backend's DIR and lock file
// (slot 0's), or the Redis server as messages name it and the key (slot 0's).
struct LockPlace {
  bool redis = false;
  std::string where; // DIR, or the server
  std::string name;  // the lock file's path, or the Redis key
};

class Lock {
public:
  virtual ~Lock() = default;

  // Takes the lock: one try when `wait` is 0, else until it is ours or `wait`
  // has passed (infinite_duration: for ever), retrying transient errors
  // meanwhile as `on_error` says.
  virtual Outcome acquire(Nanos wait, OnError on_error) = 0;

  // Frees a lock taken by acquire. A failure is a warning, printed here: the
  // command has run, and the backend frees the lock by itself in the end.
  virtual void release() = 0;

  // Whether the lock is held now, without taking it.
  virtual LockStatus status() = 0;

  // What is known of the holder after a busy outcome, for -v ("pid 12").
  virtual std::string holder() = 0;

  // Where the lock lives, for -v ("/run/user/1000/bufferlock/....lock").
  virtual std::string where() const = 0;

  // The same, in parts, for --json.
  virtual LockPlace place() const = 0;

  // Puts the backend's variables into the environment the command will get.
  virtual void export_env() const = 0;

  // A descriptor whose inheritance keeps the lock (file backend), or -1: then
  // the command must run as a child while this process holds the lock.
  virtual int inheritable_fd() const { return -1; }

  // Every descriptor the command must inherit to keep the lock (several with
  // --also); inheritable_fd() is the one named in BUFFERLOCK_FD.
  virtual std::vector<int> inheritable_fds() const {
    const int fd = inheritable_fd();
    return fd >= 0 ? std::vector<int>{fd} : std::vector<int>{};
  }

  // After acquire: the slot this holder got, 0 to N-1 (--slots N; 0 without).
  // A backend implements slots by taking one of N locks of which slot 0 is
  // the plain lock of KEY (SPEC §14); the caller exports it as
  // BUFFERLOCK_SLOT whenever --slots was given (export_slot_env).
  virtual unsigned slot() const { return 0; }

  // After an exclusive acquire: this acquisition's fence, strictly greater
  // than every earlier one of the same lock (SPEC §14); none for shared and
  // quorum locks, or when the backend could not record one. Exported as
  // BUFFERLOCK_FENCE by export_env().
  virtual std::optional<std::uint64_t> fence() const { return std::nullopt; }

  // Work to do every so often while the command runs (Redis renewal).
  virtual std::optional<Ticker> keepalive() { return std::nullopt; }
};

} // namespace bufferlock
