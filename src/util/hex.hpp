// Bytes as lowercase hex digits, and back: the one codec of the program
// (lock names, tokens, S3 signatures, counters' keys, escaped bytes).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// Two lowercase hex digits for each byte of `bytes`.
std::string to_hex(std::string_view bytes);
void append_hex(std::string& out, std::string_view bytes);

// The bytes that lowercase hex digits spell; nullopt for an odd length or
// any other character.
std::optional<std::string> from_hex(std::string_view hex);

} // namespace bufferlock
