#include "cache/redis_store.hpp"

#include "cache/redis_scripts.hpp"
#include "cache/streamed_build.hpp"
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
#include <map>
#include <utility>

namespace bufferlock {

namespace {

constexpr std::size_t chunk = 1024 * 1024; // bytes per part of an entry's body: bounds memory
// A build's temporary key lives this long after its last chunk: a builder
// that dies leaves it behind for no longer (it is never renamed, so never served).
constexpr std::string_view temp_ttl_ms = "600000";
constexpr int read_attempts = 3; // an entry replaced while it is read is read again

} // namespace

constexpr StoreMessages redis_messages{Msg::cache_redis_entry_corrupt, Msg::cache_redis_read_failed,
                                       Msg::cache_redis_store_failed,  Msg::cache_redis_list_failed,
                                       Msg::cache_redis_drop_failed,   Msg::cache_http_cannot_list};

RedisStore::RedisStore(const RedisLockSettings& settings, std::optional<Nanos> expire_after)
    : EntryStore(redis_messages), settings_(settings), expire_after_(expire_after) {}

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

RedisClient& RedisStore::client() const {
  if (!client_) {
    client_.emplace(settings_.url, settings_.password,
                    RedisTimeouts{settings_.connect_timeout, settings_.io_timeout}, settings_.backoff());
    if (!probe_.empty()) client_->probe_slot_of(probe_);
  }
  return *client_;
}

template <class Send> RedisResult<RedisReply> RedisStore::on_client(Send send) const {
  const bool reused = client().connected();
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

void RedisStore::probe_slot_of(std::string key) const {
  probe_ = std::move(key);
  if (client_) client_->probe_slot_of(probe_);
}

void RedisStore::eval_unread(const RedisScript& script, const std::vector<std::string>& keys,
                             const std::vector<std::string_view>& argv) const {
  client().eval_unread(script, keys, argv);
}

void RedisStore::after_fork() const {
  // The parent keeps the socket; the child talks on its own.
  client_.reset();
}

namespace {

Lookup unreadable(const RedisError& e) { return {LookupState::unreadable, {}, e.text}; }
Lookup write_failed() {
  return {LookupState::unreadable, {}, "cannot write a temporary file: " + errno_text(errno)};
}

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

// A last use as "u" holds it (ms since the epoch); nullopt when absent or no number.
std::optional<std::int64_t> used_ns(const Field& f) {
  if (!f || f->empty() || f->size() > 15) return std::nullopt;
  std::int64_t ms = 0;
  for (const char c : *f) {
    if (c < '0' || c > '9') return std::nullopt;
    ms = ms * 10 + (c - '0');
  }
  return ms * 1'000'000;
}

bool wrong_type(const RedisError& e) {
  return e.kind == RedisError::Kind::server && e.text.starts_with("WRONGTYPE");
}

} // namespace

Lookup RedisStore::lookup(std::string_view key, const Inputs& address) const {
  const std::string ekey = entry_key(key, address);
  Lookup last{LookupState::missing, {}, {}};
  for (int attempt = 0; attempt < read_attempts; ++attempt) {
    last = read_entry(key, address, ekey);
    if (last.state != LookupState::corrupt || last.why != "replaced while it was read") return last;
  }
  return last;
}

// Reads the entry's fields in order (header, parts, trailer) into an unnamed
// file and verifies it there. A hash renamed over it
// between two commands is detected by reading its header again when the
// checksums do not match: another header (another build's creation time) is
// a replacement, read again from the start; the same header is a corrupt entry.
Lookup RedisStore::read_entry(std::string_view key, const Inputs& address, const std::string& ekey) const {
  // Header, trailer and the first parts in one command: an entry of up to
  // about first_parts MiB is read at one instant, so a concurrent rebuild
  // can never make it read again; a larger one is checked as below.
  constexpr std::size_t first_parts = 4;
  auto first = get_fields(*this, ekey, {"h", "t", "0", "1", "2", "3", "u"});
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
  if (h->key != key || !h->filed_at(address)) return {LookupState::missing, {}, {}};

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
  CachedEntry found{std::move(fd), std::move(*verified), std::move(bytes)};
  found.last_used_ns = used_ns(fields[2 + first_parts]);
  return {LookupState::found, std::move(found), {}};
}

void RedisStore::record_use(const CachedEntry& e) const {
  const std::int64_t now = wall_clock_ns();
  if (!use_worth_recording(e.last_used_ns.value_or(e.header.created_ns), now)) return;
  eval(cache_use_script, {entry_key(e.header.key, e.header.address())}, {std::to_string(now / 1'000'000)});
}

std::variant<GcCounts, SysError> RedisStore::gc(const GcPolicy& policy) const {
  GcCounts counts;
  if (!policy.max_size && !policy.max_unused) return counts;
  std::vector<WeighedEntry> entries;
  // What was read of each: for -v, and for the removal (cache_gc_del_script).
  struct Weighed {
    EntryHeader header;
    std::string head, used;
  };
  std::map<std::string, Weighed, std::less<>> weighed;
  // Only keys whose "h" decodes to an entry filed under that very name: a
  // lock, a wake list, a fence or a holder record is never one.
  auto error = scan({}, entry_pattern(), [&](std::string_view name) -> std::optional<SysError> {
    const std::string ekey(name);
    auto got = get_fields(*this, ekey, {"h", "u"});
    if (auto* e = std::get_if<RedisError>(&got)) {
      if (wrong_type(*e)) return std::nullopt;
      return SysError{server(), e->text};
    }
    auto& f = std::get<std::vector<Field>>(got);
    std::string why;
    auto h = f[0] ? decode_header(*f[0], why) : std::nullopt;
    if (!h || entry_key(h->key, h->address()) != ekey) return std::nullopt;
    entries.push_back({ekey, stored_size(*h), used_ns(f[1]).value_or(h->created_ns)});
    weighed.emplace(ekey, Weighed{std::move(*h), std::move(*f[0]), f[1].value_or("")});
    return std::nullopt;
  });
  if (error) return *error;
  for (const Removal& r : by_use(std::move(entries), policy)) {
    const Weighed& w = weighed.at(r.name);
    auto del = eval(cache_gc_del_script, {r.name}, {w.head, w.used});
    if (auto* e = std::get_if<RedisError>(&del)) return SysError{server(), e->text};
    const redisReply* rep = std::get<RedisReply>(del).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer == 0) continue; // gone, rebuilt or hit meanwhile
    ++counts.entries_removed;
    const EntryHeader& h = w.header;
    say_removed(&h, where(h.key, h.address()), h.file_size(), r.why);
  }
  diag::debug_lazy([&] {
    return message(Msg::cache_gc_done,
                   {{"entries", std::to_string(counts.entries_removed)}, {"temps", "0"}, {"path", server()}});
  });
  return counts;
}

std::variant<std::vector<std::string>, SysError> RedisStore::keys_of(std::string_view key) const {
  // Every entry key of KEY shares its hash tag: on a cluster, the node of
  // that slot holds them all, so SCAN goes there.
  const std::string plain = entry_key(key);
  std::vector<std::string> out;
  auto error = scan(plain, glob_escape(plain) + "*", [&](std::string_view name) -> std::optional<SysError> {
    if (name == plain || (name.size() == plain.size() + 33 && name[plain.size()] == ':'))
      out.emplace_back(name);
    return std::nullopt;
  });
  if (error) return *error;
  return out;
}

std::optional<SysError>
RedisStore::scan(std::string_view node_of, const std::string& pattern,
                 const std::function<std::optional<SysError>(std::string_view)>& each) const {
  std::optional<SysError> stopped;
  const auto send = [&](const std::vector<std::string_view>& argv) {
    return on_client([&](RedisClient& c) { return c.command(node_of, argv); });
  };
  const auto e = scan_all(pattern, send, [&](std::string_view name) { return !(stopped = each(name)); });
  if (e) return SysError{server(), e->text};
  return stopped;
}

std::optional<SysError> RedisStore::drop(std::string_view key) const {
  auto keys = keys_of(key);
  if (auto* e = std::get_if<SysError>(&keys)) return *e;
  auto& all = std::get<std::vector<std::string>>(keys);
  all.push_back(entry_key(key)); // also when SCAN missed it (a key added meanwhile)
  for (const auto& k : all) {
    // -v names what goes: its header read first.
    auto h = diag::verbose() ? read_header(k)
                             : RedisResult<std::optional<std::pair<EntryHeader, std::uint64_t>>>();
    auto r = call({"DEL", k});
    if (auto* e = std::get_if<RedisError>(&r)) return SysError{server(), e->text};
    const redisReply* rep = std::get<RedisReply>(r).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer == 0) continue; // not there
    if (const auto* got = std::get_if<std::optional<std::pair<EntryHeader, std::uint64_t>>>(&h); got && *got)
      say_removed(&(*got)->first, where(key, (*got)->first.address()), (*got)->second, "dropped");
    else
      say_removed(nullptr, "Redis at " + server() + ", key " + k, 0, "dropped");
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
  if (!h || entry_key(h->key, h->address()) != ekey) return Found();
  const std::uint64_t size = h->file_size();
  return Found(std::pair(std::move(*h), size));
}

// The header field alone: one HMGET.
Lookup RedisStore::peek(std::string_view key, const Inputs& address) const {
  auto h = read_header(entry_key(key, address));
  if (auto* e = std::get_if<RedisError>(&h)) return unreadable(*e);
  auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h);
  if (!got || got->first.key != key || !got->first.filed_at(address)) return {LookupState::missing, {}, {}};
  return {LookupState::found, CachedEntry{{}, std::move(got->first), {}}, {}};
}

EntryStore::Headers RedisStore::headers_of(std::string_view key) const {
  auto keys = keys_of(key);
  if (auto* e = std::get_if<SysError>(&keys)) return Lookup{LookupState::unreadable, {}, e->reason};
  std::vector<StaleCandidate> found;
  for (auto& ekey : std::get<std::vector<std::string>>(keys)) {
    auto h = read_header(ekey);
    if (auto* e = std::get_if<RedisError>(&h)) return unreadable(*e);
    if (auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h))
      found.push_back({std::move(got->first), std::move(ekey)});
  }
  return found;
}

Lookup RedisStore::read_candidate(std::string_view key, const StaleCandidate& c) const {
  // Served to whoever asks, whatever its inputs: read it as its own.
  const Inputs address = c.header.address();
  return read_entry(key, address, entry_key(key, address));
}

std::variant<std::vector<ListedEntry>, SysError> RedisStore::list_entries() const {
  std::vector<ListedEntry> out;
  // SCAN with no key goes to the first node, as call() sends it.
  auto error = scan({}, entry_pattern(), [&](std::string_view name) -> std::optional<SysError> {
    auto h = read_header(std::string(name));
    if (auto* e = std::get_if<RedisError>(&h)) return SysError{server(), e->text};
    if (const auto& got = std::get<std::optional<std::pair<EntryHeader, std::uint64_t>>>(h))
      out.push_back(listed_entry(got->first, got->second));
    return std::nullopt;
  });
  if (error) return *error;
  return out;
}

namespace {

// A build streamed into a temporary key (see redis_store.hpp).
class RedisBuild final : public StreamedBuild {
public:
  RedisBuild(const RedisStore& store, std::string_view key, const Inputs& inputs, std::int64_t created_ns,
             const BuildContents& what)
      : StreamedBuild(store, key, inputs, created_ns, what, chunk), store_(store),
        entry_key_(store.entry_key(key, entry_address(inputs, what.outputs))) {
    const std::string plain = store.entry_key(key);
    temp_key_ = plain.substr(0, plain.size() - 6) + ":tmp:" + random_token();
  }

  ~RedisBuild() override {
    // Best effort: the time to live removes it anyway.
    if (parts_sent() > 0 && !published() && !error()) store_.call({"DEL", temp_key_});
  }

private:
  bool send_part(std::string& part) override {
    const std::string n = std::to_string(parts_sent());
    auto r = store_.eval(cache_append_script, {temp_key_}, {part, temp_ttl_ms, n});
    if (auto* e = std::get_if<RedisError>(&r)) {
      fail(SysError{store_.server(), e->text});
      return false;
    }
    const redisReply* rep = std::get<RedisReply>(r).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0) {
      fail(SysError{store_.server(), "the build's temporary key expired before it was complete"});
      return false;
    }
    return true;
  }

  std::optional<SysError> finish(std::string& last_part, const std::string& head,
                                 const std::string& trailer) override {
    std::string expire = "0";
    if (const auto after = store_.expire_after()) {
      // The entry's age counts from the start of the build.
      const std::int64_t left = after->count() - (wall_clock_ns() - header().created_ns);
      expire = std::to_string(std::max<std::int64_t>(1, (left + 999'999) / 1'000'000));
    }
    const std::string parts = std::to_string(parts_sent());
    auto r =
        store_.eval(cache_publish_script, {temp_key_, entry_key_}, {last_part, head, trailer, parts, expire});
    if (auto* e = std::get_if<RedisError>(&r)) return SysError{store_.server(), e->text};
    const redisReply* rep = std::get<RedisReply>(r).get();
    if (rep->type != REDIS_REPLY_INTEGER || rep->integer != 1)
      return SysError{store_.server(), "the build's temporary key expired before it was complete"};
    return std::nullopt;
  }

  void abandon() override {
    if (parts_sent() > 0) store_.call({"DEL", temp_key_});
  }

  const RedisStore& store_;
  std::string entry_key_;
  std::string temp_key_;
};

} // namespace

BuildOrError RedisStore::begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                                     const BuildContents& what) const {
  return start_build<RedisBuild>(*this, key, inputs, created_ns, what);
}

} // namespace bufferlock
