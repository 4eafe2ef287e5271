// Randomness from the kernel's CSPRNG (getrandom(2)): no OpenSSL DRBG set-up
// at start-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace bufferlock {

// Fills `buf` with `len` random bytes; false only if the kernel refuses.
bool random_bytes(void* buf, std::size_t len);

// A lock token: 16 random bytes as 32 lowercase hex digits. Empty on failure.
std::string random_token();

// A random 32-bit number (for jitter); 0 on failure.
std::uint32_t random_u32();

} // namespace bufferlock
