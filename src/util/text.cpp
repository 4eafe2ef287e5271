#include "util/text.hpp"

#include "util/hex.hpp"

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

std::string escape_bytes(std::string_view bytes, bool backslash) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    const auto c = static_cast<unsigned char>(bytes.front());
    const std::size_t n = utf8_length(bytes);
    if (n == 0 || c < 0x20 || c == 0x7f || (backslash && c == '\\')) {
      out += "\\x";
      append_hex(out, bytes.substr(0, 1));
      bytes.remove_prefix(1);
    } else {
      out.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
    }
  }
  return out;
}

} // namespace bufferlock
