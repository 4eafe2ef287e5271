#include "cache/http_store.hpp"

#include "cache/streamed_build.hpp"
#include "cache/streamed_restore.hpp"
#include "messages.hpp"
#include "redis/url.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/le.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <map>
#include <unordered_map>

namespace bufferlock {

namespace {

constexpr std::size_t part = 1024 * 1024;             // the body goes out in parts of this size
constexpr std::size_t tail_probe = 64 * 1024;         // the last bytes read for a header
constexpr std::size_t most_header = 16 * 1024 * 1024; // a larger one is no entry of ours
constexpr std::size_t most_listing = 64 * 1024 * 1024;

Lookup unreadable(std::string why) { return {LookupState::unreadable, {}, std::move(why)}; }

// A build sent as it is made (http_store.hpp).
class HttpBuild final : public StreamedBuild {
public:
  HttpBuild(const HttpStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
            const BuildContents& what)
      : StreamedBuild(store, key, inputs, created_ns, what, part), store_(store),
        name_(store.object_name(key, entry_address(inputs, what.outputs))) {}

private:
  // The first full part starts the upload; each part is on its way to the
  // server before the build goes on. A server that wants a length first
  // gets the body spooled instead, and one PUT of known length at the end.
  bool send_part(std::string& p) override {
    if (spool_) return spool(p);
    if (!upload_) upload_ = store_.client().upload(store_.object_url(name_));
    if (upload_->send(p.data(), p.size())) return true;
    const HttpReply& r = upload_->reply();
    // Refused while the first part, still in hand, was all there was: S3
    // answers a chunked PUT with 501, bazel-remote with 400, others 411.
    if (parts_sent() == 0 && r.error.empty() && (r.status == 400 || r.status == 411 || r.status == 501)) {
      upload_.reset();
      spool_ = anonymous_file(std::numeric_limits<std::uint64_t>::max());
      if (!spool_) {
        fail(SysError{"a temporary file", errno_text(errno)});
        return false;
      }
      return spool(p);
    }
    fail(SysError{store_.server(), r.text()});
    upload_.reset();
    return false;
  }

  bool spool(std::string_view bytes) {
    if (write_all(spool_.get(), bytes.data(), bytes.size())) {
      spooled_ += bytes.size();
      return true;
    }
    fail(SysError{"a temporary file", errno_text(errno)});
    return false;
  }

  bool send(std::string_view bytes) {
    if (upload_->send(bytes.data(), bytes.size())) return true;
    fail(SysError{store_.server(), upload_->reply().text()});
    upload_.reset();
    return false;
  }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    const std::string footer = encode_object_footer(head.size());
    // Less than a part in all, or a server that wants a length first.
    if (!upload_) return put_whole(last_part + head + trailer + footer);
    if (!send(last_part) || !send(head) || !send(trailer) || !send(footer)) return error();
    const HttpReply r = upload_->finish();
    upload_.reset();
    if (!r.ok()) return SysError{store_.server(), r.text()};
    return std::nullopt;
  }

  // One PUT of known length: the spool (if any), then `rest`.
  std::optional<SysError> put_whole(const std::string& rest) {
    const std::uint64_t total = spooled_ + rest.size();
    std::uint64_t at = 0;
    const HttpClient::Source read = [&](char* buf, std::size_t want, std::size_t& got) {
      if (at < spooled_) {
        const ssize_t r = ::pread(spool_.get(), buf, static_cast<std::size_t>(std::min<std::uint64_t>(want, spooled_ - at)),
                                  static_cast<off_t>(at));
        if (r <= 0) {
          if (r == 0) errno = EIO;
          return false;
        }
        got = static_cast<std::size_t>(r);
      } else {
        got = rest.copy(buf, want, static_cast<std::size_t>(at - spooled_));
      }
      at += got;
      return true;
    };
    const HttpReply r = store_.client().put(store_.object_url(name_), total, read);
    spool_.reset();
    if (!r.ok()) return SysError{store_.server(), r.text()};
    return std::nullopt;
  }

  // Past --max-entry: the upload is abandoned, so the server keeps nothing;
  // a spool gives its blocks back.
  void abandon() override {
    upload_.reset();
    spool_.reset();
    spooled_ = 0;
  }

  const HttpStore& store_;
  std::string name_;
  std::unique_ptr<HttpClient::Upload> upload_; // from the first full part on
  UniqueFd spool_;                             // a server that refused a chunked PUT
  std::uint64_t spooled_ = 0;
};

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

std::vector<std::string> propfind_names(std::string_view xml) {
  std::vector<std::string> out;
  // <D:href>...</D:href>, whatever the namespace prefix (or none).
  for (std::size_t at = xml.find("href>"); at != std::string_view::npos; at = xml.find("href>", at)) {
    const std::size_t open = xml.rfind('<', at);
    at += 5;
    if (open == std::string_view::npos || xml[open + 1] == '/' ||
        xml.substr(open + 1, at - 5 - open - 1).find_first_of(" </>") != std::string_view::npos)
      continue;
    const std::size_t close = xml.find('<', at);
    if (close == std::string_view::npos) break;
    std::string_view href = xml.substr(at, close - at);
    if (href.ends_with('/')) continue; // a collection
    const std::size_t slash = href.rfind('/');
    if (slash != std::string_view::npos) href = href.substr(slash + 1);
    if (auto name = percent_decode(href)) out.push_back(std::move(*name));
    at = close;
  }
  return out;
}

constexpr StoreMessages http_messages{Msg::cache_redis_entry_corrupt, Msg::cache_redis_read_failed,
                                      Msg::cache_http_store_failed,   Msg::cache_http_list_failed,
                                      Msg::cache_http_drop_failed,    Msg::cache_http_cannot_list};

HttpStore::HttpStore(StoreUrl url, HttpSettings settings, std::unique_ptr<ObjectUses> uses)
    : EntryStore(http_messages), url_(std::move(url)), settings_(std::move(settings)),
      uses_(std::move(uses)) {
  settings_.user = url_.user;
  settings_.password = url_.password;
}

HttpClient& HttpStore::client() const {
  if (!client_) client_ = std::make_unique<HttpClient>(settings_);
  return *client_;
}

std::string HttpStore::object_name(std::string_view key, const Inputs& inputs) const {
  return entry_file_name(key, inputs);
}

std::string HttpStore::where(std::string_view key, const Inputs& inputs) const {
  return "HTTP store at " + server() + ", object " + object_name(key, inputs);
}

Lookup HttpStore::lookup(std::string_view key, const Inputs& inputs) const {
  return read_object(key, object_name(key, inputs));
}

Lookup HttpStore::lookup_to_restore(std::string_view key, const Inputs& inputs, const Serves& serves) const {
  return read_object(key, object_name(key, inputs), &serves);
}

// The tail alone: one small range request.
Lookup HttpStore::peek(std::string_view key, const Inputs& address) const {
  Tail t;
  Lookup l = read_tail(object_name(key, address), t);
  if (l.state == LookupState::unreadable) return l;
  if (l.state != LookupState::found || t.header.key != key || !t.header.filed_at(address))
    return {LookupState::missing, {}, {}};
  return {LookupState::found, CachedEntry{{}, std::move(t.header), {}}, {}};
}

Lookup HttpStore::read_tail(const std::string& name, Tail& out) const {
  const std::string url = object_url(name);
  std::string last;
  HttpReply r = client().get(url, last, tail_probe, "-" + std::to_string(tail_probe));
  if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, {}, {}};
  if (!r.ok()) return unreadable(r.text());
  // 206, or 200 from a server that sends the whole object instead: then
  // only an object shorter than the probe is whole.
  if (r.status != 206 && last.size() >= tail_probe) return unreadable("the server does not answer range requests");
  std::string why;
  const auto size = object_tail_size(last, why);
  if (!size) return {LookupState::corrupt, {}, why};
  if (*size > last.size()) {
    if (last.size() < tail_probe) return {LookupState::corrupt, {}, "truncated"};
    if (*size > most_header) return {LookupState::corrupt, {}, "not an entry"};
    last.clear();
    r = client().get(url, last, *size, "-" + std::to_string(*size));
    if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, {}, {}};
    if (!r.ok()) return unreadable(r.text());
    if (last.size() < *size) return {LookupState::corrupt, {}, "truncated"};
  }
  out.bytes = std::move(last);
  out.size = *size;
  const std::string_view tail = out.tail();
  const std::string_view head = tail.substr(0, out.header_len());
  std::uint64_t payload_hash = 0, header_hash = 0;
  decode_trailer(tail.substr(head.size(), entry_trailer), payload_hash, header_hash);
  // Checked before its lengths say what to read.
  if (checksum(head) != header_hash) return {LookupState::corrupt, {}, "header checksum mismatch"};
  auto h = decode_header(head, why);
  if (!h) return {LookupState::corrupt, {}, why};
  if (h->header_size() != out.header_len()) return {LookupState::corrupt, {}, "header length mismatch"};
  out.header = std::move(*h);
  return {LookupState::found, {}, {}};
}

// The body into an unnamed file behind the header: an entry file, verified there.
Lookup HttpStore::read_body(const std::string& name, const Tail& t, const std::string& wanted) const {
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
    const HttpReply r = client().get(object_url(name), fd.get(), "0-" + std::to_string(body - 1));
    if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, {}, {}};
    if (!r.ok()) return unreadable(r.text());
    // A server that sent the whole object: its body is what counts.
    if (r.status != 206 && (::ftruncate(fd.get(), static_cast<off_t>(t.header_len() + body)) != 0 ||
                            ::lseek(fd.get(), 0, SEEK_END) < 0))
      return unreadable("cannot write a temporary file: " + errno_text(errno));
  }
  if (!write_all(fd.get(), tail.substr(t.header_len(), entry_trailer)))
    return unreadable("cannot write a temporary file: " + errno_text(errno));
  std::string why, bytes;
  auto verified = verify_entry(fd.get(), &wanted, why, &bytes, signer_);
  if (verified) return {LookupState::found, CachedEntry{std::move(fd), std::move(*verified), std::move(bytes)}, {}};
  return {LookupState::corrupt, {}, why};
}

// The body as it comes: stdout and stderr into an unnamed file behind the
// header, the outputs archive extracted beside its PATHs, all verified on
// the way (streamed_restore.hpp).
Lookup HttpStore::read_streamed_body(const std::string& name, const Tail& t) const {
  const std::uint64_t body = t.header.body_len();
  const auto download = client().download(object_url(name), "0-" + std::to_string(body - 1));
  const BodyRuns runs = [&](std::string& out) { return download->next(out); };
  const std::string_view tail = t.tail();
  StreamedRead got = read_streamed(runs, t.header, tail.substr(0, t.header_len()),
                                   tail.substr(t.header_len(), entry_trailer), signer_);
  if (!got.short_body) {
    // Its end taken, so that the connection is kept (a 206 holds no more).
    for (std::string rest; got.lookup.state == LookupState::found && download->next(rest);) {
    }
    return std::move(got.lookup);
  }
  const HttpReply& r = download->reply();
  if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, {}, {}};
  if (!r.ok()) return unreadable(r.text());
  return std::move(got.lookup); // a short body from a server that answered: truncated
}

// The tail first, then the body (read_body, or read_streamed_body for an
// entry that `serves` says is restored next).
Lookup HttpStore::read_object(std::string_view key, const std::string& name, const Serves* serves) const {
  const std::string wanted(key);
  for (int attempt = 0;; ++attempt) {
    Tail t;
    Lookup l = read_tail(name, t);
    if (l.state != LookupState::found) return l;
    // Another key whose MD5 collides is simply not ours: a miss, no warning.
    if (t.header.key != wanted) return {LookupState::missing, {}, {}};
    const bool streamed =
        serves && t.header.outputs_len > 0 && t.bytes.size() >= tail_probe && (*serves)(t.header);
    l = streamed ? read_streamed_body(name, t) : read_body(name, t, wanted);
    if (l.state != LookupState::corrupt || attempt > 0 || l.why == stopped_by_signal) return l;
    // A body that does not match its tail may be a new upload's, which
    // replaced the object between the two reads: once, read it again.
    Tail again;
    if (read_tail(name, again).state != LookupState::found || again.tail() == t.tail()) return l;
  }
}

std::variant<std::vector<std::string>, SysError> HttpStore::objects() const {
  std::string body;
  const HttpReply r = client().propfind(url_.base, body, most_listing);
  if (!r.error.empty()) return SysError{server(), r.error};
  if (r.status == 404) return std::vector<std::string>(); // nothing stored yet
  if (r.status == 401) return SysError{server(), credentials_refused(r, "PROPFIND")};
  // Answered, but not with a listing: a server that cannot list.
  if (r.status != 207) return SysError{server(), r.text(), true};
  std::vector<std::string> names = propfind_names(body);
  std::erase_if(names, [](const std::string& n) { return !is_entry_file_name(n); });
  return names;
}

std::variant<std::vector<HttpStore::Head>, SysError> HttpStore::heads(std::string_view prefix) const {
  auto names = objects();
  if (auto* e = std::get_if<SysError>(&names)) return *e;
  std::vector<Head> out;
  for (auto& name : std::get<std::vector<std::string>>(names)) {
    if (!name.starts_with(prefix)) continue;
    Tail t;
    const Lookup l = read_tail(name, t);
    if (l.state == LookupState::missing) continue; // gone meanwhile
    if (l.state == LookupState::unreadable) return SysError{server(), l.why};
    std::optional<EntryHeader> h;
    if (l.state == LookupState::found) h = std::move(t.header);
    // Filed under another name than its own: not an entry of this store.
    if (h && object_name(h->key, h->address()) != name) h.reset();
    out.push_back({std::move(name), std::move(h)});
  }
  return out;
}

std::optional<SysError> HttpStore::remove(const std::string& name, const EntryHeader* h,
                                          std::string_view why) const {
  const HttpReply r = client().del(object_url(name));
  if (r.ok()) {
    say_removed(h, h ? where(h->key, h->address()) : "HTTP store at " + server() + ", object " + name,
                h ? stored_size(*h) : 0, why);
    return std::nullopt;
  }
  if (r.error.empty() && r.status == 404) return std::nullopt;
  if (r.status == 401) return SysError{server(), credentials_refused(r, "DELETE")};
  return SysError{server(), r.text()};
}

// Not a server that cannot list or remove: one that wants other credentials.
std::string HttpStore::credentials_refused(const HttpReply& r, std::string_view request) const {
  const bool given = !settings_.user.empty() || !settings_.password.empty() || !settings_.token.empty();
  return message(given ? Msg::cache_http_credentials_refused : Msg::cache_http_credentials_needed,
                 {{"request", std::string(request)}, {"error", r.text()}});
}

Lookup HttpStore::newest(std::string_view key, const std::vector<std::string>& outputs) const {
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return unreadable(e->refused ? "PROPFIND: " + e->reason : e->reason);
  std::vector<StaleCandidate> candidates;
  for (Head& h : std::get<std::vector<Head>>(found))
    if (h.header) candidates.push_back({std::move(*h.header), std::move(h.name)});
  return newest_readable(key, outputs, std::move(candidates),
                         [&](const StaleCandidate& c) { return read_object(key, c.name); });
}

std::optional<SysError> HttpStore::drop(std::string_view key) const {
  auto names = objects();
  if (auto* e = std::get_if<SysError>(&names)) return *e;
  auto& all = std::get<std::vector<std::string>>(names);
  const std::string prefix = md5_hex(key) + '.';
  std::erase_if(all, [&](const std::string& n) { return !n.starts_with(prefix); });
  all.push_back(object_name(key)); // also when the listing missed it (stored meanwhile)
  for (const auto& n : all) {
    // -v names what goes: its header read first.
    Tail t;
    const bool known = diag::verbose() && read_tail(n, t).state == LookupState::found;
    if (auto e = remove(n, known ? &t.header : nullptr, "dropped")) return e;
  }
  return std::nullopt;
}

std::variant<std::vector<ListedEntry>, SysError> HttpStore::list_entries() const {
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  std::vector<ListedEntry> out;
  for (const Head& h : std::get<std::vector<Head>>(found))
    if (h.header) out.push_back(listed_entry(*h.header, stored_size(*h.header)));
  return out;
}

void HttpStore::record_use(const CachedEntry& e) const {
  if (uses_) uses_->record(object_name(e.header.key, e.header.address()), wall_clock_ns());
}

std::variant<GcCounts, SysError> HttpStore::gc(const GcPolicy& policy) const {
  const std::optional<Nanos>& max_age = policy.max_age;
  const std::int64_t now_ns = policy.now_ns;
  const bool by_use_asked = policy.max_size || policy.max_unused;
  std::map<std::string, std::int64_t> used;
  if (by_use_asked && uses_) {
    auto read = uses_->read();
    if (auto* e = std::get_if<SysError>(&read)) return *e;
    used = std::move(std::get<0>(read));
  }
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  if (by_use_asked && !uses_) diag::warn(message(Msg::cache_gc_by_age, {{"server", server()}}));
  const auto& all = std::get<std::vector<Head>>(found);
  GcCounts counts;
  std::vector<std::string> gone; // whose uses are forgotten
  const auto removed = [&](const std::string& name) {
    ++counts.entries_removed;
    gone.push_back(name);
  };
  std::vector<WeighedEntry> kept;
  std::unordered_map<std::string_view, const EntryHeader*> header_of; // the kept ones
  for (const Head& h : all) {
    if (!h.header || (max_age && freshness(h.header->created_ns, now_ns, max_age, std::nullopt) == Freshness::expired)) {
      if (auto e = remove(h.name, h.header ? &*h.header : nullptr, h.header ? "expired" : "corrupt"))
        return *e;
      removed(h.name);
      continue;
    }
    const auto u = used.find(h.name);
    kept.push_back({h.name, stored_size(*h.header), u != used.end() ? u->second : h.header->created_ns});
    header_of.emplace(h.name, &*h.header);
  }
  for (const auto& [name, when] : used) // objects gone by other hands
    if (!header_of.count(name)) gone.push_back(name);
  if (by_use_asked)
    for (const Removal& r : by_use(std::move(kept), policy, uses_ ? "last used" : "built")) {
      if (auto e = remove(r.name, header_of.at(r.name), r.why)) return *e;
      removed(r.name);
    }
  if (uses_) uses_->forget(gone);
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done,
                   {{"entries", std::to_string(counts.entries_removed)}, {"temps", "0"}, {"path", server()}});
  });
  return counts;
}

BuildOrError HttpStore::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                    const BuildContents& what) const {
  return start_build<HttpBuild>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
