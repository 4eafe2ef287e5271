// Whole reads and writes on descriptors, retried on EINTR and short counts.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace bufferlock {

// Writes all of `data`; waits (poll) when `fd` is non-blocking and full.
// False on any other failure (errno tells), e.g. EPIPE from a closed reader.
bool write_all(int fd, const char* data, std::size_t len);
inline bool write_all(int fd, std::string_view s) { return write_all(fd, s.data(), s.size()); }

// Appends to `out` what `fd` holds from where it is to its end, through
// EINTR; false on an error (errno tells).
bool read_to_end(int fd, std::string& out);

// Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed, so that
// no file opened later takes their place (and gets the output meant for them).
void fill_std_fds();

// Reads exactly `len` bytes at `offset`; false on an error or early EOF.
bool pread_all(int fd, char* buf, std::size_t len, off_t offset);

// Writes exactly `len` bytes at `offset`; false on an error.
bool pwrite_all(int fd, const char* data, std::size_t len, off_t offset);

} // namespace bufferlock
