// A growing pause, as lua-resty-lock polls a lock (step, ratio, max_step),
// plus jitter: the waiting back-off (SPEC §4), which also paces the retries
// of a Redis command that met TRYAGAIN (redis/client.cpp).
#pragma once

#include "util/duration.hpp"

#include <cstdint>

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

} // namespace bufferlock
