#include "cache/depends.hpp"

#include <sys/stat.h>

namespace bufferlock {

std::optional<std::string> bad_depends_path(std::string_view path) {
  if (path.empty()) return "an empty path";
  if (path.find('\0') != std::string_view::npos) return "a path with a NUL byte";
  return std::nullopt;
}

DepStamp stamp_path(const std::string& path) {
  DepStamp d;
  d.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return d;
  d.exists = true;
  d.size = static_cast<std::uint64_t>(st.st_size);
  d.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
  d.dev = static_cast<std::uint64_t>(st.st_dev);
  d.ino = static_cast<std::uint64_t>(st.st_ino);
  return d;
}

std::vector<DepStamp> stamp_paths(const std::vector<std::string>& paths) {
  std::vector<DepStamp> out;
  out.reserve(paths.size());
  for (const auto& p : paths)
    out.push_back(stamp_path(p));
  return out;
}

bool stamp_changed(const DepStamp& then, const DepStamp& now) {
  if (then.exists != now.exists) return true; // appeared or vanished
  return then.exists && (then.size != now.size || then.mtime_ns != now.mtime_ns || then.dev != now.dev ||
                         then.ino != now.ino);
}

bool deps_out_of_date(const std::vector<DepStamp>& recorded, const std::vector<std::string>& wanted) {
  if (!wanted.empty()) {
    if (wanted.size() != recorded.size()) return true;
    for (std::size_t i = 0; i < wanted.size(); ++i)
      if (wanted[i] != recorded[i].path) return true;
  }
  for (const auto& d : recorded)
    if (stamp_changed(d, stamp_path(d.path))) return true;
  return false;
}

} // namespace bufferlock
