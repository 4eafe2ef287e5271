#include "cache/exclude.hpp"

#include <fnmatch.h>

namespace bufferlock {

namespace {

// The non-empty components of `path`, in order.
std::vector<std::string> components_of(std::string_view path) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) out.emplace_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

// Whether `pattern` from its component `p` on matches `path` from `c` on.
bool match(const std::vector<std::string>& pattern, std::size_t p, const std::vector<const char*>& path,
           std::size_t c) {
  for (; p < pattern.size(); ++p, ++c) {
    if (pattern[p] == "**") {
      if (p + 1 == pattern.size()) return c < path.size(); // "a/**": inside a, not a
      for (std::size_t skip = c; skip <= path.size(); ++skip)
        if (match(pattern, p + 1, path, skip)) return true;
      return false;
    }
    if (c >= path.size() || ::fnmatch(pattern[p].c_str(), path[c], 0) != 0) return false;
  }
  return c == path.size();
}

bool same(const std::vector<std::string>& rel, const std::vector<const char*>& path) {
  if (rel.size() != path.size()) return false;
  for (std::size_t i = 0; i < rel.size(); ++i)
    if (rel[i] != path[i]) return false;
  return true;
}

// `path` made absolute against `cwd`, its components normalised by words alone.
std::vector<std::string> normalised(std::string_view path, std::string_view cwd) {
  std::vector<std::string> out;
  std::string whole;
  if (path.empty() || path.front() != '/') {
    whole = cwd;
    whole += '/';
  }
  whole += path;
  for (auto& c : components_of(whole)) {
    if (c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

} // namespace

std::optional<std::string> bad_exclude_pattern(std::string_view pattern) {
  if (pattern.empty()) return "an empty pattern";
  if (pattern.find('\0') != std::string_view::npos) return "a pattern with a NUL byte";
  if (pattern.front() == '!') return "a negated pattern ('!' is not supported; '\\!' matches a '!')";
  if (pattern.back() == '\\') return "a pattern ending in a backslash";
  const auto parts = components_of(pattern);
  if (parts.empty()) return "a pattern of slashes alone";
  for (const auto& c : parts)
    if (c == "." || c == "..") return "a pattern with a '.' or '..' component (it would match nothing)";
  return std::nullopt;
}

void Excludes::add_pattern(std::string_view pattern) {
  Rule r;
  r.directories_only = pattern.back() == '/';
  while (!pattern.empty() && pattern.back() == '/')
    pattern.remove_suffix(1);
  // A slash before the end anchors the pattern; without one it matches at any depth.
  if (pattern.find('/') == std::string_view::npos) r.components.emplace_back("**");
  for (auto& c : components_of(pattern))
    r.components.push_back(std::move(c));
  rules_.push_back(std::move(r));
}

void Excludes::add_path(std::string_view rel) {
  Rule r;
  r.components = components_of(rel);
  r.literal = true;
  if (!r.components.empty()) rules_.push_back(std::move(r));
}

bool Excludes::excludes(const std::vector<const char*>& components, bool directory) const {
  for (const auto& r : rules_) {
    if (r.directories_only && !directory) continue;
    if (r.literal ? same(r.components, components) : match(r.components, 0, components, 0)) return true;
  }
  return false;
}

bool Excludes::excludes(std::string_view rel, bool directory) const {
  const auto parts = components_of(rel);
  std::vector<const char*> names;
  names.reserve(parts.size());
  for (const auto& p : parts)
    names.push_back(p.c_str());
  return excludes(names, directory);
}

std::optional<std::string> path_inside(std::string_view root, std::string_view path, std::string_view cwd) {
  const auto r = normalised(root, cwd);
  const auto p = normalised(path, cwd);
  if (p.size() <= r.size()) return std::nullopt;
  for (std::size_t i = 0; i < r.size(); ++i)
    if (r[i] != p[i]) return std::nullopt;
  std::string rel;
  for (std::size_t i = r.size(); i < p.size(); ++i) {
    if (!rel.empty()) rel += '/';
    rel += p[i];
  }
  return rel;
}

} // namespace bufferlock
