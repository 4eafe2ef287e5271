// The wait line: while a person waits at a terminal, one line on stderr,
// redrawn in place, says what bufferlock waits for, who holds it and for how
// long (SPEC §5). take_lock registers a WaitDisplay; a backend's wait calls
// wait_line_begin() once its first try was busy and, when that says yes,
// wait_line_tick() about every wait_line_period. Nothing is asked of the
// terminal, timed or allocated before wait_line_begin().
#pragma once

#include "lock/lock.hpp"
#include "util/diag.hpp"
#include "util/duration.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

namespace bufferlock {

inline constexpr Nanos wait_line_period = std::chrono::seconds(1);

// Whether a wait line is shown (deciding it, and drawing it, the first time):
// a WaitDisplay is registered, stderr is a terminal, neither -q nor -v.
bool wait_line_begin();

// Redraws the line when it is shown and about a period has passed.
void wait_line_tick();

enum class WaitFor { lock, build };

class WaitDisplay {
public:
  // Registers itself for the waits of this process: a few stores, no call.
  // `start`: when the wait began (monotonic), `wait`: its length (-w).
  WaitDisplay(std::string_view key, Nanos start, Nanos wait, diag::Verbosity verbosity, WaitFor what,
              Lock& lock);
  ~WaitDisplay(); // clears
  WaitDisplay(const WaitDisplay&) = delete;
  WaitDisplay& operator=(const WaitDisplay&) = delete;

  // Removes the line (when drawn), so that what follows starts on a clean line.
  void clear();

  bool begin();
  void tick(bool force);

private:
  void write_out(std::string_view bytes) const;

  std::string_view key_;
  Nanos wait_;
  diag::Verbosity verbosity_;
  WaitFor what_;
  Lock& lock_;
  enum class State { undecided, off, on } state_ = State::undecided;
  bool dumb_ = false;
  std::size_t drawn_columns_ = 0; // of the line on screen; 0: none
  Nanos start_{};
  Nanos last_draw_{};
};

// What a holder() text says, in words for the line: "pid=12" -> "pid 12
// (make)", "host=ci-7" -> "on ci-7", "since=192.5" -> "for 3m12s", "fence=7"
// -> "fence 7", "ttl=3.000" -> "ttl 3s"; anything else is kept. The command
// name comes from `command_of` (/proc/PID/comm), asked only when the text
// names no host (a local holder).
std::string describe_holder(std::string_view holder, std::string (*command_of)(pid_t));

// /proc/PID/comm, printable; "" when unknown.
std::string process_command(pid_t pid);

} // namespace bufferlock
