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

// A KEY on one line of output (--list, list, --stats): backslash, control
// bytes, DEL and bytes that are not valid UTF-8 as \xHH. The result is valid
// UTF-8 without control bytes, and two keys never show alike.
std::string escape_key(std::string_view key);

} // namespace bufferlock
