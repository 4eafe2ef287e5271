#include "cache/depends.hpp"

namespace bufferlock {

std::optional<std::string> bad_depends_path(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string_view::npos) return "a path with a NUL byte";
  return std::nullopt;
}

std::optional<std::string> bad_output_path(std::string_view path) {
  if (auto why = bad_depends_path(path)) return why;
  while (path.size() > 1 && path.back() == '/')
    path.remove_suffix(1);
  const auto slash = path.rfind('/');
  const std::string_view last = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (last.empty() || last == "." || last == "..") return "a path that cannot be replaced as a whole";
  return std::nullopt;
}

} // namespace bufferlock
