#include "redis/scripts.hpp"

namespace bufferlock {

RedisResult<RedisReply> run_script(RedisConnection& conn, const RedisScript& script,
                                   std::string_view lock_key, std::string_view wake_key,
                                   std::string_view token, std::string_view ms) {
  auto result = conn.command({"EVALSHA", script.sha1, "2", lock_key, wake_key, token, ms});
  if (const auto* e = std::get_if<RedisError>(&result);
      e && e->kind == RedisError::Kind::server && e->text.starts_with("NOSCRIPT")) {
    result = conn.command({"EVAL", script.source, "2", lock_key, wake_key, token, ms});
  }
  return result;
}

} // namespace bufferlock
