// The one wait-with-deadline loop (STYLE point 3): polling a lock with the
// waiting back-off (util/backoff.hpp).
#pragma once

#include "lock/outcome.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"

#include <functional>

namespace bufferlock {

// Calls `attempt` until it acquires or `wait` has passed (infinite_duration:
// for ever), pausing between attempts with `pause` (which may return early,
// when woken). A transient error is retried like busy (SPEC §7) unless
// `on_error` is stop; a permanent one ends the wait at once. When the time is
// up, the last outcome counts.
Outcome poll_until(Nanos wait, OnError on_error, Backoff backoff, const std::function<Outcome()>& attempt,
                   const std::function<void(Nanos)>& pause);

} // namespace bufferlock
