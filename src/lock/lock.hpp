// The one lock interface both backends implement (STYLE point 3).
#pragma once

#include "lock/outcome.hpp"
#include "run/command.hpp"
#include "util/duration.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

enum class LockState { free, held, error };

// What `bufferlock status` prints: the state, and what is known of the holder
// as " name=value" fields (" pid=12", " ttl=3.000", " slots=2/3", and the
// holder's record: holder_fields() in lock/holder_record.hpp).
struct LockStatus {
  LockState state;
  std::string fields;
  std::string error; // with error: the message
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
