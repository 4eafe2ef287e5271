#include "cache/inputs.hpp"

#include "cache/exclude.hpp"

#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/le.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

namespace bufferlock {

namespace {

constexpr std::size_t read_size = 128 * 1024;      // when a file cannot be mapped
constexpr std::uint64_t map_window = 4 * 1024 * 1024; // at most this much mapped at once
constexpr std::size_t max_depth = 256;

void put_digest(std::string& out, const Digest128& d) {
  put_le<std::uint64_t>(out, d.high);
  put_le<std::uint64_t>(out, d.low);
}

// Where SIGBUS returns to while a mapped file is hashed (a file truncated by
// someone else meanwhile faults on the pages it lost).
thread_local sigjmp_buf* bus_return = nullptr;

void on_sigbus(int) { siglongjmp(*bus_return, 1); }

// Hashes the `size` bytes of `fd` through a moving read-only mapping: no
// copy into a buffer, which is what keeps hashing at the speed of cat(1).
// False when the file cannot be mapped, or shrank while it was hashed.
bool hash_mapped(int fd, std::uint64_t size, Checksum128& h) {
  struct sigaction bus {}, old{};
  bus.sa_handler = on_sigbus;
  sigemptyset(&bus.sa_mask);
  if (::sigaction(SIGBUS, &bus, &old) != 0) return false;
  sigjmp_buf here;
  void* volatile map = MAP_FAILED;
  volatile std::uint64_t mapped = 0;
  bool whole = false;
  if (sigsetjmp(here, 1) == 0) {
    bus_return = &here;
    std::uint64_t at = 0;
    while (at < size) {
      mapped = std::min<std::uint64_t>(size - at, map_window);
      map = ::mmap(nullptr, mapped, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, static_cast<off_t>(at));
      if (map == MAP_FAILED) break;
      ::madvise(map, mapped, MADV_SEQUENTIAL);
      h.update(map, mapped);
      ::munmap(map, mapped);
      map = MAP_FAILED;
      at += mapped;
    }
    whole = at >= size;
  }
  if (map != MAP_FAILED) ::munmap(map, mapped); // left by SIGBUS
  bus_return = nullptr;
  ::sigaction(SIGBUS, &old, nullptr);
  // A file that grew is hashed only up to its old size: the caller's
  // second fstat sees the change and keeps no record of it.
  return whole;
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

// `parent`/`name` as a message shows it ("./x/y" as "x/y").
std::string joined(std::string_view parent, std::string_view name) {
  while (parent.size() >= 2 && parent.substr(0, 2) == "./")
    parent.remove_prefix(2);
  std::string path(parent == "." ? "" : parent);
  if (!path.empty() && path.back() != '/') path += '/';
  path += name;
  return path;
}

class Hasher {
public:
  Hasher(StatCache& stats, const InputsRules& rules, InputsWalk* walk)
      : stats_(stats), rules_(rules), walk_(walk && (walk->record || walk->since || walk->manifest) ? walk : nullptr),
        manifest_(walk ? walk->manifest : nullptr) {}

  std::variant<Digest128, SysError> run(const std::vector<std::string>& paths) {
    std::string all = "bufferlock inputs 1\n";
    for (const auto& p : paths)
      if (!top(p, all)) return *error_;
    if (!rules_.excludes.empty()) {
      // Only then: the digests of inputs without --exclude stay what they were.
      std::vector<std::string> sorted = rules_.excludes;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      all += 'X';
      for (const auto& x : sorted) {
        put_le<std::uint32_t>(all, static_cast<std::uint32_t>(x.size()));
        all += x;
      }
    }
    return checksum128(all);
  }

private:
  bool fail(const std::string& path, int err) {
    error_ = SysError{path, errno_text(err)};
    return false;
  }
  // The same for `name` in the directory `parent` (the path is made only then).
  bool fail(const std::string& parent, std::string_view name, int err) {
    std::string path = parent;
    path += '/';
    path += name;
    return fail(path, err);
  }

  // The entry at `place` whose record is `record` was seen (shown as `shown()`).
  template <class Shown> void saw(std::uint64_t place, std::string_view record, const Shown& shown) {
    saw(checksum(record, place), shown);
  }
  // The same, given that hash of its place and record.
  template <class Shown> void saw(std::uint64_t entry, const Shown& shown) {
    if (walk_->record) walk_->record->add(entry);
    if (walk_->since && walk_->first_new.empty() && !walk_->since->has(entry)) walk_->first_new = shown();
  }

  // What the directory `path` leaves out: --exclude, and the --output PATHs inside it.
  void rules_for(const std::string& path) {
    excludes_ = Excludes();
    for (const auto& x : rules_.excludes)
      excludes_.add_pattern(x);
    if (rules_.outputs.empty()) return;
    char cwd[PATH_MAX];
    if (!::getcwd(cwd, sizeof cwd)) return; // none found inside: they count as inputs
    for (const auto& output : rules_.outputs)
      if (auto rel = path_inside(path, output, cwd)) excludes_.add_path(*rel);
  }

  // One --depends PATH, appended to `out`.
  bool top(const std::string& path, std::string& out) {
    const std::size_t start = out.size();
    if (manifest_) manifest_->paths.push_back({path, 'M', {}, false, {}, {}});
    if (!top_record(path, out)) return false;
    if (manifest_) noted_top(std::string_view(out).substr(start));
    if (walk_) saw(checksum(path), std::string_view(out).substr(start), [&] { return path; });
    return true;
  }

  // The manifest's record of the PATH just walked, whose record is `record`.
  void noted_top(std::string_view record) {
    ManifestPath& p = manifest_->paths.back();
    p.kind = record[0];
    if (record.size() == 17) p.digest = Digest128{get_le<std::uint64_t>(record, 1), get_le<std::uint64_t>(record, 9)};
  }

  bool top_record(const std::string& path, std::string& out) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) {
        out += 'M';
        return true;
      }
      return fail(path, errno);
    }
    if (S_ISREG(st.st_mode)) {
      Digest128 d;
      if (!file(AT_FDCWD, path.c_str(), "", path, st, d)) return false;
      out += 'F';
      put_digest(out, d);
    } else if (S_ISDIR(st.st_mode)) {
      UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!fd) return fail(path, errno);
      rules_for(path);
      Digest128 d;
      if (!directory(fd, path, walk_ ? checksum(path) : 0, d)) return false;
      out += 'D';
      put_digest(out, d);
    } else {
      out += 'O'; // never opened: a FIFO would block, a device could act
    }
    return true;
  }

  // The content digest of the regular file `name` in `dir` (shown as
  // `parent`/`name`, or `name` alone when `parent` is empty) that stat showed
  // as `st`: from the stat cache, or read whole.
  bool file(int dir, const char* name, const std::string& parent, const std::string& shown,
            const struct stat& st, Digest128& out) {
    const auto failed = [&](int err) { return parent.empty() ? fail(shown, err) : fail(parent, shown, err); };
    if (auto d = stats_.find(st)) {
      out = *d;
      return true;
    }
    const std::int64_t began = wall_clock_ns();
    UniqueFd fd(::openat(dir, name,
                         O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (dir == AT_FDCWD ? 0 : O_NOFOLLOW)));
    if (!fd) return failed(errno);
    struct stat first {};
    if (::fstat(fd.get(), &first) != 0) return failed(errno);
    if (!S_ISREG(first.st_mode)) return failed(EINVAL); // replaced meanwhile
    Checksum128 h;
    if (!hash_mapped(fd.get(), static_cast<std::uint64_t>(first.st_size), h)) {
      // Not mappable (or changed size meanwhile): read it, from the start.
      ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
      if (buf_.empty()) buf_.resize(read_size);
      h = Checksum128();
      for (off_t at = 0;;) {
        const ssize_t n = ::pread(fd.get(), buf_.data(), buf_.size(), at);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return failed(errno);
        if (n == 0) break;
        h.update(buf_.data(), static_cast<std::size_t>(n));
        at += n;
      }
    }
    out = h.digest();
    struct stat last {};
    // Changed while it was read: the digest is of no settled content, not worth keeping.
    if (::fstat(fd.get(), &last) == 0 && same_file(first, last)) stats_.remember(last, began, out);
    return true;
  }


  // A directory's digest: its entries in byte order of their names. `place`:
  // where it is, for the walk's bookkeeping; its depth is components_.size().
  bool directory(const UniqueFd& fd, const std::string& path, std::uint64_t place, Digest128& out) {
    if (components_.size() >= max_depth) return fail(path, ELOOP);
    const int copy = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return fail(path, errno);
    DIR* d = ::fdopendir(copy);
    if (!d) {
      const int err = errno;
      ::close(copy);
      return fail(path, err);
    }
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* e = ::readdir(d)) {
      const std::string_view n = e->d_name;
      // .git: a clone's own history, hooks and index, never the same twice.
      if (n != "." && n != ".." && n != ".git") names.emplace_back(n);
    }
    const int read_err = errno;
    ::closedir(d);
    if (read_err != 0) return fail(path, read_err);
    std::sort(names.begin(), names.end());
    const std::size_t walked = manifest_ ? manifest_->begin_dir(names) : Manifest::npos;

    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string& name = names[i];
      struct stat st {};
      if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) continue; // removed while we looked: not there
        return fail(path, name, errno);
      }
      // The entry's place among the components while it is looked at.
      components_.push_back(name.c_str());
      const bool left_out = !excludes_.empty() && excludes_.excludes(components_, S_ISDIR(st.st_mode));
      const bool ok = left_out || entry(fd, path, place, name, st, list, {walked, i});
      components_.pop_back();
      if (!ok) return false;
    }
    out = checksum128(list);
    if (manifest_) manifest_->end_dir(walked, names);
    return true;
  }

  // Where an entry is in the manifest's walked directories.
  struct Slot {
    std::size_t dir;
    std::size_t index;
  };

  // The record of the entry `name` of the directory `path` (open as `fd`),
  // appended to `list`; `slot`: its place in the manifest.
  bool entry(const UniqueFd& fd, const std::string& path, std::uint64_t place, const std::string& name,
             const struct stat& st, std::string& list, Slot slot) {
    const std::size_t start = list.size();
    put_le<std::uint32_t>(list, static_cast<std::uint32_t>(name.size()));
    list += name;
    if (S_ISREG(st.st_mode)) {
      Digest128 dd;
      if (!file(fd.get(), name.c_str(), path, name, st, dd)) return false;
      list += 'f';
      list += (st.st_mode & S_IXUSR) ? 'x' : '-';
      put_digest(list, dd);
    } else if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      const ssize_t n = ::readlinkat(fd.get(), name.c_str(), target, sizeof target);
      if (n < 0) return fail(path, name, errno);
      list += 'l';
      put_le<std::uint32_t>(list, static_cast<std::uint32_t>(n));
      list.append(target, static_cast<std::size_t>(n));
    } else if (S_ISDIR(st.st_mode)) {
      std::string sub = path;
      sub += '/';
      sub += name;
      UniqueFd subfd(::openat(fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!subfd) return fail(sub, errno);
      Digest128 dd;
      if (manifest_) manifest_->subdir(slot.dir, slot.index);
      if (!directory(subfd, sub, walk_ ? checksum(name, place) : 0, dd)) return false;
      list += 'd';
      put_digest(list, dd);
    } else {
      list += 'o';
    }
    if (!walk_) return true;
    const std::uint64_t seen = checksum(std::string_view(list).substr(start), place);
    // (A file's place is the same for the same name below the same PATH:
    // this is a digest of its record there.)
    if (manifest_ && !S_ISDIR(st.st_mode)) manifest_->file(slot.dir, slot.index, seen);
    saw(seen, [&] { return joined(path, name); });
    return true;
  }

  StatCache& stats_;
  const InputsRules& rules_;
  InputsWalk* walk_;                    // null: no bookkeeping asked for
  Manifest* manifest_;                  // null: none asked for
  Excludes excludes_;                   // of the directory being walked
  std::vector<const char*> components_; // the path of the entry looked at, from that directory
  std::vector<char> buf_;
  std::optional<SysError> error_;
};

} // namespace

void InputsTrail::add(std::uint64_t entry) {
  if (!complete_) return;
  if (seen_.size() >= max_entries) {
    complete_ = false;
    seen_ = {};
    return;
  }
  seen_.push_back(entry);
  sorted_ = false;
}

bool InputsTrail::has(std::uint64_t entry) const {
  if (!sorted_) {
    std::sort(seen_.begin(), seen_.end());
    sorted_ = true;
  }
  return std::binary_search(seen_.begin(), seen_.end(), entry);
}

std::variant<Digest128, SysError> inputs_digest(const std::vector<std::string>& paths, StatCache& stats,
                                                const InputsRules& rules, InputsWalk* walk) {
  return Hasher(stats, rules, walk).run(paths);
}

} // namespace bufferlock
