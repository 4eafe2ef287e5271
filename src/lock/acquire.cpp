#include "lock/acquire.hpp"

#include "lock/file_lock.hpp"
#include "lock/multi_lock.hpp"
#include "lock/redis_lock.hpp"
#include "lock/wait_display.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/sigmask.hpp"

#include <stdlib.h>

namespace bufferlock {

namespace {

void report_busy(const LockRequest& o, Lock& lock, Nanos waited) {
  if (!diag::verbose()) return;
  const std::string holder = lock.holder();
  const std::string key = display_key(o.key);
  if (o.wait.count() > 0) {
    const std::string secs = format_seconds(waited);
    diag::debug(holder.empty() ? message(Msg::lock_timeout, {{"key", key}, {"seconds", secs}})
                               : message(Msg::lock_timeout_holder,
                                         {{"key", key}, {"seconds", secs}, {"holder", holder}}));
  } else {
    diag::debug(holder.empty() ? message(Msg::lock_busy, {{"key", key}})
                               : message(Msg::lock_busy_holder, {{"key", key}, {"holder", holder}}));
  }
}

} // namespace

namespace {

std::unique_ptr<Lock> make_one_lock(const LockRequest& o, const std::string& lock_dir,
                                    const std::string& key) {
  if (o.backend == Backend::redis) {
    // hiredis writes with write(2): a server that went away must give EPIPE,
    // not kill us.
    block_sigpipe();
    return std::make_unique<RedisLock>(o.redis, key, o.slots);
  }
  const LockMode mode = o.shared ? LockMode::shared : LockMode::exclusive;
  if (!o.dir.empty()) return std::make_unique<FileLock>(o.dir, DirKind::user_given, key, mode, o.slots);
  if (!lock_dir.empty()) return std::make_unique<FileLock>(lock_dir, DirKind::user_given, key, mode, o.slots);
  return std::make_unique<FileLock>(default_lock_dir(), DirKind::private_default,
                                    key, mode, o.slots);
}

} // namespace

std::unique_ptr<Lock> make_lock(const LockRequest& o, const std::string& lock_dir) {
  if (o.also.empty()) return make_one_lock(o, lock_dir, o.key);
  std::vector<std::string> keys{o.key};
  keys.insert(keys.end(), o.also.begin(), o.also.end());
  std::vector<std::unique_ptr<Lock>> locks;
  locks.reserve(keys.size());
  for (const auto& k : keys)
    locks.push_back(make_one_lock(o, lock_dir, k));
  std::vector<std::size_t> order = canonical_order(keys);
  return std::make_unique<MultiLock>(std::move(locks), std::move(order), std::move(keys));
}

Taken take_lock(const LockRequest& o, Lock& lock, int& exit_status, const LockWords& words) {
  const Nanos start = monotonic_now();
  // The wait line names the caller's KEY; the -v lines the lock's own, as its release does.
  const std::string_view key = words.key.empty() ? std::string_view(o.key) : words.key;
  // Shown only if the wait's first try is busy (wait_line_begin).
  WaitDisplay display(key, start, o.wait, o.verbosity, o.purpose, lock);
  const Outcome outcome =
      // --fail-open means running without the lock when the backend fails;
      // an infinite wait that retried a dead backend would never get there.
      lock.acquire(o.wait, o.fail_open && o.wait == infinite_duration ? OnError::stop : OnError::retry);
  display.clear(); // before any message, and before the command's output
  switch (outcome.status) {
  case AcquireStatus::acquired:
    diag::debug_lazy([&] {
      return message(Msg::lock_acquired, {{"key", display_key(o.key)},
                                          {"path", lock.where()},
                                          {"seconds", format_seconds(monotonic_now() - start)}});
    });
    return Taken::locked;
  case AcquireStatus::busy:
    report_busy(o, lock, monotonic_now() - start);
    exit_status = o.busy_exit;
    return Taken::stop;
  case AcquireStatus::error: {
    const std::string& error = words.error ? *words.error : outcome.error;
    if (o.fail_open) {
      diag::warn(message(Msg::lock_fail_open, {{"error", error}}));
      return Taken::unlocked;
    }
    // A Redis that never answered: maybe a typo, maybe down for good; a
    // build needs no lock to be correct, only to be done once.
    diag::error(outcome.unreached && o.purpose == WaitFor::build
                    ? message(Msg::cache_lock_unreached, {{"error", error}})
                    : error);
    exit_status = o.error_exit;
    return Taken::stop;
  }
  }
  return Taken::stop;
}

void export_slot_env(const LockRequest& o, const Lock& lock) {
  if (o.slots_given) ::setenv("BUFFERLOCK_SLOT", std::to_string(lock.slot()).c_str(), 1);
}

} // namespace bufferlock
