// The one lock interface both backends implement (STYLE point 3).
#pragma once

#include "lock/outcome.hpp"
#include "run/command.hpp"
#include "util/duration.hpp"

#include <optional>
#include <string>

namespace bufferlock {

enum class LockState { free, held, error };

// What `bufferlock status` prints: the state, and what is known of the holder
// as " name=value" fields (" pid=12", " ttl=3.000").
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

  // Work to do every so often while the command runs (Redis renewal).
  virtual std::optional<Ticker> keepalive() { return std::nullopt; }
};

} // namespace bufferlock
