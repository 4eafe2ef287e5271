#include "lock/file_list.hpp"

#include "lock/file_lock.hpp"
#include "lock/holder_record.hpp"
#include "lock/proc_locks.hpp"
#include "messages.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace bufferlock {

namespace {

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

} // namespace

bool is_lock_file_name(std::string_view name) {
  if (name.size() < 37 || !name.ends_with(".lock") || !is_hex(name.substr(0, 32))) return false;
  const std::string_view middle = name.substr(32, name.size() - 37);
  if (middle.empty()) return true;
  if (middle.size() < 2 || middle.front() != '.' || middle[1] == '0') return false;
  return std::all_of(middle.begin() + 1, middle.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<ListedLock> list_file_locks(const std::string& dir, std::optional<std::string>& error) {
  const std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) {
    if (errno != ENOENT) error = message(Msg::list_failed, {{"path", dir}, {"error", errno_text(errno)}});
    return {};
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d.get()))
    if (is_lock_file_name(e->d_name)) names.emplace_back(e->d_name);
  // KEY by KEY (digest), then slot 0, 1, 2... (".lock" before ".1.lock").
  const auto slot_of = [](const std::string& n) {
    return n.size() == 37 ? 0UL : std::stoul(n.substr(33, n.size() - 38));
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    const int c = a.compare(0, 32, b, 0, 32);
    return c != 0 ? c < 0 : slot_of(a) < slot_of(b);
  });
  const std::string locks = read_proc_locks();
  std::vector<ListedLock> out;
  for (const std::string& name : names) {
    // O_NONBLOCK: a FIFO planted here cannot hang us; no flock is taken.
    UniqueFd fd(::openat(::dirfd(d.get()), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    HolderInfo h = file_holder_info(fd.get(), st.st_dev, st.st_ino, locks);
    if (h.pids.empty()) continue;
    ListedLock& l = out.emplace_back();
    std::string path = dir;
    path += '/';
    path += name;
    l.place = {false, dir, std::move(path)};
    l.digest = name.substr(0, 32);
    l.slot = static_cast<unsigned>(slot_of(name));
    l.info.holder = std::move(h);
  }
  return out;
}

} // namespace bufferlock
