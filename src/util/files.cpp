#include "util/files.hpp"

#include "util/io.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bufferlock {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the text, which may or may not be in buf.
  return ::strerror_r(err, buf, sizeof buf);
}

std::optional<mode_t> readable_by_others(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & (S_IRGRP | S_IROTH)) == 0) return std::nullopt;
  return st.st_mode & 07777;
}

bool names_open_file(int dirfd, const std::string& name, int fd) {
  struct stat a {
  }, b{};
  return ::fstat(fd, &a) == 0 && ::fstatat(dirfd, name.c_str(), &b, AT_SYMLINK_NOFOLLOW) == 0 &&
         a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string parent_dir(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::optional<SysError> make_dirs(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) == 0) return std::nullopt;
  int err = errno;
  if (err == ENOENT) {
    const std::string parent = parent_dir(path);
    if (parent != path && parent != "." && parent != "/") {
      if (auto e = make_dirs(parent, mode)) return e;
    }
    if (::mkdir(path.c_str(), mode) == 0) return std::nullopt;
    err = errno;
  }
  if (err == EEXIST) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return std::nullopt;
    return SysError{path, errno_text(ENOTDIR)};
  }
  return SysError{path, errno_text(err)};
}

std::optional<SysError> ensure_private_dir(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return SysError{path, errno_text(errno)};
    if (auto e = make_dirs(parent_dir(path), 0700)) return e;
    // EEXIST: another process created it first; the checks below still apply.
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return SysError{path, errno_text(errno)};
    if (::lstat(path.c_str(), &st) != 0) return SysError{path, errno_text(errno)};
  }
  if (S_ISLNK(st.st_mode)) return SysError{path, "it is a symbolic link", true};
  if (!S_ISDIR(st.st_mode)) return SysError{path, errno_text(ENOTDIR), true};
  if (st.st_uid != ::geteuid())
    return SysError{path, "it is owned by uid " + std::to_string(st.st_uid) + ", not by you", true};
  return std::nullopt;
}

UniqueFd anonymous_file(std::uint64_t size) {
  constexpr std::uint64_t in_memory = 1024 * 1024;
  if (size <= in_memory) {
    UniqueFd fd(::memfd_create("bufferlock-entry", MFD_CLOEXEC));
    if (fd) return fd;
  }
  const char* env = ::getenv("TMPDIR");
  const std::string dir = env && *env == '/' ? env : "/tmp";
  UniqueFd fd(::open(dir.c_str(), O_RDWR | O_TMPFILE | O_EXCL | O_CLOEXEC, 0600));
  if (fd) return fd;
  std::string name = dir + "/.bufferlock-XXXXXX";
  fd.reset(::mkostemp(name.data(), O_CLOEXEC));
  if (fd) ::unlink(name.c_str());
  return fd;
}

std::variant<std::string, std::string> read_secret_file(const std::string& path) {
  constexpr std::size_t most = 64 * 1024;
  const auto why = [](std::string text) { return std::variant<std::string, std::string>(std::in_place_index<1>, std::move(text)); };
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return why(errno_text(errno));
  if (!S_ISREG(st.st_mode)) return why("not a regular file");
  // A shared secret that others can read guards nothing: refused, not warned.
  if ((st.st_mode & (S_IRGRP | S_IROTH)) != 0) return why("readable by group or others (chmod 600)");
  if (st.st_size == 0) return why("empty");
  if (static_cast<std::uint64_t>(st.st_size) > most) return why("larger than 64 KiB");
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  if (!pread_all(fd.get(), bytes.data(), bytes.size(), 0)) return why(errno_text(errno));
  return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(bytes));
}

} // namespace bufferlock
