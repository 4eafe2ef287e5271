// Where entries live (EntryStore, EntryBuild: one interface for the recipe),
// and the file store: one cache directory where entries are looked up,
// served, built and published atomically, dropped, and garbage-collected.
#pragma once

#include "cache/compress.hpp"
#include "cache/entry.hpp"
#include "cache/sign.hpp"
#include "util/checksum.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

class StagedOutputs;

// An entry file, open and verified.
struct CachedEntry {
  UniqueFd fd;
  EntryHeader header;
  std::string bytes; // the whole file, when verifying it took one read; else empty
  // Its --output PATHs extracted while it was read (lookup_to_restore),
  // ready to be put in place; null: restored from the entry file.
  std::shared_ptr<StagedOutputs> staged = nullptr;
};

// unreadable: the store could not be asked (a Redis error); a miss, with a warning.
enum class LookupState { missing, found, corrupt, unreadable };

struct Lookup {
  LookupState state;
  CachedEntry entry; // with found
  std::string why;   // with corrupt or unreadable: what is wrong
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

// An entry that --stale-if-error might serve: its header, and where it lies
// (a file name, an object name, a Redis key).
struct StaleCandidate {
  EntryHeader header;
  std::string name;
};

// EntryStore::newest, once for every store: of the `candidates` that are
// KEY's with these --output PATHs, newest first, the first that `read`
// finds; one that `read` finds unreadable (the store failed) ends the search.
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
};

struct GcCounts {
  int entries_removed = 0;
  int temps_removed = 0;
};

// One entry file found by its name, for --gc --max-size.
struct SizedEntry {
  std::int64_t created_ns;
  std::uint64_t size; // of the file
  std::string name;
};

// -v: the line of an entry that --gc or --drop removed (`h` its header,
// `where` the store's where() of it, `stored` its bytes), or, without `h`,
// of a file or object that is no entry (`where` names it); `why` it went.
void say_removed(const EntryHeader* h, const std::string& where, std::uint64_t stored, std::string_view why);

// Which of `entries` to remove, oldest first, so that the rest add up to at
// most `max_size` bytes (the newest are kept).
std::vector<std::string> over_size(std::vector<SizedEntry> entries, std::uint64_t max_size);

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

// A store of entries: the cache directory, or a Redis server. Its errors are
// SysErrors whose `path` is the entry's path, or the Redis server's address
// when remote().
class EntryStore {
public:
  virtual ~EntryStore() = default;
  virtual bool remote() const = 0;
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
  // PATHs (--stale-if-error).
  virtual Lookup newest(std::string_view key, const std::vector<std::string>& outputs) const = 0;
  // Removes every entry of `key`, whatever its inputs; absent is fine.
  virtual std::optional<SysError> drop(std::string_view key) const = 0;
  // Every entry whose header and size are sound, in no particular order
  // (payloads are not read, so not verified).
  virtual std::variant<std::vector<ListedEntry>, SysError> list_entries() const = 0;
  // `inputs`: the digest of the dependencies as they are now (before the
  // build); the entry is filed at entry_address(inputs, what.outputs).
  virtual std::variant<std::unique_ptr<EntryBuild>, SysError> begin_build(std::string_view key,
                                                                          const Inputs& inputs,
                                                                          std::int64_t created_ns,
                                                                          const BuildContents& what) const = 0;
  // In a forked child: connections are not shared with the parent.
  virtual void after_fork() const {}

  // --sign-key: entries are signed when written, and served only when their
  // tag checks (else a miss, "corrupt"). Null: neither.
  void sign_with(const EntrySigner* signer) { signer_ = signer; }
  const EntrySigner* signer() const { return signer_; }

  // A run warns once that a remote store failed it: a lookup that could
  // not read it says so, and a store that then fails too says nothing more.
  void note_unreadable() const { unreadable_ = true; }
  bool noted_unreadable() const { return unreadable_; }

protected:
  const EntrySigner* signer_ = nullptr;
  mutable bool unreadable_ = false;
};

class CacheStore final : public EntryStore {
public:
  explicit CacheStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  bool remote() const override { return false; }
  std::string where(std::string_view key, const Inputs& inputs) const override {
    return entry_path(key, inputs);
  }

  // Creates the directory with its parents, the last component 0700; an
  // error too when it is there but cannot be written.
  std::optional<SysError> prepare() const override;

  // DIR/<md5 of key>.entry without an address, DIR/<md5 of key>.<address hex>.entry with.
  std::string entry_path(std::string_view key, const Inputs& address = std::nullopt) const;

  // Opens and fully verifies the entry of `key` at `address`.
  Lookup lookup(std::string_view key, const Inputs& address = std::nullopt) const override;
  Lookup peek(std::string_view key, const Inputs& address) const override;
  Lookup newest(std::string_view key, const std::vector<std::string>& outputs) const override;

  // Removes every entry of `key`; absent is fine.
  std::optional<SysError> drop(std::string_view key) const override;

  // Every entry whose header and size are sound, in no particular order
  // (payloads are not read, so not verified).
  std::vector<ListedEntry> list() const;
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override { return list(); }

  std::variant<std::unique_ptr<EntryBuild>, SysError> begin_build(std::string_view key,
                                                                  const Inputs& inputs,
                                                                  std::int64_t created_ns,
                                                                  const BuildContents& what) const override;

  // --gc --max-size: removes the oldest entries until the entry files add
  // up to at most `max_size` bytes; how many it removed.
  int trim(std::uint64_t max_size) const;

  // Removes corrupt entries, entries older than max_age (when given), and
  // temporary files whose builder is gone (a builder holds a lock on its
  // temporary file, so a running build's file is never removed).
  GcCounts gc(std::optional<Nanos> max_age, std::int64_t now_ns) const;

private:
  // The names of the entry files of `key` (any inputs).
  std::vector<std::string> names_of(std::string_view key) const;

  std::string dir_;
};

// Verifies an open entry file: size, header, key (when `key` is given), and
// both checksums. nullopt, with `why`, when it is not a sound entry.
// With `whole_file`, a file small enough to be read at once is left there.
// With `signer`, its tag is checked too, in the same pass over the body.
std::optional<EntryHeader> verify_entry(int fd, const std::string* key, std::string& why,
                                        std::string* whole_file = nullptr, const EntrySigner* signer = nullptr);

// Writes the stored stdout of an entry to `out_fd`, zero-copy (sendfile)
// where the kernel can, decompressed block by block when it is compressed.
// False when `out_fd` stopped taking data (a closed pipe) or a block is bad.
bool serve_entry(const CachedEntry& e, int out_fd);

// The same for the stored stderr (--keep-stderr); nothing when there is none.
bool serve_entry_stderr(const CachedEntry& e, int err_fd);

// Builds an entry in a temporary file of the cache directory, then publishes
// it by rename(2): readers see the old entry or the whole new one.
class EntryWriter {
public:
  // `inputs`: the digest of the dependencies as they are now (before the
  // build). With inputs or outputs the entry is format version 3; else
  // with KeepStderr::yes version 2; else version 1 (older binaries read it).
  static std::variant<EntryWriter, SysError> create(const CacheStore& store, std::string_view key,
                                                    std::int64_t created_ns,
                                                    const Inputs& inputs = std::nullopt,
                                                    const BuildContents& what = {});
  EntryWriter(EntryWriter&&) noexcept = default;
  EntryWriter& operator=(EntryWriter&&) noexcept = default;
  ~EntryWriter();

  // Appends payload bytes. After the first failure (disk full, file size
  // limit, ...) it stops writing, removes the temporary file and returns
  // false; error() says why.
  bool append(const char* data, std::size_t len);
  // Appends stderr bytes (held apart until publish(); ignored without
  // KeepStderr::yes). Fails like append().
  bool append_stderr(const char* data, std::size_t len);
  // Appends bytes of the outputs archive, behind stderr (the first call
  // completes stdout and stderr). Fails like append().
  bool append_outputs(const char* data, std::size_t len);

  // Completes the file and renames it into place. Afterwards entry() serves
  // it. Past --max-entry it publishes nothing (and is no error).
  std::optional<SysError> publish();

  const std::optional<SysError>& error() const { return error_; }
  // The output outgrew --max-entry: the temporary file is gone.
  bool too_large() const { return too_large_; }
  // The stored bytes so far, counted past --max-entry too.
  std::uint64_t stored_size() const { return stored_; }
  // The entry's header, complete once published.
  const EntryHeader& header() const { return header_; }
  // The published entry, readable through the writer's descriptor.
  CachedEntry entry();

private:
  EntryWriter() = default;
  void fail(int err);
  // Counts stored bytes; false once past --max-entry (then only counting).
  bool count(std::uint64_t len);
  bool copy_behind(int src, std::uint64_t len);
  // Completes stdout (compression) and puts the held stderr behind it; once.
  bool end_streams();
  // Writes body bytes, hashing them; false (with fail()) when it could not.
  bool write_body(const char* data, std::size_t len);
  // Stored bytes (raw, or compressed blocks) of stdout / held stderr.
  bool store_stdout(const char* data, std::size_t len);
  bool store_stderr(const char* data, std::size_t len);
  // The stdout and stderr compressors (--compress); the second is null
  // without KeepStderr::yes. A writer is not moved once it took data.
  std::pair<BlockCompressor*, BlockCompressor*> compressors();
  // Completes the compressed streams, noting what they became in the header.
  bool finish_compression();

  std::string temp_path_;
  std::string final_path_;
  EntryHeader header_;
  UniqueFd fd_;
  UniqueFd stderr_fd_; // --keep-stderr: the stderr so far, in an unnamed file
  Checksum payload_hash_;
  std::unique_ptr<EntryMac> mac_; // --sign-key: the tag so far
  std::unique_ptr<BlockCompressor> stdout_z_, stderr_z_; // --compress
  std::optional<SysError> error_;
  bool streams_ended_ = false;
  std::optional<std::uint64_t> max_entry_;
  bool keep_stderr_ = false;
  std::uint64_t stored_ = 0;
  bool too_large_ = false;
  bool published_ = false;
};

} // namespace bufferlock
