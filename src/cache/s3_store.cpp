#include "cache/s3_store.hpp"

#include "cache/http_store.hpp" // the object layout: encode_object_footer, object_tail_size
#include "cache/streamed_build.hpp"
#include "messages.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <cerrno>
#include <unordered_map>

namespace bufferlock {

namespace {

constexpr std::size_t tail_probe = 64 * 1024;         // the last bytes read for a header
constexpr std::size_t most_header = 16 * 1024 * 1024; // a larger one is no entry of ours
constexpr int most_parts = 10000;                     // S3's limit

Lookup unreadable(std::string why) { return {LookupState::unreadable, {}, std::move(why)}; }
Lookup missing() { return {LookupState::missing, {}, {}}; }

// A range of the last `n` bytes: "-N".
std::string last_bytes(std::size_t n) {
  std::string range(1, '-');
  range += std::to_string(n);
  return range;
}

// A build sent as it is made (s3_store.hpp).
class S3Build final : public StreamedBuild {
public:
  S3Build(const S3Store& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
          const BuildContents& what)
      : StreamedBuild(store, key, inputs, created_ns, what, S3Store::part_size), store_(store),
        object_(store.object_key(key, entry_address(inputs, what.outputs))) {}

  // Not completed: the upload goes, parts and all.
  ~S3Build() override { abort(); }

private:
  bool send_part(std::string& p) override {
    if (upload_id_.empty()) {
      const s3::Reply r = store_.client().begin_upload(object_, upload_id_);
      if (!r.ok()) return failed(r);
    }
    if (etags_.size() + 1 >= most_parts) {
      fail(SysError{store_.location(), "the entry needs more than " + std::to_string(most_parts) + " parts"});
      return false;
    }
    std::string etag;
    const s3::Reply r = store_.client().send_part(object_, upload_id_, static_cast<int>(etags_.size() + 1), p, etag);
    if (!r.ok()) return failed(r);
    etags_.push_back(std::move(etag));
    return true;
  }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    last_part += head;
    last_part += trailer;
    last_part += encode_object_footer(head.size());
    if (upload_id_.empty()) { // one part in all: one PUT
      const s3::Reply r = store_.client().put(object_, last_part);
      if (!r.ok()) return SysError{store_.location(), r.text()};
      return std::nullopt;
    }
    if (!send_part(last_part)) return error();
    const s3::Reply r = store_.client().complete_upload(object_, upload_id_, etags_);
    if (!r.ok()) return SysError{store_.location(), r.text()};
    upload_id_.clear(); // an object now: nothing to abort
    return std::nullopt;
  }

  void abandon() override { abort(); }

  bool failed(const s3::Reply& r) {
    fail(SysError{store_.location(), r.text()});
    return false;
  }

  void abort() {
    if (upload_id_.empty()) return;
    const s3::Reply r = store_.client().abort_upload(object_, upload_id_);
    diag::debug_lazy([&] {
      return message(Msg::cache_s3_upload_aborted,
                     {{"server", store_.location()}, {"object", object_}, {"error", r.ok() ? "done" : r.text()}});
    });
    upload_id_.clear();
    etags_.clear();
  }

  const S3Store& store_;
  std::string object_;
  std::string upload_id_; // a multipart upload under way
  std::vector<std::string> etags_; // of the parts sent
};

} // namespace

constexpr StoreMessages s3_messages{Msg::cache_redis_entry_corrupt, Msg::cache_redis_read_failed,
                                    Msg::cache_s3_store_failed,     Msg::cache_s3_list_failed,
                                    Msg::cache_s3_drop_failed,      Msg::cache_s3_list_failed};

S3Store::S3Store(s3::Settings settings)
    : EntryStore(s3_messages),
      display_("s3://" + settings.location.bucket + "/" + settings.location.prefix),
      client_(std::move(settings)) {}

std::size_t S3Store::Tail::header_len() const { return size - entry_trailer - object_footer_size; }

std::uint64_t S3Store::stored_size(const EntryHeader& h) const { return h.file_size() + object_footer_size; }

std::string S3Store::object_key(std::string_view key, const Inputs& inputs) const {
  return client_.settings().location.prefix + entry_file_name(key, inputs);
}

std::string S3Store::where(std::string_view key, const Inputs& inputs) const {
  return "S3 store " + display_ + ", object " + object_key(key, inputs);
}

Lookup S3Store::lookup(std::string_view key, const Inputs& inputs) const {
  return read_object(key, object_key(key, inputs));
}

Lookup S3Store::peek(std::string_view key, const Inputs& address) const {
  Tail t;
  Lookup l = read_tail(object_key(key, address), t);
  if (l.state == LookupState::unreadable) return l;
  if (l.state != LookupState::found || t.header.key != key || !t.header.filed_at(address)) return missing();
  return {LookupState::found, CachedEntry{{}, std::move(t.header), {}}, {}};
}

Lookup S3Store::failed_read(const s3::Reply& r) const {
  if (r.missing() || (r.error.empty() && r.status == 403 && !r.refused())) return missing();
  if (r.error.empty() && r.status == 416) return {LookupState::corrupt, {}, "not an entry"}; // empty
  return unreadable(r.text());
}

Lookup S3Store::read_tail(const std::string& object, Tail& out) const {
  std::string last;
  s3::Reply r = client_.get(object, last, tail_probe, last_bytes(tail_probe));
  if (!r.ok()) return failed_read(r);
  // 206, or 200 with the whole object: then only one shorter than the probe is whole.
  if (r.status != 206 && last.size() >= tail_probe) return unreadable("the server does not answer range requests");
  std::string why;
  const auto size = object_tail_size(last, why);
  if (!size) return {LookupState::corrupt, {}, why};
  if (*size > last.size()) {
    if (last.size() < tail_probe) return {LookupState::corrupt, {}, "truncated"};
    if (*size > most_header) return {LookupState::corrupt, {}, "not an entry"};
    last.clear();
    r = client_.get(object, last, *size, last_bytes(*size));
    if (!r.ok()) return failed_read(r);
    if (last.size() < *size) return {LookupState::corrupt, {}, "truncated"};
  }
  out.bytes = std::move(last);
  out.size = *size;
  const std::string_view tail = out.tail();
  const std::string_view head = tail.substr(0, out.header_len());
  std::uint64_t payload_hash = 0, header_hash = 0;
  decode_trailer(tail.substr(head.size(), entry_trailer), payload_hash, header_hash);
  if (checksum(head) != header_hash) return {LookupState::corrupt, {}, "header checksum mismatch"};
  auto h = decode_header(head, why);
  if (!h) return {LookupState::corrupt, {}, why};
  if (h->header_size() != out.header_len()) return {LookupState::corrupt, {}, "header length mismatch"};
  out.header = std::move(*h);
  return {LookupState::found, {}, {}};
}

// The tail first, then the body into an unnamed file behind the header:
// an entry file, verified there.
Lookup S3Store::read_object(std::string_view key, const std::string& object) const {
  const std::string wanted(key);
  for (int attempt = 0;; ++attempt) {
    Tail t;
    Lookup l = read_tail(object, t);
    if (l.state != LookupState::found) return l;
    if (t.header.key != wanted) return missing(); // another key with the same MD5
    const std::string_view tail = t.tail();
    const std::uint64_t body = t.header.body_len();
    UniqueFd fd = anonymous_file(t.header.file_size());
    if (!fd) return unreadable("cannot make a temporary file: " + errno_text(errno));
    if (!write_all(fd.get(), tail.substr(0, t.header_len())))
      return unreadable("cannot write a temporary file: " + errno_text(errno));
    if (t.bytes.size() < tail_probe) {
      // Shorter than the probe: the whole object is in hand already.
      const std::string_view got = std::string_view(t.bytes).substr(0, t.bytes.size() - t.size);
      if (got.size() != body)
        return {LookupState::corrupt, {}, got.size() < body ? "truncated" : "longer than its header says"};
      if (!write_all(fd.get(), got)) return unreadable("cannot write a temporary file: " + errno_text(errno));
    } else if (body > 0) {
      const s3::Reply r = client_.get(object, fd.get(), "0-" + std::to_string(body - 1));
      if (!r.ok()) return failed_read(r);
      if (r.status != 206) return unreadable("the server does not answer range requests");
    }
    if (!write_all(fd.get(), tail.substr(t.header_len(), entry_trailer)))
      return unreadable("cannot write a temporary file: " + errno_text(errno));
    std::string why, bytes;
    auto verified = verify_entry(fd.get(), &wanted, why, &bytes, signer_);
    if (verified) return {LookupState::found, CachedEntry{std::move(fd), std::move(*verified), std::move(bytes)}, {}};
    // The object may have been replaced between the two reads: once, read it again.
    if (attempt == 0) {
      Tail again;
      if (read_tail(object, again).state == LookupState::found && again.tail() != tail) continue;
    }
    return {LookupState::corrupt, {}, why};
  }
}

std::variant<std::vector<S3Store::Head>, SysError> S3Store::heads(std::string_view start) const {
  const std::string& prefix = client_.settings().location.prefix;
  std::vector<s3::Object> objects;
  const s3::Reply r = client_.list(prefix + std::string(start), objects);
  if (!r.ok()) return SysError{display_, "ListObjectsV2: " + r.text()};
  std::vector<Head> out;
  for (s3::Object& o : objects) {
    const std::string_view name = std::string_view(o.key).substr(prefix.size());
    if (!is_entry_file_name(name)) continue;
    Tail t;
    const Lookup l = read_tail(o.key, t);
    if (l.state == LookupState::missing) continue; // gone meanwhile
    if (l.state == LookupState::unreadable) return SysError{display_, l.why};
    std::optional<EntryHeader> h;
    if (l.state == LookupState::found) h = std::move(t.header);
    // Filed under another name than its own: not an entry of this store.
    if (h && object_key(h->key, h->address()) != o.key) h.reset();
    out.push_back({std::move(o.key), std::move(h)});
  }
  return out;
}

std::optional<SysError> S3Store::remove(const std::string& object, const EntryHeader* h,
                                        std::string_view why) const {
  const s3::Reply r = client_.del(object);
  if (r.missing()) return std::nullopt;
  if (!r.ok()) return SysError{display_, "DELETE: " + r.text()};
  say_removed(h, h ? where(h->key, h->address()) : "S3 store " + display_ + ", object " + object,
              h ? stored_size(*h) : 0, why);
  return std::nullopt;
}

Lookup S3Store::newest(std::string_view key, const std::vector<std::string>& outputs) const {
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return unreadable(e->reason);
  std::vector<StaleCandidate> candidates;
  for (Head& h : std::get<std::vector<Head>>(found))
    if (h.header) candidates.push_back({std::move(*h.header), std::move(h.key)});
  return newest_readable(key, outputs, std::move(candidates),
                         [&](const StaleCandidate& c) { return read_object(key, c.name); });
}

std::optional<SysError> S3Store::drop(std::string_view key) const {
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  std::vector<Head>& all = std::get<std::vector<Head>>(found);
  // Also when the listing missed it (stored meanwhile).
  if (std::none_of(all.begin(), all.end(), [&](const Head& h) { return h.key == object_key(key); }))
    all.push_back({object_key(key), std::nullopt});
  for (const Head& h : all)
    if (auto e = remove(h.key, h.header ? &*h.header : nullptr, "dropped")) return e;
  return std::nullopt;
}

std::variant<std::vector<ListedEntry>, SysError> S3Store::list_entries() const {
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  std::vector<ListedEntry> out;
  for (const Head& h : std::get<std::vector<Head>>(found))
    if (h.header) out.push_back(listed_entry(*h.header, stored_size(*h.header)));
  return out;
}

std::variant<GcCounts, SysError> S3Store::gc(const GcPolicy& policy) const {
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  const auto& all = std::get<std::vector<Head>>(found);
  GcCounts counts;
  std::vector<SizedEntry> kept;
  std::unordered_map<std::string_view, const EntryHeader*> header_of;
  for (const Head& h : all) {
    const bool expired =
        h.header && policy.max_age &&
        freshness(h.header->created_ns, policy.now_ns, policy.max_age, std::nullopt) == Freshness::expired;
    if (!h.header || expired) {
      if (auto e = remove(h.key, h.header ? &*h.header : nullptr, h.header ? "expired" : "corrupt")) return *e;
      ++counts.entries_removed;
      continue;
    }
    kept.push_back({h.header->created_ns, stored_size(*h.header), h.key});
    header_of.emplace(h.key, &*h.header);
  }
  if (policy.max_size)
    for (const auto& key : over_size(std::move(kept), *policy.max_size)) {
      if (auto e = remove(key, header_of.at(key), "over --max-size (oldest)")) return *e;
      ++counts.entries_removed;
    }
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done,
                   {{"entries", std::to_string(counts.entries_removed)}, {"temps", "0"}, {"path", display_}});
  });
  return counts;
}

BuildOrError S3Store::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                  const BuildContents& what) const {
  return start_build<S3Build>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
