// Dependencies of an entry (--depends PATH, SPEC §15): which paths can name
// one. What they hold is cache/inputs.hpp's business.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bufferlock {

// Why `path` cannot name a dependency (empty, or holding a NUL); nullopt
// when it can.
std::optional<std::string> bad_depends_path(std::string_view path);

// Why `path` cannot name an --output (as for --depends, and a path whose
// last component is "." or "..", or "/": it could not be renamed over).
std::optional<std::string> bad_output_path(std::string_view path);

} // namespace bufferlock
