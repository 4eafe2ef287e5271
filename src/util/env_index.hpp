// getenv(3) for a run that asks for many variables of one prefix, most of
// them unset: environ is read once for that prefix, and a name with it is
// then looked up among the few found (usually none), not among every
// variable of the environment each time.
#pragma once

#include <string_view>
#include <vector>

namespace bufferlock {

class EnvIndex {
public:
  // `env`: an environ-like array ("NAME=value" entries, then nullptr),
  // read now; `prefix` must outlive the index (a string literal).
  EnvIndex(std::string_view prefix, const char* const* env);

  // The value of `name` as getenv(3) gives it; a name without the prefix is
  // asked of getenv(3) itself (the environment may have changed since).
  const char* get(const char* name) const;

  // The "NAME=value" entries whose name has the prefix.
  const std::vector<const char*>& found() const { return found_; }

private:
  std::string_view prefix_;
  std::vector<const char*> found_; // the entries with the prefix
};

} // namespace bufferlock
