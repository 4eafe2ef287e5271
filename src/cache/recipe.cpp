#include "cache/recipe.hpp"

#include "cache/store.hpp"
#include "exit_codes.hpp"
#include "lock/acquire.hpp"
#include "messages.hpp"
#include "run/command.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

namespace bufferlock {

namespace {

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

int serve(const Options& o, const CacheStore& store, const CachedEntry& e) {
  serve_entry(e, STDOUT_FILENO); // a reader that went away is its own business
  diag::debug_lazy([&] {
    return message(Msg::cache_hit, {{"key", display_key(o.key)}, {"path", store.entry_path(o.key)}});
  });
  return exit_code::ok;
}

// Runs the command, copying its stdout as it comes to our stdout and to a new
// entry, and publishes the entry on success. With a fallback (--stale-if-error
// and an old entry), stdout is held back: it gets the new output once the
// build succeeded, or else the old entry — never both.
int build(const Options& o, const CacheStore& store, Lock* lock, const std::optional<SysError>& unusable,
          const CachedEntry* fallback) {
  std::optional<EntryWriter> writer;
  std::optional<SysError> store_error = unusable;
  if (!unusable) {
    auto created = EntryWriter::create(store, o.key, realtime_ns());
    if (auto* e = std::get_if<SysError>(&created))
      store_error = *e;
    else
      writer.emplace(std::move(std::get<EntryWriter>(created)));
  }

  bool stdout_open = fallback == nullptr;
  const OutputSink sink = [&](const char* data, std::size_t len) {
    // A reader that stops reading (| head -1) must neither stop the build
    // nor cut the entry: keep draining into the file.
    if (stdout_open && !write_all(STDOUT_FILENO, data, len)) stdout_open = false;
    if (writer && !writer->append(data, len)) {
      store_error = writer->error();
      writer.reset();
    }
  };
  const std::optional<Ticker> ticker = lock ? lock->keepalive() : std::nullopt;
  int status = run_child(o.argv, ticker ? &*ticker : nullptr, &sink);

  const std::string key = display_key(o.key);
  if (status == 0) {
    if (writer) {
      if (auto e = writer->publish()) {
        store_error = e;
        writer.reset();
      }
    }
    if (store_error)
      diag::warn(message(Msg::cache_store_failed,
                         {{"key", key}, {"path", store_error->path}, {"error", store_error->reason}}));
    if (fallback) {
      if (writer) {
        serve(o, store, writer->entry());
      } else {
        diag::warn(message(Msg::cache_stale_unstored, {{"key", key}}));
        serve(o, store, *fallback);
      }
    }
  } else {
    writer.reset(); // a failed build stores nothing
    if (fallback) {
      diag::warn(message(Msg::cache_stale_served, {{"key", key}, {"status", std::to_string(status)}}));
      serve(o, store, *fallback);
      status = exit_code::ok;
    }
  }
  if (lock) lock->release();
  return status;
}

// The caller that found a stale entry and got the lock: a detached process
// rebuilds while the caller serves the stale entry at once. The child keeps
// the lock (an inherited flock descriptor, or the Redis token) and none of
// the caller's stdout or stderr, so `$(bufferlock cache ...)` returns at once.
void rebuild_in_background(const Options& o, const CacheStore& store, Lock& lock,
                           const std::optional<SysError>& unusable) {
  const pid_t pid = ::fork();
  if (pid != 0) return; // the parent (or a failed fork: then nobody rebuilds now)
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  ::_exit(build(o, store, &lock, unusable, nullptr));
}

int gc(const Options& o, const CacheStore& store) {
  const GcCounts c = store.gc(o.cache.max_age, realtime_ns());
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done, {{"entries", std::to_string(c.entries_removed)},
                                        {"temps", std::to_string(c.temps_removed)},
                                        {"path", store.dir()}});
  });
  return exit_code::ok;
}

} // namespace

std::string default_cache_dir() {
  if (const char* xdg = ::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/')
    return std::string(xdg) + "/bufferlock";
  const char* home = ::getenv("HOME");
  if (!home || !*home) {
    const passwd* pw = ::getpwuid(::geteuid());
    home = pw ? pw->pw_dir : "/";
  }
  return std::string(home) + "/.cache/bufferlock";
}

int cache_main(const Options& o) {
  // A closed stdout must give EPIPE, and a file size limit (ulimit -f) EFBIG,
  // instead of killing us in the middle of a build. Blocked, not ignored: the
  // command's signal mask is emptied, so it sees them as the caller left them.
  sigset_t quiet;
  sigemptyset(&quiet);
  sigaddset(&quiet, SIGPIPE);
  sigaddset(&quiet, SIGXFSZ);
  ::sigprocmask(SIG_BLOCK, &quiet, nullptr);

  // A build holds no lock the command could use: it gets no lock variables.
  scrub_lock_env();
  const CacheStore store(o.cache.dir.empty() ? default_cache_dir() : o.cache.dir);
  if (o.cache.gc) return gc(o, store);
  if (o.cache.drop) {
    if (auto e = store.drop(o.key)) {
      diag::error(message(Msg::cache_drop_failed, {{"path", e->path}, {"error", e->reason}}));
      return o.error_exit;
    }
    return exit_code::ok;
  }

  Lookup found = store.lookup(o.key);
  if (found.state == LookupState::corrupt)
    diag::warn(message(Msg::cache_entry_corrupt, {{"path", store.entry_path(o.key)}, {"error", found.why}}));
  const bool have = found.state == LookupState::found;
  const Freshness age =
      have ? freshness(found.entry.header.created_ns, realtime_ns(), o.cache.max_age, o.cache.stale)
           : Freshness::expired;
  if (have && age == Freshness::fresh) return serve(o, store, found.entry);

  // A miss: the directory must exist (0700) before its locks/ and entries.
  const std::optional<SysError> unusable = store.prepare();
  // Locks in CACHEDIR/locks, unless --dir or --redis says otherwise (make_lock).
  const std::unique_ptr<Lock> lock = make_lock(o, store.dir() + "/locks");
  if (have && age == Freshness::stale) {
    // Somebody rebuilding already? Then the stale entry will do.
    const Outcome tried = lock->acquire(Nanos(0), OnError::retry);
    if (tried.status == AcquireStatus::busy) return serve(o, store, found.entry);
    if (tried.status == AcquireStatus::acquired) {
      if (o.cache.background) {
        rebuild_in_background(o, store, *lock, unusable);
        return serve(o, store, found.entry);
      }
      return build(o, store, lock.get(), unusable, o.cache.stale_if_error ? &found.entry : nullptr);
    }
  }

  int exit_status = o.error_exit;
  switch (take_lock(o, *lock, exit_status)) {
  case Taken::stop: return exit_status;
  case Taken::unlocked: return run_child(o.argv); // --fail-open: no lock, no cache
  case Taken::locked: break;
  }
  // Check again: the holder we waited for has probably just stored it.
  Lookup again = store.lookup(o.key);
  if (again.state == LookupState::found && freshness(again.entry.header.created_ns, realtime_ns(),
                                                     o.cache.max_age, std::nullopt) == Freshness::fresh) {
    const int status = serve(o, store, again.entry);
    lock->release();
    return status;
  }
  if (again.state == LookupState::found) found = std::move(again);
  const bool fall_back = o.cache.stale_if_error && found.state == LookupState::found;
  return build(o, store, lock.get(), unusable, fall_back ? &found.entry : nullptr);
}

} // namespace bufferlock
