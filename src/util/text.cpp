#include "util/text.hpp"

namespace bufferlock {

std::size_t utf8_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0; // overlong
    if (c == 0xED && b(1) > 0x9F) return 0; // U+D800..U+DFFF
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0; // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0; // above U+10FFFF
    return 4;
  }
  return 0; // a continuation byte, C0/C1 (overlong) or F5..FF
}

std::string escape_key(std::string_view key) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(key.size());
  while (!key.empty()) {
    const auto c = static_cast<unsigned char>(key.front());
    const std::size_t n = utf8_length(key);
    if (n == 0 || c < 0x20 || c == 0x7f || c == '\\') {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      key.remove_prefix(1);
    } else {
      out.append(key.substr(0, n));
      key.remove_prefix(n);
    }
  }
  return out;
}

} // namespace bufferlock
