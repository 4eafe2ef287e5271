// The texts of --help and --version.
#pragma once

#include <string_view>

namespace bufferlock {

std::string_view help_text();
std::string_view version_text();

} // namespace bufferlock
