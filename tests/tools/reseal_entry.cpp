// reseal_entry FILE: recomputes both checksums of the entry file FILE in
// place, as anyone who can write to a store can: an entry changed by hand
// and resealed passes every check but the signature (cache_sign.bats).
#include "cache/entry.hpp"
#include "util/checksum.hpp"

#include <cstdio>
#include <fstream>
#include <iterator>

using namespace bufferlock;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: reseal_entry FILE\n");
    return 64;
  }
  std::string bytes;
  {
    std::ifstream in(argv[1], std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::string why;
  const auto h = decode_header(bytes, why);
  if (!h || h->file_size() != bytes.size()) {
    std::fprintf(stderr, "reseal_entry: %s: not an entry of its size (%s)\n", argv[1], why.c_str());
    return 1;
  }
  const std::string_view all(bytes);
  const std::string trailer = encode_trailer(checksum(all.substr(h->header_size(), h->body_len())),
                                             checksum(all.substr(0, h->header_size())));
  bytes.replace(bytes.size() - entry_trailer, entry_trailer, trailer);
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return out ? 0 : 1;
}
