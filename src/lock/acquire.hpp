// Choosing a backend from a lock request, and taking the lock as it says:
// shared by `run`, `acquire` and `cache`.
#pragma once

#include "lock/lock.hpp"
#include "lock/settings.hpp"
#include "lock/wait_display.hpp"
#include "util/diag.hpp"
#include "util/duration.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bufferlock {

// Which lock to take and how: built by cli from the command line, with what
// the subcommand decided already in its values.
struct LockRequest {
  std::string key;
  Backend backend = Backend::file;
  std::string dir;         // file backend: lock directory; empty = the caller's default
  RedisLockSettings redis; // redis backend
  Nanos wait{0};           // 0 = try once; infinite_duration = forever
  bool shared = false;
  unsigned slots = 1;
  bool slots_given = false;      // the command gets BUFFERLOCK_SLOT
  std::vector<std::string> also; // taken with key, all or nothing
  int busy_exit = 75;
  int error_exit = 69;
  // On a backend error, warn and go on without the lock (--fail-open where
  // the subcommand runs a command).
  bool fail_open = false;
  diag::Verbosity verbosity = diag::Verbosity::normal;
  // What the wait line says is waited for; a build (the cache's) also tells
  // a Redis that never answered apart, since a build needs no lock to be right.
  WaitFor purpose = WaitFor::lock;
};

// The lock for o.key on the chosen backend. `lock_dir` is the file backend's
// directory when the request names none (empty: the private default one).
std::unique_ptr<Lock> make_lock(const LockRequest& o, const std::string& lock_dir);

enum class Taken { locked, unlocked, stop };

// How take_lock speaks of the lock to the user: the KEY its wait line names
// (the lock's own key may say more: the cache's is KEY@inputs:DIGEST), empty
// for o.key; and, when set, what to say instead of the backend's error (its
// cause, known better by the caller).
struct LockWords {
  std::string_view key;
  std::optional<std::string> error;
};

// Takes the lock, waiting o.wait. `stop` sets `exit_status` (busy or error,
// with -v saying who holds it); `unlocked` is an error under --fail-open
// (warned about): the caller goes on without the lock.
Taken take_lock(const LockRequest& o, Lock& lock, int& exit_status, const LockWords& words = {});

// After take_lock: BUFFERLOCK_SLOT for the command whenever --slots (or
// BUFFERLOCK_SLOTS) was given, --slots 1 included (SPEC §14); both backends.
void export_slot_env(const LockRequest& o, const Lock& lock);

} // namespace bufferlock
