#include "cache/depends.hpp"

namespace bufferlock {

std::optional<std::string> bad_depends_path(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string_view::npos) return "a path with a NUL byte";
  return std::nullopt;
}

} // namespace bufferlock
