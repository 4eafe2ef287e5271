#include "cache/stats_redis.hpp"

#include "cache/redis_scripts.hpp"
#include "cache/redis_store.hpp"
#include "util/md5.hpp"

#include <charconv>

namespace bufferlock {

namespace {

std::string saved_key(const std::string& base) { return base + ":saved"; }

// A hash's fields as counters; the "key" field into `key` when asked.
StatsCounters counters_of_hash(const redisReply* rep, std::string* key = nullptr) {
  StatsCounters c;
  if (rep->type != REDIS_REPLY_ARRAY) return c;
  for (std::size_t i = 0; i + 1 < rep->elements; i += 2) {
    const redisReply* name = rep->element[i];
    const redisReply* value = rep->element[i + 1];
    if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) continue;
    const std::string_view n(name->str, name->len);
    if (n == "key") {
      if (key) *key = std::string(value->str, value->len);
      continue;
    }
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(value->str, value->str + value->len, v);
    if (ec == std::errc() && end == value->str + value->len) set_counter(c, n, v);
  }
  return c;
}

} // namespace

StatsRedis::StatsRedis(const RedisStore& store, const std::string& prefix)
    : redis_(&store), base_("{" + prefix + "stats}") {
  redis_->probe_slot_of(base_); // on a cluster, count() finds the node of the counters
}

StatsRedis::StatsRedis(std::shared_ptr<const RedisStore> redis, const std::string& prefix,
                       const std::string& location)
    : own_(std::move(redis)), redis_(own_.get()), base_("{" + prefix + "stats:" + md5_hex(location) + "}") {
  redis_->probe_slot_of(base_);
}

StatsRedis::~StatsRedis() = default;

void StatsRedis::count(const CallCount& c) const {
  const StatsCounters counters = counters_of(c);
  std::vector<std::string> values; // alive while argv views them
  std::vector<std::pair<std::string_view, std::uint64_t>> nonzero;
  for (const auto& f : counter_fields(counters))
    if (f.second != 0) nonzero.push_back(f);
  values.reserve(nonzero.size() + 2);
  values.push_back(std::to_string(stats_ttl_ms));
  values.push_back(std::to_string(counters.saved_ns / 1'000'000));
  std::vector<std::string_view> argv{values[0], c.key, values[1]};
  for (const auto& [name, value] : nonzero) {
    values.push_back(std::to_string(value));
    argv.push_back(name);
    argv.push_back(values.back());
  }
  // Sent on the connection the call already has, after its other commands,
  // and never waited for: counting costs no round trip (SPEC §21). The
  // server runs what it read before we close; a reply never read loses
  // nothing but what was lost anyway (a count that could not be written is
  // dropped silently: an error, a MOVED in a cluster, a dead connection).
  redis_->eval_unread(cache_stats_count_script, {base_, saved_key(base_), base_ + ":key:" + md5_hex(c.key)},
                      argv);
}

std::variant<StatsSums, SysError> StatsRedis::read() const {
  StatsSums sums;
  auto total = redis_->call({"HGETALL", base_});
  if (auto* e = std::get_if<RedisError>(&total)) return SysError{redis_->server(), e->text};
  sums.total = counters_of_hash(std::get<RedisReply>(total).get());
  const std::string saved = saved_key(base_);
  auto top = redis_->call({"ZREVRANGE", saved, "0", "9"});
  if (auto* e = std::get_if<RedisError>(&top)) return SysError{redis_->server(), e->text};
  const redisReply* names = std::get<RedisReply>(top).get();
  if (names->type != REDIS_REPLY_ARRAY) return sums;
  for (std::size_t i = 0; i < names->elements; ++i) {
    const redisReply* n = names->element[i];
    if (n->type != REDIS_REPLY_STRING) continue;
    const std::string hash(n->str, n->len);
    if (!hash.starts_with(base_ + ":key:")) continue; // not ours
    auto got = redis_->call({"HGETALL", hash});
    if (auto* e = std::get_if<RedisError>(&got)) return SysError{redis_->server(), e->text};
    std::string key;
    const StatsCounters c = counters_of_hash(std::get<RedisReply>(got).get(), &key);
    if (!key.empty()) add_counters(sums.keys[key], c); // an expired KEY's hash is gone
  }
  return sums;
}

std::optional<SysError> StatsRedis::zero() const {
  auto r = redis_->eval(cache_stats_zero_script, {base_, saved_key(base_)}, {});
  if (auto* e = std::get_if<RedisError>(&r)) return SysError{redis_->server(), e->text};
  return std::nullopt;
}

void StatsRedis::after_fork() const {
  if (own_) own_->after_fork();
}

} // namespace bufferlock
