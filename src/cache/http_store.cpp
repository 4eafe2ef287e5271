#include "cache/http_store.hpp"

#include "cache/streamed_build.hpp"
#include "messages.hpp"
#include "redis/url.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

namespace bufferlock {

namespace {

constexpr std::size_t part = 1024 * 1024;             // the body goes out in parts of this size
constexpr std::size_t most_listing = 64 * 1024 * 1024;

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

// The ranged GETs of cache/remote_object.hpp: a 404 or 410 is a miss.
class HttpStore::Reader final : public ObjectReader {
public:
  explicit Reader(const HttpStore& store) : store_(store) {}
  RangeReply get(const std::string& name, std::string& out, std::size_t most, const std::string& range) const override {
    return reply(store_.client().get(store_.object_url(name), out, most, range));
  }
  RangeReply get(const std::string& name, int fd, const std::string& range) const override {
    return reply(store_.client().get(store_.object_url(name), fd, range));
  }
  std::unique_ptr<BodyDownload> download(const std::string& name, const std::string& range) const override {
    return std::make_unique<Download>(store_.client().download(store_.object_url(name), range));
  }

private:
  class Download final : public BodyDownload {
  public:
    explicit Download(std::unique_ptr<HttpClient::Download> d) : d_(std::move(d)) {}
    bool next(std::string& out) override { return d_->next(out); }
    RangeReply reply() const override { return Reader::reply(d_->reply()); }

  private:
    std::unique_ptr<HttpClient::Download> d_;
  };

  static RangeReply reply(const HttpReply& r) {
    if (r.error.empty() && (r.status == 404 || r.status == 410)) return {LookupState::missing, false, {}};
    if (!r.ok()) return {LookupState::unreadable, false, r.text()};
    return {LookupState::found, r.status == 206, {}};
  }
  const HttpStore& store_;
};

HttpStore::HttpStore(StoreUrl url, HttpSettings settings, std::unique_ptr<ObjectUses> uses)
    : ObjectStore(http_messages, std::move(uses)), url_(std::move(url)), settings_(std::move(settings)),
      reader_(std::make_unique<Reader>(*this)) {
  settings_.user = url_.user;
  settings_.password = url_.password;
}

const ObjectReader& HttpStore::reader() const { return *reader_; }

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

std::variant<std::vector<ObjectHead>, SysError> HttpStore::heads(std::string_view prefix) const {
  auto names = objects();
  if (auto* e = std::get_if<SysError>(&names)) return *e;
  std::vector<ObjectHead> out;
  for (auto& name : std::get<std::vector<std::string>>(names)) {
    if (!name.starts_with(prefix)) continue;
    auto head = read_object_head(reader(), std::move(name),
                                 [&](const EntryHeader& h) { return object_name(h.key, h.address()); });
    if (auto* why = std::get_if<std::string>(&head)) return SysError{server(), *why};
    if (auto& h = std::get<std::optional<ObjectHead>>(head)) out.push_back(std::move(*h));
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

std::string HttpStore::listing_failed(const SysError& e) const {
  return e.refused ? "PROPFIND: " + e.reason : e.reason;
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
    ObjectTail t;
    const bool known = diag::verbose() && read_object_tail(reader(), n, t).state == LookupState::found;
    if (auto e = remove(n, known ? &t.header : nullptr, "dropped")) return e;
  }
  return std::nullopt;
}

// Objects named as entries that are none go too.
std::variant<GcCounts, SysError> HttpStore::gc(const GcPolicy& policy) const {
  return gc_objects(
      heads(""), policy,
      [&](const ObjectHead& h, std::string_view why) { return remove(h.name, h.header ? &*h.header : nullptr, why); },
      [&](const EntryHeader& h) { return stored_size(h); }, server(), uses_.get());
}

BuildOrError HttpStore::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                         const BuildContents& what) const {
  return start_build<HttpBuild>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
