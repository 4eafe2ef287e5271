#include "util/random.hpp"

#include "util/hex.hpp"

#include <sys/random.h>

#include <cerrno>

namespace bufferlock {

bool random_bytes(void* buf, std::size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    const ssize_t n = ::getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

std::string random_token() {
  unsigned char bytes[16];
  if (!random_bytes(bytes, sizeof bytes)) return {};
  return to_hex({reinterpret_cast<const char*>(bytes), sizeof bytes});
}

std::uint32_t random_u32() {
  std::uint32_t v = 0;
  return random_bytes(&v, sizeof v) ? v : 0;
}

} // namespace bufferlock
