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

} // namespace bufferlock
