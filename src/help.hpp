// The prose of --help and cache --help (the option sections are made from
// the declarations in cli.cpp), and the --version text.
#pragma once

#include "cli.hpp"

#include <string>
#include <string_view>

namespace bufferlock {

enum class HelpPart { intro, outro };

// What comes before (usage lines, introduction) and after (exit statuses,
// examples) the options; `topic` is run or cache.
std::string_view help_prose(Command topic, HelpPart part);

std::string version_text();

} // namespace bufferlock
