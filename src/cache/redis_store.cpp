#include "cache/redis_store.hpp"

#include "cache/redis_scripts.hpp"
#include "redis/scan.hpp"
#include "util/clock.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"
#include "util/random.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace bufferlock {

namespace {

constexpr std::size_t first_read = 64 * 1024; // one GETRANGE holds most entries whole
constexpr std::size_t chunk = 1024 * 1024;    // bytes per GETRANGE / APPEND: bounds memory
// A build's temporary key lives this long after its last chunk: a builder
// that dies leaves it behind for no longer (it is never renamed, so never served).
constexpr std::string_view temp_ttl_ms = "600000";
constexpr int read_attempts = 3; // an entry replaced while it is read is read again

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// An unnamed file for an entry read from Redis: in memory (memfd) when small,
// else in $TMPDIR (O_TMPFILE; a named file unlinked at once where the file
// system cannot), so that a large entry takes no memory.
UniqueFd anonymous_file(std::uint64_t size) {
  if (size <= chunk) {
    UniqueFd fd(::memfd_create("bufferlock-entry", MFD_CLOEXEC));
    if (fd) return fd;
  }
  const char* env = ::getenv("TMPDIR");
  const std::string dir = env && *env == '/' ? env : "/tmp";
  UniqueFd fd(::open(dir.c_str(), O_RDWR | O_TMPFILE | O_EXCL | O_CLOEXEC, 0600));
  if (fd) return fd;
  std::string name = dir + "/.bufferlock-XXXXXX";
  fd.reset(::mkostemp(name.data(), O_CLOEXEC));
  if (fd) ::unlink(name.c_str());
  return fd;
}

} // namespace

RedisStore::RedisStore(const RedisSettings& settings, std::uint64_t max_entry,
                       std::optional<Nanos> expire_after)
    : settings_(settings), max_entry_(max_entry), expire_after_(expire_after) {}

std::string RedisStore::entry_key(std::string_view key, const Inputs& inputs) const {
  std::string k = "{";
  k += settings_.key_prefix;
  k += md5_hex(key);
  k += "}:entry";
  if (inputs) {
    k += ':';
    k += inputs->hex();
  }
  return k;
}

std::string RedisStore::entry_pattern() const {
  std::string p = "{";
  p += glob_escape(settings_.key_prefix);
  p += "*}:entry*"; // with or without inputs
  return p;
}

std::string RedisStore::where(std::string_view key, const Inputs& inputs) const {
  return "Redis at " + server() + ", key " + entry_key(key, inputs);
}

template <class Send> RedisResult<RedisReply> RedisStore::on_client(Send send) const {
  if (!client_)
    client_.emplace(settings_.url, settings_.password,
                    RedisTimeouts{settings_.connect_timeout, settings_.io_timeout});
  const bool reused = client_->connected();
  for (int attempt = 0;; ++attempt) {
    auto reply = send(*client_);
    const auto* e = std::get_if<RedisError>(&reply);
    if (e && e->kind == RedisError::Kind::dropped && reused && attempt == 0) continue;
    return reply;
  }
}

RedisResult<RedisReply> RedisStore::call(std::initializer_list<std::string_view> args) const {
  const std::vector<std::string_view> argv(args);
  const std::string_view key = argv.front() == "SCAN" ? std::string_view() : argv.at(1);
  return on_client([&](RedisClient& c) { return c.command(key, argv); });
}

RedisResult<RedisReply> RedisStore::eval(const RedisScript& script, const std::vector<std::string>& keys,
                                         const std::vector<std::string_view>& argv) const {
  return on_client([&](RedisClient& c) { return c.eval(script, keys, argv); });
}

void RedisStore::after_fork() const {
  // The parent keeps the socket; the child talks on its own.
  client_.reset();
}

namespace {

Lookup unreadable(const RedisError& e) { return {LookupState::unreadable, {}, e.text}; }

// GETRANGE key [from, from+len): the bytes, or the error.
RedisResult<std::string> get_range(const RedisStore& store, const std::string& ekey, std::uint64_t from,
                                   std::uint64_t len) {
  const std::string a = std::to_string(from), b = std::to_string(from + len - 1);
  auto r = store.call({"GETRANGE", ekey, a, b});
  if (auto* e = std::get_if<RedisError>(&r)) return *e;
  const redisReply* rep = std::get<RedisReply>(r).get();
  if (rep->type != REDIS_REPLY_STRING)
    return redis_error(RedisError::Kind::protocol, "unexpected reply to GETRANGE");
  return std::string(rep->str, rep->len);
}

} // namespace

Lookup RedisStore::lookup(std::string_view key, const Inputs& inputs) const {
  const std::string ekey = entry_key(key, inputs);
  Lookup last{LookupState::missing, {}, {}};
  for (int attempt = 0; attempt < read_attempts; ++attempt) {
    last = read_entry(key, inputs, ekey);
    if (last.state != LookupState::corrupt || last.why != "replaced while it was read") return last;
  }
  return last;
}

// Reads the entry in chunks into an unnamed file and verifies it there. A
// value renamed over it between two chunks is detected by reading its header
// again when the checksums do not match: another header (another build's
// creation time) is a replacement, read again from the start; the same
// header is a corrupt entry.
Lookup RedisStore::read_entry(std::string_view key, const Inputs& inputs, const std::string& ekey) const {
  auto first = get_range(*this, ekey, 0, first_read);
  if (auto* e = std::get_if<RedisError>(&first)) {
    if (e->kind == RedisError::Kind::server && e->text.starts_with("WRONGTYPE"))
      return {LookupState::corrupt, {}, "not a string value"};
    return unreadable(*e);
  }
  std::string head = std::move(std::get<std::string>(first));
  if (head.empty()) return {LookupState::missing, {}, {}}; // absent (or empty: then rebuilt over)
  std::string why;
  const auto header_size = encoded_header_size(head);
  if (header_size && *header_size > head.size() && head.size() == first_read) {
    auto more = get_range(*this, ekey, 0, *header_size);
    if (auto* e = std::get_if<RedisError>(&more)) return unreadable(*e);
    head = std::move(std::get<std::string>(more));
  }
  const auto h = decode_header(head, why);
  if (!h) return {LookupState::corrupt, {}, why};
  // Another key whose MD5 collides is simply not ours: a miss, no warning;
  // so is a version 2 entry whose dependency stamps cannot be compared.
  if (h->key != key || !h->has_inputs(inputs)) return {LookupState::missing, {}, {}};

  // One byte past the size the header gives tells a longer value apart.
  const std::uint64_t want = h->file_size() + 1;
  UniqueFd fd = anonymous_file(want);
  if (!fd) return {LookupState::unreadable, {}, "cannot make a temporary file: " + errno_text(errno)};
  std::uint64_t have = head.size();
  bool short_read = head.size() < first_read;
  if (!write_all(fd.get(), head.data(), std::min<std::uint64_t>(head.size(), want))) {
    return {LookupState::unreadable, {}, "cannot write a temporary file: " + errno_text(errno)};
  }
  const std::string header_bytes = head.substr(0, h->header_size());
  head = std::string(); // keeps only one chunk in memory at a time
  while (!short_read && have < want) {
    const std::uint64_t len = std::min<std::uint64_t>(chunk, want - have);
    auto part = get_range(*this, ekey, have, len);
    if (auto* e = std::get_if<RedisError>(&part)) return unreadable(*e);
    const std::string& bytes = std::get<std::string>(part);
    if (!write_all(fd.get(), bytes.data(), bytes.size()))
      return {LookupState::unreadable, {}, "cannot write a temporary file: " + errno_text(errno)};
    have += bytes.size();
    short_read = bytes.size() < len;
  }
  std::string bytes;
  const std::string wanted(key);
  auto verified = verify_entry(fd.get(), &wanted, why, &bytes);
  if (!verified) {
    auto again = get_range(*this, ekey, 0, header_bytes.size());
    if (auto* e = std::get_if<RedisError>(&again)) return unreadable(*e);
    const std::string& now = std::get<std::string>(again);
    if (now.empty()) return {LookupState::missing, {}, {}}; // dropped or expired meanwhile
    if (now != header_bytes) return {LookupState::corrupt, {}, "replaced while it was read"};
    if (why == "it belongs to another key") return {LookupState::missing, {}, {}};
    return {LookupState::corrupt, {}, why};
  }
  return {LookupState::found, CachedEntry{std::move(fd), std::move(*verified), std::move(bytes)}, {}};
}

std::variant<std::vector<std::string>, SysError> RedisStore::keys_of(std::string_view key) const {
  // Every entry key of KEY shares its hash tag: on a cluster, the node of
  // that slot holds them all, so SCAN goes there.
  const std::string plain = entry_key(key);
  const std::string pattern = glob_escape(plain) + "*";
  std::vector<std::string> out;
  std::string cursor = "0";
  do {
    auto r = on_client([&](RedisClient& c) {
      return c.command(plain, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    });
    if (auto* e = std::get_if<RedisError>(&r)) return SysError{server(), e->text};
    auto page = scan_page(std::get<RedisReply>(r).get());
    if (!page) return SysError{server(), "unexpected reply to SCAN"};
    cursor = std::move(page->cursor);
    for (const std::string_view name : page->names)
      if (name == plain || (name.size() == plain.size() + 33 && name[plain.size()] == ':'))
        out.emplace_back(name);
  } while (cursor != "0");
  return out;
}

std::optional<SysError> RedisStore::drop(std::string_view key) const {
  auto keys = keys_of(key);
  if (auto* e = std::get_if<SysError>(&keys)) return *e;
  auto& all = std::get<std::vector<std::string>>(keys);
  all.push_back(entry_key(key)); // also when SCAN missed it (a key added meanwhile)
  for (const auto& k : all) {
    auto r = call({"DEL", k});
    if (auto* e = std::get_if<RedisError>(&r)) return SysError{server(), e->text};
  }
  return std::nullopt;
}

RedisResult<std::optional<std::pair<EntryHeader, std::uint64_t>>>
RedisStore::read_header(const std::string& ekey) const {
  using Found = std::optional<std::pair<EntryHeader, std::uint64_t>>;
  auto len = call({"STRLEN", ekey});
  if (auto* e = std::get_if<RedisError>(&len)) {
    if (e->kind == RedisError::Kind::server) return Found(); // not a string: not an entry
    return *e;
  }
  const redisReply* n = std::get<RedisReply>(len).get();
  if (n->type != REDIS_REPLY_INTEGER || n->integer <= 0) return Found(); // gone meanwhile
  auto head = get_range(*this, ekey, 0, 4096);
  if (auto* e = std::get_if<RedisError>(&head)) return *e;
  std::string bytes = std::move(std::get<std::string>(head));
  if (const auto hs = encoded_header_size(bytes); hs && *hs > bytes.size() && bytes.size() == 4096) {
    auto more = get_range(*this, ekey, 0, *hs);
    if (auto* e = std::get_if<RedisError>(&more)) return *e;
    bytes = std::move(std::get<std::string>(more));
  }
  std::string why;
  auto h = decode_header(bytes, why);
  if (!h || h->file_size() != static_cast<std::uint64_t>(n->integer) || entry_key(h->key, h->inputs) != ekey)
    return Found();
  return Found(std::pair(std::move(*h), static_cast<std::uint64_t>(n->integer)));
}

Lookup RedisStore::newest(std::string_view key) const {
  auto keys = keys_of(key);
  if (auto* e = std::get_if<SysError>(&keys)) return {LookupState::unreadable, {}, e->reason};
  std::vector<std::pair<std::int64_t, EntryHeader>> found;
  for (const auto& ekey : std::get<std::vector<std::string>>(keys)) {
    auto h = read_header(ekey);
    if (auto* e = std::get_if<RedisError>(&h)) return unreadable(*e);
    if (auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h);
        got && got->first.key == key)
      found.emplace_back(got->first.created_ns, std::move(got->first));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [created, h] : found) {
    // Served to whoever asks, whatever its inputs: read it as its own.
    Lookup l = read_entry(key, h.inputs, entry_key(key, h.inputs));
    if (l.state == LookupState::found || l.state == LookupState::unreadable) return l;
  }
  return {LookupState::missing, {}, {}};
}

std::variant<std::vector<ListedEntry>, SysError> RedisStore::list_entries() const {
  std::vector<ListedEntry> out;
  const std::string pattern = entry_pattern();
  std::string cursor = "0";
  do {
    auto r = call({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (auto* e = std::get_if<RedisError>(&r)) return SysError{server(), e->text};
    auto page = scan_page(std::get<RedisReply>(r).get());
    if (!page) return SysError{server(), "unexpected reply to SCAN"};
    cursor = std::move(page->cursor);
    for (const std::string_view name : page->names) {
      // The header and the length only: listing must not read every payload.
      auto h = read_header(std::string(name));
      if (auto* e = std::get_if<RedisError>(&h)) return SysError{server(), e->text};
      if (const auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h))
        out.push_back({got->first.created_ns, got->first.payload_len, got->first.key, got->first.inputs});
    }
  } while (cursor != "0");
  return out;
}

namespace {

// A build streamed into a temporary key (see redis_store.hpp).
class RedisBuild final : public EntryBuild {
public:
  RedisBuild(const RedisStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
             KeepStderr keep)
      : store_(store), entry_key_(store.entry_key(key, inputs)) {
    const std::string plain = store.entry_key(key);
    temp_key_ = plain.substr(0, plain.size() - 6) + ":tmp:" + random_token();
    header_.created_ns = created_ns;
    header_.key = std::string(key);
    header_.inputs = inputs;
    header_.version = entry_version_for(inputs, keep == KeepStderr::yes);
    keep_stderr_ = keep == KeepStderr::yes;
    // The header's size is fixed by the key and the dependencies: the real
    // one (with the lengths) is written over this one at publication.
    pending_ = encode_header(header_);
  }

  ~RedisBuild() override {
    // Best effort: the time to live removes it anyway.
    if (sent_ > 0 && !published_ && !error_) store_.call({"DEL", temp_key_});
  }

  // Prepares the stderr file; an error when it cannot be made.
  std::optional<SysError> start() {
    if (!keep_stderr_) return std::nullopt;
    stderr_fd_ = anonymous_file(chunk + 1);
    if (!stderr_fd_) return SysError{"a temporary file", errno_text(errno)};
    return std::nullopt;
  }

  bool append(const char* data, std::size_t len) override {
    if (!usable() || !count(len)) return false;
    hash_.update(data, len);
    header_.payload_len += len;
    pending_.append(data, len);
    return pending_.size() < chunk || flush();
  }

  bool append_stderr(const char* data, std::size_t len) override {
    if (!keep_stderr_) return true;
    if (!usable() || !count(len)) return false;
    if (!write_all(stderr_fd_.get(), data, len)) {
      error_ = SysError{"a temporary file", errno_text(errno)};
      return false;
    }
    header_.stderr_len += len;
    return true;
  }

  std::optional<SysError> publish() override {
    if (too_large_) return std::nullopt;
    if (error_) return error_;
    // The held stderr goes behind stdout, in chunks like stdout.
    for (std::uint64_t at = 0; at < header_.stderr_len;) {
      const std::size_t take = std::min<std::uint64_t>(header_.stderr_len - at, chunk);
      const std::size_t old = pending_.size();
      pending_.resize(old + take);
      if (!pread_all(stderr_fd_.get(), pending_.data() + old, take, static_cast<off_t>(at))) {
        error_ = SysError{"a temporary file", errno_text(errno)};
        return error_;
      }
      hash_.update(pending_.data() + old, take);
      at += take;
      if (pending_.size() >= chunk && !flush()) return error_;
    }
    stderr_fd_.reset();
    const std::string head = encode_header(header_);
    const std::string trailer = encode_trailer(hash_.digest(), checksum(head));
    std::string expire = "0";
    if (const auto after = store_.expire_after()) {
      // The entry's age counts from the start of the build.
      const std::int64_t left = after->count() - (realtime_ns() - header_.created_ns);
      expire = std::to_string(std::max<std::int64_t>(1, (left + 999'999) / 1'000'000));
    }
    const std::string sent = std::to_string(sent_);
    auto r =
        store_.eval(cache_publish_script, {temp_key_, entry_key_}, {pending_, head, trailer, sent, expire});
    pending_ = std::string();
    if (auto* e = std::get_if<RedisError>(&r)) {
      error_ = SysError{store_.server(), e->text};
      return error_;
    }
    const redisReply* rep = std::get<RedisReply>(r).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer != 1) {
      error_ = SysError{store_.server(), "the build's temporary key expired before it was complete"};
      return error_;
    }
    published_ = true;
    return std::nullopt;
  }

  const std::optional<SysError>& error() const override { return error_; }
  bool too_large() const override { return too_large_; }

  std::optional<CachedEntry> entry() override {
    Lookup l = store_.lookup(header_.key, header_.inputs);
    if (l.state == LookupState::found) return std::move(l.entry);
    error_ = SysError{store_.server(), l.why.empty() ? "the new entry is gone" : l.why};
    return std::nullopt;
  }

private:
  bool usable() const { return !error_ && !too_large_; }

  // Counts bytes against --max-entry; past it, the partial key goes.
  bool count(std::size_t len) {
    body_ += len;
    if (body_ <= store_.max_entry()) return true;
    too_large_ = true;
    pending_ = std::string();
    stderr_fd_.reset();
    if (sent_ > 0) store_.call({"DEL", temp_key_});
    sent_ = 0;
    return false;
  }

  bool flush() {
    const std::string sent = std::to_string(sent_);
    auto r = store_.eval(cache_append_script, {temp_key_}, {pending_, temp_ttl_ms, sent});
    if (auto* e = std::get_if<RedisError>(&r)) {
      error_ = SysError{store_.server(), e->text};
      pending_ = std::string();
      return false;
    }
    const redisReply* rep = std::get<RedisReply>(r).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0) {
      error_ = SysError{store_.server(), "the build's temporary key expired before it was complete"};
      pending_ = std::string();
      return false;
    }
    sent_ += pending_.size();
    pending_.clear();
    return true;
  }

  const RedisStore& store_;
  std::string entry_key_;
  std::string temp_key_;
  EntryHeader header_;
  Checksum hash_;
  std::string pending_; // bytes not sent yet (at most about one chunk)
  std::uint64_t sent_ = 0;
  std::uint64_t body_ = 0;
  bool keep_stderr_ = false;
  UniqueFd stderr_fd_; // --keep-stderr: held until stdout is complete
  std::optional<SysError> error_;
  bool too_large_ = false;
  bool published_ = false;
};

} // namespace

std::variant<std::unique_ptr<EntryBuild>, SysError> RedisStore::begin_build(std::string_view key,
                                                                            const Inputs& inputs,
                                                                            std::int64_t created_ns,
                                                                            KeepStderr keep_stderr) const {
  auto b = std::make_unique<RedisBuild>(*this, key, inputs, created_ns, keep_stderr);
  if (auto e = b->start()) return *e;
  return std::unique_ptr<EntryBuild>(std::move(b));
}

} // namespace bufferlock
