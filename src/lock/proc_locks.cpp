#include "lock/proc_locks.hpp"

#include "util/fd.hpp"
#include "util/io.hpp"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace bufferlock {

namespace {

std::vector<std::string_view> split_words(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ')
      ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ')
      ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

} // namespace

std::vector<pid_t> parse_flock_holders(std::string_view text, dev_t dev, ino_t ino) {
  // The kernel prints the file as MAJOR:MINOR:INODE, the numbers of the
  // device in hex (at least two digits) and the inode in decimal.
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%lu", ::major(dev), ::minor(dev),
                static_cast<unsigned long>(ino));
  std::vector<pid_t> pids;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto w = split_words(text.substr(pos, end - pos));
    pos = end + 1;
    // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF"; waiters have "->" after the id.
    if (w.size() < 6 || w[1] != "FLOCK" || w[5] != want) continue;
    pid_t pid = 0;
    for (char c : w[4]) {
      if (c < '0' || c > '9') {
        pid = 0;
        break;
      }
      pid = pid * 10 + (c - '0');
    }
    // One pid once: a line can come twice when /proc/locks changes between
    // two reads of it, and one process may hold a shared lock twice.
    if (pid > 0 && std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  }
  return pids;
}

std::string read_proc_locks() {
  UniqueFd fd(::open("/proc/locks", O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  std::string text;
  read_to_end(fd.get(), text); // what was read of it, on an error too
  return text;
}

std::vector<pid_t> flock_holders(dev_t dev, ino_t ino) {
  return parse_flock_holders(read_proc_locks(), dev, ino);
}

} // namespace bufferlock
