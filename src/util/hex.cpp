#include "util/hex.hpp"

namespace bufferlock {

namespace {

constexpr char digits[] = "0123456789abcdef";

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

} // namespace

// Written in place, not appended a digit at a time: md5_hex names every
// lock and entry, on every run's path.
void append_hex(std::string& out, std::string_view bytes) {
  std::size_t at = out.size();
  out.resize(at + bytes.size() * 2);
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    out[at++] = digits[c >> 4];
    out[at++] = digits[c & 15];
  }
}

std::string to_hex(std::string_view bytes) {
  std::string out;
  append_hex(out, bytes);
  return out;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit_value(hex[i]);
    const int lo = digit_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

} // namespace bufferlock
