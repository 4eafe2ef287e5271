#include "cache/entry_file.hpp"

#include "cache/compress.hpp"
#include "util/checksum.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace bufferlock {

namespace {

constexpr std::size_t hash_window = 2 * 1024 * 1024; // mmap window: keeps RSS small

// The checksum of [offset, offset+len) of `fd`, through a moving mmap window (no copy,
// and at most one window resident); falls back to pread.
// With `mac`, the same bytes go through it too.
std::optional<std::uint64_t> hash_range(int fd, std::uint64_t offset, std::uint64_t len, EntryMac* mac) {
  Checksum h;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  while (len > 0) {
    const std::uint64_t base = offset / page * page;
    const std::uint64_t skip = offset - base;
    const std::uint64_t take = std::min<std::uint64_t>(len, hash_window - skip);
    void* map =
        ::mmap(nullptr, skip + take, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(base));
    if (map == MAP_FAILED) {
      std::vector<char> buf(std::min<std::uint64_t>(take, entry_small_read));
      if (!pread_all(fd, buf.data(), buf.size(), static_cast<off_t>(offset))) return std::nullopt;
      h.update(buf.data(), buf.size());
      if (mac) mac->update(buf.data(), buf.size());
      offset += buf.size();
      len -= buf.size();
      continue;
    }
    h.update(static_cast<const char*>(map) + skip, take);
    if (mac) mac->update(static_cast<const char*>(map) + skip, take);
    ::munmap(map, skip + take);
    offset += take;
    len -= take;
  }
  return h.digest();
}

} // namespace

bool read_entry_head(int fd, std::uint64_t size, std::string& head) {
  head.assign(std::min<std::uint64_t>(size, entry_small_read), '\0');
  if (!pread_all(fd, head.data(), head.size(), 0)) return false;
  const auto header_size = encoded_header_size(head);
  if (!header_size || *header_size <= head.size() || *header_size > size) return true;
  head.resize(*header_size);
  return pread_all(fd, head.data(), head.size(), 0);
}

std::optional<EntryHeader> verify_entry(int fd, const std::string* key, std::string& why,
                                        std::string* whole_file, const EntrySigner* signer) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    why = "not a regular file";
    return std::nullopt;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::string head;
  if (!read_entry_head(fd, size, head)) {
    why = "cannot read it";
    return std::nullopt;
  }
  auto h = decode_header(head, why);
  if (!h) return std::nullopt;
  if (h->file_size() != size) {
    why = size < h->file_size() ? "truncated" : "longer than its header says";
    return std::nullopt;
  }
  if (key && h->key != *key) {
    why = "it belongs to another key";
    return std::nullopt;
  }
  if (signer && h->signature.empty()) {
    why = "it is not signed (--sign-key)";
    return std::nullopt;
  }
  const std::unique_ptr<EntryMac> mac = signer ? signer->begin() : nullptr;
  const bool whole = size <= head.size(); // the whole file is in `head` already
  char trailer[entry_trailer];
  if (whole) {
    head.copy(trailer, sizeof trailer, size - entry_trailer);
  } else if (!pread_all(fd, trailer, sizeof trailer, static_cast<off_t>(size - entry_trailer))) {
    why = "cannot read it";
    return std::nullopt;
  }
  std::uint64_t want_payload = 0, want_header = 0;
  decode_trailer(std::string_view(trailer, sizeof trailer), want_payload, want_header);
  if (checksum(std::string_view(head).substr(0, h->header_size())) != want_header) {
    why = "header checksum mismatch";
    return std::nullopt;
  }
  std::optional<std::uint64_t> got;
  if (whole) {
    const std::string_view body = std::string_view(head).substr(h->header_size(), h->body_len());
    got = checksum(body);
    if (mac) mac->update(body.data(), body.size());
  } else {
    got = hash_range(fd, h->header_size(), h->body_len(), mac.get());
  }
  if (!got || *got != want_payload) {
    why = got ? "payload checksum mismatch" : "cannot read it";
    return std::nullopt;
  }
  if (mac && !EntrySigner::matches(*mac, *h)) {
    why = "its signature does not match --sign-key";
    return std::nullopt;
  }
  if (whole && whole_file) *whole_file = std::move(head);
  return h;
}

namespace {

// Writes [offset, offset+len) of the entry file to `out_fd`.
bool serve_range(const CachedEntry& e, std::uint64_t from, std::uint64_t len, int out_fd) {
  // Verification read a small entry whole: write it from there.
  if (!e.bytes.empty()) return write_all(out_fd, std::string_view(e.bytes).substr(from, len));
  auto offset = static_cast<off_t>(from);
  std::uint64_t left = len;
  bool use_sendfile = left > entry_small_read; // small: one pread + one write is cheaper
  while (left > 0 && use_sendfile) {
    const ssize_t n = ::sendfile(out_fd, e.fd.get(), &offset, std::min<std::uint64_t>(left, 1 << 30));
    if (n > 0) {
      left -= static_cast<std::uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{out_fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    if (n < 0 && (errno == EINVAL || errno == ENOSYS))
      use_sendfile = false; // e.g. O_APPEND
    else
      return false;
  }
  std::vector<char> buf(std::min<std::uint64_t>(left, entry_small_read));
  while (left > 0) {
    const std::size_t take = std::min<std::uint64_t>(left, buf.size());
    if (!pread_all(e.fd.get(), buf.data(), take, offset)) return false;
    if (!write_all(out_fd, buf.data(), take)) return false;
    offset += static_cast<off_t>(take);
    left -= take;
  }
  return true;
}

// Decompresses the blocks in [from, from+len) of the entry to `out_fd`.
bool serve_blocks(const CachedEntry& e, std::uint64_t from, std::uint64_t len, std::uint64_t raw_len,
                  int out_fd) {
  const auto read = [&](std::uint64_t at, char* buf, std::size_t n) {
    if (e.bytes.empty()) return pread_all(e.fd.get(), buf, n, static_cast<off_t>(from + at));
    e.bytes.copy(buf, n, from + at);
    return true;
  };
  return decode_blocks(read, len, raw_len, [&](std::string_view raw) { return write_all(out_fd, raw); });
}

} // namespace

bool serve_entry(const CachedEntry& e, int out_fd) {
  const EntryHeader& h = e.header;
  if ((h.compressed & entry_compressed_stdout) != 0)
    return serve_blocks(e, h.header_size(), h.payload_len, h.raw_stdout_len, out_fd);
  return serve_range(e, h.header_size(), h.payload_len, out_fd);
}

bool serve_entry_stderr(const CachedEntry& e, int err_fd) {
  const EntryHeader& h = e.header;
  if (h.stderr_len == 0) return true;
  if ((h.compressed & entry_compressed_stderr) != 0)
    return serve_blocks(e, h.header_size() + h.payload_len, h.stderr_len, h.raw_stderr_len, err_fd);
  return serve_range(e, h.header_size() + h.payload_len, h.stderr_len, err_fd);
}

} // namespace bufferlock
