// Polling a lock with a growing pause, as lua-resty-lock does (step, ratio,
// max_step), plus jitter; and the one wait-with-deadline loop (STYLE point 3).
#pragma once

#include "lock/outcome.hpp"
#include "util/duration.hpp"

#include <cstdint>
#include <functional>

namespace bufferlock {

class Backoff {
public:
  Backoff(Nanos step, double ratio, Nanos max_step) : step_(step), ratio_(ratio), max_(max_step) {}

  // The next pause before jitter: step, step*ratio, step*ratio^2, ..., at most max_step.
  Nanos next();

private:
  Nanos step_;
  double ratio_;
  Nanos max_;
};

// `d` scaled into [d/2, d] by `random` ("equal jitter"), so that waiters that
// started together do not keep asking together.
Nanos jittered(Nanos d, std::uint32_t random);

// Calls `attempt` until it acquires or `wait` has passed (infinite_duration:
// for ever), pausing between attempts with `pause` (which may return early,
// when woken). A transient error is retried like busy (SPEC §7) unless
// `on_error` is stop; a permanent one ends the wait at once. When the time is
// up, the last outcome counts.
Outcome poll_until(Nanos wait, OnError on_error, Backoff backoff, const std::function<Outcome()>& attempt,
                   const std::function<void(Nanos)>& pause);

} // namespace bufferlock
