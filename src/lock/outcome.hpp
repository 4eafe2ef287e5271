// What one attempt to take a lock ends in: errors as values, because busy and
// "the backend is down" are expected outcomes, not exceptions.
#pragma once

#include <string>

namespace bufferlock {

enum class AcquireStatus { acquired, busy, error };

struct Outcome {
  AcquireStatus status;
  std::string error; // with status error: the message to print (no prefix)

  static Outcome acquired() { return {AcquireStatus::acquired, {}}; }
  static Outcome busy() { return {AcquireStatus::busy, {}}; }
  static Outcome failed(std::string why) { return {AcquireStatus::error, std::move(why)}; }
};

} // namespace bufferlock
