#include "util/xxhash64.hpp"

#include <cstring>

namespace bufferlock {

namespace {

constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ULL;
constexpr std::uint64_t p2 = 0xC2B2AE3D27D4EB4FULL;
constexpr std::uint64_t p3 = 0x165667B19E3779F9ULL;
constexpr std::uint64_t p4 = 0x85EBCA77C2B2AE63ULL;
constexpr std::uint64_t p5 = 0x27D4EB2F165667C5ULL;

std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads (x86 and most targets; memcpy keeps it alignment-safe).
std::uint64_t read64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
std::uint32_t read32(const unsigned char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
  acc += input * p2;
  acc = rotl(acc, 31);
  return acc * p1;
}

std::uint64_t merge(std::uint64_t acc, std::uint64_t v) {
  acc ^= round(0, v);
  return acc * p1 + p4;
}

} // namespace

void Xxh64::update(const void* data, std::size_t len) {
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += len;
  if (buffered_ + len < 32) {
    std::memcpy(buf_ + buffered_, p, len);
    buffered_ += len;
    return;
  }
  if (buffered_ > 0) {
    const std::size_t fill = 32 - buffered_;
    std::memcpy(buf_ + buffered_, p, fill);
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(buf_ + 8 * i));
    p += fill;
    len -= fill;
    buffered_ = 0;
  }
  std::uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
  while (len >= 32) {
    v0 = round(v0, read64(p));
    v1 = round(v1, read64(p + 8));
    v2 = round(v2, read64(p + 16));
    v3 = round(v3, read64(p + 24));
    p += 32;
    len -= 32;
  }
  v_[0] = v0, v_[1] = v1, v_[2] = v2, v_[3] = v3;
  std::memcpy(buf_, p, len);
  buffered_ = len;
}

std::uint64_t Xxh64::digest() const {
  std::uint64_t h;
  if (total_ >= 32) {
    h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
    for (int i = 0; i < 4; ++i) h = merge(h, v_[i]);
  } else {
    h = p5; // seed 0
  }
  h += total_;
  const unsigned char* p = buf_;
  std::size_t len = buffered_;
  while (len >= 8) {
    h ^= round(0, read64(p));
    h = rotl(h, 27) * p1 + p4;
    p += 8;
    len -= 8;
  }
  if (len >= 4) {
    h ^= std::uint64_t(read32(p)) * p1;
    h = rotl(h, 23) * p2 + p3;
    p += 4;
    len -= 4;
  }
  while (len > 0) {
    h ^= *p * p5;
    h = rotl(h, 11) * p1;
    ++p;
    --len;
  }
  h ^= h >> 33;
  h *= p2;
  h ^= h >> 29;
  h *= p3;
  h ^= h >> 32;
  return h;
}

std::uint64_t xxh64(std::string_view data) {
  Xxh64 h;
  h.update(data);
  return h.digest();
}

} // namespace bufferlock
