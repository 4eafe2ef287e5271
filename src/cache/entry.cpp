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

constexpr std::uint32_t dep_exists = 1;

// Parses the dependency records of a version 2 header in [at, end).
bool decode_deps(std::string_view bytes, std::size_t at, std::size_t end, std::uint32_t count,
                 std::vector<DepStamp>& deps) {
  for (std::uint32_t i = 0; i < count; ++i) {
    if (end - at < entry_dep_fixed) return false;
    const std::uint32_t len = get<std::uint32_t>(bytes, at);
    if (end - at - entry_dep_fixed < len) return false;
    // Only the flags this version writes: a header decodes to what encodes to it.
    const std::uint32_t flags = get<std::uint32_t>(bytes, at + 4);
    if ((flags & ~dep_exists) != 0) return false;
    DepStamp d;
    d.exists = flags == dep_exists;
    d.size = get<std::uint64_t>(bytes, at + 8);
    d.mtime_ns = get<std::int64_t>(bytes, at + 16);
    d.dev = get<std::uint64_t>(bytes, at + 24);
    d.ino = get<std::uint64_t>(bytes, at + 32);
    d.path = std::string(bytes.substr(at + entry_dep_fixed, len));
    deps.push_back(std::move(d));
    at += entry_dep_fixed + len;
  }
  return at == end;
}

} // namespace

std::uint64_t EntryHeader::header_size() const {
  if (version == entry_format_version) return entry_fixed_header + key.size();
  std::uint64_t n = entry_fixed_header_2 + key.size();
  for (const auto& d : deps)
    n += entry_dep_fixed + d.path.size();
  return n;
}

std::string encode_header(const EntryHeader& h) {
  std::string out(entry_magic);
  put<std::uint32_t>(out, h.version);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(h.key.size()));
  put<std::int64_t>(out, h.created_ns);
  put<std::uint64_t>(out, h.payload_len);
  if (h.version == entry_format_version) {
    out += h.key;
    return out;
  }
  put<std::uint64_t>(out, h.stderr_len);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(h.header_size()));
  put<std::uint32_t>(out, static_cast<std::uint32_t>(h.deps.size()));
  out += h.key;
  for (const auto& d : h.deps) {
    put<std::uint32_t>(out, static_cast<std::uint32_t>(d.path.size()));
    put<std::uint32_t>(out, d.exists ? dep_exists : 0);
    put<std::uint64_t>(out, d.size);
    put<std::int64_t>(out, d.mtime_ns);
    put<std::uint64_t>(out, d.dev);
    put<std::uint64_t>(out, d.ino);
    out += d.path;
  }
  return out;
}

std::optional<std::uint64_t> encoded_header_size(std::string_view bytes) {
  if (bytes.size() < entry_fixed_header) return std::nullopt;
  if (get<std::uint32_t>(bytes, 8) != entry_format_version_2)
    return entry_fixed_header + get<std::uint32_t>(bytes, 12);
  if (bytes.size() < entry_fixed_header_2) return std::nullopt;
  return get<std::uint32_t>(bytes, 40);
}

std::optional<EntryHeader> decode_header(std::string_view bytes, std::string& why) {
  if (bytes.size() < entry_fixed_header || bytes.substr(0, entry_magic.size()) != entry_magic) {
    why = "not a bufferlock cache entry";
    return std::nullopt;
  }
  const std::uint32_t version = get<std::uint32_t>(bytes, 8);
  if (version != entry_format_version && version != entry_format_version_2) {
    why = "unknown entry format version " + std::to_string(version);
    return std::nullopt;
  }
  const std::uint64_t key_len = get<std::uint32_t>(bytes, 12);
  const std::size_t fixed = version == entry_format_version ? entry_fixed_header : entry_fixed_header_2;
  if (bytes.size() < fixed + key_len) {
    why = "truncated header";
    return std::nullopt;
  }
  EntryHeader h;
  h.version = version;
  h.created_ns = get<std::int64_t>(bytes, 16);
  h.payload_len = get<std::uint64_t>(bytes, 24);
  h.key = std::string(bytes.substr(fixed, key_len));
  if (version == entry_format_version_2) {
    h.stderr_len = get<std::uint64_t>(bytes, 32);
    const std::uint64_t header_len = get<std::uint32_t>(bytes, 40);
    if (header_len < fixed + key_len || bytes.size() < header_len) {
      why = "truncated header";
      return std::nullopt;
    }
    if (!decode_deps(bytes, fixed + key_len, header_len, get<std::uint32_t>(bytes, 44), h.deps)) {
      why = "malformed dependency list";
      return std::nullopt;
    }
  }
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
