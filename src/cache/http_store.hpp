// Entries on an HTTP server (--store http://..., SPEC §18): one object per
// entry address under the URL's path, named as the file store names its files:
//   PATH/<md5 of KEY>.entry               without inputs or outputs
//   PATH/<md5 of KEY>.<address hex>.entry with --depends or --output
//                                         (entry_address, cache/entry.hpp)
// An object holds an entry's bytes (cache/entry.hpp) with the header moved
// behind the body, so that a build can send its body while it is made,
// before the lengths in its header are known:
//   body (stdout, stderr, outputs archive) | header | trailer | footer
// the footer being 8 bytes of header length (little-endian) and the magic
// "BLCTAIL\n". A build's first full part starts one chunked PUT, which
// carries each part before the build goes on (an entry under one part goes
// with one PUT of known length); a build that fails or outgrows --max-entry
// abandons it, and the server keeps nothing. A hit reads the tail (a suffix
// range), then the body (a range) into an unnamed local file behind the
// header: an entry file, verified there before its first byte is served;
// a hit about to restore --output PATHs extracts their archive as it comes
// instead (lookup_to_restore, streamed_restore.hpp), put in place only once
// the whole object verified.
// Neither side holds an entry in memory, and a torn, cut or tampered object
// is a miss. The store holds data only: the build lock is the command line's.
// Listing (--list, --drop, --gc) is WebDAV PROPFIND, Depth: 1.
#pragma once

#include "cache/object_uses.hpp"
#include "cache/store.hpp"
#include "http/client.hpp"
#include "http/url.hpp"

#include <memory>
#include <optional>
#include <variant>

namespace bufferlock {

inline constexpr std::string_view object_magic = "BLCTAIL\n";
inline constexpr std::size_t object_footer_size = 16;

// The footer of an object whose header is `header_len` bytes.
std::string encode_object_footer(std::uint64_t header_len);
// The size of the tail (header, trailer, footer) of the object whose last
// bytes are `last`; nullopt, with `why`, when they end no object of ours.
std::optional<std::uint64_t> object_tail_size(std::string_view last, std::string& why);

class HttpStore final : public EntryStore {
public:
  // `uses`: where hits record the objects' last use (the -r Redis); null
  // without -r, when --gc weighs entries by their build.
  HttpStore(StoreUrl url, HttpSettings settings, std::unique_ptr<ObjectUses> uses = nullptr);

  std::string_view name() const override { return "http"; }
  std::string location() const override { return server(); }
  // Bytes cost the network: always compressed.
  bool compresses(bool) const override { return true; }
  std::string where(std::string_view key, const Inputs& inputs) const override;
  std::optional<SysError> prepare() const override { return std::nullopt; }
  std::uint64_t stored_size(const EntryHeader& h) const override {
    return h.file_size() + object_footer_size;
  }
  Lookup lookup(std::string_view key, const Inputs& inputs) const override;
  // The archive of --output PATHs extracted as the body comes (streamed_restore.hpp).
  Lookup lookup_to_restore(std::string_view key, const Inputs& inputs, const Serves& serves) const override;
  Lookup peek(std::string_view key, const Inputs& inputs) const override;
  Lookup newest(std::string_view key, const std::vector<std::string>& outputs) const override;
  std::optional<SysError> drop(std::string_view key) const override;
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override;
  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override;
  void after_fork() const override {
    client_.reset();
    if (uses_) uses_->after_fork();
  }

  // --gc: removes entries older than max_age (when given) and objects that
  // are no entries, then by last use (ObjectUses; without, by their build,
  // said once) those unused for max_unused and the least recently used
  // until the rest add up to at most max_size (when given).
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override;
  // With `uses`: the object's use, once a minute.
  void record_use(const CachedEntry& e) const override;

  // The URL as given, password hidden.
  const std::string& server() const { return url_.display; }
  std::string object_name(std::string_view key, const Inputs& inputs = std::nullopt) const;
  HttpClient& client() const;
  std::string object_url(const std::string& name) const { return url_.base + name; }

private:
  // The last bytes of an object, its tail among them, and its header.
  struct Tail {
    std::string bytes;
    std::uint64_t size = 0; // of the tail: header, trailer, footer
    EntryHeader header;
    std::string_view tail() const { return std::string_view(bytes).substr(bytes.size() - size); }
    std::size_t header_len() const { return size - entry_trailer - object_footer_size; }
  };
  // Reads the tail of object `name`: found, with `out` set, when it is
  // sound (its header decodes and its checksum matches).
  Lookup read_tail(const std::string& name, Tail& out) const;
  // A header read from the tail of an object, and the object's name.
  struct Head {
    std::string name;
    std::optional<EntryHeader> header; // nullopt: not an entry
  };
  // With `serves`: its outputs extracted on the way when it says so (lookup_to_restore).
  Lookup read_object(std::string_view key, const std::string& name, const Serves* serves = nullptr) const;
  // The body of the object `name` with tail `t`, into an entry file.
  Lookup read_body(const std::string& name, const Tail& t, const std::string& wanted) const;
  // The same, its outputs extracted as it comes.
  Lookup read_streamed_body(const std::string& name, const Tail& t) const;
  // The names of the entry objects under the URL's path; an error that is
  // `refused` when the server answered PROPFIND with another status than
  // 207 or 404: it cannot list (list_entries, drop and gc pass that on).
  std::variant<std::vector<std::string>, SysError> objects() const;
  // The header of each entry object whose name starts with `prefix`.
  std::variant<std::vector<Head>, SysError> heads(std::string_view prefix) const;
  // Removes object `name`; -v says so when it was there (`h`: its header
  // when known, `why`: why it goes).
  std::optional<SysError> remove(const std::string& name, const EntryHeader* h, std::string_view why) const;
  // The reason of a 401 answer to `request`, naming its status.
  std::string credentials_refused(const HttpReply& r, std::string_view request) const;

  StoreUrl url_;
  HttpSettings settings_;
  mutable std::unique_ptr<HttpClient> client_;
  std::unique_ptr<ObjectUses> uses_;
};

// The object names in a WebDAV multistatus document: the last segment of
// every href, percent-decoded (for tests).
std::vector<std::string> propfind_names(std::string_view xml);

} // namespace bufferlock
