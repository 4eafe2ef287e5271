// Where entries live: EntryStore and EntryBuild, the one interface the
// recipe uses, and what every store shares (entry naming, the newest
// readable entry, listed entries, over-size selection, -v removal lines).
#pragma once

#include "cache/entry_file.hpp"
#include "cache/stats_count.hpp"
#include "messages.hpp"
#include "util/files.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

// unreadable: the store could not be asked (a Redis error); a miss, with a warning.
enum class LookupState { missing, found, corrupt, unreadable };

struct Lookup {
  LookupState state;
  CachedEntry entry; // with found
  // With corrupt or unreadable: what is wrong. With found, from
  // EntryStore::newest: why a newer candidate was passed over (corrupt).
  std::string why;
};

// What `cache --list` shows of an entry.
struct ListedEntry {
  std::int64_t created_ns;
  std::uint64_t size; // of the stored stdout
  std::string key;
  Inputs inputs;
  std::size_t outputs = 0; // --output PATHs stored with it
  std::uint64_t stored = 0; // the entry's bytes as stored (file, object, hash fields)
};

// What --list shows of the entry with header `h`, `stored` bytes in its store.
ListedEntry listed_entry(const EntryHeader& h, std::uint64_t stored);

// The name of the entry of `key` at `address` in a cache directory and on an
// HTTP server: <md5 of KEY>.entry, or <md5 of KEY>.<address hex>.entry.
std::string entry_file_name(std::string_view key, const Inputs& address);

// Whether `name` has entry_file_name's form (<32 hex>.entry or
// <32 hex>.<32 hex>.entry): with `stem` (the md5 of a KEY), one of that
// KEY's entries at any address.
bool is_entry_file_name(std::string_view name, std::string_view stem = {});

// An entry that --stale-if-error might serve: its header, and where it lies
// (a file name, an object name, a Redis key).
struct StaleCandidate {
  EntryHeader header;
  std::string name;
};

// EntryStore::newest, once for every store: of the `candidates` that are
// KEY's with these --output PATHs, newest first, the first that `read`
// finds; one that `read` finds unreadable (the store failed) ends the search.
// A corrupt one passed over is said (Lookup::why), and when none is
// found the first corrupt one is the answer.
Lookup newest_readable(std::string_view key, const std::vector<std::string>& outputs,
                       std::vector<StaleCandidate> candidates,
                       const std::function<Lookup(const StaleCandidate&)>& read);

// Whether a build stores its stderr too (--keep-stderr).
enum class KeepStderr { no, yes };

// What a build stores besides stdout: its stderr, and the --output PATHs
// (whose archive comes by EntryBuild::append_outputs).
struct BuildContents {
  KeepStderr keep_stderr = KeepStderr::no;
  std::vector<std::string> outputs;
  bool compress = false; // stdout and stderr in zstd blocks (cache/compress.hpp)
  // --max-entry, one rule for every store: the most stored bytes (stdout,
  // stderr and the outputs archive, as stored) an entry may have. Past it
  // the build stores nothing and only counts on (EntryBuild::too_large).
  std::optional<std::uint64_t> max_entry = std::nullopt;
  // Sections the header carries as they are (a version 3 entry only).
  std::vector<EntrySection> sections = {};
};

struct GcCounts {
  int entries_removed = 0;
  int temps_removed = 0;
};

// What --gc asks of a store: entries older than max_age go, and those
// unused for max_unused, then the least recently used until the rest add up
// to max_size (SPEC §22).
struct GcPolicy {
  std::optional<Nanos> max_age;
  std::optional<std::uint64_t> max_size;
  std::int64_t now_ns = 0;
  std::optional<Nanos> max_unused = std::nullopt;
};

// A hit records its entry's use at most this often (SPEC §22): a store
// read by every job of a fleet must not become a store written by each.
inline constexpr std::int64_t use_resolution_ns = 60'000'000'000;

// Whether a use at `now_ns` is worth recording over the last one recorded.
inline bool use_worth_recording(std::int64_t last_used_ns, std::int64_t now_ns) {
  return now_ns - last_used_ns >= use_resolution_ns;
}

// A sound entry as --gc weighs it: its last use (its build's start when it
// was never hit, or when the store cannot tell) and its stored bytes.
struct WeighedEntry {
  std::string name; // the store's own: a file, a key, an object
  std::uint64_t stored = 0;
  std::int64_t last_used_ns = 0;
};

// An entry --gc removes, and why (for -v).
struct Removal {
  std::string name;
  std::string why;
};

// Which of `entries` go by `policy`: those unused for max_unused, then the
// least recently used until the rest add up to at most max_size. `since`
// names what last_used_ns is ("last used", or "built" for a store that
// cannot record use).
std::vector<Removal> by_use(std::vector<WeighedEntry> entries, const GcPolicy& policy,
                            std::string_view since = "last used");

// How a store's failures are said (messages.hpp). Each is given the
// values key, path and server (the store's place: SysError::path or
// where()) and error, and uses those it names.
struct StoreMessages {
  Msg corrupt;     // an entry found corrupt: rebuilt
  Msg unreadable;  // the store could not be read: a miss
  Msg not_stored;  // a build's output not stored
  Msg list_failed; // --list, --gc
  Msg drop_failed; // --drop
  // --list, --drop or --gc on a store that answered but cannot list
  // (SysError::refused): a usage error.
  Msg cannot_list;
};

// -v: the line of an entry that --gc or --drop removed (`h` its header,
// `where` the store's where() of it, `stored` its bytes), or, without `h`,
// of a file or object that is no entry (`where` names it); `why` it went.
void say_removed(const EntryHeader* h, const std::string& where, std::uint64_t stored, std::string_view why);

// One build's entry on its way into a store. Whatever is not published when
// it is destroyed is never servable.
class EntryBuild {
public:
  virtual ~EntryBuild() = default;
  // Appends stdout / stderr bytes; false after the first failure (then
  // error() says why, and nothing more is written).
  virtual bool append(const char* data, std::size_t len) = 0;
  virtual bool append_stderr(const char* data, std::size_t len) = 0;
  // Appends bytes of the outputs archive (--output), stored after stdout
  // and stderr: the first call ends them (no append() or append_stderr()
  // after it). Fails like append().
  virtual bool append_outputs(const char* data, std::size_t len) = 0;
  // Makes the entry visible at once and whole.
  virtual std::optional<SysError> publish() = 0;
  virtual const std::optional<SysError>& error() const = 0;
  // The published entry, ready to be served; nullopt (with error()) when it
  // cannot be read back.
  virtual std::optional<CachedEntry> entry() = 0;
  // The output outgrew --max-entry: not stored, and no error either.
  virtual bool too_large() const { return false; }
  // With too_large(), after publish(): the stored size it would have had.
  virtual std::uint64_t stored_size() const { return 0; }
  // After publish(): the header of the entry published (for its stored size).
  virtual const EntryHeader& header() const = 0;
};

// A build begun, or why it could not begin.
using BuildOrError = std::variant<std::unique_ptr<EntryBuild>, SysError>;

// A store of entries: the cache directory, a Redis server, an HTTP server
// (made by open_store, cache/open_store.hpp). Its errors are SysErrors whose
// `path` is the entry's path, or the server's address.
class EntryStore {
public:
  explicit EntryStore(const StoreMessages& messages) : messages_(messages) {}
  virtual ~EntryStore() = default;
  // Its name in --list --json ("file", "redis", "http").
  virtual std::string_view name() const = 0;
  // The directory or the server (password hidden), for messages.
  virtual std::string location() const = 0;
  const StoreMessages& messages() const { return messages_; }
  // Whether stdout and stderr are stored compressed, `asked` the --compress
  // option: where bytes cost memory and network, always.
  virtual bool compresses(bool asked) const { return asked; }
  // Whether --max-entry's default applies when it is not given (a store
  // whose memory holds the entries); else the store has a limit only when given.
  virtual bool limits_entries() const { return false; }
  // Where the entry of `key` at `address` (entry_address: the inputs and
  // the --output list) lives, for messages.
  virtual std::string where(std::string_view key, const Inputs& address) const = 0;
  // Makes the store ready for builds (creates the cache directory).
  virtual std::optional<SysError> prepare() const = 0;
  // The bytes an entry with header `h` takes in this store.
  virtual std::uint64_t stored_size(const EntryHeader& h) const { return h.file_size(); }
  // Finds and fully verifies the entry of `key` at `address`.
  virtual Lookup lookup(std::string_view key, const Inputs& address) const = 0;
  // lookup() for a caller that restores the entry's --output PATHs next if
  // `serves` says so of its header: a store may then extract them while it
  // reads the entry (CachedEntry::staged), instead of keeping their archive.
  using Serves = std::function<bool(const EntryHeader&)>;
  virtual Lookup lookup_to_restore(std::string_view key, const Inputs& address, const Serves& /*serves*/) const {
    return lookup(key, address);
  }
  // Whether the entry of `key` at `address` seems to be there: found with its
  // header alone (no descriptor), its body neither read nor verified; else
  // missing (or unreadable). Cheap: what a caller asks while it holds the
  // build lock, before it reads the entry with lookup() after the release.
  virtual Lookup peek(std::string_view key, const Inputs& address) const = 0;
  // The newest sound entry of `key` for any inputs, holding these --output
  // PATHs (--stale-if-error, --warm), fully verified: headers_of() weighed,
  // then read_candidate() of each, newest first (newest_readable's rules).
  virtual Lookup newest(std::string_view key, const std::vector<std::string>& outputs) const;
  // newest()'s full, verified read of a candidate that headers_of() found,
  // whatever its inputs.
  virtual Lookup read_candidate(std::string_view key, const StaleCandidate& c) const = 0;
  // The headers of every entry of `key` (and of entries whose names collide
  // with it: check the key), for any inputs and outputs, in no order; only
  // headers are read (what newest() weighs first, and what --explain
  // compares with). The unreadable Lookup when the store failed.
  using Headers = std::variant<std::vector<StaleCandidate>, Lookup>;
  virtual Headers headers_of(std::string_view key) const = 0;
  // Removes every entry of `key`, whatever its inputs; absent is fine.
  virtual std::optional<SysError> drop(std::string_view key) const = 0;
  // Every entry whose header and size are sound, in no particular order
  // (payloads are not read, so not verified).
  virtual std::variant<std::vector<ListedEntry>, SysError> list_entries() const = 0;
  // `inputs`: the digest of the dependencies as they are now (before the
  // build); the entry is filed at entry_address(inputs, what.outputs).
  virtual BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                   const BuildContents& what) const = 0;
  // --gc: removes what `policy` says, and what is no entry (corrupt
  // entries, leftovers of builds that ended); -v says what went. The error
  // of a store that could not be listed.
  virtual std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const = 0;
  // A hit served `e` (found by lookup): its use is recorded, at most once a
  // minute (use_worth_recording), by one local write or one command. Never
  // with --read-only; failures are not said (a use not recorded only makes
  // the entry look older to --gc).
  virtual void record_use(const CachedEntry& /*e*/) const {}
  // In a forked child: connections are not shared with the parent.
  virtual void after_fork() const {}

  // cache --stats (SPEC §21): where this store's counters are kept (set
  // once by open_store; none: nothing is counted).
  void keep_stats_in(std::unique_ptr<StatsSink> sink) { stats_ = std::move(sink); }
  // One call's count; never fails (a count not written is dropped).
  virtual void count(const CallCount& c) const {
    if (stats_) stats_->count(c);
  }
  // The counters: the totals and the keys that saved most.
  std::variant<StatsReport, SysError> stats() const;
  // Forgets them (--stats --zero).
  std::optional<SysError> zero_stats() const;
  // --gc: the counters kept in less room (StatsSink::compact).
  void compact_stats() const {
    if (stats_) stats_->compact();
  }

  // --sign-key: entries are signed when written, and served only when their
  // tag checks (else a miss, "corrupt"). Null: neither.
  virtual void sign_with(const EntrySigner* signer) { signer_ = signer; }
  const EntrySigner* signer() const { return signer_; }

  // A run warns once that a remote store failed it: a lookup that could
  // not read it says so, and a store that then fails too says nothing more.
  void note_unreadable() const { unreadable_ = true; }
  bool noted_unreadable() const { return unreadable_; }

protected:
  StoreMessages messages_;
  const EntrySigner* signer_ = nullptr;
  mutable bool unreadable_ = false;
  std::unique_ptr<StatsSink> stats_;
};

} // namespace bufferlock
