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
#include <utility>

namespace bufferlock {

namespace {

constexpr std::size_t chunk = 1024 * 1024; // bytes per part of an entry's body: bounds memory
// A build's temporary key lives this long after its last chunk: a builder
// that dies leaves it behind for no longer (it is never renamed, so never served).
constexpr std::string_view temp_ttl_ms = "600000";
constexpr int read_attempts = 3; // an entry replaced while it is read is read again

std::int64_t realtime_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
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
                    RedisTimeouts{settings_.connect_timeout, settings_.io_timeout}, settings_.backoff());
  const bool reused = client_->connected();
  for (int attempt = 0;; ++attempt) {
    auto reply = send(*client_);
    const auto* e = std::get_if<RedisError>(&reply);
    if (e && e->kind == RedisError::Kind::dropped && reused && attempt == 0) continue;
    return reply;
  }
}

RedisResult<RedisReply> RedisStore::call(const std::vector<std::string_view>& argv) const {
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
Lookup write_failed() { return {LookupState::unreadable, {}, "cannot write a temporary file: " + errno_text(errno)}; }

// A field of an entry's hash: its bytes, nullopt when absent, or the error.
using Field = std::optional<std::string>;

Field field_of(const redisReply* r) {
  if (r->type == REDIS_REPLY_STRING) return std::string(r->str, r->len);
  return std::nullopt;
}

// HMGET KEY FIELD...: one value (or nullopt) a field.
RedisResult<std::vector<Field>> get_fields(const RedisStore& store, const std::string& ekey,
                                           std::initializer_list<std::string_view> fields) {
  std::vector<std::string_view> args{"HMGET", ekey};
  args.insert(args.end(), fields);
  auto r = store.call(args);
  if (auto* e = std::get_if<RedisError>(&r)) return *e;
  const redisReply* rep = std::get<RedisReply>(r).get();
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements != fields.size())
    return redis_error(RedisError::Kind::protocol, "unexpected reply to HMGET");
  std::vector<Field> out;
  for (std::size_t i = 0; i < rep->elements; ++i)
    out.push_back(field_of(rep->element[i]));
  return out;
}

bool wrong_type(const RedisError& e) {
  return e.kind == RedisError::Kind::server && e.text.starts_with("WRONGTYPE");
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

// Reads the entry's fields in order (header, parts, trailer) into an unnamed
// file and verifies it there. A hash renamed over it
// between two commands is detected by reading its header again when the
// checksums do not match: another header (another build's creation time) is
// a replacement, read again from the start; the same header is a corrupt entry.
Lookup RedisStore::read_entry(std::string_view key, const Inputs& inputs, const std::string& ekey) const {
  // Header, trailer and the first parts in one command: an entry of up to
  // about first_parts MiB is read at one instant, so a concurrent rebuild
  // can never make it read again; a larger one is checked as below.
  constexpr std::size_t first_parts = 4;
  auto first = get_fields(*this, ekey, {"h", "t", "0", "1", "2", "3"});
  if (auto* e = std::get_if<RedisError>(&first)) {
    // A string is an entry of an earlier layout (or nothing of ours): rebuilt over.
    if (wrong_type(*e)) return {LookupState::corrupt, {}, "not a hash value"};
    return unreadable(*e);
  }
  auto& fields = std::get<std::vector<Field>>(first);
  if (!fields[0]) return {LookupState::missing, {}, {}};
  const std::string header_bytes = std::move(*fields[0]);
  std::string why;
  const auto h = decode_header(header_bytes, why);
  if (!h) return {LookupState::corrupt, {}, why};
  // Another key whose MD5 collides is simply not ours: a miss, no warning;
  // so is a version 2 entry whose dependency stamps cannot be compared.
  if (h->key != key || !h->has_inputs(inputs)) return {LookupState::missing, {}, {}};

  UniqueFd fd = anonymous_file(h->file_size());
  if (!fd) return {LookupState::unreadable, {}, "cannot make a temporary file: " + errno_text(errno)};
  if (!write_all(fd.get(), header_bytes.data(), header_bytes.size())) return write_failed();
  const std::string trailer = fields[1].value_or(std::string());
  // The parts until the body is complete; a missing part leaves the file
  // short, which verification reports.
  std::uint64_t have = 0;
  for (std::size_t n = 0; have < h->body_len(); ++n) {
    Field part;
    if (n < first_parts) {
      part = std::exchange(fields[2 + n], std::nullopt);
    } else {
      auto next = get_fields(*this, ekey, {std::to_string(n)});
      if (auto* e = std::get_if<RedisError>(&next)) return unreadable(*e);
      part = std::move(std::get<std::vector<Field>>(next)[0]);
    }
    if (!part) break;
    if (!write_all(fd.get(), part->data(), part->size())) return write_failed();
    have += part->size();
  }
  if (!write_all(fd.get(), trailer.data(), trailer.size())) return write_failed();
  std::string bytes;
  const std::string wanted(key);
  auto verified = verify_entry(fd.get(), &wanted, why, &bytes, signer_);
  if (!verified) {
    auto again = get_fields(*this, ekey, {"h"});
    if (auto* e = std::get_if<RedisError>(&again)) {
      if (wrong_type(*e)) return {LookupState::corrupt, {}, "replaced while it was read"};
      return unreadable(*e);
    }
    const Field& now = std::get<std::vector<Field>>(again)[0];
    if (!now) return {LookupState::missing, {}, {}}; // dropped or expired meanwhile
    if (*now != header_bytes) return {LookupState::corrupt, {}, "replaced while it was read"};
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
  // The header field only: listing must not read every payload.
  auto head = get_fields(*this, ekey, {"h"});
  if (auto* e = std::get_if<RedisError>(&head)) {
    // Not a hash: not an entry. Refused by the ACL: an error, never a short list.
    if (wrong_type(*e)) return Found();
    return *e;
  }
  const Field& bytes = std::get<std::vector<Field>>(head)[0];
  if (!bytes) return Found(); // gone meanwhile
  std::string why;
  auto h = decode_header(*bytes, why);
  if (!h || entry_key(h->key, h->inputs) != ekey) return Found();
  const std::uint64_t size = h->file_size();
  return Found(std::pair(std::move(*h), size));
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
      auto h = read_header(std::string(name));
      if (auto* e = std::get_if<RedisError>(&h)) return SysError{server(), e->text};
      if (const auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h))
        out.push_back({got->first.created_ns, got->first.stdout_size(), got->first.key, got->first.inputs,
                       got->first.outputs.size()});
    }
  } while (cursor != "0");
  return out;
}

namespace {

// A build streamed into a temporary key (see redis_store.hpp).
class RedisBuild final : public EntryBuild {
public:
  RedisBuild(const RedisStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
             const BuildContents& what)
      : store_(store), entry_key_(store.entry_key(key, inputs)) {
    const std::string plain = store.entry_key(key);
    temp_key_ = plain.substr(0, plain.size() - 6) + ":tmp:" + random_token();
    header_.created_ns = created_ns;
    header_.key = std::string(key);
    header_.inputs = inputs;
    header_.outputs = what.outputs;
    keep_stderr_ = what.keep_stderr == KeepStderr::yes;
    header_.version =
        entry_version_for(inputs, keep_stderr_, !what.outputs.empty(), store.signer() != nullptr || what.compress);
    header_.compression = what.compress; // its flags and lengths are set by publish()
    if (const EntrySigner* signer = store.signer()) {
      header_.signature.assign(entry_tag_size, '\0'); // sealed by publish()
      mac_ = signer->begin();
    }
  }

  ~RedisBuild() override {
    // Best effort: the time to live removes it anyway.
    if (parts_ > 0 && !published_ && !error_) store_.call({"DEL", temp_key_});
  }

  // Prepares the stderr file; an error when it cannot be made.
  std::optional<SysError> start() {
    if (header_.compression) {
      stdout_z_ = std::make_unique<BlockCompressor>([this](const char* d, std::size_t n) { return store_stdout(d, n); });
      if (keep_stderr_)
        stderr_z_ = std::make_unique<BlockCompressor>([this](const char* d, std::size_t n) { return store_stderr(d, n); });
    }
    if (!keep_stderr_) return std::nullopt;
    stderr_fd_ = anonymous_file(chunk + 1);
    if (!stderr_fd_) return SysError{"a temporary file", errno_text(errno)};
    return std::nullopt;
  }

  bool append(const char* data, std::size_t len) override {
    if (!usable()) return false;
    return stdout_z_ ? stdout_z_->write(data, len) : store_stdout(data, len);
  }

  bool append_stderr(const char* data, std::size_t len) override {
    if (!keep_stderr_) return true;
    if (!usable()) return false;
    return stderr_z_ ? stderr_z_->write(data, len) : store_stderr(data, len);
  }

  // Stored bytes (raw, or compressed blocks): what --max-entry counts.
  bool store_stdout(const char* data, std::size_t len) {
    if (!usable() || !count(len)) return false;
    hash_.update(data, len);
    if (mac_) mac_->update(data, len);
    header_.payload_len += len;
    // Parts of at most one chunk, whatever size the compressor hands over.
    while (len > 0) {
      const std::size_t take = std::min(len, chunk - pending_.size());
      pending_.append(data, take);
      data += take;
      len -= take;
      if (pending_.size() == chunk && !flush()) return false;
    }
    return true;
  }

  bool store_stderr(const char* data, std::size_t len) {
    if (!usable() || !count(len)) return false;
    if (!write_all(stderr_fd_.get(), data, len)) {
      error_ = SysError{"a temporary file", errno_text(errno)};
      return false;
    }
    header_.stderr_len += len;
    return true;
  }

  bool add_outputs(UniqueFd fd, std::uint64_t len) override {
    if (!usable() || !count(len)) return false;
    outputs_fd_ = std::move(fd);
    header_.outputs_len = len;
    return true;
  }

  std::optional<SysError> publish() override {
    if (stdout_z_ && usable()) {
      if (stdout_z_->finish() && (!stderr_z_ || stderr_z_->finish())) {
        header_.compressed = (stdout_z_->framed() ? entry_compressed_stdout : 0) |
                             (stderr_z_ && stderr_z_->framed() ? entry_compressed_stderr : 0);
        header_.raw_stdout_len = stdout_z_->raw_len();
        header_.raw_stderr_len = stderr_z_ ? stderr_z_->raw_len() : 0;
      }
    }
    if (too_large_) return std::nullopt;
    if (error_) return error_;
    // The held stderr, then the outputs archive, go behind stdout, in
    // chunks like stdout.
    if (!send_behind(stderr_fd_.get(), header_.stderr_len) || !send_behind(outputs_fd_.get(), header_.outputs_len))
      return error_;
    stderr_fd_.reset();
    outputs_fd_.reset();
    if (mac_) EntrySigner::seal(*mac_, header_);
    const std::string head = encode_header(header_);
    const std::string trailer = encode_trailer(hash_.digest(), checksum(head));
    std::string expire = "0";
    if (const auto after = store_.expire_after()) {
      // The entry's age counts from the start of the build.
      const std::int64_t left = after->count() - (realtime_ns() - header_.created_ns);
      expire = std::to_string(std::max<std::int64_t>(1, (left + 999'999) / 1'000'000));
    }
    const std::string parts = std::to_string(parts_);
    auto r =
        store_.eval(cache_publish_script, {temp_key_, entry_key_}, {pending_, head, trailer, parts, expire});
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

  // Sends `len` bytes of `src` from its start; false (with error_) on failure.
  bool send_behind(int src, std::uint64_t len) {
    for (std::uint64_t at = 0; at < len;) {
      const std::size_t take = std::min<std::uint64_t>(len - at, chunk);
      const std::size_t old = pending_.size();
      pending_.resize(old + take);
      if (!pread_all(src, pending_.data() + old, take, static_cast<off_t>(at))) {
        error_ = SysError{"a temporary file", errno_text(errno)};
        return false;
      }
      hash_.update(pending_.data() + old, take);
      if (mac_) mac_->update(pending_.data() + old, take);
      at += take;
      if (pending_.size() >= chunk && !flush()) return false;
    }
    return true;
  }

  // Counts bytes against --max-entry; past it, the partial key goes.
  bool count(std::size_t len) {
    body_ += len;
    if (body_ <= store_.max_entry()) return true;
    too_large_ = true;
    pending_ = std::string();
    stderr_fd_.reset();
    if (parts_ > 0) store_.call({"DEL", temp_key_});
    parts_ = 0;
    return false;
  }

  bool flush() {
    const std::string part = std::to_string(parts_);
    auto r = store_.eval(cache_append_script, {temp_key_}, {pending_, temp_ttl_ms, part});
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
    ++parts_;
    pending_.clear();
    return true;
  }

  const RedisStore& store_;
  std::string entry_key_;
  std::string temp_key_;
  EntryHeader header_;
  Checksum hash_;
  std::unique_ptr<EntryMac> mac_; // --sign-key: the tag so far
  std::unique_ptr<BlockCompressor> stdout_z_, stderr_z_; // compression (the default here)
  std::string pending_; // bytes not sent yet (at most about one chunk)
  std::uint64_t parts_ = 0; // parts sent to the temporary hash
  std::uint64_t body_ = 0;
  bool keep_stderr_ = false;
  UniqueFd stderr_fd_; // --keep-stderr: held until stdout is complete
  UniqueFd outputs_fd_; // --output: the archive
  std::optional<SysError> error_;
  bool too_large_ = false;
  bool published_ = false;
};

} // namespace

std::variant<std::unique_ptr<EntryBuild>, SysError> RedisStore::begin_build(std::string_view key,
                                                                            const Inputs& inputs,
                                                                            std::int64_t created_ns,
                                                                            const BuildContents& what) const {
  auto b = std::make_unique<RedisBuild>(*this, key, inputs, created_ns, what);
  if (auto e = b->start()) return *e;
  return std::unique_ptr<EntryBuild>(std::move(b));
}

} // namespace bufferlock
