#include "lock/holder_record.hpp"

#include <charconv>
#include <cstdio>

namespace bufferlock {

namespace {

constexpr std::string_view magic = "bufferlock-holder 1 ";

// The unsigned number after "NAME=" at `text`, advancing past it and one space or newline.
template <class T> bool take_field(std::string_view& text, std::string_view name, T& out) {
  if (!text.starts_with(name) || text.size() <= name.size() || text[name.size()] != '=') return false;
  text.remove_prefix(name.size() + 1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end == text.data() || end == text.data() + text.size()) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return true;
}

bool take_char(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

struct Header {
  HolderRecord r;
  std::size_t key_len = 0;
  std::size_t header_len = 0;
};

std::optional<Header> decode_header(std::string_view text) {
  if (!text.starts_with(magic)) return std::nullopt;
  std::string_view t = text.substr(magic.size());
  Header h;
  std::int64_t sec = 0;
  std::uint32_t nsec = 0;
  if (!take_field(t, "fence", h.r.fence) || !take_char(t, ' ') || !take_field(t, "pid", h.r.pid) ||
      !take_char(t, ' ') || !take_field(t, "since", sec) || !take_char(t, '.') || t.size() < 9)
    return std::nullopt;
  const std::string_view frac = t.substr(0, 9);
  const auto [fend, fec] = std::from_chars(frac.data(), frac.data() + 9, nsec);
  if (fec != std::errc() || fend != frac.data() + 9) return std::nullopt;
  t.remove_prefix(9);
  if (!take_char(t, ' ') || !take_field(t, "keylen", h.key_len) || !take_char(t, '\n')) return std::nullopt;
  if (h.r.pid <= 0) return std::nullopt;
  h.r.since_ns = sec * 1'000'000'000 + nsec;
  h.header_len = text.size() - t.size();
  return h;
}

} // namespace

std::string encode_record(const HolderRecord& r) {
  char head[record_header_max];
  const int n =
      std::snprintf(head, sizeof head, "%.*sfence=%llu pid=%d since=%lld.%09lld keylen=%zu\n",
                    static_cast<int>(magic.size()), magic.data(), static_cast<unsigned long long>(r.fence),
                    static_cast<int>(r.pid), static_cast<long long>(r.since_ns / 1'000'000'000),
                    static_cast<long long>(r.since_ns % 1'000'000'000), r.key.size());
  std::string out;
  out.reserve(static_cast<std::size_t>(n) + r.key.size() + 1);
  out.append(head, static_cast<std::size_t>(n));
  out += r.key;
  out += '\n';
  return out;
}

std::optional<HolderRecord> decode_record(std::string_view text, bool header_only) {
  auto h = decode_header(text);
  if (!h) return std::nullopt;
  if (header_only) return h->r;
  const std::string_view rest = text.substr(h->header_len);
  if (rest.size() < h->key_len + 1 || rest[h->key_len] != '\n') return std::nullopt;
  h->r.key.assign(rest.substr(0, h->key_len));
  return h->r;
}

std::size_t record_total_size(std::string_view header) {
  const auto h = decode_header(header);
  return h ? h->header_len + h->key_len + 1 : 0;
}

std::uint64_t next_fence(std::string_view header) {
  const auto h = decode_header(header);
  return h ? h->r.fence + 1 : 1;
}

std::string holder_fields(const HolderInfo& h, std::int64_t now_ns) {
  std::string out;
  for (std::size_t i = 0; i < h.pids.size(); ++i) {
    out += i ? "," : " pid=";
    out += std::to_string(h.pids[i]);
  }
  if (!h.host.empty()) out += " host=" + h.host;
  if (h.since_ns) {
    const std::int64_t held = now_ns > *h.since_ns ? now_ns - *h.since_ns : 0;
    char buf[48];
    std::snprintf(buf, sizeof buf, " since=%lld.%03lld", static_cast<long long>(held / 1'000'000'000),
                  static_cast<long long>(held % 1'000'000'000 / 1'000'000));
    out += buf;
  }
  if (h.fence) out += " fence=" + std::to_string(*h.fence);
  return out;
}

} // namespace bufferlock
