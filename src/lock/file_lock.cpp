#include "lock/file_lock.hpp"

#include "lock/proc_locks.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/interrupt_timer.hpp"
#include "util/md5.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace bufferlock {

namespace {

// O_NOFOLLOW: a symbolic link planted at the lock path is refused, not
// followed. O_NONBLOCK: a FIFO planted there cannot hang the open (it does not
// affect flock). O_RDONLY is enough for flock and lets us lock files that
// another user created.
constexpr int open_flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;

// The wait loop's re-interrupt interval (see InterruptTimer).
constexpr Nanos timer_interval = std::chrono::milliseconds(5);

} // namespace

std::string default_lock_dir(const char* xdg_runtime_dir) {
  if (xdg_runtime_dir && *xdg_runtime_dir) return std::string(xdg_runtime_dir) + "/bufferlock";
  return "/tmp/bufferlock-" + std::to_string(::geteuid());
}

std::string lock_file_path(const std::string& dir, std::string_view key) {
  std::string path = dir;
  if (path.empty() || path.back() != '/') path += '/';
  path += md5_hex(key);
  path += ".lock";
  return path;
}

std::string describe_holders(const std::vector<pid_t>& pids) {
  if (pids.empty()) return {};
  std::string out = pids.size() == 1 ? "pid " : "pids ";
  for (std::size_t i = 0; i < pids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(pids[i]);
  }
  return out;
}

FileLock::FileLock(std::string dir, DirKind kind, std::string_view key, LockMode mode)
    : dir_(std::move(dir)), kind_(kind), display_key_(display_key(key)), path_(lock_file_path(dir_, key)),
      mode_(mode) {}

void FileLock::release() {
  if (!fd_) return;
  fd_.reset();
  diag::debug_lazy([&] { return message(Msg::lock_released, {{"key", display_key_}}); });
}

void FileLock::export_env() const { ::setenv("BUFFERLOCK_BACKEND", "file", 1); }

std::optional<std::string> FileLock::open_lock_file() {
  if (kind_ == DirKind::private_default) {
    if (auto e = ensure_private_dir(dir_)) {
      return message(e->refused ? Msg::lock_dir_unsafe : Msg::lock_dir_create_failed,
                     {{"path", e->path}, {"error", e->reason}});
    }
  }
  int fd = ::open(path_.c_str(), open_flags | O_CREAT, 0666);
  if (fd < 0 && errno == ENOENT && kind_ == DirKind::user_given) {
    // The usual first run: create the directory, then try again.
    if (auto e = make_dirs(dir_, 0777))
      return message(Msg::lock_dir_create_failed, {{"path", e->path}, {"error", e->reason}});
    fd = ::open(path_.c_str(), open_flags | O_CREAT, 0666);
  }
  if (fd < 0 && (errno == EACCES || errno == EPERM)) {
    // A read-only DIR still locks an existing file; only creating needs write
    // access. (Also protected_regular in sticky dirs refuses O_CREAT on other
    // users' files.)
    const int create_errno = errno;
    fd = ::open(path_.c_str(), open_flags);
    if (fd < 0 && errno == ENOENT)
      return message(Msg::lock_dir_not_writable, {{"path", path_}, {"error", errno_text(create_errno)}});
  }
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return message(Msg::lock_open_failed,
                     {{"path", path_}, {"error", "it is a symbolic link (not followed)"}});
    if (err == ENOTDIR)
      return message(Msg::lock_dir_create_failed, {{"path", dir_}, {"error", errno_text(err)}});
    return message(Msg::lock_open_failed, {{"path", path_}, {"error", errno_text(err)}});
  }
  fd_.reset(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fd_.reset();
    return message(Msg::lock_open_failed, {{"path", path_}, {"error", "not a regular file"}});
  }
  // Keep the lock off stdin/stdout/stderr, which the command will use.
  if (fd < 3) {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high < 0) return message(Msg::lock_open_failed, {{"path", path_}, {"error", errno_text(errno)}});
    fd_.reset(high);
  }
  return std::nullopt;
}

Outcome FileLock::acquire(Nanos wait, OnError /*on_error: flock errors are all permanent*/) {
  if (auto error = open_lock_file()) return Outcome::failed(std::move(*error), Recovery::permanent);
  const int op = mode_ == LockMode::shared ? LOCK_SH : LOCK_EX;
  auto lock_error = [&](int err) {
    fd_.reset();
    return Outcome::failed(message(Msg::lock_failed, {{"path", path_}, {"error", errno_text(err)}}),
                           Recovery::permanent);
  };

  if (::flock(fd_.get(), op | LOCK_NB) == 0) return Outcome::acquired();
  if (errno != EWOULDBLOCK) return lock_error(errno);
  if (wait.count() <= 0) {
    fd_.reset();
    return Outcome::busy();
  }

  const Nanos deadline = deadline_after(wait);
  std::optional<InterruptTimer> timer;
  if (deadline != infinite_duration) {
    timer.emplace(wait, timer_interval);
    if (!timer->armed()) return lock_error(errno);
  }
  for (;;) {
    if (::flock(fd_.get(), op) == 0) return Outcome::acquired();
    if (errno != EINTR) return lock_error(errno);
    if (timer && monotonic_now() >= deadline) {
      fd_.reset();
      return Outcome::busy();
    }
  }
}

std::vector<pid_t> FileLock::holder_pids() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) return {};
  return flock_holders(st.st_dev, st.st_ino);
}

std::string FileLock::holder() {
  const std::string pids = describe_holders(holder_pids());
  return pids.empty() ? pids : "held by " + pids;
}

LockStatus FileLock::status() {
  UniqueFd fd(::open(path_.c_str(), open_flags));
  auto failed = [&](std::string why) {
    return LockStatus{LockState::error, {}, message(Msg::status_failed, {{"path", path_}, {"error", why}})};
  };
  if (!fd) {
    if (errno == ENOENT || errno == ENOTDIR) return {LockState::free, {}, {}};
    return failed(errno == ELOOP ? "it is a symbolic link (not followed)" : errno_text(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return failed("not a regular file");
  const int op = mode_ == LockMode::shared ? LOCK_SH : LOCK_EX;
  if (::flock(fd.get(), op | LOCK_NB) == 0) return {LockState::free, {}, {}};
  if (errno != EWOULDBLOCK) return failed(errno_text(errno));
  std::string fields;
  for (pid_t pid : flock_holders(st.st_dev, st.st_ino)) {
    fields += fields.empty() ? " pid=" : ",";
    fields += std::to_string(pid);
  }
  return {LockState::held, fields, {}};
}

} // namespace bufferlock
