// One cache directory: look entries up, serve them, build and publish them
// atomically, drop them, and collect garbage.
#pragma once

#include "cache/entry.hpp"
#include "util/checksum.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

// An entry file, open and verified.
struct CachedEntry {
  UniqueFd fd;
  EntryHeader header;
  std::string bytes; // the whole file, when verifying it took one read; else empty
};

enum class LookupState { missing, found, corrupt };

struct Lookup {
  LookupState state;
  CachedEntry entry; // with found
  std::string why;   // with corrupt: what is wrong
};

// What `cache --list` shows of an entry.
struct ListedEntry {
  std::int64_t created_ns;
  std::uint64_t size; // of the stored stdout
  std::string key;
};

// Whether a build stores its stderr too (--keep-stderr).
enum class KeepStderr { no, yes };

struct GcCounts {
  int entries_removed = 0;
  int temps_removed = 0;
};

class CacheStore {
public:
  explicit CacheStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // Creates the directory with its parents, the last component 0700.
  std::optional<SysError> prepare() const;

  // DIR/<md5 of key>.entry
  std::string entry_path(std::string_view key) const;

  // Opens and fully verifies the entry of `key`.
  Lookup lookup(std::string_view key) const;

  // Removes the entry of `key`; absent is fine.
  std::optional<SysError> drop(std::string_view key) const;

  // Every entry whose header and size are sound, in no particular order
  // (payloads are not read, so not verified).
  std::vector<ListedEntry> list() const;

  // Removes corrupt entries, entries older than max_age (when given), and
  // temporary files whose builder is gone (a builder holds a lock on its
  // temporary file, so a running build's file is never removed).
  GcCounts gc(std::optional<Nanos> max_age, std::int64_t now_ns) const;

private:
  std::string dir_;
};

// Verifies an open entry file: size, header, key (when `key` is given), and
// both checksums. nullopt, with `why`, when it is not a sound entry.
// With `whole_file`, a file small enough to be read at once is left there.
std::optional<EntryHeader> verify_entry(int fd, const std::string* key, std::string& why,
                                        std::string* whole_file = nullptr);

// Writes the stored stdout of an entry to `out_fd`, zero-copy (sendfile)
// where the kernel can. False when `out_fd` stopped taking data (a closed pipe).
bool serve_entry(const CachedEntry& e, int out_fd);

// The same for the stored stderr (--keep-stderr); nothing when there is none.
bool serve_entry_stderr(const CachedEntry& e, int err_fd);

// Builds an entry in a temporary file of the cache directory, then publishes
// it by rename(2): readers see the old entry or the whole new one.
class EntryWriter {
public:
  // `deps`: the dependencies as they are now (before the build). With
  // either dependencies or KeepStderr::yes the entry is format version 2.
  static std::variant<EntryWriter, SysError> create(const CacheStore& store, std::string_view key,
                                                    std::int64_t created_ns, std::vector<DepStamp> deps = {},
                                                    KeepStderr keep_stderr = KeepStderr::no);
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

  // Completes the file and renames it into place. Afterwards entry() serves it.
  std::optional<SysError> publish();

  const std::optional<SysError>& error() const { return error_; }
  // The published entry, readable through the writer's descriptor.
  CachedEntry entry();

private:
  EntryWriter() = default;
  void fail(int err);
  bool copy_stderr();

  std::string temp_path_;
  std::string final_path_;
  EntryHeader header_;
  UniqueFd fd_;
  UniqueFd stderr_fd_; // --keep-stderr: the stderr so far, in an unnamed file
  Checksum payload_hash_;
  std::optional<SysError> error_;
  bool published_ = false;
};

} // namespace bufferlock
