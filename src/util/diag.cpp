#include "util/diag.hpp"
#include "util/text.hpp"

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

std::string printable(std::string_view bytes) { return escape_bytes(bytes, false); }

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
