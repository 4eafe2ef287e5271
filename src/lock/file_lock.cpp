#include "lock/file_lock.hpp"

#include "lock/proc_locks.hpp"
#include "lock/wait_display.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"
#include "util/interrupt_timer.hpp"
#include "util/io.hpp"
#include "util/md5.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace bufferlock {

namespace {

// O_NOFOLLOW: a symbolic link planted at the lock path is refused, not
// followed. O_NONBLOCK: a FIFO planted there cannot hang the open (it does not
// affect flock). Read-write lets the exclusive holder keep its record and the
// fence in the file; O_RDONLY is enough for flock and lets us lock files that
// another user created (without a record then).
constexpr int open_flags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;

// The wait loop's re-interrupt interval (see InterruptTimer).
constexpr Nanos timer_interval = std::chrono::milliseconds(5);

// A slot waiter's second look after a close event that freed nothing: the
// kernel sends the event (fsnotify_close in __fput) just before it drops the
// closing file's flock (locks_remove_file), so the first look can be early.
constexpr int recheck_ms = 2;
// Without inotify (its per-user limit reached), slot waiters look this often.
constexpr int fallback_poll_ms = 10;

// Blocks in flock(2) until the lock is ours or `deadline` (monotonic) passes:
// 0, ETIMEDOUT, or the errno of the failure. The timer interrupts it at the
// deadline and, while the wait line is shown, every wait_line_period before.
int block_in_flock(int fd, int op, Nanos deadline) {
  const bool show = wait_line_begin();
  std::optional<InterruptTimer> timer;
  bool last_stretch = false; // the timer is set for the deadline itself
  auto arm = [&](Nanos now) {
    if (show && (deadline == infinite_duration || deadline - now > wait_line_period)) {
      timer.emplace(wait_line_period, wait_line_period);
    } else if (deadline != infinite_duration) {
      timer.reset(); // restores the SIGALRM action before the next one takes it
      timer.emplace(deadline - now, timer_interval);
      last_stretch = true;
    } else {
      return true;
    }
    return timer->armed();
  };
  if (!arm(monotonic_now())) return errno;
  for (;;) {
    if (::flock(fd, op) == 0) return 0;
    if (errno != EINTR) return errno;
    const Nanos now = monotonic_now();
    if (deadline != infinite_duration && now >= deadline) return ETIMEDOUT;
    if (!show) continue;
    wait_line_tick();
    if (!last_stretch && deadline != infinite_duration && deadline - now <= wait_line_period && !arm(now))
      return errno;
  }
}

// Reads the pending inotify events; whether one is a close of a file whose
// name starts with `prefix` (our slot files).
bool drain_close_events(int fd, std::string_view prefix) {
  alignas(inotify_event) char buf[4096];
  bool ours = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return ours || (n < 0 && errno != EAGAIN && errno != EINTR);
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + at);
      if (ev->mask & IN_Q_OVERFLOW) ours = true;
      if (ev->len > 0 && std::string_view(ev->name).starts_with(prefix)) ours = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

} // namespace

std::string default_lock_dir(const std::string& run_lock) {
  // The same for a user whatever the environment (a cron job, a login
  // shell, a systemd unit), so that they exclude each other (SPEC §3). A
  // /run/lock that only root may write to (Fedora's) would fail every run.
  const std::string name = "/bufferlock-" + std::to_string(::geteuid());
  struct stat st {};
  if (::stat(run_lock.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      ::faccessat(AT_FDCWD, run_lock.c_str(), W_OK | X_OK, AT_EACCESS) == 0)
    return run_lock + name;
  return "/tmp" + name;
}

std::string lock_file_path(const std::string& dir, std::string_view key) {
  std::string path = dir;
  if (path.empty() || path.back() != '/') path += '/';
  path += md5_hex(key);
  path += ".lock";
  return path;
}

std::string slot_file_path(const std::string& dir, std::string_view key, unsigned slot) {
  if (slot == 0) return lock_file_path(dir, key);
  std::string path = dir;
  if (path.empty() || path.back() != '/') path += '/';
  path += md5_hex(key);
  path += '.';
  path += std::to_string(slot);
  path += ".lock";
  return path;
}

HolderInfo file_holder_info(int fd, dev_t dev, ino_t ino, std::string_view proc_locks_text) {
  HolderInfo h;
  h.pids = parse_flock_holders(proc_locks_text, dev, ino);
  if (h.pids.size() != 1) return h; // shared holders write no record
  char head[record_header_max];
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  if (n <= 0) return h;
  const std::size_t total = record_total_size(std::string_view(head, static_cast<std::size_t>(n)));
  if (total == 0) return h;
  std::string text(total, '\0');
  if (!pread_all(fd, text.data(), total, 0)) return h;
  const auto r = decode_record(text);
  if (!r || r->pid != h.pids.front()) return h; // stale: written by an earlier holder
  h.since_ns = r->since_ns;
  h.fence = r->fence;
  h.key = r->key;
  return h;
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

FileLock::FileLock(std::string dir, DirKind kind, std::string_view key, LockMode mode, unsigned slots)
    : dir_(std::move(dir)), kind_(kind), key_(key), display_key_(display_key(key)),
      path_(lock_file_path(dir_, key)), mode_(mode), slots_(slots == 0 ? 1 : slots) {}

std::string FileLock::slot_path(unsigned slot) const {
  return slot == 0 ? lock_file_path(dir_, key_) : slot_file_path(dir_, key_, slot);
}

void FileLock::release() {
  if (!fd_) return;
  fd_.reset();
  diag::debug_lazy([&] { return message(Msg::lock_released, {{"key", display_key_}}); });
}

void FileLock::export_env() const {
  ::setenv("BUFFERLOCK_BACKEND", "file", 1);
  if (fence_) ::setenv("BUFFERLOCK_FENCE", std::to_string(*fence_).c_str(), 1);
}

std::optional<std::string> FileLock::open_lock_file(const std::string& path, UniqueFd& out, bool& writable) {
  if (kind_ == DirKind::private_default) {
    if (auto e = ensure_private_dir(dir_)) {
      return message(e->refused ? Msg::lock_dir_unsafe : Msg::lock_dir_create_failed,
                     {{"path", e->path}, {"error", e->reason}});
    }
  }
  writable = true;
  int fd = ::open(path.c_str(), O_RDWR | open_flags | O_CREAT, 0666);
  if (fd < 0 && errno == ENOENT && kind_ == DirKind::user_given) {
    // The usual first run: create the directory, then try again.
    if (auto e = make_dirs(dir_, 0777))
      return message(Msg::lock_dir_create_failed, {{"path", e->path}, {"error", e->reason}});
    fd = ::open(path.c_str(), O_RDWR | open_flags | O_CREAT, 0666);
  }
  if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS || errno == EISDIR)) {
    // A read-only DIR or another user's file still locks (without a record);
    // only creating needs write access. (Also protected_regular in sticky
    // dirs refuses O_CREAT on other users' files.)
    const int create_errno = errno;
    writable = false;
    fd = ::open(path.c_str(), O_RDONLY | open_flags);
    if (fd < 0 && errno == ENOENT)
      return message(Msg::lock_dir_not_writable, {{"path", path}, {"error", errno_text(create_errno)}});
  }
  if (fd < 0) {
    const int err = errno;
    if (err == ELOOP)
      return message(Msg::lock_open_failed,
                     {{"path", path}, {"error", "it is a symbolic link (not followed)"}});
    if (err == ENOTDIR)
      return message(Msg::lock_dir_create_failed, {{"path", dir_}, {"error", errno_text(err)}});
    return message(Msg::lock_open_failed, {{"path", path}, {"error", errno_text(err)}});
  }
  out.reset(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.reset();
    return message(Msg::lock_open_failed, {{"path", path}, {"error", "not a regular file"}});
  }
  // Keep the lock off stdin/stdout/stderr, which the command will use.
  if (fd < 3) {
    const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (high < 0) return message(Msg::lock_open_failed, {{"path", path}, {"error", errno_text(errno)}});
    out.reset(high);
  }
  return std::nullopt;
}

// Called holding the lock exclusively, so no other bufferlock reads or writes
// the record meanwhile: the fence only ever grows, whoever crashed before.
// A record that cannot be written leaves the fence unset; the next holder
// then continues from the last one written, which is still larger than any
// fence handed out.
void FileLock::record_holder() {
  if (!writable_ || mode_ != LockMode::exclusive) return;
  char head[record_header_max];
  const ssize_t n = ::pread(fd_.get(), head, sizeof head, 0);
  const std::uint64_t fence = next_fence(n > 0 ? std::string_view(head, static_cast<std::size_t>(n)) : "");
  const std::string record = encode_record({fence, ::getpid(), wall_clock_ns(), key_});
  if (::pwrite(fd_.get(), record.data(), record.size(), 0) == static_cast<ssize_t>(record.size()))
    fence_ = fence;
}

Outcome FileLock::acquire(Nanos wait, OnError /*on_error: flock errors are all permanent*/) {
  if (slots_ > 1) return acquire_slot(wait);
  if (auto error = open_lock_file(path_, fd_, writable_))
    return Outcome::failed(std::move(*error), Recovery::permanent);
  const int op = mode_ == LockMode::shared ? LOCK_SH : LOCK_EX;
  auto lock_error = [&](int err) {
    fd_.reset();
    return Outcome::failed(message(Msg::lock_failed, {{"path", path_}, {"error", errno_text(err)}}),
                           Recovery::permanent);
  };

  if (::flock(fd_.get(), op | LOCK_NB) == 0) {
    record_holder();
    return Outcome::acquired();
  }
  if (errno != EWOULDBLOCK) return lock_error(errno);
  if (wait.count() <= 0) {
    fd_.reset();
    return Outcome::busy();
  }
  const int err = block_in_flock(fd_.get(), op, deadline_after(wait));
  if (err == ETIMEDOUT) {
    fd_.reset();
    return Outcome::busy();
  }
  if (err != 0) return lock_error(err);
  record_holder();
  return Outcome::acquired();
}

// Slots: try every slot file without blocking, lowest first. A waiter keeps
// the files open and sleeps in poll(2) on an inotify watch of DIR for close
// events (a holder's last close drops its flock), so a freed slot is taken as
// promptly as a released lock; no timer ticks meanwhile.
Outcome FileLock::acquire_slot(Nanos wait) {
  std::vector<UniqueFd> fds(slots_);
  std::vector<char> writable(slots_, 0);
  std::optional<Outcome> failed;
  auto try_all = [&]() -> bool {
    for (unsigned i = 0; i < slots_; ++i) {
      const std::string path = slot_path(i);
      if (!fds[i]) {
        bool w = false;
        if (auto error = open_lock_file(path, fds[i], w)) {
          failed = Outcome::failed(std::move(*error), Recovery::permanent);
          return true;
        }
        writable[i] = static_cast<char>(w);
      }
      if (::flock(fds[i].get(), LOCK_EX | LOCK_NB) == 0) {
        fd_ = std::move(fds[i]);
        slot_ = i;
        path_ = path;
        writable_ = writable[i] != 0;
        record_holder();
        return true;
      }
      if (errno != EWOULDBLOCK) {
        failed = Outcome::failed(message(Msg::lock_failed, {{"path", path}, {"error", errno_text(errno)}}),
                                 Recovery::permanent);
        return true;
      }
    }
    return false;
  };
  auto done = [&] { return failed ? *failed : Outcome::acquired(); };

  if (wait.count() <= 0) return try_all() ? done() : Outcome::busy();
  // Watch before the first try: a slot freed in between still sends its event.
  UniqueFd watch(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (watch && ::inotify_add_watch(watch.get(), dir_.c_str(), IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0)
    watch.reset();
  const std::string prefix = md5_hex(key_);
  const Nanos deadline = deadline_after(wait);
  bool recheck = false, first = true, show = false;
  for (;;) {
    if (try_all()) return done();
    if (first) show = wait_line_begin();
    first = false;
    for (;;) {
      const Nanos now = monotonic_now();
      if (now >= deadline) return Outcome::busy();
      int timeout_ms = -1;
      if (deadline != infinite_duration)
        timeout_ms =
            static_cast<int>(std::min<std::int64_t>((deadline - now).count() / 1'000'000 + 1, 1 << 30));
      if (recheck || !watch)
        timeout_ms = std::min(timeout_ms < 0 ? 1 << 30 : timeout_ms, watch ? recheck_ms : fallback_poll_ms);
      if (show) // redraw the wait line
        timeout_ms = std::min(timeout_ms < 0 ? 1 << 30 : timeout_ms,
                              static_cast<int>(wait_line_period.count() / 1'000'000));
      pollfd pfd{watch.get(), POLLIN, 0};
      const int ready = ::poll(&pfd, watch ? 1 : 0, timeout_ms);
      if (show) wait_line_tick();
      if (ready < 0 && errno != EINTR)
        return Outcome::failed(message(Msg::lock_failed, {{"path", path_}, {"error", errno_text(errno)}}),
                               Recovery::permanent);
      if (ready == 0 && (recheck || !watch)) {
        recheck = false;
        break;
      }
      if (ready > 0 && drain_close_events(watch.get(), prefix)) {
        recheck = true;
        break;
      }
    }
  }
}

std::string FileLock::holder() {
  UniqueFd fd(::open(path_.c_str(), O_RDONLY | open_flags));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) return {};
  const std::string text = read_proc_locks();
  if (slots_ > 1) {
    std::vector<pid_t> pids;
    for (unsigned i = 0; i < slots_; ++i) {
      struct stat s {};
      if (::stat(slot_path(i).c_str(), &s) != 0) continue;
      for (pid_t p : parse_flock_holders(text, s.st_dev, s.st_ino))
        pids.push_back(p);
    }
    std::string who = describe_holders(pids);
    return "all " + std::to_string(slots_) + " slots held" + (who.empty() ? "" : " by " + who);
  }
  HolderInfo h = file_holder_info(fd.get(), st.st_dev, st.st_ino, text);
  std::string who = describe_holders(h.pids);
  if (who.empty()) return who;
  h.pids.clear(); // said as "pid 12", the wording of flock(1) holders too
  return "held by " + who + holder_fields(h, wall_clock_ns());
}

LockStatus FileLock::status() {
  auto failed = [&](const std::string& path, std::string why) {
    return LockStatus{LockState::error, {}, message(Msg::status_failed, {{"path", path}, {"error", why}})};
  };
  const std::string text = read_proc_locks();
  unsigned taken = 0;
  StatusInfo info;
  for (unsigned i = 0; i < slots_; ++i) {
    const std::string path = slot_path(i);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | open_flags));
    if (!fd) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      return failed(path, errno == ELOOP ? "it is a symbolic link (not followed)" : errno_text(errno));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return failed(path, "not a regular file");
    const int op = mode_ == LockMode::shared ? LOCK_SH : LOCK_EX;
    if (::flock(fd.get(), op | LOCK_NB) == 0) continue;
    if (errno != EWOULDBLOCK) return failed(path, errno_text(errno));
    ++taken;
    HolderInfo h = file_holder_info(fd.get(), st.st_dev, st.st_ino, text);
    h.key.reset(); // KEY is the one asked about
    if (slots_ == 1)
      info.holder = std::move(h);
    else
      info.holder.pids.insert(info.holder.pids.end(), h.pids.begin(), h.pids.end());
  }
  const bool held = taken == slots_;
  if (slots_ > 1) {
    info.slots_taken = taken;
    info.slots_total = slots_;
    if (!held) info.holder = {}; // who holds them, once all are taken
  }
  return {held ? LockState::held : LockState::free, std::move(info), {}};
}

} // namespace bufferlock
