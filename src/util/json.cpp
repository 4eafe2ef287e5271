#include "util/json.hpp"

#include <cstdio>

namespace bufferlock {

namespace {

// The length of the valid UTF-8 sequence at the start of `s`, or 0 (RFC 3629:
// shortest form only, no surrogates, nothing above U+10FFFF).
std::size_t utf8_length(std::string_view s) {
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

} // namespace

std::string json_string(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  while (!s.empty()) {
    const auto c = static_cast<unsigned char>(s.front());
    const std::size_t n = utf8_length(s);
    if (n == 0) {
      out += "\\ufffd"; // this byte alone: the next may start a valid sequence
      s.remove_prefix(1);
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char esc[7];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out.append(s.substr(0, n));
    }
    s.remove_prefix(n);
  }
  out += '"';
  return out;
}

std::string json_millis(std::int64_t ms) {
  if (ms < 0) ms = 0; // durations: a clock step back must not print "-0.-5"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000));
  return buf;
}

JsonObject& JsonObject::field(std::string_view name, std::string_view json) {
  if (body_.size() > 1) body_ += ", ";
  body_ += json_string(name);
  body_ += ": ";
  body_ += json;
  return *this;
}

JsonObject& JsonObject::string(std::string_view name, std::string_view value) {
  return field(name, json_string(value));
}

JsonObject& JsonObject::number(std::string_view name, std::uint64_t value) {
  return field(name, std::to_string(value));
}

JsonObject& JsonObject::millis(std::string_view name, std::int64_t ms) {
  return field(name, json_millis(ms));
}

JsonObject& JsonObject::boolean(std::string_view name, bool value) {
  return field(name, value ? "true" : "false");
}

JsonObject& JsonObject::numbers(std::string_view name, const std::vector<std::uint64_t>& values) {
  std::vector<std::string> items;
  items.reserve(values.size());
  for (const std::uint64_t v : values)
    items.push_back(std::to_string(v));
  return field(name, json_array(items));
}

JsonObject& JsonObject::raw(std::string_view name, std::string_view json) { return field(name, json); }

std::string json_array(const std::vector<std::string>& elements) {
  std::string out = "[";
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (i) out += ", ";
    out += elements[i];
  }
  return out + "]";
}

} // namespace bufferlock
