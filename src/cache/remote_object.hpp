// What the stores that keep an entry as one object on a server (http, s3)
// share: the object's layout, its reading by ranged GETs, and --gc over
// its listing. An object holds an entry's bytes (cache/entry.hpp) with the
// header moved behind the body, so that a build can send its body while it
// is made, before the lengths in its header are known:
//   body (stdout, stderr, outputs archive) | header | trailer | footer
// the footer being 8 bytes of header length (little-endian) and the magic
// "BLCTAIL\n". A hit reads the tail (a suffix range), then the body (a
// range) into an unnamed local file behind the header: an entry file,
// verified there before its first byte is served; or, for a hit about to
// restore its --output PATHs, the archive extracted as it comes.
#pragma once

#include "cache/object_uses.hpp"
#include "cache/store.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bufferlock {

inline constexpr std::string_view object_magic = "BLCTAIL\n";
inline constexpr std::size_t object_footer_size = 16;

// The footer of an object whose header is `header_len` bytes.
std::string encode_object_footer(std::uint64_t header_len);
// The size of the tail (header, trailer, footer) of the object whose last
// bytes are `last`; nullopt, with `why`, when they end no object of ours.
std::optional<std::uint64_t> object_tail_size(std::string_view last, std::string& why);

// What a ranged GET came to: found (bytes came; `ranged` when the answer
// was the range alone, not the whole object), missing, or unreadable (why).
struct RangeReply {
  LookupState state = LookupState::found;
  bool ranged = true;
  std::string why;
};

// A ranged GET whose body is taken as it comes (a streamed restore).
class BodyDownload {
public:
  virtual ~BodyDownload() = default;
  // The next bytes of the body, in place of `out`'s; false at its end or
  // once the request failed (reply() says which).
  virtual bool next(std::string& out) = 0;
  virtual RangeReply reply() const = 0;
};

// A store's ranged GETs of its objects: `range` is "-N" (the last N bytes)
// or "FIRST-LAST".
class ObjectReader {
public:
  virtual ~ObjectReader() = default;
  // A GET of `range` taken in runs; null where the store has none (its
  // body then lands in an unnamed file first).
  virtual std::unique_ptr<BodyDownload> download(const std::string& /*name*/, const std::string& /*range*/) const {
    return nullptr;
  }
  // Into `out`, at most `most` bytes.
  virtual RangeReply get(const std::string& name, std::string& out, std::size_t most,
                         const std::string& range) const = 0;
  // Appended to `fd`.
  virtual RangeReply get(const std::string& name, int fd, const std::string& range) const = 0;
};

// The last bytes of an object, its tail among them, and its header.
struct ObjectTail {
  std::string bytes;
  std::uint64_t size = 0; // of the tail: header, trailer, footer
  EntryHeader header;
  std::string_view tail() const { return std::string_view(bytes).substr(bytes.size() - size); }
  std::size_t header_len() const { return size - entry_trailer - object_footer_size; }
};

// Reads the tail of object `name`: found, with `out` set, when it is sound
// (its header decodes and its checksum matches).
Lookup read_object_tail(const ObjectReader& r, const std::string& name, ObjectTail& out);
// The entry of `key` in object `name`, read and verified (`signer`: --sign-key).
// With `serves`, an entry it says is served next has its --output archive
// extracted as the body comes, where the reader can download in runs
// (streamed_restore.hpp), put in place only once the whole object verified.
Lookup read_object_entry(const ObjectReader& r, std::string_view key, const std::string& name,
                         const EntrySigner* signer, const EntryStore::Serves* serves = nullptr);

// EntryStore::peek of an object store: the header of the entry of `key`
// filed at `address` in object `name`, read from its tail alone.
Lookup peek_object(const ObjectReader& r, std::string_view key, const Inputs& address, const std::string& name);

// A listed object, with its header when it is an entry.
struct ObjectHead {
  std::string name;
  std::optional<EntryHeader> header; // nullopt: not an entry
};

// The head of listed object `name`, read from its tail: nullopt when it is
// gone meanwhile, the reason when it cannot be read. `filed_name` is the
// object an entry's key and inputs are filed under: an entry in another
// object is not one of this store.
std::variant<std::optional<ObjectHead>, std::string>
read_object_head(const ObjectReader& r, std::string name,
                 const std::function<std::string(const EntryHeader&)>& filed_name);

// A store's listed objects, or why they could not be listed.
using ObjectHeads = std::variant<std::vector<ObjectHead>, SysError>;
// The bytes an entry takes in a store.
using StoredSize = std::function<std::uint64_t(const EntryHeader&)>;

// --list over a store's listed objects: its entries.
std::variant<std::vector<ListedEntry>, SysError> list_objects(const ObjectHeads& heads, const StoredSize& stored);

// --gc over a store's listed objects: those that are no entries, or older
// than policy.max_age, go; then by last use (`uses`, where the store has a
// record of them; else by build, said once) those unused for
// policy.max_unused, and the least recently used until the rest add up to
// policy.max_size. `remove` removes one (`why` it goes); `stored` is the
// store's size of an entry; -v's last line names the store's `place`.
std::variant<GcCounts, SysError> gc_objects(
    const ObjectHeads& heads, const GcPolicy& policy,
    const std::function<std::optional<SysError>(const ObjectHead&, std::string_view why)>& remove,
    const StoredSize& stored, const std::string& place, const ObjectUses* uses = nullptr);

// What the stores of objects (http, s3) share: an entry is the object
// object_name() names, read through reader() (its ranged GETs), found by
// heads() (the store's listing), and its hits' last uses kept in the -r
// Redis (ObjectUses) when there is one. A store adds its requests: listing,
// writing, removing, and what it says of them.
class ObjectStore : public EntryStore {
public:
  ObjectStore(const StoreMessages& messages, std::unique_ptr<ObjectUses> uses);
  ~ObjectStore() override;

  // Bytes cost the network: always compressed.
  bool compresses(bool) const override { return true; }
  std::optional<SysError> prepare() const override { return std::nullopt; }
  std::uint64_t stored_size(const EntryHeader& h) const override { return h.file_size() + object_footer_size; }
  Lookup lookup(std::string_view key, const Inputs& inputs) const override;
  // The archive of --output PATHs extracted as the body comes, where the
  // reader downloads in runs.
  Lookup lookup_to_restore(std::string_view key, const Inputs& inputs, const Serves& serves) const override;
  // The tail alone: one small range request.
  Lookup peek(std::string_view key, const Inputs& inputs) const override;
  Headers headers_of(std::string_view key) const override;
  Lookup read_candidate(std::string_view key, const StaleCandidate& c) const override;
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override;
  // With `uses`: the object's use, once a minute.
  void record_use(const CachedEntry& e) const override;

  // The object of the entry of `key` at `inputs` (entry_address): its name
  // on the server, or its key in the bucket.
  virtual std::string object_name(std::string_view key, const Inputs& inputs = std::nullopt) const = 0;

protected:
  virtual const ObjectReader& reader() const = 0;
  // The entry objects whose names start with `start`, with their headers.
  virtual ObjectHeads heads(std::string_view start) const = 0;
  // What a lookup says of a listing that failed.
  virtual std::string listing_failed(const SysError& e) const { return e.reason; }

  std::unique_ptr<ObjectUses> uses_;
};

} // namespace bufferlock
