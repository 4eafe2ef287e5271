#include "util/io.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace bufferlock {

bool write_all(int fd, const char* data, std::size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n <= 0) return false;
    data += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

bool pread_all(int fd, char* buf, std::size_t len, off_t offset) {
  while (len > 0) {
    const ssize_t n = ::pread(fd, buf, len, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

} // namespace bufferlock
