#include "util/json.hpp"
#include "util/text.hpp"

#include <cstdio>

namespace bufferlock {

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
