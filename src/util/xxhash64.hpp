// XXH64 (seed 0), streaming: the checksum of cache entries. Fast enough to
// verify a large entry before serving it at about the cost of reading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace bufferlock {

class Xxh64 {
public:
  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::uint64_t digest() const;

private:
  std::uint64_t v_[4] = {0x9E3779B185EBCA87ULL + 0xC2B2AE3D27D4EB4FULL, 0xC2B2AE3D27D4EB4FULL, 0,
                         0 - 0x9E3779B185EBCA87ULL};
  unsigned char buf_[32] = {};
  std::size_t buffered_ = 0;
  std::uint64_t total_ = 0;
};

std::uint64_t xxh64(std::string_view data);

} // namespace bufferlock
