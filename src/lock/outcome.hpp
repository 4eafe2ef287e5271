// What one attempt to take a lock ends in: errors as values, because busy and
// "the backend is down" are expected outcomes, not exceptions.
#pragma once

#include "util/recovery.hpp"

#include <string>

namespace bufferlock {

enum class AcquireStatus { acquired, busy, error };

// What a wait does with a transient error: retry it until the deadline (the
// default), or end at once (--fail-open under an infinite wait, which would
// otherwise never fail open).
enum class OnError { retry, stop };

struct Outcome {
  AcquireStatus status;
  std::string error;                       // with status error: the message to print (no prefix)
  Recovery recovery = Recovery::permanent; // with status error: whether waiting can mend it
  // With status error: the backend never answered during the whole wait
  // (SPEC §7, the outage allowance), so only --fail-open gets the work done.
  bool unreached = false;

  static Outcome acquired() { return {AcquireStatus::acquired, {}}; }
  static Outcome busy() { return {AcquireStatus::busy, {}}; }
  static Outcome failed(std::string why, Recovery r) { return {AcquireStatus::error, std::move(why), r}; }
};

} // namespace bufferlock
