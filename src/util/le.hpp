// Little-endian integers in byte strings: the on-disk formats (cache
// entries, the stat cache) are little-endian whatever the machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace bufferlock {

template <class T> void put_le(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out += static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
}

// The T at `at` of `in` (which the caller has checked to be long enough).
template <class T> T get_le(std::string_view in, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= std::uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return static_cast<T>(v);
}

} // namespace bufferlock
