// json_string (--json, util/json.hpp): whatever the bytes, the output is one
// JSON string (RFC 8259) holding no raw control byte or DEL, and reading it
// back gives the input with each byte of an invalid UTF-8 sequence as U+FFFD:
// so valid UTF-8 comes back unchanged. Checked by a small reader of its own
// (the fuzz build has no JSON library).
#include "fuzz.hpp"
#include "util/json.hpp"

#include <string>

using namespace bufferlock;

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The string `json` holds, as UTF-8; only the escapes json_string may write.
std::string read_back(std::string_view json) {
  fuzz::check(json.size() >= 2 && json.front() == '"' && json.back() == '"', "not one quoted string");
  json = json.substr(1, json.size() - 2);
  std::string out;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const auto c = static_cast<unsigned char>(json[i]);
    fuzz::check(c >= 0x20 && c != 0x7f, "a raw control byte or DEL in the output");
    fuzz::check(c != '"', "an unescaped quote inside the string");
    if (c != '\\') {
      out += static_cast<char>(c);
      continue;
    }
    fuzz::check(i + 1 < json.size(), "a backslash at the end");
    const char e = json[++i];
    if (e == '"' || e == '\\') {
      out += e;
      continue;
    }
    fuzz::check(e == 'u' && i + 4 < json.size(), "an escape json_string does not write");
    unsigned v = 0;
    for (int k = 1; k <= 4; ++k) {
      const int d = hex_digit(json[i + k]);
      fuzz::check(d >= 0, "a \\u escape without four hex digits");
      v = v * 16 + static_cast<unsigned>(d);
    }
    i += 4;
    fuzz::check(v < 0x20 || v == 0x7f || v == 0xfffd, "an escape of something that needs none");
    if (v == 0xfffd)
      out += "\xEF\xBF\xBD";
    else
      out += static_cast<char>(v);
  }
  return out;
}

// The length of a valid UTF-8 sequence at the start of `s`, or 0: written
// apart from json.cpp's, from the table of RFC 3629 section 4.
std::size_t valid_length(std::string_view s) {
  const auto b = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0x100U; };
  const auto in = [&](std::size_t i, unsigned lo, unsigned hi) { return b(i) >= lo && b(i) <= hi; };
  if (in(0, 0x00, 0x7F)) return 1;
  if (in(0, 0xC2, 0xDF) && in(1, 0x80, 0xBF)) return 2;
  if (in(0, 0xE0, 0xE0) && in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF)) return 3;
  if ((in(0, 0xE1, 0xEC) || in(0, 0xEE, 0xEF)) && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF)) return 3;
  if (in(0, 0xED, 0xED) && in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF)) return 3;
  if (in(0, 0xF0, 0xF0) && in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) return 4;
  if (in(0, 0xF1, 0xF3) && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) return 4;
  if (in(0, 0xF4, 0xF4) && in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) return 4;
  return 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fuzz::as_text(data, size);
  std::string expected;
  for (std::string_view rest = in; !rest.empty();) {
    const std::size_t n = valid_length(rest);
    expected += n ? std::string(rest.substr(0, n)) : std::string("\xEF\xBF\xBD");
    rest.remove_prefix(n ? n : 1);
  }
  fuzz::check(read_back(json_string(in)) == expected, "the string read back is not the input");
  return 0;
}
