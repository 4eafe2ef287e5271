#include "cache/entry.hpp"

#include <cstring>

namespace bufferlock {

namespace {

template <class T> void put(std::string& out, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    out += static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
}

template <class T> T get(std::string_view in, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= std::uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return static_cast<T>(v);
}

} // namespace

std::string encode_header(const EntryHeader& h) {
  std::string out(entry_magic);
  put<std::uint32_t>(out, entry_format_version);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(h.key.size()));
  put<std::int64_t>(out, h.created_ns);
  put<std::uint64_t>(out, h.payload_len);
  out += h.key;
  return out;
}

std::optional<std::uint64_t> encoded_header_size(std::string_view bytes) {
  if (bytes.size() < entry_fixed_header) return std::nullopt;
  return entry_fixed_header + get<std::uint32_t>(bytes, 12);
}

std::optional<EntryHeader> decode_header(std::string_view bytes, std::string& why) {
  if (bytes.size() < entry_fixed_header || bytes.substr(0, entry_magic.size()) != entry_magic) {
    why = "not a bufferlock cache entry";
    return std::nullopt;
  }
  if (get<std::uint32_t>(bytes, 8) != entry_format_version) {
    why = "unknown entry format version " + std::to_string(get<std::uint32_t>(bytes, 8));
    return std::nullopt;
  }
  const std::uint32_t key_len = get<std::uint32_t>(bytes, 12);
  if (bytes.size() < entry_fixed_header + key_len) {
    why = "truncated header";
    return std::nullopt;
  }
  EntryHeader h;
  h.created_ns = get<std::int64_t>(bytes, 16);
  h.payload_len = get<std::uint64_t>(bytes, 24);
  h.key = std::string(bytes.substr(entry_fixed_header, key_len));
  return h;
}

std::string encode_trailer(std::uint64_t payload_hash, std::uint64_t header_hash) {
  std::string out;
  put<std::uint64_t>(out, payload_hash);
  put<std::uint64_t>(out, header_hash);
  return out;
}

void decode_trailer(std::string_view bytes, std::uint64_t& payload_hash, std::uint64_t& header_hash) {
  payload_hash = get<std::uint64_t>(bytes, 0);
  header_hash = get<std::uint64_t>(bytes, 8);
}

Freshness freshness(std::int64_t created_ns, std::int64_t now_ns, std::optional<Nanos> max_age,
                    std::optional<Nanos> stale) {
  if (!max_age || created_ns >= now_ns) return Freshness::fresh;
  std::int64_t age = 0;
  if (__builtin_sub_overflow(now_ns, created_ns, &age)) return Freshness::expired;
  if (age <= max_age->count()) return Freshness::fresh;
  if (stale && age - max_age->count() <= stale->count()) return Freshness::stale;
  return Freshness::expired;
}

} // namespace bufferlock
