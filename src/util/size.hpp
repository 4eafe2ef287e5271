// Sizes as the command line spells them (--max-entry): a whole number of
// bytes with an optional suffix K, M or G (powers of 1024): "4096", "64M".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace bufferlock {

// Parses `text`; nullopt when it is not a size of the grammar above or does
// not fit in 64 bits. Zero is a size (callers refuse it where it makes no sense).
std::optional<std::uint64_t> parse_size(std::string_view text);

} // namespace bufferlock
