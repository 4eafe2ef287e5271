#include "util/io.hpp"

#include <fcntl.h>

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

bool read_to_end(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

namespace {

// pread(2) or pwrite(2) of all `len` bytes at `offset`, through EINTR and short counts.
template <class Op, class Ptr> bool positional_all(Op op, int fd, Ptr buf, std::size_t len, off_t offset) {
  while (len > 0) {
    const ssize_t n = op(fd, buf, len, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buf += n;
    len -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

} // namespace

bool pread_all(int fd, char* buf, std::size_t len, off_t offset) {
  return positional_all(::pread, fd, buf, len, offset);
}

bool pwrite_all(int fd, const char* data, std::size_t len, off_t offset) {
  return positional_all(::pwrite, fd, data, len, offset);
}

void fill_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // open(2) returns the lowest free descriptor: this one.
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0 && null != fd) ::close(null);
  }
}

} // namespace bufferlock
