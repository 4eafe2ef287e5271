#include "cache/object_uses.hpp"

#include "cache/redis_scripts.hpp"
#include "cache/redis_store.hpp"
#include "cache/store.hpp"
#include "util/md5.hpp"

#include <cstdlib>

namespace bufferlock {

ObjectUses::ObjectUses(std::shared_ptr<const RedisStore> redis, const std::string& prefix,
                       const std::string& location)
    : redis_(std::move(redis)), key_(prefix + "uses:" + md5_hex(location)) {}

ObjectUses::~ObjectUses() = default;

void ObjectUses::record(const std::string& name, std::int64_t now_ns) const {
  redis_->eval(cache_object_use_script, {key_},
               {name, std::to_string(now_ns / 1'000'000), std::to_string(use_resolution_ns / 1'000'000),
                std::to_string(uses_ttl_ms)});
}

std::variant<std::map<std::string, std::int64_t>, SysError> ObjectUses::read() const {
  auto r = redis_->call({"HGETALL", key_});
  if (auto* e = std::get_if<RedisError>(&r)) return SysError{redis_->server(), e->text};
  const redisReply* rep = std::get<RedisReply>(r).get();
  std::map<std::string, std::int64_t> out;
  if (rep->type != REDIS_REPLY_ARRAY) return SysError{redis_->server(), "unexpected reply to HGETALL"};
  for (std::size_t i = 0; i + 1 < rep->elements; i += 2) {
    const redisReply* name = rep->element[i];
    const redisReply* ms = rep->element[i + 1];
    if (name->type != REDIS_REPLY_STRING || ms->type != REDIS_REPLY_STRING) continue;
    char* end = nullptr;
    const long long v = std::strtoll(ms->str, &end, 10);
    if (end != ms->str + ms->len || v <= 0) continue; // not ours
    out.emplace(std::string(name->str, name->len), static_cast<std::int64_t>(v) * 1'000'000);
  }
  return out;
}

void ObjectUses::forget(const std::vector<std::string>& names) const {
  if (names.empty()) return;
  std::vector<std::string_view> argv{"HDEL", key_};
  argv.insert(argv.end(), names.begin(), names.end());
  redis_->call(argv);
}

void ObjectUses::after_fork() const { redis_->after_fork(); }

} // namespace bufferlock
