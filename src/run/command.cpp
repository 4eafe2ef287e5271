#include "run/command.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/files.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace bufferlock {

namespace {

constexpr std::array forwarded_signals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

int exec_failure_status(int err) {
  return (err == ENOENT || err == ENOTDIR) ? exit_code::not_found : exit_code::cannot_execute;
}

} // namespace

int exec_command(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  const int err = errno;
  diag::error(message(Msg::exec_failed, {{"command", argv[0]}, {"error", errno_text(err)}}));
  return exec_failure_status(err);
}

int exit_status_from_wait(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return exit_code::signal_base + WTERMSIG(wait_status);
  return exit_code::error;
}

int run_child(const std::vector<std::string>& argv, const Ticker* ticker) {
  // The signals are blocked before fork and then taken one by one with
  // sigtimedwait: no handler runs, so none can race with the child's start,
  // and the parent's loop is single-threaded (renewal ticks run in it).
  sigset_t wanted, old_mask;
  sigemptyset(&wanted);
  for (int s : forwarded_signals) sigaddset(&wanted, s);
  sigaddset(&wanted, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &wanted, &old_mask);
  // A caller that ignores SIGCHLD would make the kernel reap the child for
  // us, and its status would be lost.
  struct sigaction dfl {}, old_chld {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, &old_chld);

  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int err = errno;
    ::sigaction(SIGCHLD, &old_chld, nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    diag::error(message(Msg::fork_failed, {{"command", argv[0]}, {"error", errno_text(err)}}));
    return exit_code::error;
  }
  if (child == 0) {
    // Nothing renews or releases for the command once we are gone: it gets
    // SIGTERM then. The getppid check covers a parent that died before prctl.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(exit_code::signal_base + SIGTERM);
    ::sigaction(SIGCHLD, &old_chld, nullptr);
    sigset_t empty;
    sigemptyset(&empty);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ::_exit(exec_command(argv));
  }

  // Ticks are due at fixed times, so a stream of forwarded signals cannot
  // postpone a renewal.
  Nanos next_tick_at = ticker ? monotonic_now() + ticker->interval : infinite_duration;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      status = exit_code::error << 8; // cannot happen with SIGCHLD at default
      break;
    }
    siginfo_t info{};
    int sig;
    if (next_tick_at == infinite_duration) {
      sig = ::sigwaitinfo(&wanted, &info);
    } else {
      const Nanos now = monotonic_now();
      if (now >= next_tick_at) {
        const Nanos wait = ticker->tick(child);
        next_tick_at = wait == infinite_duration ? infinite_duration : now + wait;
        continue;
      }
      const timespec ts = to_timespec(next_tick_at - now);
      sig = ::sigtimedwait(&wanted, &info, &ts);
    }
    if (sig > 0 && sig != SIGCHLD) ::kill(child, sig);
  }
  // The forwarded signals stay blocked: one that comes now, after the child
  // is gone, must not stop us between here and the release.
  ::sigaction(SIGCHLD, &old_chld, nullptr);
  return exit_status_from_wait(status);
}

} // namespace bufferlock
