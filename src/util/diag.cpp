#include "util/diag.hpp"

#include <unistd.h>

#include <cerrno>

namespace bufferlock::diag {

namespace {

Verbosity level = Verbosity::normal;
void (*before_line)() = nullptr;

// One write(2) per line, so lines from concurrent processes do not interleave.
void emit(std::string_view text) {
  if (before_line) before_line();
  std::string line;
  line.reserve(text.size() + 13);
  line += "bufferlock: ";
  line += text;
  line += '\n';
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; // stderr is gone: nothing sensible left to do
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Length of the valid UTF-8 sequence starting at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t len;
  unsigned min;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    len = 2;
    min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    len = 3;
    min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    len = 4;
    min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  unsigned cp = c & (0x7f >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

} // namespace

void set_verbosity(Verbosity v) { level = v; }
void set_before_line(void (*hook)()) { before_line = hook; }
bool verbose() { return level == Verbosity::verbose; }

void error(std::string_view text) { emit(text); }
void warn(std::string_view text) {
  if (level != Verbosity::quiet) emit(text);
}
void debug(std::string_view text) {
  if (level == Verbosity::verbose) emit(text);
}

std::string printable(std::string_view bytes) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t len = (c < 0x20 || c == 0x7f) ? 0 : utf8_length(bytes, i);
    if (len == 0) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 0xf];
      ++i;
    } else {
      out.append(bytes.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string substitute(std::string_view tmpl, std::span<const Placeholder> values) {
  std::string out;
  out.reserve(tmpl.size() + 64);
  std::size_t i = 0;
  while (i < tmpl.size()) {
    const std::size_t open = tmpl.find("%{", i);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find('}', open + 2);
    if (close == std::string_view::npos) break;
    out.append(tmpl.substr(i, open - i));
    const std::string_view name = tmpl.substr(open + 2, close - open - 2);
    bool found = false;
    for (const auto& p : values) {
      if (p.name == name) {
        out += printable(p.value);
        found = true;
        break;
      }
    }
    if (!found) out.append(tmpl.substr(open, close + 1 - open));
    i = close + 1;
  }
  out.append(tmpl.substr(i));
  return out;
}

} // namespace bufferlock::diag
