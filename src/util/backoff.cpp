#include "util/backoff.hpp"

#include <algorithm>

namespace bufferlock {

Nanos Backoff::next() {
  const Nanos current = std::min(step_, max_);
  const double grown = static_cast<double>(step_.count()) * ratio_;
  step_ = grown >= static_cast<double>(max_.count()) ? max_ : Nanos(static_cast<std::int64_t>(grown));
  return current;
}

Nanos jittered(Nanos d, std::uint32_t random) {
  const auto half = d.count() / 2;
  const double fraction = static_cast<double>(random) / 4294967296.0; // [0, 1)
  const auto spread = static_cast<std::int64_t>(static_cast<double>(d.count() - half) * fraction);
  return Nanos(half + spread);
}

} // namespace bufferlock
