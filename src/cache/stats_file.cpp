#include "cache/stats_file.hpp"

#include "cache/open_store.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace bufferlock {

void StatsFile::count(const CallCount& c) const {
  constexpr int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW;
  UniqueFd fd(::open(path_.c_str(), flags, 0600));
  // A remote store's hit may come before its cache directory exists. One
  // that cannot be made drops the count, as any count not written.
  if (!fd && errno == ENOENT && !prepare_cache_dir(dir_)) fd.reset(::open(path_.c_str(), flags, 0600));
  if (fd) write_all(fd.get(), stats_record(c));
}

std::variant<StatsSums, SysError> StatsFile::read() const {
  StatsSums sums;
  const UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return sums; // nothing counted yet
    return SysError{path_, errno_text(errno)};
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SysError{path_, errno_text(errno)};
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  sum_records(text, sums);
  return sums;
}

std::optional<SysError> StatsFile::zero() const {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR)
    return SysError{path_, errno_text(errno)};
  return std::nullopt;
}

} // namespace bufferlock
