#include "cache/entry.hpp"

#include "util/le.hpp"

#include <cstring>

namespace bufferlock {

namespace {

constexpr std::uint32_t dep_exists = 1;

// Parses the dependency records of a version 2 header in [at, end).
bool decode_deps(std::string_view bytes, std::size_t at, std::size_t end, std::uint32_t count,
                 std::vector<DepStamp>& deps) {
  for (std::uint32_t i = 0; i < count; ++i) {
    if (end - at < entry_dep_fixed) return false;
    const std::uint32_t len = get_le<std::uint32_t>(bytes, at);
    if (end - at - entry_dep_fixed < len) return false;
    // Only the flags this version writes: a header decodes to what encodes to it.
    const std::uint32_t flags = get_le<std::uint32_t>(bytes, at + 4);
    if ((flags & ~dep_exists) != 0) return false;
    DepStamp d;
    d.exists = flags == dep_exists;
    d.size = get_le<std::uint64_t>(bytes, at + 8);
    d.mtime_ns = get_le<std::int64_t>(bytes, at + 16);
    d.dev = get_le<std::uint64_t>(bytes, at + 24);
    d.ino = get_le<std::uint64_t>(bytes, at + 32);
    d.path = std::string(bytes.substr(at + entry_dep_fixed, len));
    deps.push_back(std::move(d));
    at += entry_dep_fixed + len;
  }
  return at == end;
}

// The bytes of the outputs section of `h`.
std::string encode_outputs(const EntryHeader& h) {
  std::string out;
  put_le<std::uint64_t>(out, h.outputs_len);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.outputs.size()));
  for (const auto& p : h.outputs) {
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(p.size()));
    out += p;
  }
  return out;
}

std::uint64_t outputs_section_size(const EntryHeader& h) {
  std::uint64_t n = 8 + 12;
  for (const auto& p : h.outputs)
    n += 4 + p.size();
  return n;
}

// Parses an outputs section into `h`; false when it is malformed (or a second one).
bool decode_outputs(std::string_view s, EntryHeader& h) {
  if (s.size() < 12 || !h.outputs.empty()) return false;
  h.outputs_len = get_le<std::uint64_t>(s, 0);
  const std::uint32_t count = get_le<std::uint32_t>(s, 8);
  std::size_t at = 12;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (s.size() - at < 4) return false;
    const std::uint32_t len = get_le<std::uint32_t>(s, at);
    if (len == 0 || s.size() - at - 4 < len) return false;
    h.outputs.emplace_back(s.substr(at + 4, len));
    at += 4 + len;
  }
  return at == s.size() && count > 0;
}

// Parses the sections of a version 3 header in [at, end).
bool decode_sections(std::string_view bytes, std::size_t at, std::size_t end, std::uint32_t count,
                     EntryHeader& h, std::string& why) {
  for (std::uint32_t i = 0; i < count; ++i) {
    if (end - at < 8) return false;
    const std::uint32_t type = get_le<std::uint32_t>(bytes, at);
    const std::uint32_t len = get_le<std::uint32_t>(bytes, at + 4);
    if (end - at - 8 < len) return false;
    if (type == entry_section_outputs) {
      if (!decode_outputs(bytes.substr(at + 8, len), h)) return false;
      at += 8 + len;
      continue;
    }
    if ((type & ~entry_section_required) == entry_section_compression) {
      if (len != 20 || h.compression) return false;
      const std::string_view sec = bytes.substr(at + 8, len);
      h.compression = true;
      h.compressed = get_le<std::uint32_t>(sec, 0);
      h.raw_stdout_len = get_le<std::uint64_t>(sec, 4);
      h.raw_stderr_len = get_le<std::uint64_t>(sec, 12);
      // Exactly what this version writes: flags it knows, required iff any is set.
      if ((h.compressed & ~(entry_compressed_stdout | entry_compressed_stderr)) != 0 ||
          ((type & entry_section_required) != 0) != (h.compressed != 0))
        return false;
      at += 8 + len;
      continue;
    }
    if (type == entry_section_build_time) {
      if (len != 8 || h.timed) return false;
      h.timed = true;
      h.build_ns = get_le<std::uint64_t>(bytes, at + 8);
      at += 8 + len;
      continue;
    }
    if (type == entry_section_signature) {
      if (len != 32 || !h.signature.empty()) return false;
      h.signature = std::string(bytes.substr(at + 8, len));
      at += 8 + len;
      continue;
    }
    if ((type & entry_section_required) != 0) {
      why = "needs a newer bufferlock (section type " + std::to_string(type & ~entry_section_required) + ")";
      return false;
    }
    h.sections.push_back({type, std::string(bytes.substr(at + 8, len))});
    at += 8 + len;
  }
  return at == end;
}

} // namespace

Inputs entry_address(const Inputs& inputs, const std::vector<std::string>& outputs) {
  if (outputs.empty()) return inputs;
  std::string all = "bufferlock outputs 1\n";
  all += inputs ? inputs->hex() : "-";
  for (const auto& p : outputs) {
    all += '\n';
    all += std::to_string(p.size()); // a length before each PATH: no two lists spell the same
    all += ':';
    all += p;
  }
  return checksum128(all);
}

std::uint32_t entry_version_for(const Inputs& inputs, bool keep_stderr, bool outputs, bool sign_or_compress) {
  if (inputs || outputs || sign_or_compress) return entry_format_version_3;
  return keep_stderr ? entry_format_version_2 : entry_format_version;
}

std::uint64_t EntryHeader::header_size() const {
  if (version == entry_format_version) return entry_fixed_header + key.size();
  if (version == entry_format_version_3) {
    std::uint64_t n = entry_fixed_header_3 + key.size();
    for (const auto& s : sections)
      n += 8 + s.bytes.size();
    if (!outputs.empty()) n += outputs_section_size(*this);
    if (!signature.empty()) n += 8 + signature.size();
    if (compression) n += 8 + 20;
    if (timed) n += 8 + 8;
    return n;
  }
  std::uint64_t n = entry_fixed_header_2 + key.size();
  for (const auto& d : deps)
    n += entry_dep_fixed + d.path.size();
  return n;
}

std::string encode_header(const EntryHeader& h) {
  std::string out(entry_magic);
  put_le<std::uint32_t>(out, h.version);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.key.size()));
  put_le<std::int64_t>(out, h.created_ns);
  put_le<std::uint64_t>(out, h.payload_len);
  if (h.version == entry_format_version) {
    out += h.key;
    return out;
  }
  put_le<std::uint64_t>(out, h.stderr_len);
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.header_size()));
  if (h.version == entry_format_version_3) {
    put_le<std::uint32_t>(out, h.inputs ? entry_flag_inputs : 0);
    const Digest128 inputs = h.inputs.value_or(Digest128{});
    put_le<std::uint64_t>(out, inputs.high);
    put_le<std::uint64_t>(out, inputs.low);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.sections.size() + (h.outputs.empty() ? 0 : 1) +
                                                          (h.signature.empty() ? 0 : 1) +
                                                          (h.compression ? 1 : 0) + (h.timed ? 1 : 0)));
    put_le<std::uint32_t>(out, 0);
    out += h.key;
    if (!h.outputs.empty()) {
      const std::string sec = encode_outputs(h);
      put_le<std::uint32_t>(out, entry_section_outputs);
      put_le<std::uint32_t>(out, static_cast<std::uint32_t>(sec.size()));
      out += sec;
    }
    if (h.compression) {
      put_le<std::uint32_t>(out, entry_section_compression | (h.compressed != 0 ? entry_section_required : 0));
      put_le<std::uint32_t>(out, 20);
      put_le<std::uint32_t>(out, h.compressed);
      put_le<std::uint64_t>(out, h.raw_stdout_len);
      put_le<std::uint64_t>(out, h.raw_stderr_len);
    }
    if (h.timed) {
      put_le<std::uint32_t>(out, entry_section_build_time);
      put_le<std::uint32_t>(out, 8);
      put_le<std::uint64_t>(out, h.build_ns);
    }
    if (!h.signature.empty()) {
      put_le<std::uint32_t>(out, entry_section_signature);
      put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.signature.size()));
      out += h.signature;
    }
    for (const auto& sec : h.sections) {
      put_le<std::uint32_t>(out, sec.type);
      put_le<std::uint32_t>(out, static_cast<std::uint32_t>(sec.bytes.size()));
      out += sec.bytes;
    }
    return out;
  }
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(h.deps.size()));
  out += h.key;
  for (const auto& d : h.deps) {
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(d.path.size()));
    put_le<std::uint32_t>(out, d.exists ? dep_exists : 0);
    put_le<std::uint64_t>(out, d.size);
    put_le<std::int64_t>(out, d.mtime_ns);
    put_le<std::uint64_t>(out, d.dev);
    put_le<std::uint64_t>(out, d.ino);
    out += d.path;
  }
  return out;
}

std::optional<std::uint64_t> encoded_header_size(std::string_view bytes) {
  if (bytes.size() < entry_fixed_header) return std::nullopt;
  const std::uint32_t version = get_le<std::uint32_t>(bytes, 8);
  if (version != entry_format_version_2 && version != entry_format_version_3)
    return entry_fixed_header + get_le<std::uint32_t>(bytes, 12);
  if (bytes.size() < entry_fixed_header_2) return std::nullopt;
  return get_le<std::uint32_t>(bytes, 40);
}

std::optional<EntryHeader> decode_header(std::string_view bytes, std::string& why) {
  if (bytes.size() < entry_fixed_header || bytes.substr(0, entry_magic.size()) != entry_magic) {
    why = "not a bufferlock cache entry";
    return std::nullopt;
  }
  const std::uint32_t version = get_le<std::uint32_t>(bytes, 8);
  if (version != entry_format_version && version != entry_format_version_2 &&
      version != entry_format_version_3) {
    why = "unknown entry format version " + std::to_string(version);
    return std::nullopt;
  }
  const std::uint64_t key_len = get_le<std::uint32_t>(bytes, 12);
  const std::size_t fixed = version == entry_format_version     ? entry_fixed_header
                            : version == entry_format_version_2 ? entry_fixed_header_2
                                                                : entry_fixed_header_3;
  if (bytes.size() < fixed + key_len) {
    why = "truncated header";
    return std::nullopt;
  }
  EntryHeader h;
  h.version = version;
  h.created_ns = get_le<std::int64_t>(bytes, 16);
  h.payload_len = get_le<std::uint64_t>(bytes, 24);
  h.key = std::string(bytes.substr(fixed, key_len));
  if (version == entry_format_version_3) {
    h.stderr_len = get_le<std::uint64_t>(bytes, 32);
    const std::uint64_t header_len = get_le<std::uint32_t>(bytes, 40);
    if (header_len < fixed + key_len || bytes.size() < header_len) {
      why = "truncated header";
      return std::nullopt;
    }
    const std::uint32_t flags = get_le<std::uint32_t>(bytes, 44);
    const Digest128 inputs{get_le<std::uint64_t>(bytes, 48), get_le<std::uint64_t>(bytes, 56)};
    // Unknown flags could change what the entry means; a digest without its
    // flag, or a reserved field set, is not what this version writes.
    if ((flags & ~entry_flag_inputs) != 0) {
      why = "needs a newer bufferlock (flags " + std::to_string(flags) + ")";
      return std::nullopt;
    }
    if ((flags == 0 && inputs != Digest128{}) || get_le<std::uint32_t>(bytes, 68) != 0) {
      why = "malformed header";
      return std::nullopt;
    }
    if (flags == entry_flag_inputs) h.inputs = inputs;
    why.clear();
    if (!decode_sections(bytes, fixed + key_len, header_len, get_le<std::uint32_t>(bytes, 64), h, why)) {
      if (why.empty()) why = "malformed section list";
      return std::nullopt;
    }
  } else if (version == entry_format_version_2) {
    h.stderr_len = get_le<std::uint64_t>(bytes, 32);
    const std::uint64_t header_len = get_le<std::uint32_t>(bytes, 40);
    if (header_len < fixed + key_len || bytes.size() < header_len) {
      why = "truncated header";
      return std::nullopt;
    }
    if (!decode_deps(bytes, fixed + key_len, header_len, get_le<std::uint32_t>(bytes, 44), h.deps)) {
      why = "malformed dependency list";
      return std::nullopt;
    }
  }
  return h;
}

std::string encode_trailer(std::uint64_t payload_hash, std::uint64_t header_hash) {
  std::string out;
  put_le<std::uint64_t>(out, payload_hash);
  put_le<std::uint64_t>(out, header_hash);
  return out;
}

void decode_trailer(std::string_view bytes, std::uint64_t& payload_hash, std::uint64_t& header_hash) {
  payload_hash = get_le<std::uint64_t>(bytes, 0);
  header_hash = get_le<std::uint64_t>(bytes, 8);
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
