#include "cache/recipe.hpp"

#include "cache/explain.hpp"
#include "cache/inputs.hpp"
#include "cache/open_store.hpp"
#include "cache/outputs.hpp"
#include "cache/stat_cache.hpp"
#include "cache/store.hpp"
#include "exit_codes.hpp"
#include "lock/acquire.hpp"
#include "messages.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"
#include "util/io.hpp"
#include "util/json.hpp"
#include "util/sigmask.hpp"
#include "util/text.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace bufferlock {

namespace {

// What this call did (SPEC §21): set as it goes, counted once at its end
// (cache_main; a background rebuild counts its own build).
CallCount& tally() {
  static CallCount c;
  return c;
}

// A call that served `e` without building: `event` (hit, stale, wait).
void tally_served(const EntryStore& store, const CachedEntry& e, CacheEvent event) {
  CallCount& t = tally();
  t.event = event;
  t.bytes_served = store.stored_size(e.header);
  t.saved_ns = e.header.build_ns;
}

// Counts the call in its store, once; not with --read-only (SPEC §22: it
// writes nothing).
void count_call(const CacheRequest& o, const EntryStore& store) {
  CallCount& t = tally();
  if (o.cache.read_only || t.empty()) return;
  t.key = o.key;
  store.count(t);
}

CacheEvent served_event(Msg m) {
  if (m == Msg::cache_waited) return CacheEvent::wait;
  return m == Msg::cache_served_stale ? CacheEvent::stale : CacheEvent::hit;
}

// Whether a found entry (of the caller's inputs) may be served as it is: fresh.
bool current(const CacheRequest& o, const EntryHeader& h, std::optional<Nanos> stale, Freshness* age = nullptr) {
  const Freshness f = freshness(h.created_ns, wall_clock_ns(), o.cache.max_age, stale);
  if (age) *age = f;
  return f == Freshness::fresh;
}

int serve(const CacheRequest& o, const CachedEntry& e, bool with_stderr = true) {
  serve_entry(e, STDOUT_FILENO); // a reader that went away is its own business
  if (with_stderr && o.cache.keep_stderr) serve_entry_stderr(e, STDERR_FILENO);
  return exit_code::ok;
}

// -v: the one line that says what a call came to (man page, "Reading the
// log"): `m` is cache_hit, cache_waited or cache_served_stale, about the
// entry served; `more` adds the message's own values.
void say_served(const CacheRequest& o, const EntryStore& store, const CachedEntry& e, Msg m,
                MessageArgs more = {}) {
  if (!diag::verbose()) return;
  const Nanos age(std::max<std::int64_t>(0, wall_clock_ns() - e.header.created_ns));
  more.insert(more.end(), {{"key", display_key(o.key)},
                           {"age", format_seconds(age)},
                           {"stored", std::to_string(store.stored_size(e.header))},
                           {"from", store.where(o.key, e.header.address())}});
  diag::debug(message(m, more));
}

// serve() of an entry, with its -v line.
int serve_as(const CacheRequest& o, const EntryStore& store, const CachedEntry& e, Msg m, MessageArgs more = {}) {
  say_served(o, store, e, m, std::move(more));
  tally_served(store, e, served_event(m));
  const int status = serve(o, e);
  // After the bytes went out: recording the use is off the hit's critical path.
  if (!o.cache.read_only) store.record_use(e);
  return status;
}

// What putting an entry's --output PATHs in place came to.
struct Restored {
  bool ok = true; // in place (or none to restore)
  int stop = 0;   // the stop signal that ended it: the caller exits 128+N, with no warning
};

// Puts the entry's --output PATHs in place (nothing to do without); not ok,
// with one warning, when its archive is refused or cannot be restored. A
// stop signal meanwhile ends it with its temporary trees removed.
Restored restore(const CacheRequest& o, const EntryStore& store, const CachedEntry& e) {
  if (e.header.outputs.empty()) return {};
  HoldStopSignals hold;
  const auto why = e.staged ? e.staged->commit()
                            : restore_outputs(e.header.outputs, e.fd.get(), e.header.outputs_offset(),
                                              e.header.outputs_len);
  if (const int sig = hold.end()) return {false, sig};
  if (!why) return {};
  diag::warn(message(
      Msg::cache_output_refused,
      {{"key", display_key(o.key)}, {"where", store.where(o.key, e.header.address())}, {"error", *why}}));
  return {false, 0};
}

// The exit status of a run that a stop signal ended, the lock released.
int stopped(Lock* lock, int sig) {
  if (lock) lock->release();
  return exit_code::signal_base + sig;
}

// Restores the entry's --output PATHs, then serves it with its -v line `m`,
// then releases `lock` (when held): the exit status. nullopt when the outputs
// were refused (warned): a miss. A stop signal meanwhile ends the run.
std::optional<int> restore_and_serve(const CacheRequest& o, const EntryStore& store, const CachedEntry& e,
                                     Lock* lock, Msg m, MessageArgs more = {}) {
  const Restored r = restore(o, store, e);
  if (r.stop) return stopped(lock, r.stop);
  if (!r.ok) return std::nullopt;
  const int status = serve_as(o, store, e, m, std::move(more));
  if (lock) lock->release();
  return status;
}

// Where the caller's entry is filed: its inputs and its --output list.
Inputs address(const CacheRequest& o, const Inputs& inputs) { return entry_address(inputs, o.cache.outputs); }

// A found entry that holds other --output PATHs than the caller's (another
// list, as given): a miss.
Lookup same_outputs(const CacheRequest& o, Lookup l) {
  if (l.state == LookupState::found && l.entry.header.outputs != o.cache.outputs)
    return {LookupState::missing, {}, {}};
  return l;
}

// The entry of KEY and inputs, when it holds the caller's --output PATHs.
// One that may be served (fresh, or within --stale) may have them staged
// as it is read: restore() puts them in place.
Lookup find(const CacheRequest& o, const EntryStore& store, const Inputs& inputs) {
  const auto serves = [&](const EntryHeader& h) { return !o.cache.force && current(o, h, o.cache.stale); };
  return same_outputs(o, store.lookup_to_restore(o.key, address(o, inputs), serves));
}

// Packs the --output PATHs into `writer` as they are read (no copy on the
// side: a remote store's upload goes on meanwhile); the error when they
// could not be.
std::optional<SysError> store_outputs(const CacheRequest& o, EntryBuild& writer) {
  const auto why = pack_outputs(
      o.cache.outputs, [&](const char* data, std::size_t len) { return writer.append_outputs(data, len); });
  if (writer.error()) return writer.error();
  if (why) return SysError{"--output", *why};
  return std::nullopt;
}

// The digest of --depends (nullopt without), through the stat cache of the
// cache directory, which is written back when it learnt something.
std::string cache_dir_of(const CacheRequest& o) { return o.cache.dir.empty() ? default_cache_dir() : o.cache.dir; }

// `walk`: what the walk records or compares besides the digest.
std::variant<Inputs, SysError> compute_inputs(const CacheRequest& o, const std::string& cache_dir,
                                              InputsWalk* walk) {
  if (o.cache.depends.empty()) return Inputs();
  StatCache stats(cache_dir);
  auto d = inputs_digest(o.cache.depends, stats, InputsRules{o.cache.excludes, o.cache.outputs}, walk);
  if (auto* e = std::get_if<SysError>(&d)) return *e;
  // Not read-only: what the stat cache says decides which entry is served.
  if (stats.dirty() && !o.cache.read_only && !prepare_cache_dir(cache_dir))
    stats.save(); // failing: a re-read next time
  return Inputs(std::get<Digest128>(d));
}

// -v: each --depends PATH that is not there, which counts as an input
// state of its own (a typo reads as "missing").
void say_missing_depends(const CacheRequest& o) {
  for (const auto& path : o.cache.depends) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 || (errno != ENOENT && errno != ENOTDIR)) continue;
    diag::debug(message(Msg::cache_depends_missing, {{"path", path}, {"error", errno_text(errno)}}));
  }
}

// Whether the inputs differ now from `before` (whose walk left `trail`), or
// cannot be read now: the first path that did (empty when none can be named).
std::optional<std::string> inputs_changed(const CacheRequest& o, const Digest128& before,
                                          const InputsTrail& trail) {
  InputsWalk walk;
  if (trail.complete()) walk.since = &trail;
  const auto now = compute_inputs(o, cache_dir_of(o), &walk);
  if (const auto* e = std::get_if<SysError>(&now)) return e->path;
  if (std::get<Inputs>(now) == before) return std::nullopt;
  return walk.first_new;
}

// The options the build lock is taken with: one lock per KEY and inputs, so
// that callers with other inputs do not wait for this build. Not per
// --output list: callers of one KEY with other lists may build in one tree.
LockRequest lock_options(const CacheRequest& o, const Inputs& inputs) {
  LockRequest l = o;
  if (inputs) l.key += "@inputs:" + inputs->hex();
  return l;
}

// --max-entry, the same in every store: the limit given, else 64M in a
// store whose memory the entries take (Redis) and none in the others.
std::optional<std::uint64_t> entry_limit(const CacheRequest& o, const EntryStore& store) {
  if (o.cache.max_entry_given || store.limits_entries()) return o.cache.max_entry;
  return std::nullopt;
}

// A message of `store` about `key` (shown as is) and `place` (its path or
// server), in the store's words.
std::string store_message(Msg m, const std::string& key, const std::string& place, const std::string& error) {
  return message(m, {{"key", key}, {"path", place}, {"server", place}, {"error", error}});
}

// The one warning of an output that was not stored.
void warn_not_stored(const EntryStore& store, const std::string& key, const SysError& e) {
  if (store.noted_unreadable()) return; // the lookup's warning said the store failed
  diag::warn(store_message(store.messages().not_stored, key, e.path, e.reason));
}

// One build's run (build() below): the command's output on its way to the
// caller and into a new entry, and why nothing was stored when it was not.
struct BuildRun {
  BuildRun(const CacheRequest& opts, const EntryStore& to, const Inputs& in, const Manifest& seen, Lock* held)
      : o(opts), store(to), inputs(in), manifest(seen), lock(held) {}

  const CacheRequest& o;
  const EntryStore& store;
  const Inputs& inputs;
  const Manifest& manifest; // what the inputs were, path by path (entry section 5)
  Lock* lock;
  std::string key = display_key(o.key);
  std::unique_ptr<EntryBuild> writer;
  std::optional<SysError> store_error;
  // --max-entry: not stored, one warning of its own naming the stored size.
  std::optional<std::uint64_t> too_large;
  // -v: why nothing was stored, for the outcome line (the warnings say it
  // without -v, each in its own words).
  std::string why_not;
  Nanos started{};

  // The entry's build begins, unless the store is `unusable`.
  void begin(const std::optional<SysError>& unusable) {
    store_error = unusable;
    if (unusable) return;
    // Compressed where bytes cost memory and network; in the file store on request.
    const BuildContents what{o.cache.keep_stderr ? KeepStderr::yes : KeepStderr::no, o.cache.outputs,
                             store.compresses(o.cache.compress), entry_limit(o, store),
                             {manifest_section(manifest)}};
    // Filed under the inputs read before the build; checked again after it.
    auto created = store.begin_build(o.key, inputs, wall_clock_ns(), what);
    if (auto* e = std::get_if<SysError>(&created))
      store_error = *e;
    else
      writer = std::move(std::get<std::unique_ptr<EntryBuild>>(created));
  }

  void stop_storing() {
    store_error = writer->error();
    writer.reset();
  }

  // Runs the command, its stdout to ours unless `held` (a fallback may be
  // served instead); its status.
  int run(bool held) {
    bool stdout_open = !held;
    const OutputSink sink = [&](const char* data, std::size_t len) {
      // A reader that stops reading (| head -1) must neither stop the build
      // nor cut the entry: keep draining into the file.
      if (stdout_open && !write_all(STDOUT_FILENO, data, len)) stdout_open = false;
      if (writer && !writer->append(data, len)) stop_storing();
    };
    // --keep-stderr: stderr still passes through as it comes, and is stored.
    bool stderr_open = true;
    const OutputSink err_sink = [&](const char* data, std::size_t len) {
      if (stderr_open && !write_all(STDERR_FILENO, data, len)) stderr_open = false;
      if (writer && !writer->append_stderr(data, len)) stop_storing();
    };
    const std::optional<Ticker> ticker = lock ? lock->keepalive() : std::nullopt;
    started = monotonic_now();
    return run_child(o.argv, ticker ? &*ticker : nullptr, &sink, o.cache.keep_stderr ? &err_sink : nullptr);
  }

  // A stop signal after the command's end: nothing is stored (an upload
  // under way is abandoned), and we exit at once.
  int interrupted(int sig) {
    writer.reset();
    return stopped(lock, sig);
  }

  // A PATH the build did not make: its error, whatever the store; the
  // status becomes the error status.
  void check_outputs(int& status) {
    if (const auto missing = first_missing_output(o.cache.outputs)) {
      diag::error(message(Msg::cache_output_missing, {{"key", key}, {"path", *missing}}));
      status = o.error_exit;
      why_not = "--output " + *missing + " is missing after the build";
    }
  }

  // The output may come from the new inputs: filed under the old ones it
  // would serve the wrong state. Not stored; the next caller builds.
  void check_inputs(const InputsTrail& trail) {
    const auto changed = inputs_changed(o, *inputs, trail);
    if (!changed) return;
    why_not = "its dependencies changed during the build";
    if (changed->empty()) {
      diag::warn(message(Msg::cache_inputs_changed, {{"key", key}}));
    } else {
      diag::warn(message(Msg::cache_inputs_changed_at, {{"key", key}, {"path", *changed}}));
      why_not += " (first: " + *changed + ")";
    }
    writer.reset();
  }

  // A successful build's entry: its outputs archive, then published.
  void keep(const InputsTrail& trail) {
    if (writer && inputs) check_inputs(trail);
    if (writer && !o.cache.outputs.empty()) {
      if (auto e = store_outputs(o, *writer)) {
        store_error = e;
        writer.reset();
      }
    }
    if (!writer) return;
    // An output past --max-entry is only counted, up to here.
    if (auto e = writer->publish()) {
      store_error = e;
      writer.reset();
    } else if (writer->too_large()) {
      too_large = writer->stored_size();
      writer.reset();
    }
  }

  // What keep() came to: a warning when nothing was stored, -v when it was.
  void say_kept() {
    if (too_large) {
      diag::warn(message(Msg::cache_entry_too_large, {{"key", key},
                                                      {"stored", std::to_string(*too_large)},
                                                      {"size", std::to_string(o.cache.max_entry)}}));
      why_not = "its stored size, " + std::to_string(*too_large) + " bytes, is over --max-entry";
    } else if (store_error) {
      warn_not_stored(store, key, *store_error);
      why_not = store_error->path + ": " + store_error->reason;
    }
    if (!writer) return;
    diag::debug_lazy([&] {
      return message(Msg::cache_built, {{"key", key},
                                        {"seconds", format_seconds(monotonic_now() - started)},
                                        {"stored", std::to_string(store.stored_size(writer->header()))},
                                        {"from", store.where(o.key, writer->header().address())}});
    });
  }

  // A successful build with a fallback held stdout back: the new entry's,
  // or else the fallback's. The exit status of a stop signal meanwhile.
  std::optional<int> serve_held(const CachedEntry& fallback) {
    // The build's stderr went through live: only stdout is served here.
    std::optional<CachedEntry> built = writer ? writer->entry() : std::nullopt;
    if (built) {
      serve(o, *built, false); // its outputs are in place already
      return std::nullopt;
    }
    const Restored r = restore(o, store, fallback);
    if (r.stop) return interrupted(r.stop);
    if (r.ok) {
      diag::warn(message(Msg::cache_stale_unstored, {{"key", key}}));
      say_served(o, store, fallback, Msg::cache_served_stale, {{"why", "not stored: " + why_not}});
      serve(o, fallback, false);
      why_not.clear(); // said
    }
    return std::nullopt;
  }

  // A failed build stores nothing; with a fallback, that is served and the
  // status becomes 0. The exit status of a stop signal meanwhile.
  std::optional<int> serve_instead(const CachedEntry* fallback, int& status) {
    writer.reset();
    const Restored r = fallback ? restore(o, store, *fallback) : Restored{false, 0};
    if (r.stop) return interrupted(r.stop);
    if (!fallback || !r.ok) return std::nullopt;
    const Msg m =
        fallback->header.has_inputs(inputs) ? Msg::cache_stale_served : Msg::cache_stale_other_inputs;
    diag::warn(message(m, {{"key", key}, {"status", std::to_string(status)}}));
    say_served(o, store, *fallback, Msg::cache_served_stale, {{"why", "the rebuild failed: " + why_not}});
    serve(o, *fallback, false);
    why_not.clear(); // said
    status = exit_code::ok;
    return std::nullopt;
  }

  // For --stats: what the build stored, or that the store failed it.
  void tally_built() const {
    CallCount& t = tally();
    if (writer) t.bytes_stored = store.stored_size(writer->header());
    if (store_error) ++t.store_errors;
  }

  void say_not_stored() const {
    if (writer || why_not.empty()) return;
    diag::debug_lazy([&] {
      return message(
          Msg::cache_not_stored,
          {{"key", key}, {"seconds", format_seconds(monotonic_now() - started)}, {"why", why_not}});
    });
  }
};

// Runs the command, copying its stdout as it comes to our stdout and to a new
// entry, and publishes the entry on success. With a fallback (--stale-if-error
// and an old entry), stdout is held back: it gets the new output once the
// build succeeded, or else the old entry — never both.
int build(const CacheRequest& o, const EntryStore& store, const Inputs& inputs, const InputsTrail& trail,
          const Manifest& seen, Lock* lock, const std::optional<SysError>& unusable, const CachedEntry* fallback) {
  BuildRun b{o, store, inputs, seen, lock};
  b.begin(unusable);
  int status = b.run(fallback != nullptr);
  if (const int sig = stop_signal()) return b.interrupted(sig);
  b.why_not = "the command exited with status " + std::to_string(status);
  if (status == 0) b.check_outputs(status);
  tally().event = status == 0 ? CacheEvent::build : CacheEvent::failed_build;
  tally().build_ns = static_cast<std::uint64_t>((monotonic_now() - b.started).count());
  if (status == 0) {
    b.keep(trail);
    if (const int sig = stop_signal()) return b.interrupted(sig);
    b.tally_built();
    b.say_kept();
    if (fallback)
      if (const auto end = b.serve_held(*fallback)) return *end;
  } else if (const auto end = b.serve_instead(fallback, status)) {
    return *end;
  }
  b.say_not_stored();
  if (lock) lock->release();
  return status;
}

// --fail-open without the lock: the command runs, and nothing is stored.
int run_unlocked(const CacheRequest& o) {
  const Nanos started = monotonic_now();
  const int status = run_child(o.argv);
  diag::debug_lazy([&] {
    return message(Msg::cache_not_stored, {{"key", display_key(o.key)},
                                           {"seconds", format_seconds(monotonic_now() - started)},
                                           {"why", "run without the lock (--fail-open)"}});
  });
  return status;
}

// The caller that found a stale entry and got the lock: a detached process
// rebuilds while the caller serves the stale entry at once. The child keeps
// the lock (an inherited flock descriptor, or the Redis token) and none of
// the caller's stdout or stderr, so `$(bufferlock cache ...)` returns at once.
void rebuild_in_background(const CacheRequest& o, const EntryStore& store, const Inputs& inputs,
                           const InputsTrail& trail, const Manifest& seen, Lock& lock,
                           const std::optional<SysError>& unusable) {
  const pid_t pid = ::fork();
  if (pid != 0) return; // the parent (or a failed fork: then nobody rebuilds now)
  store.after_fork();
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  tally() = CallCount{}; // the parent counts its stale serve; this process its build
  const int status = build(o, store, inputs, trail, seen, &lock, unusable, nullptr);
  count_call(o, store);
  ::_exit(status);
}

// A corrupt entry (it is rebuilt), or a store that could not be read (a miss:
// a store error, counted once in a run).
void warn_lookup(const CacheRequest& o, const EntryStore& store, const Inputs& inputs, const Lookup& l) {
  if (l.state == LookupState::unreadable && !store.noted_unreadable()) ++tally().store_errors;
  const std::string where = store.where(o.key, address(o, inputs));
  if (l.state == LookupState::corrupt)
    diag::warn(store_message(store.messages().corrupt, display_key(o.key), where, l.why));
  else if (l.state == LookupState::unreadable && !store.noted_unreadable())
    diag::warn(store_message(store.messages().unreadable, display_key(o.key), where, l.why));
  if (l.state == LookupState::unreadable) store.note_unreadable();
}

// --warm: the warning of a nearest entry that cannot be built upon (corrupt,
// unsigned, or its store failed): the build starts cold. A store that
// failed is warned about once in a run, as by warn_lookup.
void warn_warm(const CacheRequest& o, const EntryStore& store, const std::string& from, const Lookup& l) {
  if (l.state == LookupState::unreadable && store.noted_unreadable()) return;
  if (l.state == LookupState::unreadable) store.note_unreadable();
  diag::warn(message(Msg::cache_warm_unusable,
                     {{"key", display_key(o.key)}, {"from", display_key(from)}, {"error", l.why}}));
}

// -v: the entry a warm build starts from.
void say_warm(const CacheRequest& o, const EntryStore& store, const std::string& from, const EntryHeader& h) {
  diag::debug_lazy([&] {
    const Nanos age(std::max<std::int64_t>(0, wall_clock_ns() - h.created_ns));
    return message(Msg::cache_warm_start,
                   {{"key", display_key(o.key)},
                    {"from", display_key(from)},
                    {"inputs", h.inputs ? h.inputs->hex().substr(0, short_inputs_digits) : "-"},
                    {"age", format_seconds(age)},
                    {"where", store.where(from, h.address())}});
  });
}

// --warm, by the builder alone, under the build lock: the --output PATHs of
// the nearest entry (KEY's newest for any inputs, else each --warm-from
// KEY's in order) put in place for COMMAND to build upon. Never worse than
// cold: it is verified before anything of it is restored, each PATH is
// replaced whole or not at all, and none, or one that cannot be used, leaves
// the PATHs as they are (no older candidate is tried). The exit status of a
// stop signal meanwhile.
std::optional<int> warm_start(const CacheRequest& o, const EntryStore& store, Lock& lock) {
  if (!o.cache.warm) return std::nullopt;
  std::vector<std::string> keys{o.key};
  keys.insert(keys.end(), o.cache.warm_from.begin(), o.cache.warm_from.end());
  for (const std::string& from : keys) {
    const Lookup l = store.newest(from, o.cache.outputs);
    if (l.state == LookupState::missing) continue;
    if (l.state != LookupState::found || !l.why.empty()) {
      warn_warm(o, store, from, l);
      return std::nullopt;
    }
    const Restored r = restore(o, store, l.entry);
    if (r.stop) return stopped(&lock, r.stop);
    if (r.ok) say_warm(o, store, from, l.entry.header);
    tally().warm_start = r.ok;
    return std::nullopt;
  }
  return std::nullopt;
}

// What --explain says a call does with an entry within --stale.
constexpr std::string_view stale_served_meanwhile = "served while another caller rebuilds it";
constexpr std::string_view stale_rebuilt_now = "rebuilt now, not served (--background serves it meanwhile)";

// --read-only on a miss (SPEC §22): nothing is written, and nothing held
// that a builder would wait for. A build in progress (the lock is busy,
// seen without taking it) is waited for as a waiter does, and its entry
// served (a stale entry at once); else COMMAND runs without the lock and
// its output is not stored. A file lock is waited for shared: a shared
// holder writes no holder record, and only its file exists already. A lock
// that cannot be taken (a Redis user that may only read) is warned about,
// and the command runs: without storing, no lock is needed to be right.
int read_only_miss(const CacheRequest& o, const EntryStore& store, const Inputs& inputs,
                   const std::string& lock_dir, const CachedEntry* stale) {
  LockRequest locking = lock_options(o, inputs);
  locking.shared = o.backend == Backend::file;
  locking.fail_open = true;
  const std::unique_ptr<Lock> lock = make_lock(locking, lock_dir);
  if (lock->status().state != LockState::held) {
    if (stale) explain_stale(o, stale->header, "the command runs (--read-only, the lock could not be taken)");
    return run_child(o.argv);
  }
  if (stale) {
    explain_stale(o, stale->header, "served (--read-only rebuilds nothing)");
    const auto status = restore_and_serve(o, store, *stale, nullptr, Msg::cache_served_stale,
                                          {{"why", "another caller is rebuilding it"}});
    return status ? *status : run_child(o.argv);
  }
  int exit_status = o.error_exit;
  const Nanos wait_start = monotonic_now();
  switch (take_lock(locking, *lock, exit_status, LockWords{o.key, std::nullopt})) {
  case Taken::stop: return exit_status;
  case Taken::unlocked: return run_child(o.argv);
  case Taken::locked: lock->release(); break;
  }
  const Lookup got = find(o, store, inputs);
  warn_lookup(o, store, inputs, got);
  if (got.state == LookupState::found && current(o, got.entry.header, std::nullopt))
    if (const auto status = restore_and_serve(o, store, got.entry, nullptr, Msg::cache_waited,
                                              {{"waited", format_seconds(monotonic_now() - wait_start)}}))
      return *status;
  return run_child(o.argv); // the build failed, or stored nothing: as with no build
}

// cache --list --json: {"entries": [...]}, each with the fields of the text
// and the store's name (man page, JSON OUTPUT).
std::string list_json(const std::vector<ListedEntry>& entries, std::int64_t now, std::string_view store) {
  std::vector<std::string> items;
  items.reserve(entries.size());
  for (const auto& e : entries) {
    JsonObject o;
    o.string("key", e.key);
    o.raw("age", format_seconds(Nanos(std::max<std::int64_t>(0, now - e.created_ns))));
    o.number("size", e.size).number("stored", e.stored).string("store", store);
    if (e.inputs) o.string("inputs", e.inputs->hex());
    if (e.outputs > 0) o.number("outputs", e.outputs);
    items.push_back(o.str());
  }
  return JsonObject().raw("entries", json_array(items)).str() + "\n";
}

// cache --list: "AGE SIZE STORED INPUTS KEY" per entry (SPEC §15); SIZE
// (of stdout) is followed by "+N" for an entry that holds N --output PATHs;
// STORED is the whole entry as stored (its outputs archive too).
std::string list_text(const std::vector<ListedEntry>& entries, std::int64_t now) {
  std::string out;
  for (const auto& e : entries) {
    out += format_seconds(Nanos(std::max<std::int64_t>(0, now - e.created_ns)));
    out += ' ';
    out += std::to_string(e.size);
    if (e.outputs > 0) {
      out += '+';
      out += std::to_string(e.outputs);
    }
    out += ' ';
    out += std::to_string(e.stored);
    out += ' ';
    out += e.inputs ? e.inputs->hex().substr(0, short_inputs_digits) : "-";
    out += ' ';
    out += escape_key(e.key);
    out += '\n';
  }
  return out;
}

// cache --list, newest first, as text or JSON.
int list(std::vector<ListedEntry> entries, bool json, std::string_view store) {
  std::sort(entries.begin(), entries.end(),
            [](const ListedEntry& a, const ListedEntry& b) { return a.created_ns > b.created_ns; });
  const std::int64_t now = wall_clock_ns();
  write_all(STDOUT_FILENO, json ? list_json(entries, now, store) : list_text(entries, now));
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

namespace {

// --list, --drop and --gc, on every store alike. A store that answered but
// cannot list (an http server without WebDAV PROPFIND) makes it a usage
// error (SPEC §18).
int admin(const CacheRequest& o, const EntryStore& store) {
  const auto failed = [&](const SysError& e, Msg m) {
    if (e.refused) {
      diag::error(message(store.messages().cannot_list, {{"server", e.path}, {"error", e.reason}}));
      return exit_code::usage;
    }
    diag::error(store_message(m, display_key(o.key), e.path, e.reason));
    return o.error_exit;
  };
  if (o.cache.list) {
    auto entries = store.list_entries();
    if (auto* e = std::get_if<SysError>(&entries)) return failed(*e, store.messages().list_failed);
    return list(std::move(std::get<std::vector<ListedEntry>>(entries)), o.json, store.name());
  }
  if (o.cache.drop) {
    if (auto e = store.drop(o.key)) return failed(*e, store.messages().drop_failed);
    return exit_code::ok;
  }
  const auto counts =
      store.gc(GcPolicy{o.cache.max_age, o.cache.max_size, wall_clock_ns(), o.cache.max_unused});
  if (auto* e = std::get_if<SysError>(&counts)) return failed(*e, store.messages().list_failed);
  store.compact_stats();
  return exit_code::ok;
}

// --stats: the counters in the format asked; --stats --zero resets them and
// prints nothing (SPEC §21).
int stats(const CacheRequest& o, const EntryStore& store) {
  const auto failed = [&](const SysError& e) {
    diag::error(message(Msg::cache_stats_failed, {{"server", e.path}, {"error", e.reason}}));
    return o.error_exit;
  };
  if (o.cache.stats_zero) {
    if (auto e = store.zero_stats()) return failed(*e);
    return exit_code::ok;
  }
  auto report = store.stats();
  if (auto* e = std::get_if<SysError>(&report)) return failed(*e);
  write_all(STDOUT_FILENO, format_stats(std::get<StatsReport>(report), o.cache.stats_format));
  return exit_code::ok;
}

// --sign-key: read (and libcrypto loaded) once, before anything is looked
// up; false, with the usage error said, when it cannot be.
bool load_signer(const CacheRequest& o, std::optional<EntrySigner>& signer) {
  auto read = EntrySigner::from_file(o.cache.sign_key);
  if (auto* why = std::get_if<std::string>(&read)) {
    diag::error(message(
        Msg::usage_hint,
        {{"error", message(Msg::usage_sign_key_file, {{"path", o.cache.sign_key}, {"error", *why}})}}));
    return false;
  }
  signer.emplace(std::move(std::get<EntrySigner>(read)));
  return true;
}

// A call past its first lookup: what the steps of a miss share.
struct Call {
  Call(const CacheRequest& opts, const EntryStore& in, const std::string& dir)
      : o(opts), store(in), cache_dir(dir) {}

  const CacheRequest& o;
  const EntryStore& store;
  const std::string& cache_dir;
  Inputs inputs;
  InputsTrail trail; // what the build's inputs were, to name one that changes during it
  Manifest seen;     // and path by path, for the entry (and --explain)
  Lookup found{LookupState::missing, {}, {}};
  bool corrupt = false; // warned once, and rebuilt under the lock without a second read
  // The creation time of an entry whose outputs were refused: met again
  // after the lock, it is the same entry (one warning), still a miss.
  std::optional<std::int64_t> refused;
};

// The digest of --depends before the build (its walk recorded); false, with
// the error said, when the inputs cannot be read.
bool read_inputs(Call& c) {
  InputsWalk walk;
  walk.record = &c.trail;
  walk.manifest = &c.seen;
  auto computed = compute_inputs(c.o, c.cache_dir, &walk);
  if (auto* e = std::get_if<SysError>(&computed)) {
    diag::error(message(Msg::cache_inputs_unreadable,
                        {{"path", e->path}, {"key", display_key(c.o.key)}, {"error", e->reason}}));
    return false;
  }
  c.inputs = std::get<Inputs>(computed);
  return true;
}

// Under the build lock (taken here): check again, then build. A stale
// `c.found` may be the fallback of --stale-if-error.
int build_locked(Call& c, const LockRequest& locking, Lock& lock, const std::optional<SysError>& unusable) {
  const CacheRequest& o = c.o;
  const EntryStore& store = c.store;
  int exit_status = o.error_exit;
  // The lock's messages name the caller's KEY; a lock that cannot be taken
  // in a cache directory that cannot be made or written is reported as that.
  LockWords words{o.key, std::nullopt};
  if (locking.backend != Backend::redis && locking.dir.empty()) {
    // (A remote store's prepare() makes no directory.)
    if (const auto e = unusable ? unusable : prepare_cache_dir(c.cache_dir))
      words.error = message(Msg::cache_dir_unusable, {{"path", e->path}, {"error", e->reason}});
  }
  // Takes the lock; nullopt once held, else the status to end with.
  const auto take = [&]() -> std::optional<int> {
    switch (take_lock(locking, lock, exit_status, words)) {
    case Taken::stop: return exit_status;
    case Taken::unlocked: return run_unlocked(o); // --fail-open: no lock, no cache
    case Taken::locked: break;
    }
    return std::nullopt;
  };
  const Nanos wait_start = monotonic_now();
  const auto waited = [&] { return format_seconds(monotonic_now() - wait_start); };
  if (const auto end = take()) return *end;
  // Check again: the holder we waited for has probably just stored it. Seen
  // there, the lock goes at once (SPEC: release and serve), and the entry is
  // read, verified and restored after, so that all who waited restore it
  // side by side. Gone, corrupt or refused by then: the lock again, and on.
  if (!o.cache.force && !c.corrupt) {
    const Lookup seen = same_outputs(o, store.peek(o.key, address(o, c.inputs)));
    if (seen.state == LookupState::found && c.refused != seen.entry.header.created_ns &&
        current(o, seen.entry.header, std::nullopt)) {
      lock.release();
      Lookup got = find(o, store, c.inputs);
      warn_lookup(o, store, c.inputs, got);
      if (got.state == LookupState::found && current(o, got.entry.header, std::nullopt)) {
        if (const auto status =
                restore_and_serve(o, store, got.entry, nullptr, Msg::cache_waited, {{"waited", waited()}}))
          return *status;
        c.refused = got.entry.header.created_ns;
      }
      if (const auto end = take()) return *end;
    }
  }
  Lookup again = o.cache.force ? Lookup{LookupState::missing, {}, {}} : find(o, store, c.inputs);
  if (again.state == LookupState::found && c.refused == again.entry.header.created_ns)
    again = Lookup{LookupState::missing, {}, {}};
  if (again.state == LookupState::found && current(o, again.entry.header, std::nullopt)) {
    // Stored just after the peek, or a second round: served under the lock.
    if (const auto status =
            restore_and_serve(o, store, again.entry, &lock, Msg::cache_waited, {{"waited", waited()}}))
      return *status;
  }
  if (again.state == LookupState::found) c.found = std::move(again);
  // --stale-if-error without an entry of these inputs: the newest of KEY for
  // any inputs (GitHub's restore-keys) with the caller's --output list,
  // looked up only when it can serve.
  if (o.cache.stale_if_error && c.found.state != LookupState::found)
    c.found = store.newest(o.key, o.cache.outputs);
  const bool fall_back = o.cache.stale_if_error && c.found.state == LookupState::found;
  if (const auto end = warm_start(o, store, lock)) return *end;
  return build(o, store, c.inputs, c.trail, c.seen, &lock, unusable, fall_back ? &c.found.entry : nullptr);
}

// A miss (`stale`: an expired entry still within --stale, else null): the
// build lock, then a build or an entry that another caller built.
int miss(Call& c, const CachedEntry* stale) {
  const CacheRequest& o = c.o;
  // The directory must exist (0700) before its locks/ and entries.
  const std::optional<SysError> unusable = c.store.prepare();
  // Locks in CACHEDIR/locks, unless --dir or --redis says otherwise (make_lock).
  const LockRequest locking = lock_options(o, c.inputs);
  const std::unique_ptr<Lock> lock = make_lock(locking, c.cache_dir + "/locks");
  if (stale && !o.cache.force) {
    // Somebody rebuilding already? Then the stale entry will do.
    const Outcome tried = lock->acquire(Nanos(0), OnError::retry);
    if (tried.status == AcquireStatus::busy) {
      explain_stale(o, stale->header, stale_served_meanwhile);
      if (const auto status = restore_and_serve(o, c.store, *stale, nullptr, Msg::cache_served_stale,
                                                {{"why", "another caller is rebuilding it"}}))
        return *status;
    }
    if (tried.status == AcquireStatus::acquired) {
      const Restored r = o.cache.background ? restore(o, c.store, *stale) : Restored{false, 0};
      if (r.stop) return stopped(lock.get(), r.stop);
      if (r.ok) {
        explain_stale(o, stale->header, "served while it is rebuilt in the background");
        rebuild_in_background(o, c.store, c.inputs, c.trail, c.seen, *lock, unusable);
        return serve_as(o, c.store, *stale, Msg::cache_served_stale,
                        {{"why", "rebuilding it in the background"}});
      }
      explain_stale(o, stale->header, stale_rebuilt_now);
      if (const auto end = warm_start(o, c.store, *lock)) return *end;
      return build(o, c.store, c.inputs, c.trail, c.seen, lock.get(), unusable,
                   o.cache.stale_if_error ? stale : nullptr);
    }
    if (tried.status != AcquireStatus::busy) explain_stale(o, stale->header, stale_rebuilt_now);
  }
  return build_locked(c, locking, *lock, unusable);
}

// The call once its store is open: a fresh entry served, or a miss.
int serve_or_build(const CacheRequest& o, EntryStore& store, const std::string& cache_dir) {
  std::optional<EntrySigner> signer;
  if (!o.cache.sign_key.empty()) {
    if (!load_signer(o, signer)) return exit_code::usage;
    store.sign_with(&*signer);
  }
  Call c{o, store, cache_dir};
  if (!read_inputs(c)) return o.error_exit;
  if (diag::verbose()) say_missing_depends(o);

  // --force reads no entry it would not use: only --stale-if-error falls
  // back on it (a remote store's entry is a whole download).
  if (!o.cache.force || o.cache.stale_if_error) c.found = find(o, store, c.inputs);
  warn_lookup(o, store, c.inputs, c.found);
  c.corrupt = c.found.state == LookupState::corrupt;
  bool have = c.found.state == LookupState::found;
  Freshness age = Freshness::expired;
  // --force rebuilds whatever was found; everybody else is served meanwhile.
  if (have && current(o, c.found.entry.header, o.cache.stale, &age) && !o.cache.force) {
    if (o.cache.explain) explain_hit(o, c.found.entry.header); // a hit without it calls nothing more
    if (const auto status = restore_and_serve(o, store, c.found.entry, nullptr, Msg::cache_hit))
      return *status;
    c.refused = c.found.entry.header.created_ns;
    have = false; // refused outputs: a miss, rebuilt
    c.found = Lookup{LookupState::missing, {}, {}};
  }
  // An entry within --stale is explained once the call knows what it does with it (miss()).
  if (!(have && age == Freshness::stale && !o.cache.force)) explain_miss(o, store, c.found, c.inputs, c.seen);

  // A miss. A closed stdout or stderr (2>&-) must not be taken over by the
  // entry or lock files opened from here on.
  fill_std_fds();
  const CachedEntry* stale = have && age == Freshness::stale ? &c.found.entry : nullptr;
  if (o.cache.read_only) return read_only_miss(o, store, c.inputs, cache_dir + "/locks", stale);
  return miss(c, stale);
}

} // namespace

int cache_main(const CacheRequest& o) {
  // A closed stdout must give EPIPE, and a file size limit (ulimit -f) EFBIG,
  // instead of killing us in the middle of a build.
  block_signals({SIGPIPE, SIGXFSZ});

  // A build holds no lock the command could use: it gets no lock variables.
  scrub_lock_env();
  const std::string cache_dir = cache_dir_of(o);
  auto opened =
      open_store(o.cache, o.redis, cache_dir, [](const char* name) -> const char* { return ::getenv(name); });
  if (auto* why = std::get_if<std::string>(&opened)) {
    diag::error(message(Msg::usage_hint, {{"error", *why}}));
    return exit_code::usage;
  }
  EntryStore& store = *std::get<std::unique_ptr<EntryStore>>(opened);
  if (o.cache.list || o.cache.drop || o.cache.gc) return admin(o, store);
  if (o.cache.stats) return stats(o, store);
  const int status = serve_or_build(o, store, cache_dir);
  count_call(o, store);
  return status;
}

} // namespace bufferlock
