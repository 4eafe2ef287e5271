// Choosing a backend from the options, and taking the lock as they say:
// shared by `run`, `acquire` and `cache`.
#pragma once

#include "cli.hpp"
#include "lock/lock.hpp"

#include <memory>
#include <optional>
#include <string>

namespace bufferlock {

// The lock for o.key on the chosen backend. `lock_dir` is the file backend's
// directory when the options name none (empty: the private default one).
std::unique_ptr<Lock> make_lock(const Options& o, const std::string& lock_dir);

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
Taken take_lock(const Options& o, Lock& lock, int& exit_status, const LockWords& words = {});

// After take_lock: BUFFERLOCK_SLOT for the command whenever --slots (or
// BUFFERLOCK_SLOTS) was given, --slots 1 included (SPEC §14); both backends.
void export_slot_env(const Options& o, const Lock& lock);

} // namespace bufferlock
