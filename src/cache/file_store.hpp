// The file store: one cache directory where entries are looked up, served,
// built and published atomically (a temporary file renamed into place),
// dropped, listed and garbage-collected.
#pragma once

#include "cache/store.hpp"

#include <memory>

namespace bufferlock {

class CacheStore final : public EntryStore {
public:
  explicit CacheStore(std::string dir);

  const std::string& dir() const { return dir_; }

  std::string_view name() const override { return "file"; }
  std::string location() const override { return dir_; }
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
  Headers headers_of(std::string_view key) const override;
  Lookup read_candidate(std::string_view key, const StaleCandidate& c) const override;

  // Removes every entry of `key`; absent is fine.
  std::optional<SysError> drop(std::string_view key) const override;

  // Every entry whose header and size are sound, in no particular order
  // (payloads are not read, so not verified).
  std::vector<ListedEntry> list() const;
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override { return list(); }

  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override;

  // Removes corrupt entries, entries older than max_age (when given), and
  // temporary files whose builder is gone (a builder holds a lock on its
  // temporary file, so a running build's file is never removed).
  GcCounts gc(std::optional<Nanos> max_age, std::int64_t now_ns) const;
  // That, then --max-unused and --max-size by last use (the entry file's
  // access time); the -v lines of each said; it never fails.
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;

  // Sets the entry file's access time (its last use) to now, unless it was
  // set less than a minute ago.
  void record_use(const CachedEntry& e) const override;

private:
  // The sound entries gc() kept, weighed, with their headers.
  using Weighed = std::vector<std::pair<WeighedEntry, EntryHeader>>;
  // gc(max_age, now_ns), the sound entries kept put in `kept` (when given).
  GcCounts sweep(std::optional<Nanos> max_age, std::int64_t now_ns, Weighed* kept) const;

  // The names of the entry files of `key` (any inputs).
  std::vector<std::string> names_of(std::string_view key) const;

  std::string dir_;
};

// The file store's build held by value, for callers that know the store
// (tests, tools): begin_build's, with entry() at hand.
class EntryWriter {
public:
  // `inputs`: the digest of the dependencies as they are now (before the
  // build). The entry is format version 3, with its build time.
  static std::variant<EntryWriter, SysError> create(const CacheStore& store, std::string_view key,
                                                    std::int64_t created_ns,
                                                    const Inputs& inputs = std::nullopt,
                                                    const BuildContents& what = {});

  bool append(const char* data, std::size_t len) { return b_->append(data, len); }
  bool append_stderr(const char* data, std::size_t len) { return b_->append_stderr(data, len); }
  bool append_outputs(const char* data, std::size_t len) { return b_->append_outputs(data, len); }
  std::optional<SysError> publish() { return b_->publish(); }
  const std::optional<SysError>& error() const { return b_->error(); }
  bool too_large() const { return b_->too_large(); }
  std::uint64_t stored_size() const { return b_->stored_size(); }
  const EntryHeader& header() const { return b_->header(); }
  // The published entry, readable through the build's descriptor.
  CachedEntry entry() { return std::move(*b_->entry()); }

private:
  explicit EntryWriter(std::unique_ptr<EntryBuild> b) : b_(std::move(b)) {}
  std::unique_ptr<EntryBuild> b_;
};

} // namespace bufferlock
