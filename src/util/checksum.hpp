// The checksum of cache entries: XXH3 (64-bit, seed 0), streaming. Fast
// enough (~20 GB/s here) that verifying a large entry before serving it costs
// less than reading it. XXH3-128 (seed 0) names content: the inputs of an
// entry (--depends), where 64 bits would make collisions thinkable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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
// The same with a seed: a hash of `data` in the place `seed` names.
std::uint64_t checksum(std::string_view data, std::uint64_t seed);

// A 128-bit digest: XXH3-128's high and low halves.
struct Digest128 {
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  bool operator==(const Digest128&) const = default;
  // 32 lowercase hex digits, high half first (XXH3's canonical order).
  std::string hex() const;
};

class Checksum128 {
public:
  Checksum128();
  void update(const void* data, std::size_t len);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Digest128 digest() const;

private:
  alignas(64) unsigned char state_[640];
};

Digest128 checksum128(std::string_view data);

} // namespace bufferlock
