// Signals blocked for the whole run, rather than ignored: the command's
// signal mask is emptied when it starts (run/), so it sees them as the
// caller left them, while we get an error value instead of death.
#pragma once

#include <signal.h>

#include <initializer_list>

namespace bufferlock {

inline void block_signals(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : signals)
    sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
}

// A peer gone away (a Redis server, a closed stdout) gives EPIPE on a write,
// not SIGPIPE.
inline void block_sigpipe() { block_signals({SIGPIPE}); }

} // namespace bufferlock
