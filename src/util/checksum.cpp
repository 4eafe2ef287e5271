#include "util/checksum.hpp"

// Header-only use of Debian's libxxhash-dev: nothing to link, all inlined.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <new>

namespace bufferlock {

namespace {
XXH3_state_t* state(unsigned char* raw) { return std::launder(reinterpret_cast<XXH3_state_t*>(raw)); }
const XXH3_state_t* state(const unsigned char* raw) {
  return std::launder(reinterpret_cast<const XXH3_state_t*>(raw));
}
} // namespace

static_assert(sizeof(XXH3_state_t) <= 640 && alignof(XXH3_state_t) <= 64, "Checksum::state_ too small");

Checksum::Checksum() {
  new (state_) XXH3_state_t;
  XXH3_64bits_reset(state(state_));
}

void Checksum::update(const void* data, std::size_t len) { XXH3_64bits_update(state(state_), data, len); }

std::uint64_t Checksum::digest() const { return XXH3_64bits_digest(state(state_)); }

std::uint64_t checksum(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }

std::uint64_t checksum(std::string_view data, std::uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

namespace {
Digest128 from_xxh(XXH128_hash_t h) { return {h.high64, h.low64}; }
} // namespace

std::string Digest128::hex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<std::size_t>(15 - i)] = digits[(high >> (4 * i)) & 15];
    out[static_cast<std::size_t>(31 - i)] = digits[(low >> (4 * i)) & 15];
  }
  return out;
}

Checksum128::Checksum128() {
  new (state_) XXH3_state_t;
  XXH3_128bits_reset(state(state_));
}

void Checksum128::update(const void* data, std::size_t len) { XXH3_128bits_update(state(state_), data, len); }

Digest128 Checksum128::digest() const { return from_xxh(XXH3_128bits_digest(state(state_))); }

Digest128 checksum128(std::string_view data) { return from_xxh(XXH3_128bits(data.data(), data.size())); }

} // namespace bufferlock
