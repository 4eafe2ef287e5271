// For SCAN ... MATCH over our own key names (list, cache --list).
#pragma once

#include <string>
#include <string_view>

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

} // namespace bufferlock
