// The file store: one cache directory where entries are looked up, served,
// built and published atomically (a temporary file renamed into place),
// dropped, listed and garbage-collected.
#pragma once

#include "cache/compress.hpp"
#include "cache/store.hpp"
#include "util/checksum.hpp"

#include <memory>

namespace bufferlock {

class CacheStore final : public EntryStore {
public:
  explicit CacheStore(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  std::string_view name() const override { return "file"; }
  std::string location() const override { return dir_; }
  const StoreMessages& messages() const override;
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
  // Both, the -v lines of each said; it never fails.
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;

private:
  // The names of the entry files of `key` (any inputs).
  std::vector<std::string> names_of(std::string_view key) const;

  std::string dir_;
};

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
