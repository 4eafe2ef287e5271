#include "cache/open_store.hpp"

#include "cache/file_store.hpp"
#include "cache/http_store.hpp"
#include "cache/redis_store.hpp"
#include "cache/s3_store.hpp"
#include "cache/settings.hpp"
#include "cache/stats_file.hpp"
#include "cache/stats_redis.hpp"
#include "lock/settings.hpp"
#include "redis/url.hpp"
#include "s3/credentials.hpp"
#include "s3/url.hpp"
#include "run/command.hpp"
#include "util/files.hpp"
#include "util/md5.hpp"

#include <string_view>

namespace bufferlock {

namespace {

// What a store is made from.
struct StoreRequest {
  const CacheSettings& cache;
  const RedisLockSettings& redis;
  const std::string& cache_dir;
  const s3::EnvLookup& getenv;
  // The -r Redis of a remote store: one connection for its record of uses
  // and its counters (made by the first that asks).
  mutable std::shared_ptr<const RedisStore> r_redis;
};

bool has_r_redis(const StoreRequest& r) {
  const RedisUrl& url = r.redis.url;
  return !(url.transport == RedisUrl::Transport::tcp && url.host.empty()); // the empty default: no -r
}

std::shared_ptr<const RedisStore> r_redis(const StoreRequest& r) {
  if (!r.r_redis) r.r_redis = std::make_shared<RedisStore>(r.redis, std::nullopt);
  return r.r_redis;
}

using Opened = std::variant<std::unique_ptr<EntryStore>, std::string>;

// Where a remote store at `location` (http, S3) records its objects' last
// use: the -r Redis; null without -r (its URL is then the empty default).
std::unique_ptr<ObjectUses> object_uses(const StoreRequest& r, const std::string& location) {
  if (!has_r_redis(r)) return nullptr;
  return std::make_unique<ObjectUses>(r_redis(r), r.redis.key_prefix, location);
}

Opened open_file(const StoreRequest& r) { return std::make_unique<CacheStore>(r.cache_dir); }

Opened open_redis(const StoreRequest& r) {
  // Entries live for max-age + stale (without --max-age, for ever).
  std::optional<Nanos> expire_after = r.cache.max_age;
  if (expire_after && r.cache.stale) *expire_after += *r.cache.stale;
  return std::make_unique<RedisStore>(r.redis, expire_after);
}

Opened open_http(const StoreRequest& r) {
  HttpSettings s;
  s.ca_file = r.cache.store_ca;
  s.timeout = r.cache.store_timeout;
  s.while_waiting = while_sink_waits; // a slow upload keeps signals and renewals on time
  if (!r.cache.store_token_file.empty()) {
    auto read = read_secret_file(r.cache.store_token_file);
    if (read.index() == 1)
      return message(Msg::usage_store_token_file,
                     {{"path", r.cache.store_token_file}, {"error", std::get<1>(read)}});
    s.token = std::get<0>(std::move(read));
    while (!s.token.empty() && (s.token.back() == '\n' || s.token.back() == '\r'))
      s.token.pop_back();
  }
  return std::make_unique<HttpStore>(r.cache.store_url, std::move(s),
                                     object_uses(r, r.cache.store_url.display));
}

// The AWS settings (SPEC §19) read now: none, or an unusable one, is a
// usage error naming where it was looked for (never a secret).
Opened open_s3(const StoreRequest& r) {
  const std::string& url = r.cache.store_s3;
  const s3::EnvLookup& env = r.getenv;
  const auto refused = [&](const std::string& why) -> Opened {
    return message(Msg::usage_s3_settings, {{"server", url}, {"error", why}});
  };
  auto where = s3::parse_s3_url(url);
  if (auto* why = std::get_if<std::string>(&where)) return refused(*why);
  auto found = s3::load_credentials(env);
  if (auto* why = std::get_if<std::string>(&found)) return refused(*why);
  auto region = s3::load_region(env);
  if (region.index() == 1) return refused(std::get<1>(region));
  auto endpoint = s3::load_endpoint(env, std::get<0>(region));
  if (auto* why = std::get_if<std::string>(&endpoint)) return refused(*why);
  s3::Settings s;
  s.credentials = std::get<s3::FoundCredentials>(found).credentials;
  s.region = std::get<0>(region);
  s.endpoint = std::get<s3::Endpoint>(endpoint);
  s.location = std::get<s3::Location>(where);
  s.http.ca_file = r.cache.store_ca;
  s.http.timeout = r.cache.store_timeout;
  s.http.while_waiting = while_sink_waits;
  diag::debug_lazy([&] {
    return message(Msg::cache_s3_settings, {{"server", url},
                                            {"source", std::get<s3::FoundCredentials>(found).source},
                                            {"region", s.region},
                                            {"endpoint", s.endpoint.base}});
  });
  return std::make_unique<S3Store>(std::move(s), object_uses(r, url));
}

// The URL of --store into the settings of its store.
using Spell = std::optional<StoreSpellingError> (*)(CacheSettings&, std::string_view);

std::optional<StoreSpellingError> spell_word(CacheSettings&, std::string_view) { return std::nullopt; }

std::optional<StoreSpellingError> spell_http(CacheSettings& c, std::string_view text) {
  auto url = parse_store_url(text);
  if (auto* why = std::get_if<std::string>(&url)) return StoreSpellingError{redact_url(text), *why};
  c.store_url = std::get<StoreUrl>(std::move(url));
  return std::nullopt;
}

std::optional<StoreSpellingError> spell_s3(CacheSettings& c, std::string_view text) {
  auto where = s3::parse_s3_url(text);
  if (auto* why = std::get_if<std::string>(&where)) return StoreSpellingError{std::string(text), *why};
  c.store_s3 = std::string(text);
  return std::nullopt;
}

// The stores: how --store spells each (a word, or a URL's scheme), what it
// takes, how it is made, and where it keeps its counters (`stats_in_store`:
// in the store itself, which a store down for the run spares the count).

// Where a store's counters are kept (SPEC §21): in the cache directory, in
// the Redis store's server, or for a remote store in the -r Redis (else in
// the cache directory, one file per store location).
using OpenedStats = std::unique_ptr<StatsSink>;
OpenedStats file_stats(const StoreRequest& r, const EntryStore&) {
  return std::make_unique<StatsFile>(r.cache_dir, "stats");
}
OpenedStats redis_stats(const StoreRequest& r, const EntryStore& store) {
  return std::make_unique<StatsRedis>(static_cast<const RedisStore&>(store), r.redis.key_prefix); // open_redis's
}
OpenedStats remote_stats(const StoreRequest& r, const EntryStore& store) {
  if (!has_r_redis(r)) return std::make_unique<StatsFile>(r.cache_dir, "stats." + md5_hex(store.location()));
  return std::make_unique<StatsRedis>(r_redis(r), r.redis.key_prefix, store.location());
}

struct Scheme {
  std::string_view spelling; // ending in "://": the beginning of a URL
  CacheStoreKind kind;
  StoreTraits traits;
  Spell spell;
  Opened (*open)(const StoreRequest&);
  OpenedStats (*stats)(const StoreRequest&, const EntryStore&);
  bool stats_in_store = false;
};
constexpr Scheme schemes[] = {
    {"file", CacheStoreKind::file, {}, spell_word, open_file, file_stats},
    {"redis", CacheStoreKind::redis, {.in_redis = true}, spell_word, open_redis, redis_stats, true},
    {"http://", CacheStoreKind::http, {.objects = true, .token = true, .tls = StoreTraits::Tls::by_url},
     spell_http, open_http, remote_stats},
    {"https://", CacheStoreKind::http, {.objects = true, .token = true, .tls = StoreTraits::Tls::by_url},
     spell_http, open_http, remote_stats},
    {"s3://", CacheStoreKind::s3, {.objects = true, .tls = StoreTraits::Tls::may}, spell_s3, open_s3,
     remote_stats},
};

const Scheme* scheme_spelled(std::string_view text) {
  for (const Scheme& s : schemes)
    if (s.spelling.ends_with("://") ? text.starts_with(s.spelling) : text == s.spelling) return &s;
  return nullptr;
}

const Scheme& scheme_of(const CacheSettings& c) {
  for (const Scheme& s : schemes)
    if (s.kind == c.store) return s;
  return schemes[0];
}

// A store that failed a read (no answer, a stall, an error of the server)
// is down for the rest of the run, as Gradle's remote cache is: a dead
// server costs a caller one timeout, not one a request. Its later reads
// are misses and its builds store nothing, all for the first reason.
// Every call of the interface is passed on: a virtual with a default in
// EntryStore that is not forwarded here would run the default, not the store's.
class DownForRun final : public EntryStore {
public:
  DownForRun(std::unique_ptr<EntryStore> store, bool stats_in_store)
      : EntryStore(store->messages()), store_(std::move(store)), stats_in_store_(stats_in_store) {}

  std::string_view name() const override { return store_->name(); }
  std::string location() const override { return store_->location(); }
  bool compresses(bool asked) const override { return store_->compresses(asked); }
  bool limits_entries() const override { return store_->limits_entries(); }
  std::string where(std::string_view key, const Inputs& address) const override {
    return store_->where(key, address);
  }
  std::optional<SysError> prepare() const override { return store_->prepare(); }
  std::uint64_t stored_size(const EntryHeader& h) const override { return store_->stored_size(h); }
  Lookup lookup(std::string_view key, const Inputs& address) const override {
    if (down_) return down();
    return noted(store_->lookup(key, address));
  }
  Lookup lookup_to_restore(std::string_view key, const Inputs& address, const Serves& serves) const override {
    if (down_) return down();
    return noted(store_->lookup_to_restore(key, address, serves));
  }
  Lookup peek(std::string_view key, const Inputs& address) const override {
    if (down_) return down();
    return noted(store_->peek(key, address));
  }
  // A store that cannot list (--stale-if-error's search) may still store.
  Lookup newest(std::string_view key, const std::vector<std::string>& outputs) const override {
    if (down_) return down();
    return store_->newest(key, outputs);
  }
  Headers headers_of(std::string_view key) const override {
    if (down_) return down();
    return store_->headers_of(key);
  }
  Lookup read_candidate(std::string_view key, const StaleCandidate& c) const override {
    if (down_) return down();
    return store_->read_candidate(key, c);
  }
  std::optional<SysError> drop(std::string_view key) const override { return store_->drop(key); }
  std::variant<std::vector<ListedEntry>, SysError> list_entries() const override {
    return store_->list_entries();
  }
  BuildOrError begin_build(std::string_view key, const Inputs& inputs, std::int64_t created_ns,
                           const BuildContents& what) const override {
    if (down_) return SysError{store_->location(), *down_};
    return store_->begin_build(key, inputs, created_ns, what);
  }
  std::variant<GcCounts, SysError> gc(const GcPolicy& policy) const override { return store_->gc(policy); }
  void record_use(const CachedEntry& e) const override {
    if (!down_) store_->record_use(e);
  }
  void after_fork() const override {
    store_->after_fork();
    if (stats_) stats_->after_fork();
  }
  // A store down for the run is not asked again to count.
  void count(const CallCount& c) const override {
    if (!down_ || !stats_in_store_) EntryStore::count(c);
  }
  void sign_with(const EntrySigner* signer) override {
    signer_ = signer;
    store_->sign_with(signer);
  }

private:
  Lookup down() const { return {LookupState::unreadable, {}, *down_}; }
  Lookup noted(Lookup l) const {
    if (l.state == LookupState::unreadable) down_ = l.why;
    return l;
  }

  std::unique_ptr<EntryStore> store_;
  bool stats_in_store_;
  mutable std::optional<std::string> down_;
};

} // namespace

const StoreTraits* store_spelled(std::string_view text) {
  const Scheme* s = scheme_spelled(text);
  return s ? &s->traits : nullptr;
}

std::optional<StoreSpellingError> spell_store(CacheSettings& c, std::string_view text) {
  const Scheme* s = scheme_spelled(text);
  if (!s) return StoreSpellingError{std::string(text), "no store is spelled so"};
  if (auto e = s->spell(c, text)) return e;
  c.store = s->kind;
  return std::nullopt;
}

const StoreTraits& store_traits(const CacheSettings& c) { return scheme_of(c).traits; }

bool store_talks_tls(const CacheSettings& c) {
  const StoreTraits::Tls tls = store_traits(c).tls;
  return tls == StoreTraits::Tls::may || (tls == StoreTraits::Tls::by_url && c.store_url.tls);
}

std::variant<std::unique_ptr<EntryStore>, std::string>
open_store(const CacheSettings& cache, const RedisLockSettings& redis, const std::string& cache_dir,
           const s3::EnvLookup& getenv) {
  const Scheme& s = scheme_of(cache);
  const StoreRequest r{cache, redis, cache_dir, getenv, nullptr};
  Opened made = s.open(r);
  auto* store = std::get_if<std::unique_ptr<EntryStore>>(&made);
  if (!store) return made;
  OpenedStats stats = s.stats(r, **store);
  auto down = std::make_unique<DownForRun>(std::move(*store), s.stats_in_store);
  down->keep_stats_in(std::move(stats));
  return down;
}

std::optional<SysError> prepare_cache_dir(const std::string& dir) { return CacheStore(dir).prepare(); }

} // namespace bufferlock
