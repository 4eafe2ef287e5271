#include "secrets.hpp"

#include "messages.hpp"
#include "redis/url.hpp"
#include "util/args.hpp"
#include "util/files.hpp"

#include <algorithm>
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

// Hides the passwords of the URLs in argv[1..own): how many it hid.
int hide_url_passwords(int argc, char** argv, int own) {
  int hidden = 0;
  for (int i = 1; i < own; ++i) {
    const std::string_view word = argv[i];
    if (word.find("://") == std::string_view::npos) continue;
    const auto span = url_password_span(word);
    if (!span || span->len == 0) continue;
    rewrite_arg(argc, argv, i, span->pos, span->len, std::string(std::min<std::size_t>(span->len, 3), '*'));
    ++hidden;
  }
  return hidden;
}

} // namespace

void protect_secrets(int argc, char** argv, const Options& o) {
  if (hide_url_passwords(argc, argv, argc - command_words(argc, argv, o.argv)) > 0)
    diag::debug_lazy([] { return message(Msg::redis_password_hidden); });
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
