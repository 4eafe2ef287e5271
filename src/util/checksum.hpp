// The checksum of cache entries: XXH3 (64-bit, seed 0), streaming. Fast
// enough (~20 GB/s here) that verifying a large entry before serving it costs
// less than reading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace bufferlock {

class Checksum {
public:
  Checksum();
  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::uint64_t digest() const;

private:
  // XXH3's state, kept inline (no allocation); checksum.cpp checks the size.
  alignas(64) unsigned char state_[640];
};

std::uint64_t checksum(std::string_view data);

} // namespace bufferlock
