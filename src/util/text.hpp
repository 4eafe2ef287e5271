// Bytes shown as text: what a line of output may hold of a KEY or a path.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace bufferlock {

// The length of the valid UTF-8 sequence at the start of `s` (1 to 4), or 0
// (RFC 3629: shortest form only, no surrogates, nothing above U+10FFFF; an
// empty `s` is 0).
std::size_t utf8_length(std::string_view s);

// `bytes` on one line of output: control bytes, DEL and bytes that are not
// valid UTF-8 as \xHH, and with `backslash` a backslash too. The result is
// valid UTF-8 without control bytes.
std::string escape_bytes(std::string_view bytes, bool backslash);

// A KEY on one line of output (--list, list, --stats): escape_bytes with
// backslash, so that two keys never show alike.
inline std::string escape_key(std::string_view key) { return escape_bytes(key, true); }

} // namespace bufferlock
