// Breaks a blocking system call (flock(2)) out of its wait at a deadline.
#pragma once

#include "util/duration.hpp"

#include <signal.h>
#include <time.h>

namespace bufferlock {

// While alive, SIGALRM interrupts blocking calls (EINTR) first after `first`,
// then every `interval`. The repetition closes a race: the first signal can
// arrive just before the call starts waiting, and would then be lost; the next
// one interrupts the wait at most `interval` late. POSIX timers do not survive
// exec, and the destructor restores the old SIGALRM action.
class InterruptTimer {
public:
  InterruptTimer(Nanos first, Nanos interval);
  ~InterruptTimer();
  InterruptTimer(const InterruptTimer&) = delete;
  InterruptTimer& operator=(const InterruptTimer&) = delete;

  // False when the timer could not be set up (the caller should not block).
  bool armed() const { return armed_; }

private:
  timer_t timer_{};
  struct sigaction old_action_ {};
  bool armed_ = false;
};

} // namespace bufferlock
