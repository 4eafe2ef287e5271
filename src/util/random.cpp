#include "util/random.hpp"

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
  static constexpr char hex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (int i = 0; i < 16; ++i) {
    token[i * 2] = hex[bytes[i] >> 4];
    token[i * 2 + 1] = hex[bytes[i] & 0xf];
  }
  return token;
}

std::uint32_t random_u32() {
  std::uint32_t v = 0;
  return random_bytes(&v, sizeof v) ? v : 0;
}

} // namespace bufferlock
