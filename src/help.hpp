// The texts of --help, cache --help and --version.
#pragma once

#include <string>
#include <string_view>

namespace bufferlock {

std::string_view help_text();
std::string_view cache_help_text();
std::string version_text();

} // namespace bufferlock
