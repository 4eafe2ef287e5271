#include "run/command.hpp"

#include "exit_codes.hpp"
#include "messages.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/files.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <utility>

#ifdef BUFFERLOCK_COVERAGE
extern "C" void __gcov_dump(); // libgcov (coverage builds only)
#endif

namespace bufferlock {

namespace {

std::string not_found_subcommand; // suggest_subcommand_when_not_found

// Why the command could not be run, with the subcommand it may have been
// meant as when it was not found.
std::string exec_failed_text(const char* command, int err) {
  if (err == ENOENT && !not_found_subcommand.empty())
    return message(Msg::exec_not_found_did_you_mean,
                   {{"command", command}, {"error", errno_text(err)}, {"subcommand", not_found_subcommand}});
  return message(Msg::exec_failed, {{"command", command}, {"error", errno_text(err)}});
}

constexpr std::array forwarded_signals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};
constexpr std::array stop_signals = {SIGINT, SIGTERM, SIGHUP};

bool is_stop_signal(int sig) {
  return std::find(stop_signals.begin(), stop_signals.end(), sig) != stop_signals.end();
}

sigset_t stop_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : stop_signals)
    sigaddset(&set, s);
  return set;
}

// The stop signal held back and pending, or 0 (one system call).
int stop_signal_pending() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return 0;
  for (int s : stop_signals)
    if (sigismember(&pending, s)) return s;
  return 0;
}

// Inside run_child: a stop signal read after the command's end (0: none).
int stop_after_exit = 0;
bool in_run_child = false;

// argv for execvp: pointers into `argv`, then NULL.
std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

int exec_failure_status(int err) {
  return (err == ENOENT || err == ENOTDIR) ? exit_code::not_found : exit_code::cannot_execute;
}

// What the child needs between fork and exec. With CLONE_VM the child writes
// exec_errno into the parent's memory, so the parent reports the failure.
struct ChildSetup {
  char* const* argv;
  int stdout_fd; // -1: inherit
  int stderr_fd; // -1: inherit
  pid_t parent;
  const struct sigaction* old_chld;
  int exec_errno;
  bool child_reports; // plain fork: the parent never sees exec_errno
};

// Runs in the child: only system calls, no allocation, no locks (it shares
// the parent's memory until it execs).
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize("address")))
#endif
int child_main(void* arg) {
  auto* setup = static_cast<ChildSetup*>(arg);
  // Nothing renews or releases for the command once we are gone: it gets
  // SIGTERM then. The getppid check covers a parent that died before prctl.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != setup->parent) ::_exit(exit_code::signal_base + SIGTERM);
  if (setup->stdout_fd >= 0) {
    if (setup->stdout_fd == STDOUT_FILENO)
      ::fcntl(STDOUT_FILENO, F_SETFD, 0);
    else if (::dup2(setup->stdout_fd, STDOUT_FILENO) < 0)
      ::_exit(exit_code::error);
  }
  if (setup->stderr_fd >= 0 && ::dup2(setup->stderr_fd, STDERR_FILENO) < 0) ::_exit(exit_code::error);
  ::sigaction(SIGCHLD, setup->old_chld, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  ::execvp(setup->argv[0], setup->argv);
  const int err = errno;
  setup->exec_errno = err;
  if (setup->child_reports) diag::error(exec_failed_text(setup->argv[0], err));
  ::_exit(exec_failure_status(err));
}

// Starts child_main as a new process. clone(CLONE_VM | CLONE_VFORK), as
// posix_spawn does, skips copying this process's page tables and the
// copy-on-write faults after fork: a measurable share of a lock-and-run's
// time. (posix_spawn itself cannot set PR_SET_PDEATHSIG.) The sanitizer
// runtimes do not expect a second process on their memory: plain fork there.
pid_t spawn(ChildSetup& setup) {
#if defined(__SANITIZE_ADDRESS__)
  setup.child_reports = true;
  const pid_t pid = ::fork();
  if (pid == 0) child_main(&setup);
  return pid;
#else
  // The child's stack until it execs. execvp builds PATH entry + name on it, each
  // at most 128 KiB (MAX_ARG_STRLEN); untouched pages of .bss cost nothing.
  alignas(64) static char stack[512 * 1024];
  return ::clone(child_main, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &setup);
#endif
}

// The duties of the run_child under way (single-threaded: one at a time),
// which a sink that waits runs through while_sink_waits: a function and its
// closure, held without a copy or an allocation.
struct Duties {
  bool (*run)(const void*) = nullptr;
  const void* closure = nullptr;
};
Duties sink_duties;

class SinkDuties {
public:
  template <class F> explicit SinkDuties(const F& f) : saved_(sink_duties) {
    sink_duties = {[](const void* c) { return (*static_cast<const F*>(c))(); }, &f};
  }
  SinkDuties() : saved_(sink_duties) { sink_duties = {}; }
  ~SinkDuties() { sink_duties = saved_; }
  SinkDuties(const SinkDuties&) = delete;
  SinkDuties& operator=(const SinkDuties&) = delete;

private:
  Duties saved_;
};

} // namespace

bool while_sink_waits() {
  const Duties d = sink_duties;
  if (!d.run) return in_run_child || stop_signal() == 0;
  const SinkDuties none; // not again from inside the duties (a tick's own waits)
  return d.run(d.closure);
}

void suggest_subcommand_when_not_found(std::string_view subcommand) { not_found_subcommand = subcommand; }

HoldStopSignals::HoldStopSignals() {
  const sigset_t set = stop_set();
  ::sigprocmask(SIG_BLOCK, &set, &old_);
}

int HoldStopSignals::end() {
  if (!held_) return 0;
  held_ = false;
  const int sig = stop_signal_pending();
  if (sig != 0 && !sigismember(&old_, sig)) {
    // Taken now, or letting it through would end the process at once.
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    const timespec now{0, 0};
    ::sigtimedwait(&one, nullptr, &now);
  }
  ::sigprocmask(SIG_SETMASK, &old_, nullptr);
  return sig;
}

int stop_signal() { return in_run_child ? stop_after_exit : stop_signal_pending(); }

int exec_command(const std::vector<std::string>& argv) {
  const std::vector<char*> args = c_argv(argv);
#ifdef BUFFERLOCK_COVERAGE
  // exec replaces the process before its counters are written at exit.
  __gcov_dump();
#endif
  ::execvp(args[0], args.data());
  const int err = errno;
  diag::error(exec_failed_text(argv[0].c_str(), err));
  return exec_failure_status(err);
}

void scrub_lock_env() {
  // One pass over the environment instead of one unsetenv (a full scan) per
  // name: this runs on every lock-and-run.
  static constexpr std::string_view names[] = {"KEY",  "BACKEND", "FD",        "TOKEN",     "REDIS_KEY",
                                               "SLOT", "FENCE",   "ALSO_SLOT", "ALSO_FENCE"};
  constexpr std::string_view prefix = "BUFFERLOCK_";
  char** out = environ;
  for (char** in = environ; *in; ++in) {
    const std::string_view entry = *in;
    bool drop = false;
    if (entry.starts_with(prefix)) {
      const std::string_view rest = entry.substr(prefix.size());
      for (std::string_view n : names)
        drop = drop || (rest.starts_with(n) && rest.size() > n.size() && rest[n.size()] == '=');
    }
    if (!drop) *out++ = *in;
  }
  *out = nullptr;
}

int exit_status_from_wait(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return exit_code::signal_base + WTERMSIG(wait_status);
  return exit_code::error;
}

int run_child(const std::vector<std::string>& argv, const Ticker* ticker, const OutputSink* sink,
              const OutputSink* err_sink) {
  // The signals are blocked before fork and read from a signalfd: no handler
  // runs, so none can race with the child's start, and the one loop below
  // (single-threaded) forwards signals, pumps output and runs renewal ticks.
  sigset_t wanted, old_mask;
  sigemptyset(&wanted);
  for (int s : forwarded_signals)
    sigaddset(&wanted, s);
  sigaddset(&wanted, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &wanted, &old_mask);
  // A caller that ignores SIGCHLD would make the kernel reap the child for
  // us, and its status would be lost.
  struct sigaction dfl {
  }, old_chld{};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, &old_chld);
  auto restore = [&] {
    ::sigaction(SIGCHLD, &old_chld, nullptr);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  };
  auto fail = [&](Msg m, int err) {
    restore();
    diag::error(message(m, {{"command", argv[0]}, {"error", errno_text(err)}}));
    return exit_code::error;
  };

  UniqueFd signals(::signalfd(-1, &wanted, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals) return fail(Msg::fork_failed, errno);
  // The captured streams: [0] stdout, [1] stderr, each a pipe to its sink.
  const OutputSink* sinks[2] = {sink, err_sink};
  UniqueFd reads[2], writes[2];
  for (int i = 0; i < 2; ++i) {
    if (!sinks[i]) continue;
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fail(Msg::fork_failed, errno);
    reads[i].reset(fds[0]);
    writes[i].reset(fds[1]);
  }

  const std::vector<char*> args = c_argv(argv);
  ChildSetup setup{args.data(),
                   writes[0] ? writes[0].get() : -1,
                   writes[1] ? writes[1].get() : -1,
                   ::getpid(),
                   &old_chld,
                   0,
                   false};
  const pid_t child = spawn(setup);
  if (child < 0) return fail(Msg::fork_failed, errno);
  if (setup.exec_errno != 0 && !setup.child_reports) {
    // The child could not exec; it exits 126/127, which waitpid reports below.
    diag::error(exec_failed_text(argv[0].c_str(), setup.exec_errno));
  }
  // Only the child writes: EOF comes when it (and its children) close them.
  writes[0].reset();
  writes[1].reset();

  // Ticks are due at fixed times, so a stream of signals or output cannot
  // postpone a renewal.
  Nanos next_tick_at = ticker ? ticker->first_at : infinite_duration;
  int status = 0;
  bool exited = false;
  auto forward_signals = [&] {
    signalfd_siginfo info[8];
    const ssize_t n = ::read(signals.get(), info, sizeof info);
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof info[0]); ++i) {
      const int sig = static_cast<int>(info[i].ssi_signo);
      if (sig != SIGCHLD && !exited) ::kill(child, sig);
      // After the command's end a stop signal is ours: its output is no
      // longer wanted (while_sink_waits, stop_signal).
      if (exited && is_stop_signal(sig) && stop_after_exit == 0) stop_after_exit = sig;
    }
    if (!exited && ::waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      next_tick_at = infinite_duration;
    }
  };
  // What a sink that waits lets run (while_sink_waits). Once the child is
  // reaped no tick may run (its pid could be another process's by then).
  const auto duties = [&] {
    forward_signals();
    if (next_tick_at != infinite_duration && monotonic_now() >= next_tick_at)
      next_tick_at = ticker->tick(child);
    return (!exited || exit_status_from_wait(status) == 0) && stop_after_exit == 0;
  };
  const SinkDuties for_sinks(duties);
  stop_after_exit = 0;
  in_run_child = true;
  std::vector<char> buffer(sink || err_sink ? 65536 : 0);
  while (!exited || reads[0] || reads[1]) {
    int timeout_ms = -1;
    if (next_tick_at != infinite_duration) {
      const Nanos now = monotonic_now();
      if (now >= next_tick_at) {
        next_tick_at = ticker->tick(child);
        continue;
      }
      timeout_ms = static_cast<int>((next_tick_at - now).count() / 1'000'000 + 1);
    }
    // A closed stream is polled as -1, which poll(2) skips.
    pollfd fds[3] = {{signals.get(), POLLIN, 0}, {reads[0].get(), POLLIN, 0}, {reads[1].get(), POLLIN, 0}};
    const int ready = ::poll(fds, 3, exited ? -1 : timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    if (fds[0].revents & POLLIN) forward_signals();
    for (int i = 0; i < 2; ++i) {
      if (!reads[i] || !(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(reads[i].get(), buffer.data(), buffer.size());
      if (n > 0)
        (*sinks[i])(buffer.data(), static_cast<std::size_t>(n));
      else if (n == 0 || errno != EINTR)
        reads[i].reset(); // EOF
    }
  }
  if (!exited) ::waitpid(child, &status, 0);
  // The forwarded signals stay blocked: one that comes now, after the child
  // is gone, must not stop us between here and the release; the caller asks
  // for it (stop_signal). One read above is made pending again for that.
  in_run_child = false;
  if (stop_after_exit != 0) ::raise(std::exchange(stop_after_exit, 0));
  ::sigaction(SIGCHLD, &old_chld, nullptr);
  return exit_status_from_wait(status);
}

} // namespace bufferlock
