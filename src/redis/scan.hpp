// For SCAN ... MATCH over our own key names (list, cache --list).
#pragma once

#include "redis/connection.hpp"
#include "redis/error.hpp"

#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// `text` with the glob characters of MATCH escaped, so that a prefix matches
// only itself.
inline std::string glob_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// One SCAN reply: the next cursor ("0" once done) and the key names (views
// into the reply); nullopt when the reply has not SCAN's shape.
struct ScanPage {
  std::string cursor;
  std::vector<std::string_view> names;
};

inline std::optional<ScanPage> scan_page(const redisReply* r) {
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_ARRAY)
    return std::nullopt;
  ScanPage page{std::string(r->element[0]->str, r->element[0]->len), {}};
  const redisReply* keys = r->element[1];
  page.names.reserve(keys->elements);
  for (std::size_t i = 0; i < keys->elements; ++i)
    page.names.emplace_back(keys->element[i]->str, keys->element[i]->len);
  return page;
}

// Walks SCAN ... MATCH `pattern` to its end. `send(argv)` sends one SCAN
// where the caller wants it (a node, the first server) and returns its
// RedisResult<RedisReply>; each name found goes to `each`, which returns
// false to stop the walk (its reason is the caller's). The error of a
// SCAN that failed or had not SCAN's shape, else nullopt.
template <class Send, class Each>
std::optional<RedisError> scan_all(const std::string& pattern, const Send& send, const Each& each) {
  std::string cursor = "0";
  do {
    RedisResult<RedisReply> reply =
        send(std::vector<std::string_view>{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (auto* e = std::get_if<RedisError>(&reply)) return std::move(*e);
    auto page = scan_page(std::get<RedisReply>(reply).get());
    if (!page) return redis_error(RedisError::Kind::protocol, "unexpected reply to SCAN");
    cursor = std::move(page->cursor);
    for (const std::string_view name : page->names)
      if (!each(name)) return std::nullopt;
  } while (cursor != "0");
  return std::nullopt;
}

} // namespace bufferlock
