#include "cache/http_store.hpp"

#include "cache/streamed_build.hpp"
#include "redis/url.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

namespace bufferlock {

namespace {

constexpr std::size_t part = 1024 * 1024;             // bytes a spool write takes at most
constexpr std::size_t head_probe = 64 * 1024;         // the first bytes read for a header
constexpr std::size_t most_header = 16 * 1024 * 1024; // a larger one is no entry of ours
constexpr std::size_t most_listing = 64 * 1024 * 1024;
constexpr std::uint64_t unknown_size = std::numeric_limits<std::uint64_t>::max(); // a file, never memory

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// <32 hex>.entry or <32 hex>.<32 hex>.entry: an entry's object.
bool entry_name(std::string_view n) {
  if (!n.ends_with(".entry")) return false;
  n.remove_suffix(6);
  return (n.size() == 32 && is_hex(n)) || (n.size() == 65 && n[32] == '.' && is_hex(n.substr(0, 32)) && is_hex(n.substr(33)));
}

Lookup unreadable(std::string why) { return {LookupState::unreadable, {}, std::move(why)}; }

// A build spooled into an unnamed local file, sent by one PUT (http_store.hpp).
class HttpBuild final : public StreamedBuild {
public:
  HttpBuild(const HttpStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
            const BuildContents& what, UniqueFd spool)
      : StreamedBuild(store, key, inputs, created_ns, what, store.max_entry(), part), store_(store),
        name_(store.object_name(key, inputs)), spool_(std::move(spool)) {}

  std::optional<CachedEntry> entry() override {
    Lookup l = store_.lookup(header().key, header().inputs);
    if (l.state == LookupState::found) return std::move(l.entry);
    fail(SysError{store_.server(), l.why.empty() ? "the new entry is gone" : l.why});
    return std::nullopt;
  }

private:
  bool spool(const std::string& bytes) {
    if (write_all(spool_.get(), bytes.data(), bytes.size())) {
      spooled_ += bytes.size();
      return true;
    }
    fail(SysError{"a temporary file", errno_text(errno)});
    return false;
  }

  bool send_part(std::string& p) override { return spool(p); }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    if (!spool(last_part)) return error();
    // Header, the spooled body, trailer: one stream of known length.
    const std::uint64_t total = head.size() + spooled_ + trailer.size();
    std::uint64_t at = 0;
    const HttpClient::Source read = [&](char* buf, std::size_t want, std::size_t& got) {
      // A string's bytes from `off`, as many as fit.
      const auto from = [&](const std::string& str, std::uint64_t off) {
        const std::size_t k = std::min<std::size_t>(want - got, str.size() - off);
        std::copy_n(str.data() + off, k, buf + got);
        return k;
      };
      got = 0;
      while (got < want && at < total) {
        std::size_t k = 0;
        if (at < head.size()) {
          k = from(head, at);
        } else if (at < head.size() + spooled_) {
          const std::uint64_t off = at - head.size();
          const ssize_t r = ::pread(spool_.get(), buf + got,
                                    static_cast<std::size_t>(std::min<std::uint64_t>(want - got, spooled_ - off)),
                                    static_cast<off_t>(off));
          if (r <= 0) {
            if (r == 0) errno = EIO;
            return false;
          }
          k = static_cast<std::size_t>(r);
        } else {
          k = from(trailer, at - head.size() - spooled_);
        }
        got += k;
        at += k;
      }
      return true;
    };
    const HttpReply r = store_.client().put(store_.object_url(name_), total, read);
    spool_.reset();
    if (!r.ok()) return SysError{store_.server(), r.text()};
    return std::nullopt;
  }

  // Past --max-entry: the spool's blocks go back at once.
  void abandon() override {
    if (::ftruncate(spool_.get(), 0) == 0) spooled_ = 0;
  }

  const HttpStore& store_;
  std::string name_;
  UniqueFd spool_;
  std::uint64_t spooled_ = 0;
};

} // namespace

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

HttpStore::HttpStore(StoreUrl url, HttpSettings settings, std::optional<std::uint64_t> max_entry)
    : url_(std::move(url)), settings_(std::move(settings)), max_entry_(max_entry) {
  settings_.user = url_.user;
  settings_.password = url_.password;
}

HttpClient& HttpStore::client() const {
  if (!client_) client_ = std::make_unique<HttpClient>(settings_);
  return *client_;
}

std::string HttpStore::object_name(std::string_view key, const Inputs& inputs) const {
  std::string n = md5_hex(key);
  if (inputs) n += '.' + inputs->hex();
  return n + ".entry";
}

std::string HttpStore::where(std::string_view key, const Inputs& inputs) const {
  return "HTTP store at " + server() + ", object " + object_name(key, inputs);
}

Lookup HttpStore::lookup(std::string_view key, const Inputs& inputs) const {
  if (down_) return unreadable(*down_);
  return read_object(key, object_name(key, inputs));
}

// GETs the object into an unnamed file and verifies it there.
Lookup HttpStore::read_object(std::string_view key, const std::string& name) const {
  UniqueFd fd = anonymous_file(unknown_size);
  if (!fd) return unreadable("cannot make a temporary file: " + errno_text(errno));
  const HttpReply r = client().get(object_url(name), fd.get());
  if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, {}, {}};
  if (!r.error.empty() || r.status >= 500) down_ = r.text();
  if (!r.error.empty() || r.status != 200) return unreadable(r.text());
  std::string why, bytes;
  const std::string wanted(key);
  auto verified = verify_entry(fd.get(), &wanted, why, &bytes, signer_);
  if (!verified) {
    // Another key whose MD5 collides is simply not ours: a miss, no warning.
    if (why == "it belongs to another key") return {LookupState::missing, {}, {}};
    return {LookupState::corrupt, {}, why};
  }
  return {LookupState::found, CachedEntry{std::move(fd), std::move(*verified), std::move(bytes)}, {}};
}

std::variant<std::vector<std::string>, SysError> HttpStore::objects() const {
  std::string body;
  const HttpReply r = client().propfind(url_.base, body, most_listing);
  if (!r.error.empty()) return SysError{server(), r.error};
  if (r.status == 404) return std::vector<std::string>(); // nothing stored yet
  // Answered, but not with a listing: a server that cannot list.
  if (r.status != 207) return SysError{server(), r.text(), true};
  std::vector<std::string> names = propfind_names(body);
  std::erase_if(names, [](const std::string& n) { return !entry_name(n); });
  return names;
}

std::variant<std::vector<HttpStore::Head>, SysError> HttpStore::heads(std::string_view prefix) const {
  auto names = objects();
  if (auto* e = std::get_if<SysError>(&names)) return *e;
  std::vector<Head> out;
  for (auto& name : std::get<std::vector<std::string>>(names)) {
    if (!name.starts_with(prefix)) continue;
    std::string bytes;
    HttpReply r = client().get(object_url(name), bytes, head_probe, "0-" + std::to_string(head_probe - 1));
    if (r.error.empty() && r.status == 404) continue; // gone meanwhile
    if (!r.ok()) return SysError{server(), r.text()};
    const auto size = encoded_header_size(bytes);
    if (size && *size > bytes.size() && *size <= most_header) {
      bytes.clear();
      r = client().get(object_url(name), bytes, *size, "0-" + std::to_string(*size - 1));
      if (!r.ok()) return SysError{server(), r.text()};
    }
    std::string why;
    auto h = decode_header(bytes, why);
    // Filed under another name than its own: not an entry of this store.
    if (h && object_name(h->key, h->inputs) != name) h.reset();
    out.push_back({std::move(name), std::move(h)});
  }
  return out;
}

std::optional<SysError> HttpStore::remove(const std::string& name) const {
  const HttpReply r = client().del(object_url(name));
  if (r.ok() || (r.error.empty() && r.status == 404)) return std::nullopt;
  return SysError{server(), r.text()};
}

Lookup HttpStore::newest(std::string_view key) const {
  if (down_) return unreadable(*down_);
  auto found = heads(md5_hex(key) + '.');
  if (auto* e = std::get_if<SysError>(&found)) return unreadable(e->refused ? "PROPFIND: " + e->reason : e->reason);
  auto& all = std::get<std::vector<Head>>(found);
  std::erase_if(all, [&](const Head& h) { return !h.header || h.header->key != key; });
  std::sort(all.begin(), all.end(),
            [](const Head& a, const Head& b) { return a.header->created_ns > b.header->created_ns; });
  for (const Head& h : all) {
    Lookup l = read_object(key, h.name);
    if (l.state == LookupState::found || l.state == LookupState::unreadable) return l;
  }
  return {LookupState::missing, {}, {}};
}

std::optional<SysError> HttpStore::drop(std::string_view key) const {
  auto names = objects();
  if (auto* e = std::get_if<SysError>(&names)) return *e;
  auto& all = std::get<std::vector<std::string>>(names);
  const std::string prefix = md5_hex(key) + '.';
  std::erase_if(all, [&](const std::string& n) { return !n.starts_with(prefix); });
  all.push_back(object_name(key)); // also when the listing missed it (stored meanwhile)
  for (const auto& n : all)
    if (auto e = remove(n)) return e;
  return std::nullopt;
}

std::variant<std::vector<ListedEntry>, SysError> HttpStore::list_entries() const {
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  std::vector<ListedEntry> out;
  for (const Head& h : std::get<std::vector<Head>>(found))
    if (h.header)
      out.push_back({h.header->created_ns, h.header->stdout_size(), h.header->key, h.header->inputs,
                     h.header->outputs.size()});
  return out;
}

std::variant<GcCounts, SysError> HttpStore::gc(std::optional<Nanos> max_age, std::optional<std::uint64_t> max_size,
                                               std::int64_t now_ns) const {
  auto found = heads("");
  if (auto* e = std::get_if<SysError>(&found)) return *e;
  GcCounts counts;
  std::vector<SizedEntry> kept;
  for (const Head& h : std::get<std::vector<Head>>(found)) {
    if (!h.header || (max_age && freshness(h.header->created_ns, now_ns, max_age, std::nullopt) == Freshness::expired)) {
      if (auto e = remove(h.name)) return *e;
      ++counts.entries_removed;
      continue;
    }
    kept.push_back({h.header->created_ns, h.header->file_size(), h.name});
  }
  if (max_size) {
    const std::vector<std::string> oldest = over_size(std::move(kept), *max_size);
    for (const auto& name : oldest) {
      if (auto e = remove(name)) return *e;
      ++counts.entries_removed;
    }
  }
  return counts;
}

std::variant<std::unique_ptr<EntryBuild>, SysError> HttpStore::begin_build(std::string_view key,
                                                                           const Inputs& inputs,
                                                                           std::int64_t created_ns,
                                                                           const BuildContents& what) const {
  if (down_) return SysError{server(), *down_};
  UniqueFd spool = anonymous_file(unknown_size);
  if (!spool) return SysError{"a temporary file", errno_text(errno)};
  auto b = std::make_unique<HttpBuild>(*this, key, inputs, created_ns, what, std::move(spool));
  if (auto e = b->start()) return *e;
  return std::unique_ptr<EntryBuild>(std::move(b));
}

} // namespace bufferlock
