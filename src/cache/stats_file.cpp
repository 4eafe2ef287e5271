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

namespace {

// The whole lines of `text` from `from` on.
std::string_view whole_lines(std::string_view text, std::size_t from) {
  const std::size_t end = text.rfind('\n');
  if (end == std::string_view::npos || end < from) return {};
  return text.substr(from, end + 1 - from);
}

} // namespace

std::variant<StatsSums, SysError> StatsFile::read() const {
  StatsSums sums;
  const UniqueFd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return sums; // nothing counted yet
    return SysError{path_, errno_text(errno)};
  }
  std::string text;
  if (!read_to_end(fd.get(), text)) return SysError{path_, errno_text(errno)};
  sum_records(text, sums);
  return sums;
}

// The file is renamed aside, so that new calls append to a fresh one; the
// aside file's sums are appended there as one record a KEY (one write), then
// what reached the aside file meanwhile (a caller that opened it before the
// rename), and it is removed. A record appended to it after that last read
// is lost: a window of microseconds between a caller's open and its write,
// and a count not written is dropped anyway (SPEC §21). When the sums cannot
// be appended the aside file is put back unless a fresh one exists by then.
void StatsFile::compact() const {
  const std::string aside = path_ + ".gc" + std::to_string(::getpid());
  if (::rename(path_.c_str(), aside.c_str()) != 0) return; // none, or not ours to move
  const UniqueFd in(::open(aside.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  std::string text;
  StatsSums sums;
  const bool read = in && read_to_end(in.get(), text);
  sum_records(text, sums);
  std::string records;
  for (const auto& [key, c] : sums.keys)
    records += stats_record(key, c);
  const std::size_t summed = whole_lines(text, 0).size();
  const UniqueFd out(::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!read || !out || !write_all(out.get(), records)) {
    if (::link(aside.c_str(), path_.c_str()) == 0) ::unlink(aside.c_str());
    return;
  }
  if (read_to_end(in.get(), text)) write_all(out.get(), whole_lines(text, summed));
  ::unlink(aside.c_str());
}

std::optional<SysError> StatsFile::zero() const {
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR)
    return SysError{path_, errno_text(errno)};
  return std::nullopt;
}

} // namespace bufferlock
