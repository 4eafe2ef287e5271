#include "util/size.hpp"

namespace bufferlock {

std::optional<std::uint64_t> parse_size(std::string_view text) {
  unsigned shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: break;
    }
    if (shift != 0) text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, static_cast<unsigned>(c - '0'), &v))
      return std::nullopt;
  }
  if (shift != 0 && v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

} // namespace bufferlock
