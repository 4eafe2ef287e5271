#include "cache/remote_object.hpp"

#include "cache/streamed_restore.hpp"
#include "messages.hpp"
#include "run/command.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/le.hpp"
#include "util/clock.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <cerrno>
#include <map>
#include <unordered_map>

namespace bufferlock {

namespace {

constexpr std::size_t tail_probe = 64 * 1024;         // the last bytes read for a header
constexpr std::size_t most_header = 16 * 1024 * 1024; // a larger one is no entry of ours

Lookup unreadable(std::string why) { return {LookupState::unreadable, {}, std::move(why)}; }
Lookup corrupt(std::string why) { return {LookupState::corrupt, {}, std::move(why)}; }
Lookup missing() { return {LookupState::missing, {}, {}}; }

// A range of the last `n` bytes: "-N".
std::string last_bytes(std::size_t n) {
  std::string range(1, '-');
  range += std::to_string(n);
  return range;
}

// A reply that brought no bytes, as a lookup.
Lookup not_read(const RangeReply& r) { return {r.state, {}, r.why}; }

Lookup write_failed() { return unreadable("cannot write a temporary file: " + errno_text(errno)); }

// The body of `t`'s object behind its header in `fd`.
Lookup read_body(const ObjectReader& r, const std::string& name, const ObjectTail& t, int fd) {
  const std::uint64_t body = t.header.body_len();
  if (t.bytes.size() < tail_probe) {
    // Shorter than the probe: the whole object is in hand already.
    const std::string_view got = std::string_view(t.bytes).substr(0, t.bytes.size() - t.size);
    if (got.size() != body) return corrupt(got.size() < body ? "truncated" : "longer than its header says");
    if (!write_all(fd, got)) return write_failed();
  } else if (body > 0) {
    const RangeReply got = r.get(name, fd, "0-" + std::to_string(body - 1));
    if (got.state != LookupState::found) return not_read(got);
    // A server that sent the whole object: its body is what counts.
    if (!got.ranged && (::ftruncate(fd, static_cast<off_t>(t.header_len() + body)) != 0 ||
                        ::lseek(fd, 0, SEEK_END) < 0))
      return write_failed();
  }
  return {LookupState::found, {}, {}};
}

} // namespace

std::string encode_object_footer(std::uint64_t header_len) {
  std::string out;
  put_le<std::uint64_t>(out, header_len);
  out += object_magic;
  return out;
}

std::optional<std::uint64_t> object_tail_size(std::string_view last, std::string& why) {
  if (last.size() < object_footer_size || !last.ends_with(object_magic)) {
    why = "not an entry";
    return std::nullopt;
  }
  const auto header_len = get_le<std::uint64_t>(last, last.size() - object_footer_size);
  if (header_len < entry_fixed_header || header_len > most_header) {
    why = "not an entry";
    return std::nullopt;
  }
  return header_len + entry_trailer + object_footer_size;
}

Lookup read_object_tail(const ObjectReader& r, const std::string& name, ObjectTail& out) {
  std::string last;
  RangeReply got = r.get(name, last, tail_probe, last_bytes(tail_probe));
  if (got.state != LookupState::found) return not_read(got);
  // A range, or the whole object from a server that ignores ranges: then
  // only an object shorter than the probe is whole.
  if (!got.ranged && last.size() >= tail_probe) return unreadable("the server does not answer range requests");
  std::string why;
  const auto size = object_tail_size(last, why);
  if (!size) return corrupt(why);
  if (*size > last.size()) {
    if (last.size() < tail_probe) return corrupt("truncated");
    if (*size > most_header) return corrupt("not an entry");
    last.clear();
    got = r.get(name, last, *size, last_bytes(*size));
    if (got.state != LookupState::found) return not_read(got);
    if (last.size() < *size) return corrupt("truncated");
  }
  out.bytes = std::move(last);
  out.size = *size;
  const std::string_view tail = out.tail();
  const std::string_view head = tail.substr(0, out.header_len());
  std::uint64_t payload_hash = 0, header_hash = 0;
  decode_trailer(tail.substr(head.size(), entry_trailer), payload_hash, header_hash);
  // Checked before its lengths say what to read.
  if (checksum(head) != header_hash) return corrupt("header checksum mismatch");
  auto h = decode_header(head, why);
  if (!h) return corrupt(why);
  if (h->header_size() != out.header_len()) return corrupt("header length mismatch");
  out.header = std::move(*h);
  return {LookupState::found, {}, {}};
}

Lookup peek_object(const ObjectReader& r, std::string_view key, const Inputs& address, const std::string& name) {
  ObjectTail t;
  Lookup l = read_object_tail(r, name, t);
  if (l.state == LookupState::unreadable) return l;
  if (l.state != LookupState::found || t.header.key != key || !t.header.filed_at(address))
    return {LookupState::missing, {}, {}};
  return {LookupState::found, CachedEntry{{}, std::move(t.header), {}}, {}};
}

std::variant<std::optional<ObjectHead>, std::string>
read_object_head(const ObjectReader& r, std::string name,
                 const std::function<std::string(const EntryHeader&)>& filed_name) {
  ObjectTail t;
  const Lookup l = read_object_tail(r, name, t);
  if (l.state == LookupState::missing) return std::nullopt; // gone meanwhile
  if (l.state == LookupState::unreadable) return l.why;
  std::optional<EntryHeader> h;
  if (l.state == LookupState::found) h = std::move(t.header);
  if (h && filed_name(*h) != name) h.reset();
  return ObjectHead{std::move(name), std::move(h)};
}

namespace {

// The body of `t`'s object into an unnamed file behind the header: an entry
// file, verified there.
Lookup read_whole(const ObjectReader& r, const std::string& name, const ObjectTail& t, const std::string& wanted,
                  const EntrySigner* signer) {
  const std::string_view tail = t.tail();
  UniqueFd fd = anonymous_file(t.header.file_size());
  if (!fd) return unreadable("cannot make a temporary file: " + errno_text(errno));
  if (!write_all(fd.get(), tail.substr(0, t.header_len()))) return write_failed();
  if (Lookup body = read_body(r, name, t, fd.get()); body.state != LookupState::found) return body;
  if (!write_all(fd.get(), tail.substr(t.header_len(), entry_trailer))) return write_failed();
  std::string why, bytes;
  auto verified = verify_entry(fd.get(), &wanted, why, &bytes, signer);
  if (verified) return {LookupState::found, CachedEntry{std::move(fd), std::move(*verified), std::move(bytes)}, {}};
  return corrupt(why);
}

// The body as it comes: stdout and stderr into an unnamed file behind the
// header, the outputs archive extracted beside its PATHs, all verified on
// the way (streamed_restore.hpp).
Lookup read_streamed_body(BodyDownload& d, const ObjectTail& t, const EntrySigner* signer) {
  const BodyRuns runs = [&](std::string& out) { return d.next(out); };
  const std::string_view tail = t.tail();
  StreamedRead got = read_streamed(runs, t.header, tail.substr(0, t.header_len()),
                                   tail.substr(t.header_len(), entry_trailer), signer);
  if (!got.short_body) {
    // Its end taken, so that the connection is kept (a 206 holds no more).
    for (std::string rest; got.lookup.state == LookupState::found && d.next(rest);) {
    }
    return std::move(got.lookup);
  }
  const RangeReply r = d.reply();
  if (r.state != LookupState::found) return not_read(r);
  return std::move(got.lookup); // a short body from a server that answered: truncated
}

} // namespace

// The tail first, then the body.
Lookup read_object_entry(const ObjectReader& r, std::string_view key, const std::string& name,
                         const EntrySigner* signer, const EntryStore::Serves* serves) {
  const std::string wanted(key);
  for (int attempt = 0;; ++attempt) {
    ObjectTail t;
    Lookup l = read_object_tail(r, name, t);
    if (l.state != LookupState::found) return l;
    // Another key whose MD5 collides is simply not ours: a miss, no warning.
    if (t.header.key != wanted) return missing();
    std::unique_ptr<BodyDownload> d;
    if (serves && t.header.outputs_len > 0 && t.bytes.size() >= tail_probe && (*serves)(t.header))
      d = r.download(name, "0-" + std::to_string(t.header.body_len() - 1));
    l = d ? read_streamed_body(*d, t, signer) : read_whole(r, name, t, wanted, signer);
    if (l.state != LookupState::corrupt || attempt > 0 || l.why == stopped_by_signal) return l;
    // A body that does not match its tail may be a new upload's, which
    // replaced the object between the two reads: once, read it again.
    ObjectTail again;
    if (read_object_tail(r, name, again).state != LookupState::found || again.tail() == t.tail()) return l;
  }
}

std::variant<std::vector<ListedEntry>, SysError> list_objects(const ObjectHeads& heads, const StoredSize& stored) {
  if (auto* e = std::get_if<SysError>(&heads)) return *e;
  std::vector<ListedEntry> out;
  for (const ObjectHead& h : std::get<std::vector<ObjectHead>>(heads))
    if (h.header) out.push_back(listed_entry(*h.header, stored(*h.header)));
  return out;
}

std::variant<GcCounts, SysError> gc_objects(
    const ObjectHeads& heads, const GcPolicy& policy,
    const std::function<std::optional<SysError>(const ObjectHead&, std::string_view why)>& remove,
    const StoredSize& stored, const std::string& place, const ObjectUses* uses) {
  if (auto* e = std::get_if<SysError>(&heads)) return *e;
  const bool by_use_asked = policy.max_size || policy.max_unused;
  std::map<std::string, std::int64_t> used;
  if (by_use_asked && uses) {
    auto read = uses->read();
    if (auto* e = std::get_if<SysError>(&read)) return *e;
    used = std::move(std::get<0>(read));
  }
  if (by_use_asked && !uses) diag::warn(message(Msg::cache_gc_by_age, {{"server", place}}));
  const auto& all = std::get<std::vector<ObjectHead>>(heads);
  GcCounts counts;
  std::vector<std::string> gone; // whose uses are forgotten
  std::vector<WeighedEntry> kept;
  std::unordered_map<std::string_view, const ObjectHead*> kept_heads;
  for (const ObjectHead& h : all) {
    const bool expired = h.header && policy.max_age &&
                         freshness(h.header->created_ns, policy.now_ns, policy.max_age, std::nullopt) ==
                             Freshness::expired;
    if (!h.header || expired) {
      if (auto e = remove(h, h.header ? "expired" : "corrupt")) return *e;
      ++counts.entries_removed;
      gone.push_back(h.name);
      continue;
    }
    const auto u = used.find(h.name);
    kept.push_back({h.name, stored(*h.header), u != used.end() ? u->second : h.header->created_ns});
    kept_heads.emplace(h.name, &h);
  }
  for (const auto& [name, when] : used) // objects gone by other hands
    if (!kept_heads.count(name)) gone.push_back(name);
  const std::vector<Removal> removals =
      by_use_asked ? by_use(std::move(kept), policy, uses ? "last used" : "built") : std::vector<Removal>();
  for (const Removal& r : removals) {
    if (auto e = remove(*kept_heads.at(r.name), r.why)) return *e;
    ++counts.entries_removed;
    gone.push_back(r.name);
  }
  if (uses) uses->forget(gone);
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done,
                   {{"entries", std::to_string(counts.entries_removed)}, {"temps", "0"}, {"path", place}});
  });
  return counts;
}

ObjectStore::ObjectStore(const StoreMessages& messages, std::unique_ptr<ObjectUses> uses)
    : EntryStore(messages), uses_(std::move(uses)) {}

ObjectStore::~ObjectStore() = default;

Lookup ObjectStore::lookup(std::string_view key, const Inputs& inputs) const {
  return read_object_entry(reader(), key, object_name(key, inputs), signer_);
}

Lookup ObjectStore::lookup_to_restore(std::string_view key, const Inputs& inputs, const Serves& serves) const {
  return read_object_entry(reader(), key, object_name(key, inputs), signer_, &serves);
}

Lookup ObjectStore::peek(std::string_view key, const Inputs& address) const {
  return peek_object(reader(), key, address, object_name(key, address));
}

EntryStore::Headers ObjectStore::headers_of(std::string_view key) const {
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return unreadable(listing_failed(*e));
  std::vector<StaleCandidate> candidates;
  for (ObjectHead& h : std::get<std::vector<ObjectHead>>(found))
    if (h.header) candidates.push_back({std::move(*h.header), std::move(h.name)});
  return candidates;
}

Lookup ObjectStore::read_candidate(std::string_view key, const StaleCandidate& c) const {
  return read_object_entry(reader(), key, c.name, signer_);
}

std::variant<std::vector<ListedEntry>, SysError> ObjectStore::list_entries() const {
  return list_objects(heads(""), [&](const EntryHeader& h) { return stored_size(h); });
}

void ObjectStore::record_use(const CachedEntry& e) const {
  if (uses_) uses_->record(object_name(e.header.key, e.header.address()), wall_clock_ns());
}

} // namespace bufferlock
