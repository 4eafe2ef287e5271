// JSON output for --json (SPEC §9, §14, §15): one document per run, built
// field by field. Only what bufferlock prints: strings, whole numbers,
// decimal seconds, booleans, arrays of those and nested objects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bufferlock {

// `s` as a JSON string, quotes included, whatever bytes it holds: '"' and
// '\' escaped, control bytes (< 0x20) and DEL as \u00XX, valid UTF-8 as it
// is, and each byte of an invalid UTF-8 sequence (a stray continuation byte,
// a truncated sequence, an overlong form, a surrogate, beyond U+10FFFF) as
// \uFFFD. The output is plain ASCII plus the input's valid UTF-8.
std::string json_string(std::string_view s);

// Milliseconds as decimal seconds, "3.214" (the text form's precision).
std::string json_millis(std::int64_t ms); // ms >= 0 (a negative one: 0)

// One object, "{"a": 1, "b": "x"}"; fields in the order they are added.
class JsonObject {
public:
  JsonObject& string(std::string_view name, std::string_view value);
  JsonObject& number(std::string_view name, std::uint64_t value);
  JsonObject& millis(std::string_view name, std::int64_t ms); // as json_millis
  JsonObject& boolean(std::string_view name, bool value);
  JsonObject& numbers(std::string_view name, const std::vector<std::uint64_t>& values);
  // An already rendered value (an object, an array of objects).
  JsonObject& raw(std::string_view name, std::string_view json);

  // The object, closed.
  std::string str() const { return body_ + "}"; }

private:
  JsonObject& field(std::string_view name, std::string_view json);
  std::string body_ = "{";
};

// "[a, b]" from already rendered values.
std::string json_array(const std::vector<std::string>& elements);

} // namespace bufferlock
