#include "util/env_index.hpp"

#include <stdlib.h>

#include <cstring>

namespace bufferlock {

namespace {

// Whether `s` begins with `prefix`; stops at the first byte that differs,
// which for nearly every variable is the first (no strlen, no call).
bool has_prefix(const char* s, std::string_view prefix) {
  for (const char c : prefix)
    if (*s++ != c) return false;
  return true;
}

} // namespace

EnvIndex::EnvIndex(std::string_view prefix, const char* const* env) : prefix_(prefix) {
  for (; env && *env; ++env)
    if (has_prefix(*env, prefix)) found_.push_back(*env);
}

const char* EnvIndex::get(const char* name) const {
  if (!has_prefix(name, prefix_)) return ::getenv(name);
  if (found_.empty()) return nullptr;
  const std::size_t n = std::strlen(name);
  for (const char* entry : found_)
    if (std::strncmp(entry, name, n) == 0 && entry[n] == '=') return entry + n + 1;
  return nullptr;
}

} // namespace bufferlock
