// Which options a command line names, found without a parser: the words
// before KEY read as CLI11 2.1.2 reads them, with the option table's names and
// arities. The parser is then given only those options (ARCHITECTURE.md,
// start-up).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace bufferlock {

// One option as the scan sees it: its names in CLI11's form
// ("-w,--wait,--timeout"; empty: not an option here) and whether it takes a
// value.
struct ScanOption {
  std::string_view names;
  bool takes_value = false;
};

// Sets named[i] for every options[i] that `words` (argv after the program and
// the subcommand) names before KEY, as CLI11 reads them: "--" ends the
// options; "--NAME=VALUE" or "--NAME VALUE"; short options bundled ("-nv"),
// their value attached ("-w5") or the next word; a word that is no option
// (an unknown one is skipped alone) ends them. A value is taken whatever it
// looks like. named.size() == options.size().
void scan_options(std::span<const ScanOption> options, std::span<const char* const> words,
                  std::span<bool> named);

} // namespace bufferlock
