// The monotonic clock as Nanos, the wall clock in ns, and the conversion the
// system calls need.
#pragma once

#include "util/duration.hpp"

#include <time.h>

#include <cstdint>

namespace bufferlock {

inline Nanos monotonic_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return Nanos(ts.tv_sec * 1'000'000'000LL + ts.tv_nsec);
}

// Wall-clock time: ns since the epoch (what file times are compared with).
inline std::int64_t wall_clock_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// The monotonic time `d` from now; infinite_duration when that overflows.
inline Nanos deadline_after(Nanos d) {
  const Nanos now = monotonic_now();
  return d >= infinite_duration - now ? infinite_duration : now + d;
}

inline timespec to_timespec(Nanos d) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(d.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(d.count() % 1'000'000'000);
  return ts;
}

} // namespace bufferlock
