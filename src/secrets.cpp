#include "secrets.hpp"

#include "messages.hpp"
#include "redis/url.hpp"
#include "util/args.hpp"
#include "util/files.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace bufferlock {

namespace {

// How many of argv's last words are the command (the words after KEY, as
// given); 0 for -c, whose string is one of bufferlock's own words.
int command_words(int argc, char** argv, const std::vector<std::string>& command) {
  const int n = static_cast<int>(command.size());
  if (n >= argc) return 0;
  for (int i = 0; i < n; ++i)
    if (command[static_cast<std::size_t>(i)] != argv[argc - n + i]) return 0;
  return n;
}

// Whether the URL in `word` ("--store=https://...", "http://...") is an
// http store's rather than a Redis server's.
bool is_http_url(std::string_view word) {
  const std::size_t end = word.find("://");
  std::size_t begin = end;
  while (begin > 0 && std::isalpha(static_cast<unsigned char>(word[begin - 1])))
    --begin;
  const std::string_view scheme = word.substr(begin, end - begin);
  return scheme == "http" || scheme == "https";
}

struct Hidden {
  bool redis = false; // a Redis URL's password
  bool store = false; // an http store URL's password
};

// Hides the passwords of the URLs in argv[1..own): which kinds it hid.
Hidden hide_url_passwords(int argc, char** argv, int own) {
  Hidden hidden;
  for (int i = 1; i < own; ++i) {
    const std::string_view word = argv[i];
    if (word.find("://") == std::string_view::npos) continue;
    const auto span = url_password_span(word);
    if (!span || span->len == 0) continue;
    (is_http_url(word) ? hidden.store : hidden.redis) = true;
    rewrite_arg(argc, argv, i, span->pos, span->len, std::string(std::min<std::size_t>(span->len, 3), '*'));
  }
  return hidden;
}

} // namespace

void protect_secrets(int argc, char** argv, const Options& o) {
  const Hidden hidden = hide_url_passwords(argc, argv, argc - command_words(argc, argv, o.argv));
  if (hidden.redis) diag::debug_lazy([] { return message(Msg::redis_password_hidden); });
  if (hidden.store) diag::debug_lazy([] { return message(Msg::store_password_hidden); });
  if (!o.redis.tls.key.empty()) warn_if_key_exposed(o.redis.tls.key);
}

void warn_if_key_exposed(const std::string& path) {
  const auto mode = readable_by_others(path);
  if (!mode) return;
  char octal[8];
  std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(*mode));
  diag::warn(message(Msg::key_file_exposed, {{"path", path}, {"value", octal}}));
}

} // namespace bufferlock
