#include "app.hpp"

#include "cli.hpp"
#include "exit_codes.hpp"
#include "help.hpp"
#include "lock/file_lock.hpp"
#include "messages.hpp"
#include "run/command.hpp"
#include "util/clock.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <exception>

namespace bufferlock {

namespace {

// The longest KEY for which "BUFFERLOCK_KEY=KEY" fits in one environment
// string (the kernel's MAX_ARG_STRLEN of 131072 bytes, NUL included).
constexpr std::size_t max_env_key = 131072 - sizeof("BUFFERLOCK_KEY=");

int write_stdout(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return exit_code::error;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return exit_code::ok;
}

void export_lock_env(const Options& o, const char* backend) {
  if (o.key.size() <= max_env_key) ::setenv("BUFFERLOCK_KEY", o.key.c_str(), 1);
  else ::unsetenv("BUFFERLOCK_KEY");
  ::setenv("BUFFERLOCK_BACKEND", backend, 1);
  ::unsetenv("BUFFERLOCK_FD"); // never pass on one we do not hold
}

FileLock make_file_lock(const Options& o) {
  if (o.dir.empty())
    return FileLock(default_lock_dir(::getenv("XDG_RUNTIME_DIR")), DirKind::private_default, o.key);
  return FileLock(o.dir, DirKind::user_given, o.key);
}

// The command, in place of this process or (--close) as a child.
int run_command(const Options& o, FileLock* lock) {
  if (!o.close) {
    if (lock) {
      // The one descriptor that must outlive exec: it is the lock.
      ::fcntl(lock->fd(), F_SETFD, 0);
      ::setenv("BUFFERLOCK_FD", std::to_string(lock->fd()).c_str(), 1);
    }
    return exec_command(o.argv);
  }
  const int status = run_child(o.argv);
  if (lock) {
    lock->release();
    diag::debug(message(Msg::lock_released, {{"key", display_key(o.key)}}));
  }
  return status;
}

int busy(const Options& o, const FileLock& lock, Nanos waited) {
  if (diag::verbose()) {
    const std::string holder = describe_holders(lock.holders());
    const std::string key = display_key(o.key);
    if (o.wait.count() > 0) {
      const std::string secs = format_seconds(waited);
      diag::debug(holder.empty()
                      ? message(Msg::lock_timeout, {{"key", key}, {"seconds", secs}})
                      : message(Msg::lock_timeout_holder,
                                {{"key", key}, {"seconds", secs}, {"holder", holder}}));
    } else {
      diag::debug(holder.empty() ? message(Msg::lock_busy, {{"key", key}})
                                 : message(Msg::lock_busy_holder, {{"key", key}, {"holder", holder}}));
    }
  }
  return o.busy_exit;
}

int cmd_run(const Options& o) {
  if (o.backend == Backend::redis) throw UsageError(message(Msg::usage_redis_unavailable));
  FileLock lock = make_file_lock(o);
  const Nanos start = diag::verbose() ? monotonic_now() : Nanos(0);
  const Outcome outcome =
      lock.acquire(o.shared ? LockMode::shared : LockMode::exclusive, o.wait);
  switch (outcome.status) {
  case AcquireStatus::acquired:
    if (diag::verbose())
      diag::debug(message(Msg::lock_acquired, {{"key", display_key(o.key)},
                                               {"path", lock.path()},
                                               {"seconds", format_seconds(monotonic_now() - start)}}));
    export_lock_env(o, "file");
    return run_command(o, &lock);
  case AcquireStatus::busy: return busy(o, lock, diag::verbose() ? monotonic_now() - start : Nanos(0));
  case AcquireStatus::error:
    if (!o.fail_open) {
      diag::error(outcome.error);
      return o.error_exit;
    }
    diag::warn(message(Msg::lock_fail_open, {{"error", outcome.error}}));
    export_lock_env(o, "file");
    return run_command(o, nullptr);
  }
  return exit_code::error;
}

int cmd_status(const Options& o) {
  if (o.backend == Backend::redis) throw UsageError(message(Msg::usage_redis_unavailable));
  const FileLock lock = make_file_lock(o);
  const ProbeResult r = lock.probe(o.shared ? LockMode::shared : LockMode::exclusive);
  switch (r.state) {
  case Probe::free: return write_stdout("free\n") == 0 ? exit_code::ok : o.error_exit;
  case Probe::held: {
    std::string line = "held";
    for (std::size_t i = 0; i < r.holders.size(); ++i) {
      line += i == 0 ? " pid=" : ",";
      line += std::to_string(r.holders[i]);
    }
    line += '\n';
    write_stdout(line);
    return o.busy_exit;
  }
  case Probe::error: diag::error(r.error); return o.error_exit;
  }
  return exit_code::error;
}

} // namespace

int app_main(int argc, char** argv) {
  int error_exit = exit_code::error;
  try {
    const Options o = parse_command_line(argc, argv, [](const char* name) { return ::getenv(name); });
    error_exit = o.error_exit;
    diag::set_verbosity(o.verbosity);
    switch (o.command) {
    case Command::help: return write_stdout(help_text());
    case Command::version: return write_stdout(version_text());
    case Command::run: return cmd_run(o);
    case Command::status: return cmd_status(o);
    case Command::cache: throw UsageError(message(Msg::usage_subcommand_unavailable, {{"command", "cache"}}));
    case Command::acquire:
    case Command::release:
    case Command::extend: throw UsageError(message(Msg::usage_redis_unavailable));
    }
  } catch (const UsageError& e) {
    diag::error(message(Msg::usage_hint, {{"error", e.what()}}));
    return exit_code::usage;
  } catch (const std::exception& e) {
    diag::error(e.what());
    return error_exit;
  }
  return exit_code::error;
}

} // namespace bufferlock
