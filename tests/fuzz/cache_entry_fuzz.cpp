// The cache entry decoder, file form (src/cache/entry.*, verify_entry in
// src/cache/entry_file.cpp): the input is an entry file (in a memfd), verified as
// a lookup does, once without and once with the key it names. A file that
// passes is exactly what the encoder writes for its header, and is served
// whole.
#include "cache/entry.hpp"
#include "cache/entry_file.hpp"
#include "fuzz.hpp"

#include <sys/mman.h>
#include <unistd.h>

using namespace bufferlock;

namespace {

bool write_all(int fd, const std::uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = fuzz::as_text(data, size);
  std::string why;
  if (const auto header_size = encoded_header_size(bytes); header_size && *header_size <= size) {
    if (const auto h = decode_header(bytes, why))
      fuzz::check(encode_header(*h) == bytes.substr(0, h->header_size()), "decode/encode of a header differ");
  }

  const UniqueFd fd(::memfd_create("entry", MFD_CLOEXEC));
  fuzz::check(static_cast<bool>(fd), "memfd_create");
  fuzz::check(write_all(fd.get(), data, size), "write to memfd");
  std::string whole;
  const auto h = verify_entry(fd.get(), nullptr, why, &whole);
  if (!h) return 0;
  fuzz::check(h->file_size() == size, "a verified entry has another size");
  fuzz::check(encode_header(*h) == bytes.substr(0, h->header_size()), "a verified header is not canonical");
  const auto again = verify_entry(fd.get(), &h->key, why);
  fuzz::check(again.has_value(), "an entry fails verification with its own key");
  const std::string other = h->key + "x";
  fuzz::check(!verify_entry(fd.get(), &other, why), "an entry passes with another key");

  // Served whole: the payload, byte for byte.
  const UniqueFd out(::memfd_create("out", MFD_CLOEXEC));
  fuzz::check(static_cast<bool>(out), "memfd_create");
  CachedEntry entry{UniqueFd(::dup(fd.get())), *h, whole};
  fuzz::check(serve_entry(entry, out.get()), "serve_entry failed");
  std::string served(static_cast<std::size_t>(h->payload_len), '\0');
  const ssize_t n = ::pread(out.get(), served.data(), served.size(), 0);
  fuzz::check(n == static_cast<ssize_t>(served.size()), "short payload served");
  fuzz::check(served == bytes.substr(h->header_size(), h->payload_len), "served payload differs");
  return 0;
}
