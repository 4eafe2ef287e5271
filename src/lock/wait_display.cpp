#include "lock/wait_display.hpp"

#include "messages.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"
#include "util/progress_line.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

namespace bufferlock {

namespace {

WaitDisplay* current = nullptr;

// A tick this much early still redraws: timers and back-off pauses do not
// wake exactly on the second.
constexpr Nanos tick_slack = std::chrono::milliseconds(100);

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

// "since=192.500" -> "for 3m12s"; "ttl=3.000" -> "ttl 3s".
std::string seconds_words(std::string_view prefix, std::string_view value) {
  const double s = std::strtod(std::string(value).c_str(), nullptr);
  if (!(s >= 0) || s > 1e12) return std::string(prefix) + std::string(value);
  return std::string(prefix) + short_duration(Nanos(static_cast<std::int64_t>(s * 1e9)));
}

// Ctrl-C (or a kill) during a drawn wait: the handler takes the line away,
// then the signal does what it would have done. Only signals whose action is
// the default get a handler; an ignored SIGINT (a job started with &) stays
// ignored. The bytes are set by each draw, so the handler only calls write(2),
// sigaction(2) and raise(3), which are async-signal-safe.
constexpr int ending_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction saved_actions[std::size(ending_signals)];
bool handled[std::size(ending_signals)];
char erase_bytes[256];
volatile std::sig_atomic_t erase_size = 0;

extern "C" void erase_then_die(int sig) {
  if (erase_size > 0) {
    const ssize_t ignored = ::write(STDERR_FILENO, erase_bytes, static_cast<std::size_t>(erase_size));
    (void)ignored;
  }
  for (std::size_t i = 0; i < std::size(ending_signals); ++i)
    if (ending_signals[i] == sig) ::sigaction(sig, &saved_actions[i], nullptr);
  ::raise(sig); // delivered when the handler returns: the signal is blocked until then
}

void catch_ending_signals() {
  for (std::size_t i = 0; i < std::size(ending_signals); ++i) {
    struct sigaction sa {};
    sa.sa_handler = erase_then_die;
    sigemptyset(&sa.sa_mask);
    handled[i] = ::sigaction(ending_signals[i], nullptr, &saved_actions[i]) == 0 &&
                 saved_actions[i].sa_handler == SIG_DFL &&
                 ::sigaction(ending_signals[i], &sa, nullptr) == 0;
  }
}

void release_ending_signals() {
  for (std::size_t i = 0; i < std::size(ending_signals); ++i)
    if (handled[i]) {
      ::sigaction(ending_signals[i], &saved_actions[i], nullptr);
      handled[i] = false;
    }
}

// The bytes that take a line of `columns` off the screen.
void set_erase_bytes(bool dumb, std::size_t columns) {
  erase_size = 0;
  std::size_t n;
  if (dumb) {
    n = std::min(columns + 2, sizeof erase_bytes);
    std::memset(erase_bytes, ' ', n);
    erase_bytes[0] = erase_bytes[n - 1] = '\r';
  } else {
    static constexpr char el[] = "\r\033[K";
    n = sizeof el - 1;
    std::memcpy(erase_bytes, el, n);
  }
  erase_size = static_cast<std::sig_atomic_t>(n);
}

void clear_current() {
  if (current) current->clear();
}

} // namespace

std::string process_command(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/comm";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return {};
  char buf[64];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0) return {};
  std::string_view name(buf, static_cast<std::size_t>(n));
  if (name.ends_with('\n')) name.remove_suffix(1);
  return diag::printable(name);
}

std::string describe_holder(std::string_view holder, std::string (*command_of)(pid_t)) {
  const bool remote = holder.find("host=") != std::string_view::npos;
  auto with_command = [&](std::string_view pid_text) {
    std::string out(pid_text);
    if (remote || !command_of || pid_text.empty() ||
        pid_text.find_first_not_of("0123456789") != pid_text.npos)
      return out;
    const std::string cmd =
        command_of(static_cast<pid_t>(std::strtol(std::string(pid_text).c_str(), nullptr, 10)));
    if (!cmd.empty()) out.append(" (").append(cmd).append(")");
    return out;
  };
  // A Redis holder record (pid=) says more than "another token" and its ttl.
  const bool recorded = holder.find("pid=") != std::string_view::npos;
  std::string out;
  std::string_view prev;
  for (std::size_t at = 0; at <= holder.size();) {
    std::size_t end = holder.find(' ', at);
    if (end == std::string_view::npos) end = holder.size();
    const std::string_view word = holder.substr(at, end - at);
    at = end + 1;
    if (word.empty()) continue;
    if (recorded && (word == "another" || word == "token," || word.starts_with("ttl="))) continue;
    std::string said;
    const std::size_t eq = word.find('=');
    const std::string_view name = eq == word.npos ? word : word.substr(0, eq);
    const std::string_view value = eq == word.npos ? std::string_view() : word.substr(eq + 1);
    if (eq == word.npos) {
      said = prev == "pid" ? with_command(word) : std::string(word);
    } else if (name == "pid") {
      said = value.find(',') == value.npos ? "pid " + with_command(value) : "pids " + std::string(value);
    } else if (name == "host") {
      said = "on " + std::string(value);
    } else if (name == "since") {
      said = seconds_words("for ", value);
    } else if (name == "ttl") {
      said = seconds_words("ttl ", value);
    } else if (name == "fence") {
      said = "fence " + std::string(value);
    } else {
      said = std::string(word);
    }
    if (!out.empty()) out += name == "fence" ? ", " : " ";
    out += said;
    prev = word;
  }
  return out;
}

bool wait_line_begin() { return current && current->begin(); }

void wait_line_tick() {
  if (current) current->tick(false);
}

WaitDisplay::WaitDisplay(std::string_view key, Nanos start, Nanos wait, diag::Verbosity verbosity,
                         WaitFor what, Lock& lock)
    : key_(key), wait_(wait), verbosity_(verbosity), what_(what), lock_(lock), start_(start) {
  current = this;
}

WaitDisplay::~WaitDisplay() {
  clear();
  if (state_ == State::on) {
    release_ending_signals();
    diag::set_before_line(nullptr);
  }
  if (current == this) current = nullptr;
}

bool WaitDisplay::begin() {
  if (state_ == State::undecided) {
    // -q: nothing; -v: its own lines instead; not a terminal: as before.
    state_ = verbosity_ == diag::Verbosity::normal && ::isatty(STDERR_FILENO) ? State::on : State::off;
    if (state_ == State::on) {
      const char* term = ::getenv("TERM");
      dumb_ = !term || !*term || std::string_view(term) == "dumb";
      catch_ending_signals();
      diag::set_before_line(clear_current);
      tick(true);
    }
  }
  return state_ == State::on;
}

void WaitDisplay::tick(bool force) {
  if (state_ != State::on) return;
  const Nanos now = monotonic_now();
  if (!force && now - last_draw_ < wait_line_period - tick_slack) return;
  last_draw_ = now;
  const std::string key = display_key(key_);
  std::string holder = describe_holder(lock_.holder(), process_command);
  // A build is "by pid 12", a lock "held by pid 12".
  if (what_ == WaitFor::build && holder.starts_with("held by ")) holder.erase(0, 5);
  std::string tail = short_duration(now - start_);
  if (wait_ != infinite_duration) tail += " / " + short_duration(wait_);
  const std::string text = fit_progress_line(
      {what_ == WaitFor::build ? "bufferlock: waiting for the build of" : "bufferlock: waiting for", key,
       holder, tail},
      terminal_width());
  const std::size_t cols = text_columns(text);
  // "\r" LINE, then the rest of a longer previous line cleared: by the
  // terminal (EL), or on a dumb one by spaces.
  std::string out;
  out.reserve(text.size() + 8);
  out.append("\r").append(text);
  if (!dumb_)
    out += "\033[K";
  else if (drawn_columns_ > cols)
    out.append(drawn_columns_ - cols, ' ');
  write_out(out);
  drawn_columns_ = dumb_ ? std::max(cols, drawn_columns_) : cols;
  set_erase_bytes(dumb_, drawn_columns_);
}

void WaitDisplay::clear() {
  if (drawn_columns_ == 0) return;
  erase_size = 0;
  if (dumb_) {
    std::string blank(drawn_columns_ + 2, ' ');
    blank.front() = blank.back() = '\r';
    write_out(blank);
  } else {
    write_out("\r\033[K");
  }
  drawn_columns_ = 0;
}

// One write(2) where the terminal allows; SIGALRM (the flock timer) may
// interrupt it.
void WaitDisplay::write_out(std::string_view bytes) const {
  while (!bytes.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

} // namespace bufferlock
