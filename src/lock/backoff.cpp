#include "lock/backoff.hpp"

#include "lock/wait_display.hpp"
#include "util/clock.hpp"
#include "util/random.hpp"

#include <algorithm>

namespace bufferlock {

Outcome poll_until(Nanos wait, OnError on_error, Backoff backoff, const std::function<Outcome()>& attempt,
                   const std::function<void(Nanos)>& pause) {
  const Nanos deadline = deadline_after(wait);
  bool first = true, show = false;
  for (;;) {
    Outcome outcome = attempt();
    if (outcome.status == AcquireStatus::acquired || wait.count() <= 0) return outcome;
    // Waiting cannot mend a wrong password or an unknown host.
    if (outcome.status == AcquireStatus::error &&
        (outcome.recovery == Recovery::permanent || on_error == OnError::stop))
      return outcome;
    const Nanos now = monotonic_now();
    if (now >= deadline) return outcome;
    if (first)
      show = wait_line_begin();
    else if (show)
      wait_line_tick();
    first = false;
    Nanos sleep = std::min(jittered(backoff.next(), random_u32()), deadline - now);
    if (show) sleep = std::min(sleep, wait_line_period); // redraw at least that often
    pause(std::max(sleep, Nanos(1000)));
  }
}

} // namespace bufferlock
