#include "cache/manifest.hpp"

#include "util/le.hpp"

#include <algorithm>

namespace bufferlock {

namespace {

constexpr std::uint8_t path_truncated = 1;
constexpr std::size_t path_fixed = 4 + 1 + 1 + 16 + 4;
constexpr std::size_t file_fixed = 2 + 8;
constexpr std::size_t max_name = 0xffff;

std::size_t list_bytes(const ManifestPath& p) {
  std::size_t n = 0;
  for (const auto& f : p.files)
    n += file_fixed + f.name.size();
  return n;
}

// Drops the file list of `p`: past the bound (or a name too long to record).
void truncate(ManifestPath& p) {
  p.truncated = true;
  p.files = {};
  p.walked = {};
}

// A reader of the section's bytes that fails once past their end.
struct Reader {
  std::string_view in;
  std::size_t at = 0;
  bool ok = true;

  template <class T> T get() {
    if (!ok || in.size() - at < sizeof(T)) {
      ok = false;
      return T{};
    }
    const T v = get_le<T>(in, at);
    at += sizeof(T);
    return v;
  }
  std::string bytes(std::size_t n) {
    if (!ok || in.size() - at < n) {
      ok = false;
      return {};
    }
    std::string s(in.substr(at, n));
    at += n;
    return s;
  }
};

std::optional<ManifestPath> read_path(Reader& r) {
  ManifestPath p;
  p.path = r.bytes(r.get<std::uint32_t>());
  p.kind = static_cast<char>(r.get<std::uint8_t>());
  const auto flags = r.get<std::uint8_t>();
  p.truncated = (flags & path_truncated) != 0;
  p.digest.high = r.get<std::uint64_t>();
  p.digest.low = r.get<std::uint64_t>();
  const auto files = r.get<std::uint32_t>();
  if (!r.ok || (flags & ~path_truncated) != 0 || files > r.in.size()) return std::nullopt;
  for (std::uint32_t i = 0; i < files && r.ok; ++i) {
    ManifestFile f;
    f.name = r.bytes(r.get<std::uint16_t>());
    f.digest = r.get<std::uint64_t>();
    p.files.push_back(std::move(f));
  }
  if (!r.ok) return std::nullopt;
  return p;
}

// "changed a.c, added b.c, +4 more": the files of `now` against `was`
// (both in the walk's order), at most `shown` named.
std::string files_diff(const std::vector<ManifestFile>& was, const std::vector<ManifestFile>& now,
                       std::size_t shown) {
  std::vector<std::string> items;
  std::size_t more = 0;
  const auto note = [&](std::string_view what, const std::string& name) {
    if (items.size() < shown)
      items.push_back(std::string(what) + ' ' + name);
    else
      ++more;
  };
  std::size_t i = 0, j = 0;
  while (i < was.size() || j < now.size()) {
    if (j == now.size() || (i < was.size() && manifest_before(was[i].name, now[j].name))) {
      note("removed", was[i++].name);
    } else if (i == was.size() || manifest_before(now[j].name, was[i].name)) {
      note("added", now[j++].name);
    } else {
      if (was[i].digest != now[j].digest) note("changed", now[j].name);
      ++i;
      ++j;
    }
  }
  std::string out;
  for (const auto& item : items)
    out += (out.empty() ? "" : ", ") + item;
  if (more > 0) out += ", +" + std::to_string(more) + " more";
  return out;
}

// What differs in one PATH that is in both; empty when nothing does.
std::string path_diff(const ManifestPath& was, const ManifestPath& now, std::size_t shown) {
  if (was.kind == now.kind && was.digest == now.digest) return {};
  if (was.kind == 'M') return "was missing";
  if (now.kind == 'M') return "missing now";
  if (was.kind != 'D' || now.kind != 'D') return "changed";
  if (was.truncated || now.truncated) return "changed (too many files to name them)";
  std::string files = files_diff(was.files, now.files, shown);
  return files.empty() ? "changed" : files;
}

const ManifestPath* find_path(const Manifest& m, const std::string& path) {
  for (const auto& p : m.paths)
    if (p.path == path) return &p;
  return nullptr;
}

} // namespace

bool manifest_before(std::string_view a, std::string_view b) {
  const auto rank = [](char c) { return c == '/' ? 0 : static_cast<unsigned char>(c) + 1; };
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [&](char x, char y) { return rank(x) < rank(y); });
}

std::size_t Manifest::begin_dir(const std::vector<std::string>& names) {
  if (paths.empty() || paths.back().truncated) return npos;
  ManifestPath& p = paths.back();
  if (p.walked.empty()) walked_bytes_ = 0;
  // A lower bound of what the list will take (names without their
  // directories): past the bound already, nothing more is kept.
  for (const auto& n : names)
    walked_bytes_ += file_fixed + n.size();
  if (walked_bytes_ > manifest_bound) {
    truncate(p);
    return npos;
  }
  WalkedDir& d = p.walked.emplace_back();
  d.kinds.assign(names.size(), WalkedDir::unlisted);
  d.digests.assign(names.size(), 0);
  return p.walked.size() - 1;
}

void Manifest::subdir(std::size_t dir, std::size_t slot) {
  if (dir == npos || paths.back().truncated) return;
  paths.back().walked[dir].kinds[slot] = static_cast<std::int32_t>(paths.back().walked.size());
}

void Manifest::end_dir(std::size_t dir, std::vector<std::string>& names) {
  if (dir == npos || paths.back().truncated) return;
  paths.back().walked[dir].names = std::move(names);
}

namespace {

// The files of walked directory `at` of `p`, named below `prefix`; false
// once past the bound (`listed`: the bytes so far).
bool flatten(ManifestPath& p, std::size_t at, const std::string& prefix, std::size_t& listed) {
  const WalkedDir& d = p.walked[at];
  for (std::size_t i = 0; i < d.names.size() && i < d.kinds.size(); ++i) {
    const std::int32_t kind = d.kinds[i];
    if (kind == WalkedDir::unlisted) continue;
    std::string name = prefix + d.names[i];
    if (kind >= 0) {
      if (static_cast<std::size_t>(kind) >= p.walked.size() || !flatten(p, kind, name + '/', listed)) return false;
      continue;
    }
    listed += file_fixed + name.size();
    if (name.size() > max_name || listed > manifest_bound) return false;
    p.files.push_back({std::move(name), d.digests[i]});
  }
  return true;
}

} // namespace

void Manifest::settle() {
  for (auto& p : paths) {
    if (p.walked.empty()) continue;
    std::size_t listed = 0;
    p.files.clear();
    if (!flatten(p, 0, "", listed)) truncate(p);
    p.walked = {};
  }
}

std::string encode_manifest(Manifest m) {
  m.settle();
  std::size_t listed = 0;
  for (auto& p : m.paths) {
    const std::size_t bytes = list_bytes(p);
    if (listed + bytes > manifest_bound)
      truncate(p);
    else
      listed += bytes;
  }
  std::string out;
  put_le<std::uint32_t>(out, 0);
  const std::string host = m.host.substr(0, max_name);
  put_le<std::uint16_t>(out, static_cast<std::uint16_t>(host.size()));
  out += host;
  put_le<std::uint32_t>(out, static_cast<std::uint32_t>(m.paths.size()));
  for (const auto& p : m.paths) {
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(p.path.size()));
    out += p.path;
    put_le<std::uint8_t>(out, static_cast<std::uint8_t>(p.kind));
    put_le<std::uint8_t>(out, p.truncated ? path_truncated : 0);
    put_le<std::uint64_t>(out, p.digest.high);
    put_le<std::uint64_t>(out, p.digest.low);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(p.files.size()));
    for (const auto& f : p.files) {
      put_le<std::uint16_t>(out, static_cast<std::uint16_t>(f.name.size()));
      out += f.name;
      put_le<std::uint64_t>(out, f.digest);
    }
  }
  return out;
}

std::optional<Manifest> decode_manifest(std::string_view bytes) {
  Reader r{bytes};
  Manifest m;
  if (r.get<std::uint32_t>() != 0) return std::nullopt; // flags of a later version
  m.host = r.bytes(r.get<std::uint16_t>());
  const auto count = r.get<std::uint32_t>();
  if (!r.ok || count > bytes.size() / path_fixed) return std::nullopt;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto p = read_path(r);
    if (!p) return std::nullopt;
    m.paths.push_back(std::move(*p));
  }
  if (r.at != bytes.size()) return std::nullopt;
  return m;
}

std::optional<Manifest> manifest_of(const EntryHeader& h) {
  for (const auto& s : h.sections)
    if (s.type == entry_section_manifest) return decode_manifest(s.bytes);
  return std::nullopt;
}

std::string manifest_diff(const Manifest& was, const Manifest& now, std::size_t shown) {
  std::string out;
  const auto add = [&](const std::string& path, const std::string& what) {
    if (what.empty()) return;
    out += (out.empty() ? "" : "; ") + path + ": " + what;
  };
  for (const auto& p : now.paths) {
    const ManifestPath* before = find_path(was, p.path);
    add(p.path, before ? path_diff(*before, p, shown) : "not a dependency then");
  }
  for (const auto& p : was.paths)
    if (!find_path(now, p.path)) add(p.path, "no longer a dependency");
  return out;
}

} // namespace bufferlock
