#include "redis/cluster.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

namespace bufferlock {

namespace {

constexpr std::array<std::uint16_t, 256> crc16_table = [] {
  std::array<std::uint16_t, 256> t{};
  for (unsigned i = 0; i < 256; ++i) {
    std::uint16_t crc = static_cast<std::uint16_t>(i << 8);
    for (int b = 0; b < 8; ++b)
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    t[i] = crc;
  }
  return t;
}();

std::uint16_t crc16(std::string_view s) {
  std::uint16_t crc = 0;
  for (unsigned char c : s)
    crc = static_cast<std::uint16_t>((crc << 8) ^ crc16_table[((crc >> 8) ^ c) & 0xff]);
  return crc;
}

// The part of `key` that is hashed: its hash tag, or all of it.
std::string_view hashed_part(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::optional<int> small_number(std::string_view s, int max) {
  if (s.empty() || s.size() > 5) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

} // namespace

int key_hash_slot(std::string_view key) { return crc16(hashed_part(key)) & 16383; }

std::string companion_key(std::string_view key, std::string_view suffix) {
  std::string out;
  if (key.find_first_of("{}") == std::string_view::npos) {
    out.reserve(key.size() + suffix.size() + 2);
    out.append("{").append(key).append("}");
  } else {
    out.append(key);
  }
  out.append(suffix);
  return out;
}

std::optional<Redirect> parse_redirect(std::string_view text) {
  Redirect r{};
  if (text.starts_with("MOVED "))
    r.kind = Redirect::Kind::moved;
  else if (text.starts_with("ASK "))
    r.kind = Redirect::Kind::ask;
  else
    return std::nullopt;
  text.remove_prefix(text.find(' ') + 1);
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  auto slot = small_number(text.substr(0, space), 16383);
  if (!slot) return std::nullopt;
  r.slot = *slot;
  std::string_view address = text.substr(space + 1);
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  auto port = small_number(address.substr(colon + 1), 65535);
  if (!port || *port == 0) return std::nullopt;
  r.port = *port;
  std::string_view host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  r.host = std::string(host);
  return r;
}

bool is_tryagain(std::string_view text) { return text == "TRYAGAIN" || text.starts_with("TRYAGAIN "); }

} // namespace bufferlock
